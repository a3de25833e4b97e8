"""What the engine serves: a loaded model (:class:`LoadedModel`) and its parts.

A loaded model bundles the DiT, the codec (latents <-> pixels), the text encoder, the action
vocabulary (:class:`ActionVocab`) and the sampling defaults. :mod:`inferix.registry` resolves
``--model NAME_OR_PATH`` to one; :mod:`inferix.bundle` loads exported bundles as one. Both import
this module, which imports neither (no import cycle inside the engine).

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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from inferix.sampling import SamplingConfig

logger = logging.getLogger(__name__)


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


# Direction words of a camera-frame displacement (OpenCV axes: x right, y down, z away from the
# camera), in axis order, positive first: see :func:`action_direction`.
DIRECTIONS: tuple[str, ...] = ("right", "left", "down", "up", "away", "toward")


def camera_frame_delta(delta: Sequence[float], camera_to_world: Any) -> list[float]:
    """A world-space displacement ``[dx, dy, dz]`` in the camera frame of a camera-to-world pose
    (4x4 or 3x3; OpenCV axes: x right, y down, z away from the camera)."""
    R = np.asarray(camera_to_world, dtype=np.float64)[:3, :3]
    d = np.zeros(3)
    v = np.asarray(delta, dtype=np.float64).ravel()[:3]
    d[: len(v)] = v
    return [float(x) for x in R.T @ d]


def with_camera_delta(action: Any, camera_to_world: Any) -> Any:
    """``action`` with ``delta_camera`` (its world ``delta`` in the camera frame of ``camera_to_world``)
    when it is a structured action with a delta and a pose is given; else ``action`` unchanged. The
    training data (from each case's first camera pose) and the WorldOlympiad bridge (likewise) add it."""
    if camera_to_world is None or not isinstance(action, dict) or action.get("delta") is None:
        return action
    return {**action, "delta_camera": camera_frame_delta(action["delta"], camera_to_world)}


def action_direction(vec: Sequence[float]) -> str | None:
    """The dominant axis of a camera-frame displacement as one of :data:`DIRECTIONS` (None for zero)."""
    v = np.asarray(vec, dtype=np.float64).ravel()[:3]
    if not v.size or not np.any(v):
        return None
    i = int(np.argmax(np.abs(v)))
    return DIRECTIONS[2 * i + (0 if v[i] > 0 else 1)]


def directional_name(action: Any) -> str | None:
    """``NAME@DIRECTION`` for a structured action that carries its camera-frame displacement
    (``{"name": "move_ee", "delta_camera": [x, y, z]}``: the WorldOlympiad bridge and the
    training data add it from the case camera), else None. A vocabulary that lists such names
    tells the model which way the end effector moves on screen, which the world-frame delta alone
    cannot (the camera's azimuth varies by case)."""
    if not isinstance(action, dict) or action.get("delta_camera") is None:
        return None
    name = action.get("name", action.get("action"))
    direction = action_direction(action["delta_camera"])
    return None if name is None or direction is None else f"{name}@{direction}"


@dataclass
class ActionVocab:
    """Action names -> ids of a discrete-action model.

    Accepts a name (``"forward"``), an id, or a dict with a ``name`` key (WorldOlympiad's
    structured actions); ``None`` maps to ``default``. A structured action with a camera-frame
    displacement maps to ``NAME@DIRECTION`` when the vocabulary lists it (:func:`directional_name`),
    else to its plain name.
    """

    names: Sequence[str]
    default: str = "idle"

    def directional_id(self, action: Any) -> int | None:
        """The id of ``action``'s ``NAME@DIRECTION`` when the vocabulary lists it, else None."""
        qualified = directional_name(action)
        return list(self.names).index(qualified) if qualified is not None and qualified in self.names else None

    def id_of(self, action: Any) -> int:
        if action is None:
            action = self.default
        if isinstance(action, dict):
            if (i := self.directional_id(action)) is not None:
                return i
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
        frames_per_latent: pixel frames per latent frame (the VAE's temporal stride; 1 for tiny).
        cache_policy: the KV policy the model was trained for (``None``: the caller's default,
            ``rolling:9``); an explicit ``--policy`` / ``model.policy`` option wins.
        sampling: the sampler it was tuned with (:class:`inferix.sampling.SamplingConfig`:
            timesteps, action guidance...; ``bundle.json``'s ``sampler`` section). A content may be
            served with other settings (:meth:`sampling_for`); a user's knobs override both.
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
    cache_policy: str | None = None
    sampling: SamplingConfig = field(default_factory=SamplingConfig)

    DEFAULT_POLICY = "rolling:9"

    def policy(self, requested: str | None = None) -> str:
        """The KV policy to serve with: ``requested``, else the model's own, else ``rolling:9``."""
        return requested or self.cache_policy or self.DEFAULT_POLICY

    def model_for(self, content: str | None = None) -> Any:
        """The DiT that generates ``content`` (a scenario generator such as ``mechanics.free_fall``):
        :attr:`model` for a plain model; a bundle may carry experts for some contents
        (:class:`inferix.bundle.BundleModel`)."""
        return self.model

    def models(self) -> list[Any]:
        """Every DiT this model serves (:attr:`model` and any experts), e.g. to cast them together."""
        return [self.model]

    def sampling_for(self, content: str | None = None) -> SamplingConfig:
        """The sampler ``content`` (a scenario generator such as ``mechanics.bounce``) is served with:
        :attr:`sampling` for a plain model; a bundle may serve a content with its expert's timesteps and
        start, or its own action guidance (:class:`inferix.bundle.BundleModel`)."""
        return self.sampling

    def engine_config(self, latent_hw: tuple[int, int], *, policy: str | None = None, content: str | None = None,
                      sampling: Mapping[str, Any] | None = None, **options: Any) -> Any:
        """The :class:`~inferix.engine.EngineConfig` this model is served with: its block size, KV policy
        (``policy`` or its own, :meth:`policy`) and :meth:`sampling_for` ``content`` with the user's
        ``sampling`` settings applied (:meth:`inferix.sampling.SamplingConfig.with_overrides`: knob
        name -> value, None = the model's own); ``options`` are the other engine settings
        (``max_frames``...)."""
        from inferix.engine import EngineConfig
        from inferix.kv_cache import CachePolicy

        return EngineConfig(latent_hw=latent_hw, block_frames=self.block_frames,
                            sampling=self.sampling_for(content).with_overrides(sampling),
                            policy=CachePolicy.parse(self.policy(policy)), **options)

    @property
    def pixel_scale(self) -> int:
        """Pixels per latent cell (the codec's spatial stride)."""
        return int(self.codec.spatial_stride)

    def pixel_hw(self, latent_hw: tuple[int, int] | None = None) -> tuple[int, int]:
        h, w = latent_hw or self.latent_hw
        return h * self.pixel_scale, w * self.pixel_scale

    def latent_hw_for(self, pixel_hw: tuple[int, int], content: str | None = None) -> tuple[int, int]:
        """Latent grid for a pixel size (rounded to the patch size, at least one patch).

        ``content`` names what the video shows (a scenario generator such as ``gaming.atari_pong``);
        a plain model generates every content at the grid nearest ``pixel_hw`` (a bundle may name
        its own grid per content: :class:`inferix.bundle.BundleModel`).
        """
        ph, pw = self.model.config.patch_size[1:]
        h = max(ph, round(pixel_hw[0] / self.pixel_scale / ph) * ph)
        w = max(pw, round(pixel_hw[1] / self.pixel_scale / pw) * pw)
        return h, w

    def pixel_frames(self, num_blocks: int) -> int:
        """Pixel frames ``num_blocks`` blocks decode to."""
        return int(self.codec.num_pixel_frames(num_blocks * self.block_frames))

    def blocks_for_seconds(self, seconds: float) -> int:
        """Blocks needed for at least ``seconds`` of video at :attr:`fps`."""
        need = math.ceil(seconds * self.fps)
        n = 1
        while self.pixel_frames(n) < need:
            n += 1
        return n

    def encode_image(self, image: np.ndarray, latent_hw: tuple[int, int]) -> Any:
        """``uint8 [H, W, 3]`` RGB -> ``[1, C, 1, h, w]`` latents (resized to the grid with OpenCV's area filter)."""
        import cv2
        import torch

        if not isinstance(image, np.ndarray) or image.dtype != np.uint8 or image.ndim != 3 or image.shape[-1] != 3:
            raise ValueError(f"image must be uint8 [H, W, 3] RGB, got {getattr(image, 'dtype', None)} "
                             f"{getattr(image, 'shape', None)}")
        h, w = self.pixel_hw(latent_hw)
        small = cv2.resize(image, (w, h), interpolation=cv2.INTER_AREA)
        px = torch.from_numpy(small).float().permute(2, 0, 1)[None, :, None] / 127.5 - 1.0  # [1, 3, 1, H, W]
        return self.codec.encode(px).float()
