"""A trained model bundle on disk and in memory.

Layout of an exported model (what ``inferix/weights/reference_world/`` ships)::

    config.json                          the DiT's WanConfig (diffusers-compatible keys + actions)
    diffusion_pytorch_model.safetensors  the DiT weights (EMA), written by inferix.models.save_pretrained
    bundle.json                          codec (type, patch), action vocabulary + map, block frames,
                                         fps, few-step sampler, text length, the grids it generates
                                         some contents at (``content_grids``), the guidance
                                         scale some contents are served at (``sampler.content_guidance``)
    codec/                               the learned codec when bundle.json says "codec": "tiny_ae"
                                         (inferix.models.tiny_ae: diffusers AutoencoderTiny, safetensors)
    experts/NAME.safetensors             an expert DiT for some contents, as a difference to the main
                                         DiT (bundle.json ``experts``: ``{NAME: {"contents": [...],
                                         "weights": "experts/NAME.safetensors"}}``; :func:`add_expert`),
                                         or to another expert's DiT (``"base": OTHER``: a fine-tune of
                                         that expert, stored as its own smaller difference)
    MODEL_CARD.md                        data, steps, wall time, hardware, scores

:func:`load_bundle` turns that folder into the :class:`~inferix.registry.LoadedModel` the engine
serves; :func:`bundle_from_config` builds the same bundle with random weights from a training
config (the start of training, and the "random weights" baseline).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferix.registry import ActionVocab, HashedTextEncoder, LoadedModel

if TYPE_CHECKING:
    import torch

    from inferix.train.config import TrainConfig

logger = logging.getLogger(__name__)

__all__ = ["BUNDLE_FILE", "BundleModel", "Expert", "MappedActionVocab", "TruncatingTextEncoder", "add_expert",
           "apply_delta", "bundle_from_config", "expert_as_bundle", "extract_delta", "is_bundle", "load_bundle",
           "random_bundle", "write_bundle"]

BUNDLE_FILE = "bundle.json"


@dataclass
class MappedActionVocab(ActionVocab):
    """An :class:`~inferix.registry.ActionVocab` that also accepts the scenario names of ``aliases``.

    Attributes:
        aliases: scenario action name -> vocabulary name (e.g. ``RIGHTFIRE -> RIGHT``).
    """

    aliases: dict[str, str] = field(default_factory=dict)

    def id_of(self, action: Any) -> int:
        if isinstance(action, dict):
            if (i := self.directional_id(action)) is not None:
                return i
            action = action.get("name", action.get("action"))
        if isinstance(action, str) and action not in self.names and action in self.aliases:
            action = self.aliases[action]
        return super().id_of(action)


@dataclass
class Expert:
    """A DiT a bundle serves some contents with instead of its main one (a domain expert).

    Attributes:
        name: its name in ``bundle.json`` (``physics``).
        contents: the generators or families it serves (``mechanics``, ``robotics.pick``...).
        model: the DiT: the main one with the expert's difference applied (:func:`apply_delta`).
        timesteps: its own denoising timesteps (``bundle.json`` ``experts.NAME.steps``), or None
            for the bundle's sampler: a fine-tune may be tuned to another step list.
        start_from_anchor: each block starts from the previous frame noised to the first of
            ``timesteps`` rather than from pure noise (``experts.NAME.start: "anchor"``;
            ``EngineConfig.start_from_anchor``).
        base: the expert whose DiT this one's stored difference applies to (``experts.NAME.base``),
            or None for the main DiT.
    """

    name: str
    contents: tuple[str, ...]
    model: Any
    timesteps: tuple[float, ...] | None = None
    start_from_anchor: bool = False
    base: str | None = None


@dataclass
class BundleModel(LoadedModel):
    """A :class:`~inferix.registry.LoadedModel` that generates at most ``max_side`` pixels per side.

    The reference model is trained at a small grid (CPU budget); a caller asking for a bigger
    video gets the aspect-preserving grid within ``max_side`` and resizes the frames itself
    (the WorldOlympiad bridge does).
    """

    max_side: int | None = None
    content_grids: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    content_guidance: Mapping[str, float] = field(default_factory=dict)
    experts: Mapping[str, Expert] = field(default_factory=dict)

    def expert_for(self, content: str | None = None) -> Expert | None:
        """The expert whose ``contents`` list the generator ``content`` names (``mechanics.bounce``),
        else its family (``mechanics``); None when none does."""
        from inferix.train.data import generator_keys

        for key in generator_keys(content):
            for expert in self.experts.values():
                if key in expert.contents:
                    return expert
        return None

    def model_for(self, content: str | None = None) -> Any:
        """The DiT of :meth:`expert_for` ``content``; the main DiT when no expert serves it."""
        expert = self.expert_for(content)
        return self.model if expert is None else expert.model

    def timesteps_for(self, content: str | None = None) -> tuple[float, ...]:
        """The step list of :meth:`expert_for` ``content`` when it has its own, else the bundle's."""
        expert = self.expert_for(content)
        return self.timesteps if expert is None or expert.timesteps is None else expert.timesteps

    def start_from_anchor_for(self, content: str | None = None) -> bool:
        """Whether :meth:`expert_for` ``content`` starts its blocks from the previous frame."""
        expert = self.expert_for(content)
        return expert is not None and expert.start_from_anchor

    def models(self) -> list[Any]:
        # experts that share a weights file share one DiT: list each once
        return list({id(m): m for m in (self.model, *(e.model for e in self.experts.values()))}.values())

    def guidance(self, requested: float | None = None, content: str | None = None) -> float:
        """As :meth:`LoadedModel.guidance`; with no explicit ``requested`` value, a ``content`` the
        bundle lists in ``content_guidance`` (generator name, else family) is served at its own scale."""
        own = _per_content(self.content_guidance, content) if requested is None else None
        return own if own is not None else super().guidance(requested, content)

    def content_grid(self, content: str | None) -> tuple[int, int] | None:
        """The pixel ``[H, W]`` the bundle generates ``content`` at whatever size is asked: its
        ``content_grids`` entry for the generator name (``gaming.atari_pong``), else for the
        generator's family (``gaming``; the lookup ``data.weights`` uses); None when neither is listed."""
        return _per_content(self.content_grids, content)

    def latent_hw_for(self, pixel_hw: tuple[int, int], content: str | None = None) -> tuple[int, int]:
        """As :meth:`LoadedModel.latent_hw_for`, within ``max_side``; a ``content`` the bundle lists in
        ``content_grids`` is generated at that grid (the caller resizes the frames to ``pixel_hw``)."""
        h, w = (int(v) for v in (self.content_grid(content) or pixel_hw))
        if self.max_side and max(h, w) > self.max_side:
            k = self.max_side / max(h, w)
            h, w = max(1, round(h * k)), max(1, round(w * k))
        return super().latent_hw_for((h, w))


