"""Named Inferix models: what ``--model NAME`` resolves to.

A named model bundles the DiT, the codec (latents <-> pixels), the text encoder, the
action vocabulary and the sampling defaults. ``tiny`` is a random-init tiny DiT
(seeded, so runs are reproducible) with a pixel-space identity codec and a hashed text
embedding — it needs no weights and runs a minute of video on a CPU. Any other
``NAME_OR_PATH`` is handed to ``inferix.models.build_model`` (a config name or a local
checkpoint); such models need a local text encoder (``text_encoder=PATH``) or
precomputed embeddings.

The loaded model's parts (text embedding, action vocabulary, :class:`LoadedModel`) live in
:mod:`inferix.loaded`; they are re-exported here.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inferix.loaded import (  # re-exported: callers import them from here
    DIRECTIONS,
    ActionVocab,
    HashedTextEncoder,
    LoadedModel,
    action_direction,
    camera_frame_delta,
    directional_name,
    with_camera_delta,
)
from inferix.sampling import SamplingConfig

__all__ = ["DIRECTIONS", "ActionVocab", "HashedTextEncoder", "LoadedModel", "action_direction", "camera_frame_delta", "directional_name", "with_camera_delta", "MODELS", "REFERENCE_WORLD_DIR", "TINY_ACTIONS", "load_model", "model_fingerprint"]

logger = logging.getLogger(__name__)

# Action vocabulary of the tiny model (a game-like controller; "idle" = no input).
TINY_ACTIONS: tuple[str, ...] = ("idle", "forward", "backward", "left", "right", "jump", "turn_left", "turn_right")


def _tiny(device: str = "cpu", seed: int = 0, **_: Any) -> LoadedModel:
    import torch

    from inferix.models.causal_wan import CausalWanModel
    from inferix.models.configs import get_config
    from inferix.models.vae import IdentityCodec
    from inferix.schedulers import timesteps

    codec = IdentityCodec(patch=2)  # 2x2 pixel patches -> 12 latent channels
    cfg = get_config("tiny").replace(in_channels=codec.latent_channels, out_channels=codec.latent_channels,
                                     num_actions=len(TINY_ACTIONS))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = CausalWanModel(cfg)
        # zero-init by design (fine-tuning starts from plain Wan); random here so actions matter
        assert model.action_embedder is not None
        torch.nn.init.normal_(model.action_embedder.table.weight, std=0.5)
    model.eval().to(device)
    return LoadedModel("tiny", model, codec, HashedTextEncoder(cfg.text_dim, cfg.text_len),
                       ActionVocab(TINY_ACTIONS), TINY_ACTIONS, latent_hw=(16, 16), block_frames=3, fps=16.0,
                       sampling=SamplingConfig(timesteps=tuple(timesteps("self_forcing"))))


# The reference world model shipped in the package (trained by reference_world_lab; see its MODEL_CARD.md).
REFERENCE_WORLD_DIR = Path(__file__).resolve().parent / "weights" / "reference_world"


def _reference_world(device: str = "cpu", **_: Any) -> LoadedModel:
    from inferix.bundle import load_bundle

    return load_bundle(REFERENCE_WORLD_DIR, device=device, name="reference-world")


def _reference_world_random(device: str = "cpu", seed: int = 0, **_: Any) -> LoadedModel:
    """Same architecture as ``reference-world``, random weights (the leaderboard's noise baseline)."""
    from inferix.bundle import random_bundle

    return random_bundle(REFERENCE_WORLD_DIR, seed=seed, device=device, name="reference-world-random")


MODELS: dict[str, Callable[..., LoadedModel]] = {"tiny": _tiny, "reference-world": _reference_world,
                                                 "reference-world-random": _reference_world_random}

# the files behind the named models that have any (``tiny`` is code only)
_BUNDLE_DIRS = {"reference-world": REFERENCE_WORLD_DIR, "reference-world-random": REFERENCE_WORLD_DIR}


def model_fingerprint(name_or_path: str) -> str | None:
    """12 hex digits identifying the files behind a model (configs and weights; the random
    baseline is keyed by the architecture it copies), or None for a model defined by code alone
    (``tiny``) or a name that is no local path. Files over 64 MiB are keyed by name, size and
    their first and last MiB, so a multi-GB checkpoint is not read whole."""

    named = name_or_path in MODELS
    root = _BUNDLE_DIRS.get(name_or_path) if named else Path(name_or_path).expanduser()
    if root is None or not root.exists():
        return None
    files = sorted(p for p in (root.rglob("*") if root.is_dir() else [root])
                   if p.is_file() and p.suffix in (".json", ".safetensors", ".bin", ".pt", ".pth", ".yaml"))
    if not files:
        return None
    h = hashlib.sha256(name_or_path.encode() if named else b"")
    for p in files:
        size = p.stat().st_size
        h.update(f"{p.relative_to(root) if root.is_dir() else p.name}:{size}".encode())
        with p.open("rb") as f:
            if size <= 64 * 2**20:
                h.update(f.read())
            else:
                h.update(f.read(2**20))
                f.seek(-(2**20), 2)
                h.update(f.read())
    return h.hexdigest()[:12]


DTYPES = ("float32", "bfloat16", "float16")


def load_model(name_or_path: str, device: str = "cpu", dtype: str | None = None, vae_dtype: str | None = None,
               **options: Any) -> LoadedModel:
    """Resolve a model name (``tiny``) or anything ``inferix.models.build_model`` accepts.

    ``dtype`` (one of :data:`DTYPES`; default: as stored, float32 for every model here) casts the
    DiT, and with it the engine's latents and KV cache; the codec keeps its own. ``bfloat16`` is the
    fast choice on a GPU and on a CPU with bf16 matrix units (``lscpu | grep amx``: the reference
    model generated 1.7x faster at one thread in session 17); the numbers it gives differ from
    float32 by rounding.

    ``vae_dtype`` (default: float32) is the Wan VAE's: ``bfloat16`` decodes about 3x faster on an AMX CPU, with
    a PSNR against float32 that ``inferix bench --gpu`` measures (stage ``vae_bf16``: 50 dB for diffusers'
    full VAE with random weights on CPU; measure a trained checkpoint before serving it).

    Raises:
        ValueError: unknown name / unusable path (the message lists the named models), unknown dtype, a
            ``vae_dtype`` for a model whose codec is no VAE.
    """
    for what, value in (("dtype", dtype), ("vae_dtype", vae_dtype)):
        if value not in (None, "") and value not in DTYPES:
            raise ValueError(f"{what} must be one of {', '.join(DTYPES)}, got {value!r}")
    loaded = _resolve_model(name_or_path, device, **options)
    if dtype:
        import torch

        for dit in loaded.models():
            dit.to(getattr(torch, dtype))
    if vae_dtype:
        _cast_vae(loaded, vae_dtype)
    return loaded


def _cast_vae(loaded: LoadedModel, vae_dtype: str) -> None:
    """The loaded model's Wan VAE in ``vae_dtype``; an error naming the fix for a codec that is no VAE."""
    import torch

    from inferix.models.vae import WanVAECodec

    codec = loaded.codec
    if not isinstance(codec, WanVAECodec):
        if vae_dtype == "float32":  # what an identity codec computes in anyway
            return
        raise ValueError(f"vae_dtype={vae_dtype!r}: model {loaded.name!r} decodes with {type(codec).__name__}, "
                         "not a Wan VAE (pass vae=PATH, a local AutoencoderKLWan directory, or leave vae_dtype unset)")
    if codec.dtype != getattr(torch, vae_dtype):
        codec.vae.to(getattr(torch, vae_dtype))


def _resolve_model(name_or_path: str, device: str, **options: Any) -> LoadedModel:
    if name_or_path in MODELS:
        return MODELS[name_or_path](device=device, **options)
    from inferix.bundle import is_bundle, load_bundle

    if is_bundle(name_or_path):  # a folder exported by `reference-world-lab train`
        return load_bundle(name_or_path, device=device)
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
        from inferix.models.text_encoder import load_text_encoder

        text = load_text_encoder(text_path, device=device)
    vae = options.get("vae")
    if vae is not None:
        from inferix.models.vae import WanVAECodec

        codec: Any = WanVAECodec.from_pretrained(vae, device=device)
    elif (ch := model.config.out_channels) % 3 == 0 and int(math.isqrt(ch // 3)) ** 2 * 3 == ch:
        from inferix.models.vae import IdentityCodec

        codec = IdentityCodec(patch=math.isqrt(ch // 3))
    else:
        raise ValueError(f"model {name_or_path!r} has {model.config.out_channels} latent channels: pass vae=PATH "
                         "(a local AutoencoderKLWan directory) to decode them")
    from inferix.schedulers import timesteps

    # Wan VAE: 832x480 pixels -> 104x60 latents; 3 latent frames per block, 16 fps (Self-Forcing defaults)
    latent_hw = (60, 104) if codec.spatial_stride == 8 else (16, 16)
    return LoadedModel(name_or_path, model, codec, text, None, latent_hw=latent_hw, block_frames=3,
                       fps=16.0, sampling=SamplingConfig(timesteps=tuple(timesteps("self_forcing"))))
