"""Writing model bundles and experts: the lab side of :mod:`inferix.bundle`.

The engine only loads bundles (:func:`inferix.bundle.load_bundle`); this module builds them from a
training config (:func:`bundle_from_config`, the start of training), exports trained weights
(:func:`write_bundle`), adds a fine-tune as a low-rank expert (:func:`add_expert`), exports an
expert as a plain bundle (:func:`expert_as_bundle`) and grows an action vocabulary
(:func:`extend_actions`). The layout on disk is documented in :mod:`inferix.bundle`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferix.bundle import (
    BUNDLE_FILE,
    CODEC_DIR,
    DELTA_FORMAT,
    EXPERTS_DIR,
    BundleModel,
    assemble_bundle,
    expert_start,
    expert_steps,
    is_bundle,
    load_bundle,
)
from inferix.sampling import KNOBS as SAMPLING_KNOBS

if TYPE_CHECKING:
    import torch

    from reference_world_lab.config import TrainConfig

logger = logging.getLogger(__name__)

__all__ = ["add_expert", "bundle_from_config", "bundle_info", "codec_from_config", "expert_as_bundle",
           "extend_actions", "extract_delta", "remap_action_rows", "write_bundle"]


def bundle_info(cfg: TrainConfig) -> dict[str, Any]:
    """The ``bundle.json`` content of a model trained with ``cfg``."""
    return {
        "format": "inferix-bundle/1",
        "name": cfg.name,
        "codec": cfg.codec.type,
        "codec_patch": cfg.codec_patch if cfg.codec.type == "identity" else cfg.spatial_stride,
        "actions": {"vocabulary": list(cfg.actions.vocabulary), "map": dict(cfg.actions.map),
                    "default": cfg.actions.default},
        "block_frames": cfg.data.block_frames,
        "fps": cfg.fps,
        # the sampling knobs by the names inferix.sampling declares (SamplingConfig.from_bundle reads them)
        "sampler": {"steps": list(cfg.sampler.steps), "shift": cfg.sampler.shift,
                    **{k: getattr(cfg.sampler, k) for k in SAMPLING_KNOBS if k != "steps"},
                    "content_guidance": dict(cfg.sampler.content_guidance)},
        "cache_policy": cfg.sampler.cache_policy,
        # default grid when a caller gives no size: 64 x 64 pixels
        "latent_hw": [max(2, 64 // cfg.spatial_stride)] * 2,
        "max_side": cfg.model.get("max_side"),
        "content_grids": {k: list(v) for k, v in cfg.sampler.content_grids.items()},
    }


def codec_from_config(cfg: TrainConfig, device: str = "cpu") -> Any:
    """The codec of ``cfg``: pixel patches, the trained codec of ``codec.init_from``, or a freshly
    initialised (seeded) ``tiny_ae`` that the recipe's codec stage trains."""
    from inferix.models.vae import IdentityCodec

    c = cfg.codec
    if c.type == "identity":
        return IdentityCodec(patch=cfg.codec_patch)
    from inferix.models.tiny_ae import TinyAECodec

    if c.init_from:
        codec = TinyAECodec.from_pretrained(c.init_from, device=device)
        if codec.latent_channels != c.latent_channels or codec.spatial_stride != cfg.spatial_stride:
            raise ValueError(f"codec.init_from {c.init_from!r} has {codec.latent_channels} channels / stride "
                             f"{codec.spatial_stride}; the config asks for {c.latent_channels} / {cfg.spatial_stride}")
        return codec
    codec = TinyAECodec.build(c.latent_channels, c.channels, c.levels, seed=cfg.seed)
    codec.ae.to(device)
    return codec