def _per_content(table: Mapping[str, Any], content: str | None) -> Any:
    """``table``'s entry for the generator ``content`` names (``gaming.atari_pong``), else for its
    family (``gaming``); None when neither is listed."""
    from inferix.train.data import generator_keys

    return next((table[k] for k in generator_keys(content) if k in table), None)


class TruncatingTextEncoder(HashedTextEncoder):
    """The hashed text embedding, keeping the first ``text_len`` words of longer prompts.

    The reference model was trained on short chunk captions; a long case prompt is cut rather
    than refused (the words past ``text_len`` would carry no learnt meaning anyway).
    """

    def __call__(self, prompt: str) -> Any:
        if isinstance(prompt, str):
            words = prompt.split()
            if len(words) > self.text_len:
                prompt = " ".join(words[: self.text_len])
        return super().__call__(prompt)


def _sampler_timesteps(steps: list[float], shift: float) -> tuple[float, ...]:
    from inferix.schedulers import timesteps

    return tuple(timesteps(steps, shift))


CODEC_DIR = "codec"


def _codec(info: dict[str, Any], folder: Path | None, device: str = "cpu") -> Any:
    """The codec a bundle names: pixel patches, or the learned one saved in ``folder/codec``."""
    from inferix.models.vae import IdentityCodec

    kind = info.get("codec", "identity")
    if kind == "identity":
        return IdentityCodec(patch=int(info["codec_patch"]))
    if kind == "tiny_ae":
        from inferix.models.tiny_ae import TinyAECodec

        if folder is None:
            raise ValueError("a tiny_ae bundle needs its folder to load the codec from")
        return TinyAECodec.from_pretrained(folder / CODEC_DIR, device=device)
    raise ValueError(f"unknown codec {kind!r} in {BUNDLE_FILE} (known: identity, tiny_ae)")


