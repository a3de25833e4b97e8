"""Named Inferix models: what ``--model NAME`` resolves to.

A named model bundles the DiT, the codec (latents <-> pixels), the text encoder, the
action vocabulary and the sampling defaults. ``tiny`` is a random-init tiny DiT
(seeded, so runs are reproducible) with a pixel-space identity codec and a hashed text
embedding — it needs no weights and runs a minute of video on a CPU. Any other
``NAME_OR_PATH`` is handed to ``inferix.models.build_model`` (a config name or a local
checkpoint); such models need a local text encoder (``text_encoder=PATH``) or
precomputed embeddings.

Hashed text embedding (tiny models without a local umT5): the prompt is lower-cased and
split on whitespace; token ``i`` becomes a unit-variance vector drawn from a generator
seeded by the first 8 bytes of ``sha256(token)``, plus a sinusoidal position term; the
sequence is zero-padded to ``text_len``. Same prompt -> same embedding on every machine;
different prompts -> different embeddings. It carries no meaning — it only makes the
conditioning path (cross-attention K/V once per prompt, prompt changes) real.
"""

from __future__ import annotations

import difflib
import hashlib
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

# Action vocabulary of the tiny model (a game-like controller; "idle" = no input).
TINY_ACTIONS: tuple[str, ...] = ("idle", "forward", "backward", "left", "right", "jump", "turn_left", "turn_right")


