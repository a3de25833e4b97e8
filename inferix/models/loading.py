"""Loading Wan DiT weights: diffusers layout and original-Wan (Self-Forcing / CausVid) layout.

Accepted sources (safe formats only: safetensors, or ``torch.load(weights_only=True)``):

* a diffusers ``WanTransformer3DModel`` directory: ``config.json`` +
  ``diffusion_pytorch_model.safetensors`` or a sharded
  ``diffusion_pytorch_model.safetensors.index.json`` (a ``transformer/`` sub-folder of a
  pipeline directory is found too);
* a single ``.safetensors`` file (config from a ``config.json`` next to it, an explicit
  config, or inferred from the tensor shapes);
* a Self-Forcing / CausVid checkpoint (``.pt`` / ``.pth`` / ``.safetensors``), a dict that
  may nest the weights under ``generator_ema`` / ``generator`` / ``model`` / ``state_dict``
  and whose keys may carry wrapper prefixes (``generator.``, ``model.``, ``module.``,
  ``_fsdp_wrapped_module.``, ``_orig_mod.``, ``model.diffusion_model.``).

Original Wan key names -> ours (= diffusers') — the documented key map::

    patch_embedding.*                    -> patch_embedding.*
    text_embedding.0.* / .2.*            -> condition_embedder.text_embedder.linear_1.* / linear_2.*
    time_embedding.0.* / .2.*            -> condition_embedder.time_embedder.linear_1.* / linear_2.*
    time_projection.1.*                  -> condition_embedder.time_proj.*
    blocks.N.self_attn.{q,k,v}.*         -> blocks.N.attn1.to_{q,k,v}.*
    blocks.N.self_attn.o.*               -> blocks.N.attn1.to_out.0.*
    blocks.N.self_attn.norm_{q,k}.weight -> blocks.N.attn1.norm_{q,k}.weight
    blocks.N.cross_attn.*                -> blocks.N.attn2.*   (same sub-names as self_attn)
    blocks.N.norm3.*  (cross-attn norm)  -> blocks.N.norm2.*
    blocks.N.ffn.0.* / ffn.2.*           -> blocks.N.ffn.net.0.proj.* / ffn.net.2.*
    blocks.N.modulation                  -> blocks.N.scale_shift_table
    head.head.*                          -> proj_out.*
    head.modulation                      -> scale_shift_table
    action_embedder.*                    -> action_embedder.*   (Inferix extension, same in both)
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from inferix.models.configs import WanConfig

if TYPE_CHECKING:
    import torch

    from inferix.models.causal_wan import CausalWanModel

logger = logging.getLogger(__name__)

__all__ = [
    "CheckpointError",
    "detect_layout",
    "infer_config",
    "load_model_weights",
    "read_state_dict",
    "resolve_checkpoint",
    "save_pretrained",
    "to_wan_layout",
    "wan_to_diffusers_key",
]

Layout = Literal["diffusers", "wan"]

_WRAPPER_PREFIXES = (
    "model.diffusion_model.",
    "generator_ema.",
    "generator.",
    "_fsdp_wrapped_module.",
    "_checkpoint_wrapped_module.",
    "_orig_mod.",
    "module.",
    "model.",
)
_NESTED_KEYS = ("generator_ema", "generator", "state_dict", "model", "module", "net")
_TOP_LEVEL = (
    "patch_embedding.",
    "blocks.",
    "condition_embedder.",
    "text_embedding.",
    "time_embedding.",
    "time_projection.",
    "head.",
    "proj_out.",
    "norm_out.",
    "scale_shift_table",
    "action_embedder.",
)

# (pattern, replacement) applied to original-Wan keys, first match wins.
_WAN_TO_DIFFUSERS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^text_embedding\.0\.(.*)$"), r"condition_embedder.text_embedder.linear_1.\1"),
    (re.compile(r"^text_embedding\.2\.(.*)$"), r"condition_embedder.text_embedder.linear_2.\1"),
    (re.compile(r"^time_embedding\.0\.(.*)$"), r"condition_embedder.time_embedder.linear_1.\1"),
    (re.compile(r"^time_embedding\.2\.(.*)$"), r"condition_embedder.time_embedder.linear_2.\1"),
    (re.compile(r"^time_projection\.1\.(.*)$"), r"condition_embedder.time_proj.\1"),
    (re.compile(r"^blocks\.(\d+)\.self_attn\.([qkv])\.(.*)$"), r"blocks.\1.attn1.to_\2.\3"),
    (re.compile(r"^blocks\.(\d+)\.self_attn\.o\.(.*)$"), r"blocks.\1.attn1.to_out.0.\2"),
    (re.compile(r"^blocks\.(\d+)\.self_attn\.(norm_[qk])\.(.*)$"), r"blocks.\1.attn1.\2.\3"),
    (re.compile(r"^blocks\.(\d+)\.cross_attn\.([qkv])\.(.*)$"), r"blocks.\1.attn2.to_\2.\3"),
    (re.compile(r"^blocks\.(\d+)\.cross_attn\.o\.(.*)$"), r"blocks.\1.attn2.to_out.0.\2"),
    (re.compile(r"^blocks\.(\d+)\.cross_attn\.(norm_[qk])\.(.*)$"), r"blocks.\1.attn2.\2.\3"),
    (re.compile(r"^blocks\.(\d+)\.norm3\.(.*)$"), r"blocks.\1.norm2.\2"),
    (re.compile(r"^blocks\.(\d+)\.ffn\.0\.(.*)$"), r"blocks.\1.ffn.net.0.proj.\2"),
    (re.compile(r"^blocks\.(\d+)\.ffn\.2\.(.*)$"), r"blocks.\1.ffn.net.2.\2"),
    (re.compile(r"^blocks\.(\d+)\.modulation$"), r"blocks.\1.scale_shift_table"),
    (re.compile(r"^head\.head\.(.*)$"), r"proj_out.\1"),
    (re.compile(r"^head\.modulation$"), r"scale_shift_table"),
    (re.compile(r"^(patch_embedding\..*|action_embedder\..*)$"), r"\1"),
]

# The inverse (ours -> original Wan), used to write Self-Forcing-layout files.
_DIFFUSERS_TO_WAN: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^condition_embedder\.text_embedder\.linear_1\.(.*)$"), r"text_embedding.0.\1"),
    (re.compile(r"^condition_embedder\.text_embedder\.linear_2\.(.*)$"), r"text_embedding.2.\1"),
    (re.compile(r"^condition_embedder\.time_embedder\.linear_1\.(.*)$"), r"time_embedding.0.\1"),
    (re.compile(r"^condition_embedder\.time_embedder\.linear_2\.(.*)$"), r"time_embedding.2.\1"),
    (re.compile(r"^condition_embedder\.time_proj\.(.*)$"), r"time_projection.1.\1"),
    (re.compile(r"^blocks\.(\d+)\.attn1\.to_([qkv])\.(.*)$"), r"blocks.\1.self_attn.\2.\3"),
    (re.compile(r"^blocks\.(\d+)\.attn1\.to_out\.0\.(.*)$"), r"blocks.\1.self_attn.o.\2"),
    (re.compile(r"^blocks\.(\d+)\.attn1\.(norm_[qk])\.(.*)$"), r"blocks.\1.self_attn.\2.\3"),
    (re.compile(r"^blocks\.(\d+)\.attn2\.to_([qkv])\.(.*)$"), r"blocks.\1.cross_attn.\2.\3"),
    (re.compile(r"^blocks\.(\d+)\.attn2\.to_out\.0\.(.*)$"), r"blocks.\1.cross_attn.o.\2"),
    (re.compile(r"^blocks\.(\d+)\.attn2\.(norm_[qk])\.(.*)$"), r"blocks.\1.cross_attn.\2.\3"),
    (re.compile(r"^blocks\.(\d+)\.norm2\.(.*)$"), r"blocks.\1.norm3.\2"),
    (re.compile(r"^blocks\.(\d+)\.ffn\.net\.0\.proj\.(.*)$"), r"blocks.\1.ffn.0.\2"),
    (re.compile(r"^blocks\.(\d+)\.ffn\.net\.2\.(.*)$"), r"blocks.\1.ffn.2.\2"),
    (re.compile(r"^blocks\.(\d+)\.scale_shift_table$"), r"blocks.\1.modulation"),
    (re.compile(r"^proj_out\.(.*)$"), r"head.head.\1"),
    (re.compile(r"^scale_shift_table$"), r"head.modulation"),
    (re.compile(r"^(patch_embedding\..*|action_embedder\..*)$"), r"\1"),
]


class CheckpointError(ValueError):
    """A checkpoint cannot be loaded: wrong layout, missing/unexpected keys or shape mismatches."""


def _first_match(key: str, table: list[tuple[re.Pattern[str], str]]) -> str | None:
    for pattern, repl in table:
        if pattern.match(key):
            return pattern.sub(repl, key)
    return None


def wan_to_diffusers_key(key: str) -> str | None:
    """Our (diffusers) name of an original-Wan key, or None when the key has no counterpart."""
    return _first_match(key, _WAN_TO_DIFFUSERS)


def to_wan_layout(state_dict: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Rename a diffusers-layout state dict to original Wan names (as Self-Forcing / CausVid save them).

    Args:
        state_dict: diffusers / Inferix keys.
        prefix: prepended to every key (e.g. ``"model."`` as in a Self-Forcing ``generator`` dict).
    """
    out = {}
    for key, value in state_dict.items():
        new = _first_match(key, _DIFFUSERS_TO_WAN)
        if new is None:
            raise CheckpointError(f"no original-Wan name for key {key!r}")
        out[prefix + new] = value
    return out