def _content_grids(raw: Any) -> dict[str, tuple[int, int]]:
    """``bundle.json``'s ``content_grids`` (``{content: [H, W]}``), checked."""
    grids: dict[str, tuple[int, int]] = {}
    for key, hw in (raw or {}).items():
        if not (isinstance(hw, (list, tuple)) and len(hw) == 2 and all(isinstance(v, int) and v > 0 for v in hw)):
            raise ValueError(f"{BUNDLE_FILE}: content_grids[{key!r}] must be [H, W] in pixels (two positive "
                             f"integers), got {hw!r}")
        grids[str(key)] = (int(hw[0]), int(hw[1]))
    return grids


def _content_guidance(raw: Any) -> dict[str, float]:
    """``bundle.json``'s ``sampler.content_guidance`` (``{content: scale}``), checked."""
    scales: dict[str, float] = {}
    for key, g in (raw or {}).items():
        if isinstance(g, bool) or not isinstance(g, (int, float)) or g < 1:
            raise ValueError(f"{BUNDLE_FILE}: sampler.content_guidance[{key!r}] must be a guidance scale >= 1 "
                             f"(1 = off), got {g!r}")
        scales[str(key)] = float(g)
    return scales


def _assemble(name: str, model: Any, info: dict[str, Any], codec: Any) -> BundleModel:
    acts = info["actions"]
    vocab = MappedActionVocab(tuple(acts["vocabulary"]), default=acts["default"], aliases=dict(acts.get("map", {})))
    cfg = model.config
    return BundleModel(
        name, model, codec, TruncatingTextEncoder(cfg.text_dim, cfg.text_len), vocab, tuple(acts["vocabulary"]),
        latent_hw=tuple(info.get("latent_hw", (16, 16))), block_frames=int(info["block_frames"]),
        fps=float(info["fps"]), timesteps=_sampler_timesteps(list(info["sampler"]["steps"]),
                                                             float(info["sampler"]["shift"])),
        max_side=info.get("max_side"), cache_policy=info.get("cache_policy"),
        content_grids=_content_grids(info.get("content_grids")),
        content_guidance=_content_guidance(info["sampler"].get("content_guidance")),
        action_guidance=info["sampler"].get("action_guidance"),
        action_guidance_rescale=float(info["sampler"].get("action_guidance_rescale") or 0.0),
        guidance_drops_caption=bool(info["sampler"].get("guidance_drops_caption", False)),
        context_timestep=float(info["sampler"].get("context_timestep") or 0.0),
        anchor_level=float(info["sampler"].get("anchor_level") or 0.0),
    )


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
        "sampler": {"steps": list(cfg.sampler.steps), "shift": cfg.sampler.shift,
                    "action_guidance": cfg.sampler.action_guidance,
                    "action_guidance_rescale": cfg.sampler.action_guidance_rescale,
                    "guidance_drops_caption": cfg.sampler.guidance_drops_caption,
                    "context_timestep": cfg.sampler.context_timestep,
                    "anchor_level": cfg.sampler.anchor_level,
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
    return _assemble(cfg.name, model.to(device), bundle_info(cfg), codec)


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


def is_bundle(path: str | Path) -> bool:
    """True if ``path`` is an exported bundle folder."""
    return (Path(path).expanduser() / BUNDLE_FILE).is_file()


def random_bundle(path: str | Path, seed: int = 0, device: str = "cpu", name: str | None = None) -> BundleModel:
    """The architecture of the bundle at ``path`` with freshly initialised weights (a baseline).

    Initialised exactly as training starts (seeded; action table ``N(0, 0.02)``), so it is the
    trained model's step-0 twin.
    """
    import torch

    from inferix.models.causal_wan import CausalWanModel
    from inferix.models.configs import WanConfig

    p = Path(path).expanduser()
    if not is_bundle(p):
        raise FileNotFoundError(f"{str(p)!r} is not an Inferix model bundle ({BUNDLE_FILE} missing)")
    info = json.loads((p / BUNDLE_FILE).read_text())
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = CausalWanModel(WanConfig.from_json(p / "config.json"))
        if model.action_embedder is not None and model.action_embedder.num_actions is not None:
            torch.nn.init.normal_(model.action_embedder.table.weight, std=0.02)
    return _assemble(name or f"{info.get('name', p.name)}-random", model.to(device).eval(), info,
                     _codec(info, p, device))


def load_bundle(path: str | Path, device: str = "cpu", name: str | None = None) -> BundleModel:
    """Load an exported bundle folder (weights via ``inferix.models.build_model``: safetensors only).

    Raises:
        FileNotFoundError: the folder or its ``bundle.json`` / weights are missing.
    """
    from inferix.models import build_model  # type: ignore[attr-defined]

    p = Path(path).expanduser()
    info_path = p / BUNDLE_FILE
    if not info_path.is_file():
        raise FileNotFoundError(f"{str(p)!r} is not an Inferix model bundle: {BUNDLE_FILE} is missing "
                                "(export one with `inferix train --config FILE`)")
    info = json.loads(info_path.read_text())
    model = build_model(str(p), device=device)
    lm = _assemble(name or info.get("name", p.name), model, info, _codec(info, p, device))
    lm.experts = _experts(info.get("experts"), p, model)
    return lm


EXPERTS_DIR = "experts"
DELTA_FORMAT = "inferix-expert-delta/1"


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


def apply_delta(model: torch.nn.Module, delta: Mapping[str, torch.Tensor]) -> torch.nn.Module:
    """A copy of ``model`` with an :func:`extract_delta` difference added (in the model's dtype).

    Raises:
        ValueError: the difference names a tensor the model lacks, or one of another shape.
    """
    import copy

    state = model.state_dict()
    new: dict[str, torch.Tensor] = {}
    for key in delta:
        name, kind = key.rsplit(".", 1)
        if name not in state or kind not in ("delta", "up", "down"):
            raise ValueError(f"expert tensor {key!r} fits no tensor of the main DiT")
        if kind == "down":
            continue
        if kind == "up" and f"{name}.down" not in delta:
            raise ValueError(f"expert tensor {key!r} has no {name}.down to multiply")
        diff = delta[key].float() if kind == "delta" else delta[key].float() @ delta[f"{name}.down"].float()
        if diff.shape != state[name].shape:
            raise ValueError(f"expert tensor {key!r}: difference of shape {tuple(diff.shape)} for "
                             f"{name} {tuple(state[name].shape)}")
        new[name] = (state[name].float() + diff.to(state[name].device)).to(state[name].dtype)
    expert = copy.deepcopy(model)
    expert.load_state_dict(new, strict=False)
    return expert.eval()


def _expert_order(raw: Mapping[str, Any]) -> list[str]:
    """The entries' names, each after the expert its ``base`` names (which must be another entry).

    Raises:
        ValueError: a ``base`` names no entry, or the bases form a cycle.
    """
    order: list[str] = []
    for name in raw:
        chain: list[str] = []
        at: str | None = str(name)
        while at is not None and at not in order:
            if at in chain:
                raise ValueError(f"{BUNDLE_FILE}: experts {' -> '.join([*chain, at])}: the bases form a cycle")
            chain.append(at)
            base = (raw[at] or {}).get("base")
            if base is not None and (not isinstance(base, str) or base not in raw):
                raise ValueError(f"{BUNDLE_FILE}: experts[{at!r}].base must name another expert of the bundle "
                                 f"(it has: {', '.join(sorted(raw))}), got {base!r}")
            at = base
        order.extend(reversed(chain))
    return order


def _experts(raw: Any, folder: Path, model: Any) -> dict[str, Expert]:
    """``bundle.json``'s ``experts`` (``{name: {"contents": [...], "weights": FILE, "steps": [...],
    "start": "noise" | "anchor", "base": OTHER}}``, ``steps``, ``start`` and ``base`` optional),
    loaded. Entries that name the same weights file on the same base (one fine-tune served two
    ways) share one DiT; an entry with a ``base`` adds its difference to that expert's DiT."""
    from safetensors.torch import load_file

    experts: dict[str, Expert] = {}
    dits: dict[tuple[Path, str | None], Any] = {}
    raw = raw or {}
    for name in _expert_order(raw):
        entry = raw[name]
        contents, weights = (entry or {}).get("contents"), (entry or {}).get("weights")
        if not (isinstance(contents, list) and contents and all(isinstance(c, str) for c in contents)
                and isinstance(weights, str)):
            raise ValueError(f"{BUNDLE_FILE}: experts[{name!r}] needs contents (a list of generators or families) "
                             f"and weights (a .safetensors file in the bundle), got {entry!r}")
        path = folder / weights
        if not path.is_file():
            raise FileNotFoundError(f"{BUNDLE_FILE}: expert {name!r} names {weights}, which is not in {folder}")
        steps, start = (entry or {}).get("steps"), (entry or {}).get("start", "noise")
        from_anchor = _expert_start(name, start, steps)
        base = (entry or {}).get("base")
        if (path, base) not in dits:
            dits[(path, base)] = apply_delta(model if base is None else experts[base].model, load_file(str(path)))
        experts[str(name)] = Expert(str(name), tuple(contents), dits[(path, base)],
                                    None if steps is None else _expert_steps(name, steps, from_anchor), from_anchor,
                                    base)
    return experts


EXPERT_STARTS = ("noise", "anchor")


def _expert_start(name: str, start: Any, steps: Any) -> bool:
    """``experts.NAME.start``: True for ``"anchor"`` (which needs the expert's own ``steps``)."""
    if start not in EXPERT_STARTS:
        raise ValueError(f"{BUNDLE_FILE}: experts[{name!r}].start must be one of {', '.join(EXPERT_STARTS)}, "
                         f"got {start!r}")
    if start == "anchor" and steps is None:
        raise ValueError(f"{BUNDLE_FILE}: experts[{name!r}].start 'anchor' needs the expert's own steps, the "
                         "first one the noise level the previous frame starts at (e.g. [200])")
    return start == "anchor"


def _expert_steps(name: str, steps: Any, from_anchor: bool = False) -> tuple[float, ...]:
    """An expert's own step list: numbers descending strictly, all in (0, 1000] as ``EngineConfig``
    requires, starting from pure noise (1000), or below 1000 for an expert that starts from the
    previous frame (``from_anchor``), so a bad list is refused when it is stored."""
    if not (isinstance(steps, list) and steps and all(isinstance(t, int | float) for t in steps)):
        raise ValueError(f"{BUNDLE_FILE}: experts[{name!r}].steps must be a list of timesteps, got {steps!r}")
    ts = tuple(float(t) for t in steps)
    descends = not any(b >= a for a, b in zip(ts, ts[1:], strict=False)) and ts[-1] > 0.0
    if from_anchor and not (descends and ts[0] < 1000.0):
        raise ValueError(f"{BUNDLE_FILE}: experts[{name!r}].steps of an expert that starts from the previous "
                         f"frame must start below 1000 and descend strictly, staying above 0 (e.g. [200]), "
                         f"got {list(ts)}")
    if not from_anchor and not (descends and ts[0] == 1000.0):
        raise ValueError(f"{BUNDLE_FILE}: experts[{name!r}].steps must start at 1000 and descend strictly, "
                         f"staying above 0 (e.g. [1000, 500, 200, 50]), got {list(ts)}")
    return ts


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
    from_anchor = _expert_start(name, start, steps)
    own_steps = None if steps is None else _expert_steps(name, list(steps), from_anchor)
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
