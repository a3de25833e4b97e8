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
                                         "weights": "experts/NAME.safetensors"}}``;
                                         ``reference_world_lab.bundles.add_expert``),
                                         or to another expert's DiT (``"base": OTHER``: a fine-tune of
                                         that expert, stored as its own smaller difference)
    MODEL_CARD.md                        data, steps, wall time, hardware, scores

:func:`load_bundle` turns that folder into the :class:`~inferix.loaded.LoadedModel` the engine
serves; :func:`random_bundle` gives the same architecture with fresh weights (the "random
weights" baseline). Writing bundles and experts (from a training config, a fine-tune) is the
reference model's lab's business: :mod:`reference_world_lab.bundles`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferix.loaded import ActionVocab, HashedTextEncoder, LoadedModel
from inferix.sampling import SamplingConfig

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

__all__ = ["BUNDLE_FILE", "BundleModel", "Expert", "MappedActionVocab", "TruncatingTextEncoder", "apply_delta",
           "assemble_bundle", "generator_keys", "is_bundle", "load_bundle", "random_bundle"]

BUNDLE_FILE = "bundle.json"


def generator_keys(generator: str | None) -> list[str]:
    """Keys a per-content setting may use for ``generator``, most specific first: the generator
    (``mechanics.bounce``), then its family (``mechanics``); none for an unnamed generator."""
    return [generator, generator.split(".")[0]] if generator else []


@dataclass
class MappedActionVocab(ActionVocab):
    """An :class:`~inferix.loaded.ActionVocab` that also accepts the scenario names of ``aliases``.

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
            ``SamplingConfig.start_from_anchor``).
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
    """A :class:`~inferix.loaded.LoadedModel` that generates at most ``max_side`` pixels per side.

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
        for key in generator_keys(content):
            for expert in self.experts.values():
                if key in expert.contents:
                    return expert
        return None

    def model_for(self, content: str | None = None) -> Any:
        """The DiT of :meth:`expert_for` ``content``; the main DiT when no expert serves it."""
        expert = self.expert_for(content)
        return self.model if expert is None else expert.model

    def sampling_for(self, content: str | None = None) -> SamplingConfig:
        """As :meth:`LoadedModel.sampling_for`: the step list and start of :meth:`expert_for` ``content``
        when it has its own, and the action guidance ``content_guidance`` lists for the content
        (generator name, else family)."""
        own, expert = self.sampling, self.expert_for(content)
        guidance = _per_content(self.content_guidance, content)
        return dataclasses.replace(
            own,
            timesteps=own.timesteps if expert is None or expert.timesteps is None else expert.timesteps,
            start_from_anchor=expert is not None and expert.start_from_anchor,
            action_guidance=own.action_guidance if guidance is None else guidance)

    def models(self) -> list[Any]:
        # experts that share a weights file share one DiT: list each once
        return list({id(m): m for m in (self.model, *(e.model for e in self.experts.values()))}.values())

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


def assemble_bundle(name: str, model: Any, info: dict[str, Any], codec: Any) -> BundleModel:
    """The :class:`BundleModel` of DiT ``model`` and ``codec`` described by ``info`` (``bundle.json``)."""
    acts = info["actions"]
    vocab = MappedActionVocab(tuple(acts["vocabulary"]), default=acts["default"], aliases=dict(acts.get("map", {})))
    cfg = model.config
    return BundleModel(
        name, model, codec, TruncatingTextEncoder(cfg.text_dim, cfg.text_len), vocab, tuple(acts["vocabulary"]),
        latent_hw=tuple(info.get("latent_hw", (16, 16))), block_frames=int(info["block_frames"]),
        fps=float(info["fps"]),
        sampling=SamplingConfig.from_bundle(info["sampler"], _sampler_timesteps(list(info["sampler"]["steps"]),
                                                                                float(info["sampler"]["shift"]))),
        max_side=info.get("max_side"), cache_policy=info.get("cache_policy"),
        content_grids=_content_grids(info.get("content_grids")),
        content_guidance=_content_guidance(info["sampler"].get("content_guidance")),
    )


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
    return assemble_bundle(name or f"{info.get('name', p.name)}-random", model.to(device).eval(), info,
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
                                "(export one with `reference-world-lab train --config FILE`)")
    info = json.loads(info_path.read_text())
    model = build_model(str(p), device=device)
    lm = assemble_bundle(name or info.get("name", p.name), model, info, _codec(info, p, device))
    lm.experts = _experts(info.get("experts"), p, model)
    return lm


EXPERTS_DIR = "experts"
DELTA_FORMAT = "inferix-expert-delta/1"


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
        from_anchor = expert_start(name, start, steps)
        base = (entry or {}).get("base")
        if (path, base) not in dits:
            dits[(path, base)] = apply_delta(model if base is None else experts[base].model, load_file(str(path)))
        experts[str(name)] = Expert(str(name), tuple(contents), dits[(path, base)],
                                    None if steps is None else expert_steps(name, steps, from_anchor), from_anchor,
                                    base)
    return experts


EXPERT_STARTS = ("noise", "anchor")


def expert_start(name: str, start: Any, steps: Any) -> bool:
    """``experts.NAME.start``: True for ``"anchor"`` (which needs the expert's own ``steps``)."""
    if start not in EXPERT_STARTS:
        raise ValueError(f"{BUNDLE_FILE}: experts[{name!r}].start must be one of {', '.join(EXPERT_STARTS)}, "
                         f"got {start!r}")
    if start == "anchor" and steps is None:
        raise ValueError(f"{BUNDLE_FILE}: experts[{name!r}].start 'anchor' needs the expert's own steps, the "
                         "first one the noise level the previous frame starts at (e.g. [200])")
    return start == "anchor"


def expert_steps(name: str, steps: Any, from_anchor: bool = False) -> tuple[float, ...]:
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