class HashedTextEncoder:
    """Deterministic text embedding from token hashes (see the module docstring).

    Args:
        text_dim: embedding width.
        text_len: tokens per prompt (zero-padded); longer prompts are an error.
    """

    def __init__(self, text_dim: int, text_len: int) -> None:
        self.text_dim = text_dim
        self.text_len = text_len

    def __call__(self, prompt: str) -> Any:
        """``prompt`` -> ``[1, text_len, text_dim]`` float32."""
        import torch

        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a string, got {type(prompt).__name__}")
        tokens = prompt.lower().split()
        if len(tokens) > self.text_len:
            raise ValueError(f"prompt has {len(tokens)} tokens, this model takes at most {self.text_len}; "
                             "shorten it")
        out = torch.zeros(1, self.text_len, self.text_dim)
        pos = torch.arange(self.text_dim // 2, dtype=torch.float64)
        for i, tok in enumerate(tokens):
            seed = int.from_bytes(hashlib.sha256(tok.encode()).digest()[:8], "little")
            vec = torch.randn(self.text_dim, generator=torch.Generator().manual_seed(seed))
            ang = i / (10000 ** (2 * pos / self.text_dim))
            vec[: self.text_dim // 2 * 2] += 0.1 * torch.cat([ang.sin(), ang.cos()]).float()
            out[0, i] = vec
        return out


@dataclass
class ActionVocab:
    """Action names -> ids of a discrete-action model.

    Accepts a name (``"forward"``), an id, or a dict with a ``name`` key (WorldOlympiad's
    structured actions); ``None`` maps to ``default``.
    """

    names: Sequence[str]
    default: str = "idle"

    def id_of(self, action: Any) -> int:
        if action is None:
            action = self.default
        if isinstance(action, dict):
            action = action.get("name", action.get("action"))
        if isinstance(action, (int, np.integer)) and not isinstance(action, bool):
            if 0 <= int(action) < len(self.names):
                return int(action)
            raise ValueError(f"action id {action} out of range 0..{len(self.names) - 1} (actions: {list(self.names)})")
        if isinstance(action, str) and action in self.names:
            return list(self.names).index(action)
        close = difflib.get_close_matches(str(action), list(self.names), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"unknown action {action!r}.{hint} This model's actions: {', '.join(self.names)}")

    def __call__(self, action: Any) -> Any:
        """Model input ``LongTensor [1]``."""
        import torch

        return torch.tensor([self.id_of(action)], dtype=torch.long)


class PixelCodec:
    """Identity codec of tiny models: latent frame = pixel frame, first 3 channels = RGB in [-1, 1].

    Decoding is frame-local, so block-by-block decode equals whole-video decode and the
    state is empty. ``upscale`` repeats pixels so a 16x16 latent can be shown at 64x64.
    """

    def __init__(self, upscale: int = 1) -> None:
        self.upscale = upscale

    def init_state(self) -> None:
        return None

    def decode_block(self, latents: Any, state: Any) -> tuple[np.ndarray, Any]:
        """``[1, C>=3, F, h, w]`` -> ``uint8 [F, h*upscale, w*upscale, 3]``."""
        x = latents[0, :3].float().clamp(-1, 1)  # [3, F, h, w]
        frames = ((x + 1) * 127.5).round().to(dtype=__import__("torch").uint8).permute(1, 2, 3, 0)
        arr = frames.cpu().numpy()
        if self.upscale > 1:
            arr = arr.repeat(self.upscale, 1).repeat(self.upscale, 2)
        return np.ascontiguousarray(arr), state

    def pixel_frames(self, latent_frames: int) -> int:
        return latent_frames


@dataclass
class LoadedModel:
    """Everything the engine needs to serve one model.

    Attributes:
        name: the name or path it was loaded from.
        model: the DiT.
        codec: block decoder.
        text_encoder: ``str -> [1, L, text_dim]``.
        action_encoder: ``action -> model input`` (``None``: no action input).
        actions: action names (empty if none).
        latent_hw: default latent grid.
        block_frames: latent frames per block.
        fps: pixel frames per second of the output.
        timesteps: denoising timesteps per block.
        frames_per_latent: pixel frames per latent frame (the VAE's temporal stride; 1 for tiny).
    """

    name: str
    model: Any
    codec: Any
    text_encoder: Callable[[str], Any]
    action_encoder: Callable[[Any], Any] | None
    actions: tuple[str, ...] = ()
    latent_hw: tuple[int, int] = (16, 16)
    block_frames: int = 3
    fps: float = 16.0
    timesteps: tuple[float, ...] = field(default_factory=tuple)
    frames_per_latent: int = 1
    pixel_scale: int = 1  # pixels per latent cell

    def pixel_hw(self, latent_hw: tuple[int, int] | None = None) -> tuple[int, int]:
        h, w = latent_hw or self.latent_hw
        return h * self.pixel_scale, w * self.pixel_scale

    def latent_hw_for(self, pixel_hw: tuple[int, int]) -> tuple[int, int]:
        """Latent grid for a pixel size (rounded to the patch size, at least one patch)."""
        ph, pw = self.model.config.patch_size[1:]
        h = max(ph, round(pixel_hw[0] / self.pixel_scale / ph) * ph)
        w = max(pw, round(pixel_hw[1] / self.pixel_scale / pw) * pw)
        return h, w


def _tiny(device: str = "cpu", seed: int = 0, **_: Any) -> LoadedModel:
    import torch

    from inferix.engine import SELF_FORCING_TIMESTEPS
    from inferix.models.causal_wan import CausalWanModel
    from inferix.models.configs import get_config

    cfg = get_config("tiny").replace(num_actions=len(TINY_ACTIONS))
    torch.manual_seed(seed)
    model = CausalWanModel(cfg)
    if model.action_embedder is not None:  # zero-init by design for fine-tuning; random here so actions matter
        torch.nn.init.normal_(model.action_embedder.table.weight, std=0.5,
                              generator=torch.Generator().manual_seed(seed + 1))
    model.eval().to(device)
    return LoadedModel("tiny", model, PixelCodec(), HashedTextEncoder(cfg.text_dim, cfg.text_len),
                       ActionVocab(TINY_ACTIONS), TINY_ACTIONS, latent_hw=(16, 16), block_frames=3, fps=16.0,
                       timesteps=SELF_FORCING_TIMESTEPS)


MODELS: dict[str, Callable[..., LoadedModel]] = {"tiny": _tiny}


def load_model(name_or_path: str, device: str = "cpu", **options: Any) -> LoadedModel:
    """Resolve a model name (``tiny``) or anything ``inferix.models.build_model`` accepts.

    Raises:
        ValueError: unknown name / unusable path (the message lists the named models).
    """
    if name_or_path in MODELS:
        return MODELS[name_or_path](device=device, **options)
    try:
        from inferix.models import build_model  # type: ignore[attr-defined]
    except ImportError as e:
        raise ValueError(f"unknown model {name_or_path!r}; named models: {', '.join(MODELS)}") from e
    try:
        model = build_model(name_or_path, device=device)
    except (KeyError, FileNotFoundError, ValueError) as e:
        raise ValueError(f"cannot load model {name_or_path!r}: {e}. Named models: {', '.join(MODELS)}") from e
    text_path = options.get("text_encoder")
    if text_path is None:
        cfg = model.config
        logger.warning("model %s: no text_encoder given; using the hashed text embedding (no meaning)", name_or_path)
        text: Callable[[str], Any] = HashedTextEncoder(cfg.text_dim, min(cfg.text_len, 512))
    else:
        from inferix.models import load_text_encoder  # type: ignore[attr-defined]

        text = load_text_encoder(text_path, device=device)
    return LoadedModel(name_or_path, model, PixelCodec(), text, None, latent_hw=(16, 16), block_frames=3,
                       fps=16.0, timesteps=_default_timesteps())


def _default_timesteps() -> tuple[float, ...]:
    from inferix.engine import SELF_FORCING_TIMESTEPS

    return SELF_FORCING_TIMESTEPS


def seconds_to_blocks(seconds: float, fps: float, block_frames: int, frames_per_latent: int = 1) -> int:
    """Blocks needed for at least ``seconds`` of video."""
    frames = math.ceil(seconds * fps)
    return max(1, math.ceil(frames / (block_frames * frames_per_latent)))