def bundle_from_config(cfg: TrainConfig, seed: int | None = None, device: str = "cpu",
                       codec: Any = None) -> BundleModel:
    """A bundle with a freshly initialised DiT (seeded) in the architecture of ``cfg`` (and ``codec``,
    default :func:`codec_from_config`)."""
    import torch

    from inferix.models.causal_wan import CausalWanModel

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed if seed is None else seed)
        model = CausalWanModel(cfg.wan_config())
        # The table starts at zero by design (fine-tuning from plain Wan); a model trained from
        # scratch needs distinct action embeddings from step 0 so their gradients differ.
        assert model.action_embedder is not None  # wan_config() always sets num_actions
        torch.nn.init.normal_(model.action_embedder.table.weight, std=0.02)
    codec = codec if codec is not None else codec_from_config(cfg, device)
    return assemble_bundle(cfg.name, model.to(device), bundle_info(cfg), codec)


def write_bundle(model: torch.nn.Module, cfg: TrainConfig, out: str | Path, codec: Any = None) -> Path:
    """Export ``model`` (the DiT) + ``bundle.json`` (+ the learned ``codec``) into ``out`` (safetensors;
    see the module docstring)."""
    from inferix.models.loading import save_pretrained

    path = save_pretrained(model, out)  # type: ignore[arg-type]
    if cfg.codec.type == "tiny_ae":
        if codec is None:
            raise ValueError("a tiny_ae bundle needs its trained codec")
        codec.save_pretrained(path / CODEC_DIR)
    (path / BUNDLE_FILE).write_text(json.dumps(bundle_info(cfg), indent=2))
    return path


def extract_delta(base: Mapping[str, torch.Tensor], tuned: Mapping[str, torch.Tensor], rank: int,
                  dense: tuple[str, ...] = ("proj_out.", "action_embedder.table.")) -> dict[str, torch.Tensor]:
    """``tuned - base`` as a compact expert: each 2-D weight's difference as its best rank-``rank``
    approximation (truncated SVD, ``W += up @ down``: the LoRA form, extracted after a full fine-tune
    rather than trained), every other changed tensor whole; float16 (a difference is small, so its
    half-precision rounding is far below the weights' own). Tensors whose names start with one of
    ``dense`` (the output head, which an expert retrains from zero, and the action table, whose rows
    are separate actions) are kept whole too; unchanged
    tensors are left out.

    Raises:
        ValueError: the two state dicts do not hold the same tensors, or ``rank`` < 1.
    """
    import torch

    if rank < 1:
        raise ValueError(f"rank must be >= 1, got {rank}")
    if set(base) != set(tuned) or any(base[k].shape != tuned[k].shape for k in base):
        raise ValueError("the expert's weights do not fit the main DiT: "
                         f"{sorted(set(base) ^ set(tuned)) or 'same names, other shapes'}")
    out: dict[str, torch.Tensor] = {}
    for name, w in tuned.items():
        diff = w.float() - base[name].float()
        if not diff.any():
            continue
        m, n = diff.shape if diff.ndim == 2 else (0, 0)
        if diff.ndim == 2 and rank * (m + n) < m * n and not name.startswith(dense):
            u, s, vh = torch.linalg.svd(diff, full_matrices=False)
            out[f"{name}.up"] = (u[:, :rank] * s[:rank]).half().contiguous()
            out[f"{name}.down"] = vh[:rank].half().contiguous()
        else:
            out[f"{name}.delta"] = diff.half()
    return out


def remap_action_rows(table: torch.Tensor, old_names: list[str], new_names: list[str],
                      init: torch.Tensor | None = None) -> torch.Tensor:
    """An action table for ``new_names`` from one trained for ``old_names``, row by name: a name
    both list keeps its row; a new ``NAME@DIRECTION`` (:func:`inferix.registry.directional_name`)
    starts as ``NAME``'s row, so the grown model behaves exactly as before until it is trained;
    any other new name takes its row of ``init`` (the new model's own init; zeros without one).

    Raises:
        ValueError: ``old_names`` does not match the table's rows.
    """
    import torch

    if len(old_names) != table.shape[0]:
        raise ValueError(f"an action table of {table.shape[0]} rows for {len(old_names)} names")
    out = torch.zeros(len(new_names), *table.shape[1:], dtype=table.dtype) if init is None else init.clone().to(table.dtype)
    for i, name in enumerate(new_names):
        src = name if name in old_names else name.split("@", 1)[0]
        if src in old_names:
            out[i] = table[old_names.index(src)]
    return out