def _strip_prefixes(keys: list[str]) -> dict[str, str]:
    """Map each key to itself without wrapper prefixes (repeatedly: ``generator.model.blocks`` -> ``blocks``)."""
    out = {}
    for key in keys:
        k = key
        changed = True
        while changed and not k.startswith(_TOP_LEVEL):
            changed = False
            for p in _WRAPPER_PREFIXES:
                if k.startswith(p):
                    k = k[len(p) :]
                    changed = True
                    break
        out[key] = k
    return out


def detect_layout(keys: list[str] | Mapping[str, Any]) -> Layout:
    """``"diffusers"`` or ``"wan"`` (original names) from the key names (after wrapper prefixes).

    Raises:
        CheckpointError: neither layout; the message shows sample keys.
    """
    names = list(_strip_prefixes(list(keys)).values())
    wan = sum(1 for k in names if ".self_attn." in k or k.startswith(("head.", "text_embedding.", "time_embedding.")))
    diffusers = sum(1 for k in names if ".attn1." in k or k.startswith(("condition_embedder.", "proj_out.")))
    if wan == 0 and diffusers == 0:
        sample = ", ".join(repr(k) for k in list(keys)[:5])
        raise CheckpointError(
            "checkpoint is neither a diffusers WanTransformer3DModel state dict nor an original Wan / Self-Forcing "
            f"/ CausVid one (no 'blocks.N.attn1.*' or 'blocks.N.self_attn.*' keys); first keys: {sample}"
        )
    return "wan" if wan > diffusers else "diffusers"