def extend_actions(bundle: str | Path, out: str | Path, names: list[str]) -> Path:
    """A copy of ``bundle`` whose vocabulary also lists ``names`` (appended): the main DiT's and every
    expert's action table grow by :func:`remap_action_rows`, so each new ``NAME@DIRECTION`` serves
    exactly as ``NAME`` until a fine-tune (an expert) trains it; any other new name gets a zero row.

    Raises:
        ValueError: a name is already in the vocabulary, or the bundle has no action table.
    """
    import shutil

    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    src, dst = Path(bundle), Path(out)
    info = json.loads((src / BUNDLE_FILE).read_text())
    old = list(info["actions"]["vocabulary"])
    dup = [n for n in names if n in old]
    if dup:
        raise ValueError(f"actions already in the vocabulary of {src}: {dup}")
    new = old + list(names)
    if dst.resolve() != src.resolve():
        shutil.copytree(src, dst, dirs_exist_ok=True)
    key = "action_embedder.table.weight"
    weights = dst / "diffusion_pytorch_model.safetensors"
    state = load_file(str(weights))
    if key not in state:
        raise ValueError(f"{src} has no discrete action table ({key})")
    state[key] = remap_action_rows(state[key], old, new)
    save_file(state, str(weights))
    cfg = json.loads((dst / "config.json").read_text())
    cfg["num_actions"] = len(new)
    (dst / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    for file in sorted({entry["weights"] for entry in (info.get("experts") or {}).values()}):
        path = dst / file
        with safe_open(str(path), "pt") as f:
            meta = f.metadata()
        delta = load_file(str(path))
        grown = False
        for part in (f"{key}.delta", f"{key}.up"):  # a low-rank difference's rows are in its `up` factor
            if part in delta:
                delta[part] = remap_action_rows(delta[part].float(), old, new).half()
                grown = True
        if grown:
            save_file(delta, str(path), metadata=meta)
    info["actions"]["vocabulary"] = new
    (dst / BUNDLE_FILE).write_text(json.dumps(info, indent=2) + "\n")
    return dst


def add_expert(bundle: str | Path, tuned: str | Path, name: str, contents: list[str], rank: int = 16,
               steps: list[float] | None = None, start: str = "noise", base: str | None = None) -> Path:
    """Make the exported bundle ``tuned`` (a fine-tune of ``bundle``'s DiT, e.g. on physics scenes) an
    expert of ``bundle`` for ``contents``: writes ``experts/NAME.safetensors`` (:func:`extract_delta`
    at ``rank``) and lists it in ``bundle.json``, with its own step list ``steps`` when given (else
    it samples with the bundle's) and, with ``start="anchor"``, blocks that start from the previous
    frame noised to ``steps[0]``. With ``base``, ``tuned`` is a fine-tune of that expert as served
    (``expert_as_bundle``): the difference is taken to its DiT, so a short fine-tune of an expert
    costs a small file rather than the whole expert again. Returns the file written.

    Raises:
        ValueError: the two DiTs differ in architecture, ``contents`` is empty, another expert
            already serves one of ``contents``, ``base`` is not another expert of the bundle, another
            expert is stored on top of ``name`` (replacing it would change that one), or
            ``steps`` is not a step list from 1000 down (from below 1000 with ``start="anchor"``,
            which needs ``steps``).
    """
    from safetensors.torch import load_file, save_file

    from inferix.models.configs import WanConfig

    b, t = Path(bundle).expanduser(), Path(tuned).expanduser()
    for p in (b, t):
        if not is_bundle(p):
            raise FileNotFoundError(f"{str(p)!r} is not an Inferix model bundle ({BUNDLE_FILE} missing)")
    if WanConfig.from_json(b / "config.json") != WanConfig.from_json(t / "config.json"):
        raise ValueError(f"{t} is not a fine-tune of {b}: their config.json differ")
    if not contents:
        raise ValueError("give the contents the expert serves (generators or families, e.g. mechanics)")
    from_anchor = expert_start(name, start, steps)
    own_steps = None if steps is None else expert_steps(name, list(steps), from_anchor)
    info = json.loads((b / BUNDLE_FILE).read_text())
    taken = {c: n for n, e in info.get("experts", {}).items() if n != name for c in e["contents"]}
    if clash := sorted(c for c in contents if c in taken):
        raise ValueError(f"expert {taken[clash[0]]!r} already serves {', '.join(clash)}")
    if on_top := sorted(n for n, e in info.get("experts", {}).items() if e.get("base") == name):
        raise ValueError(f"expert {on_top[0]!r} is stored on top of {name!r}: replacing {name!r} would change "
                         f"it too; take {on_top[0]!r} out of {BUNDLE_FILE} first (and add it again after)")
    if base is None:
        start_weights = load_file(str(b / "diffusion_pytorch_model.safetensors"))
    else:
        if base == name or base not in info.get("experts", {}):
            raise ValueError(f"base {base!r} is not another expert of {b} "
                             f"(it has: {', '.join(sorted(set(info.get('experts', {})) - {name})) or 'none'})")
        start_weights = dict(load_bundle(b).experts[base].model.state_dict())  # the base as served
    delta = extract_delta(start_weights, load_file(str(t / "diffusion_pytorch_model.safetensors")), rank)
    out = b / EXPERTS_DIR / f"{name}.safetensors"
    out.parent.mkdir(exist_ok=True)
    save_file(delta, str(out), metadata={"format": DELTA_FORMAT, "rank": str(rank), "from": t.name})
    entry: dict[str, Any] = {"contents": list(contents), "weights": f"{EXPERTS_DIR}/{out.name}"}
    if own_steps is not None:
        entry["steps"] = list(own_steps)
    if from_anchor:
        entry["start"] = "anchor"
    if base is not None:
        entry["base"] = base
    info.setdefault("experts", {})[name] = entry
    (b / BUNDLE_FILE).write_text(json.dumps(info, indent=2))
    return out


def expert_as_bundle(bundle: str | Path, name: str, out: str | Path) -> Path:
    """Write ``bundle``'s expert ``name`` as a plain bundle at ``out``: the main DiT with the expert's
    stored difference added (the weights the expert is served with), the bundle's ``config.json``, its
    ``bundle.json`` without ``experts`` and its codec. The inverse of :func:`add_expert`, for a
    training stage that starts from the expert as served (``init_from``). Returns ``out``.

    Raises:
        FileNotFoundError: ``bundle`` is not a bundle (or lacks a file it names).
        ValueError: it has no expert ``name`` (the message lists those it has).
    """
    import shutil

    from inferix.models.loading import save_pretrained

    b, o = Path(bundle).expanduser(), Path(out).expanduser()
    experts = load_bundle(b).experts  # the expert as served: validated entry, difference applied
    if name not in experts:
        raise ValueError(f"{b} has no expert {name!r} (it has: {', '.join(sorted(experts)) or 'none'})")
    save_pretrained(experts[name].model, o)
    if (b / CODEC_DIR).is_dir():
        shutil.copytree(b / CODEC_DIR, o / CODEC_DIR, dirs_exist_ok=True)
    info = json.loads((b / BUNDLE_FILE).read_text())
    info.pop("experts", None)
    (o / BUNDLE_FILE).write_text(json.dumps(info, indent=2))
    return o