def _unnest(obj: Any, source: str, key: str | None = None) -> dict[str, torch.Tensor]:
    """Find the tensor dict inside a training checkpoint (``{"generator_ema": {...}, ...}``).

    Args:
        obj: what the file held.
        source: file name for messages.
        key: take ``obj[key]`` (e.g. ``"generator"`` for the non-EMA weights of a Self-Forcing file);
            default: the first of ``generator_ema, generator, state_dict, model, module, net`` present.
    """
    import torch

    if key is not None:
        if not isinstance(obj, Mapping) or key not in obj or not isinstance(obj[key], Mapping):
            have = sorted(k for k, v in obj.items() if isinstance(v, Mapping)) if isinstance(obj, Mapping) else []
            raise CheckpointError(f"{source}: no weights under checkpoint_key={key!r}; nested dicts present: {have}")
        obj = obj[key]
    depth = 0
    while isinstance(obj, Mapping) and depth < 4:
        if obj and all(isinstance(v, torch.Tensor) for v in obj.values()):
            return dict(obj)
        for key in _NESTED_KEYS:
            if key in obj and isinstance(obj[key], Mapping):
                logger.info("using the %r weights of %s", key, source)
                obj = obj[key]
                break
        else:
            tensors = {k: v for k, v in obj.items() if isinstance(v, torch.Tensor)}
            if tensors:
                return tensors
            raise CheckpointError(
                f"{source}: no tensors found; top-level keys {sorted(map(str, obj))[:10]} "
                f"(expected a state dict or one nested under {list(_NESTED_KEYS)})"
            )
        depth += 1
    raise CheckpointError(f"{source}: not a state dict (got {type(obj).__name__})")


def read_state_dict(path: str | Path, checkpoint_key: str | None = None) -> dict[str, torch.Tensor]:
    """Read one weights file (safetensors, or ``.pt``/``.pth``/``.bin`` with ``weights_only=True``).

    Args:
        path: the file.
        checkpoint_key: the nested dict to take from a training checkpoint (see :func:`_unnest`).

    Raises:
        CheckpointError: unsupported extension, unsafe pickle, or no tensors inside.
    """
    import torch

    path = Path(path)
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        return _unnest(load_file(str(path)), str(path), checkpoint_key)
    if path.suffix in (".pt", ".pth", ".bin", ".ckpt"):
        try:
            obj = torch.load(str(path), map_location="cpu", weights_only=True)
        except Exception as e:  # unsafe pickles refuse to load with weights_only=True
            raise CheckpointError(f"{path}: cannot be read with torch.load(weights_only=True): {e}") from e
        return _unnest(obj, str(path), checkpoint_key)
    raise CheckpointError(f"{path}: unsupported weights file type {path.suffix!r} (use .safetensors, .pt or .pth)")


def _read_dir(path: Path, checkpoint_key: str | None) -> tuple[dict[str, torch.Tensor], dict[str, Any] | None]:
    if (path / "transformer").is_dir() and not (path / "config.json").exists():
        path = path / "transformer"
    cfg_file = path / "config.json"
    cfg = json.loads(cfg_file.read_text()) if cfg_file.exists() else None
    index = sorted(path.glob("*.safetensors.index.json"))
    if index:
        weight_map = json.loads(index[0].read_text())["weight_map"]
        state: dict[str, torch.Tensor] = {}
        for shard in sorted(set(weight_map.values())):
            state.update(read_state_dict(path / shard))
        return state, cfg
    files = sorted(path.glob("*.safetensors")) or sorted(
        p for ext in ("*.pt", "*.pth", "*.bin") for p in path.glob(ext)
    )
    if not files:
        raise CheckpointError(f"{path}: no *.safetensors, *.safetensors.index.json or *.pt weights in the directory")
    if len(files) > 1:
        raise CheckpointError(
            f"{path}: several weight files {[f.name for f in files]} and no *.index.json to join them"
        )
    return read_state_dict(files[0], checkpoint_key), cfg


def resolve_checkpoint(
    path: str | Path, checkpoint_key: str | None = None
) -> tuple[dict[str, torch.Tensor], dict[str, Any] | None]:
    """Read a checkpoint directory or file into ``(state_dict, config dict or None)``.

    Args:
        path: directory or file.
        checkpoint_key: nested weights to take from a training checkpoint (``"generator"`` /
            ``"generator_ema"``); default: EMA weights when present.

    Raises:
        FileNotFoundError: the path does not exist.
        CheckpointError: no readable weights.
    """
    path = Path(path).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"checkpoint {str(path)!r} does not exist")
    if path.is_dir():
        return _read_dir(path, checkpoint_key)
    cfg_file = path.parent / "config.json"
    cfg = json.loads(cfg_file.read_text()) if cfg_file.exists() else None
    return read_state_dict(path, checkpoint_key), cfg


def _to_ours(state_dict: Mapping[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], Layout, list[str]]:
    """Strip wrappers and rename to our keys; returns (renamed, layout, original keys with no counterpart)."""
    stripped = _strip_prefixes(list(state_dict))
    layout = detect_layout(list(stripped.values()))
    out: dict[str, torch.Tensor] = {}
    unmapped: list[str] = []
    for key, value in state_dict.items():
        k = stripped[key]
        if layout == "wan":
            new = wan_to_diffusers_key(k)
            if new is None:
                unmapped.append(key)
                continue
            k = new
        out[k] = value
    return out, layout, unmapped


def infer_config(state_dict: Mapping[str, torch.Tensor], head_dim: int = 128) -> WanConfig:
    """Infer a :class:`WanConfig` from tensor shapes (any layout).

    The head count is not visible in the shapes; Wan uses 128-channel heads, so
    ``heads = dim / head_dim``.

    Raises:
        CheckpointError: a needed tensor is missing or the width is not a multiple of ``head_dim``.
    """
    sd, _, _ = _to_ours(state_dict)
    try:
        pe = sd["patch_embedding.weight"]  # [dim, C_in, pt, ph, pw]
        dim, c_in = int(pe.shape[0]), int(pe.shape[1])
        patch = tuple(int(p) for p in pe.shape[2:])
        layers = 1 + max(int(k.split(".")[1]) for k in sd if k.startswith("blocks."))
        ffn = int(sd["blocks.0.ffn.net.0.proj.weight"].shape[0])
        text_dim = int(sd["condition_embedder.text_embedder.linear_1.weight"].shape[1])
        freq_dim = int(sd["condition_embedder.time_embedder.linear_1.weight"].shape[1])
        c_out = int(sd["proj_out.weight"].shape[0]) // (patch[0] * patch[1] * patch[2])
    except (KeyError, ValueError) as e:
        raise CheckpointError(f"cannot infer the architecture from the checkpoint: missing {e}; pass a config") from e
    if dim % head_dim:
        raise CheckpointError(
            f"hidden size {dim} is not a multiple of head_dim={head_dim}; pass a config (config.json next to the "
            "weights, or config=WanConfig(...)) with num_attention_heads"
        )
    action_dim = num_actions = None
    if "action_embedder.table.weight" in sd:
        num_actions = int(sd["action_embedder.table.weight"].shape[0])
    elif "action_embedder.linear_1.weight" in sd:
        action_dim = int(sd["action_embedder.linear_1.weight"].shape[1])
    return WanConfig(
        patch_size=patch,  # type: ignore[arg-type]
        num_attention_heads=dim // head_dim,
        attention_head_dim=head_dim,
        in_channels=c_in,
        out_channels=c_out,
        text_dim=text_dim,
        freq_dim=freq_dim,
        ffn_dim=ffn,
        num_layers=layers,
        cross_attn_norm="blocks.0.norm2.weight" in sd,
        action_dim=action_dim,
        num_actions=num_actions,
    )


def _fmt(keys: list[str], n: int = 8) -> str:
    more = f" ... (+{len(keys) - n} more)" if len(keys) > n else ""
    return ", ".join(keys[:n]) + more


def load_model_weights(model: CausalWanModel, state_dict: Mapping[str, torch.Tensor], strict: bool = True) -> Layout:
    """Load a diffusers- or Wan-layout state dict into ``model`` (in place).

    Args:
        model: the target.
        state_dict: weights in either layout, with or without wrapper prefixes.
        strict: fail on missing or unexpected keys (shape mismatches always fail).

    Returns:
        The detected layout.

    Raises:
        CheckpointError: naming the missing / unexpected keys, or each mismatched key with the expected
            and found shapes.
    """
    sd, layout, unmapped = _to_ours(state_dict)
    # diffusers ignores this I2V-only key on load as well.
    sd = {k: v for k, v in sd.items() if "norm_added_q" not in k}
    own = model.state_dict()
    mismatched = [
        f"{k}: expected {tuple(own[k].shape)}, got {tuple(v.shape)}"
        for k, v in sd.items()
        if k in own and own[k].shape != v.shape
    ]
    if mismatched:
        raise CheckpointError(
            f"checkpoint ({layout} layout) does not fit the model config: shape mismatch for "
            f"{len(mismatched)} tensor(s): {_fmt(mismatched, 6)}"
        )
    missing = sorted(set(own) - set(sd))
    # An action embedder absent from plain Wan weights keeps its zero-initialised output (no effect).
    missing_action = [k for k in missing if k.startswith("action_embedder.")]
    missing = [k for k in missing if not k.startswith("action_embedder.")]
    unexpected = sorted(set(sd) - set(own)) + unmapped
    if strict and (missing or unexpected):
        parts = [f"checkpoint ({layout} layout) does not match the model"]
        if missing:
            parts.append(f"missing keys ({len(missing)}): {_fmt(missing)}")
        if unexpected:
            parts.append(f"unexpected keys ({len(unexpected)}): {_fmt(unexpected)}")
        raise CheckpointError("; ".join(parts))
    if missing_action:
        logger.warning("checkpoint has no action_embedder weights; the action embedding starts at zero (no effect)")
    result = model.load_state_dict({k: v for k, v in sd.items() if k in own}, strict=False)
    logger.info(
        "loaded %d tensors (%s layout); missing %d, unexpected %d",
        len(sd),
        layout,
        len(result.missing_keys),
        len(unexpected),
    )
    return layout


def save_pretrained(model: CausalWanModel, path: str | Path, layout: Layout = "diffusers") -> Path:
    """Write ``model`` as ``config.json`` + weights that :func:`~inferix.models.build_model` (and, for
    models without actions, diffusers' ``WanTransformer3DModel.from_pretrained``) read back.

    Args:
        model: the model.
        path: output directory (created).
        layout: ``"diffusers"`` (``diffusion_pytorch_model.safetensors``) or ``"wan"`` (original names,
            ``model.safetensors``) — e.g. to convert a Self-Forcing ``.pt`` into a safe format.

    Returns:
        The directory.
    """
    from safetensors.torch import save_file

    out = Path(path).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
    (out / "config.json").write_text(json.dumps(model.config.to_dict(), indent=2))
    if layout == "wan":
        save_file(to_wan_layout(state), str(out / "model.safetensors"))
    else:
        save_file(state, str(out / "diffusion_pytorch_model.safetensors"))
    return out
