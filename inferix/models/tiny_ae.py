"""A small learned image codec: diffusers' ``AutoencoderTiny`` (the TAESD architecture) per frame.

Why: a pixel-space model must carry every pixel value through its hidden state, so a DiT that
sees sprites sharply at 128 px needs either tiny tokens (too many on a CPU) or a wide residual
stream. An 8x autoencoder trained on the scenario frames turns an ``8 x 8 x 3`` patch (192
values) into ``latent_channels`` numbers and decodes them back with crisp edges and exact
palette colours — the same split as Wan's VAE + DiT, at a size a CPU trains in minutes.

* Frames are coded independently (``temporal_stride = 1``): streaming decode is stateless and
  block boundaries cannot seam.
* Latents are normalised per channel (``(z - mean) / std``, statistics measured on the training
  frames and stored beside the weights), so the diffusion model sees unit-scale latents.
* On disk (``<dir>/``): ``config.json`` + ``diffusion_pytorch_model.safetensors`` written by
  diffusers' ``save_pretrained`` (read back with ``AutoencoderTiny.from_pretrained`` — local
  path, safetensors only) and ``latent_stats.json`` (``mean``, ``std`` lists).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

__all__ = ["STATS_FILE", "TinyAECodec", "is_tiny_ae"]

STATS_FILE = "latent_stats.json"


def is_tiny_ae(path: str | Path) -> bool:
    """True if ``path`` holds a saved :class:`TinyAECodec`."""
    p = Path(path).expanduser()
    return (p / STATS_FILE).is_file() and (p / "config.json").is_file()


class TinyAECodec:
    """Per-frame 8x (``2 ** (levels - 1)``) autoencoder codec with normalised latents.

    Args:
        ae: a diffusers ``AutoencoderTiny``.
        mean, std: per-channel latent statistics (``None``: 0 and 1, i.e. not yet measured).
    """

    temporal_stride = 1

    def __init__(self, ae: Any, mean: list[float] | None = None, std: list[float] | None = None) -> None:
        import torch

        self.ae = ae
        c = int(ae.config.latent_channels)
        self.latent_channels = c
        self.spatial_stride = 2 ** (len(ae.config.encoder_block_out_channels) - 1)
        self.mean = torch.tensor(mean if mean is not None else [0.0] * c, dtype=torch.float32).view(1, c, 1, 1)
        self.std = torch.tensor(std if std is not None else [1.0] * c, dtype=torch.float32).view(1, c, 1, 1)

    # ------------------------------------------------------------------ construction
    @classmethod
    def build(cls, latent_channels: int = 16, channels: int = 32, levels: int = 4,
              encoder_blocks: tuple[int, ...] | None = None, decoder_blocks: tuple[int, ...] | None = None,
              seed: int = 0) -> TinyAECodec:
        """A freshly initialised codec (seeded). Default blocks keep the full-resolution level cheap:
        no residual block at full resolution on either side."""
        import torch
        from diffusers import AutoencoderTiny

        enc = tuple(encoder_blocks) if encoder_blocks is not None else (0,) + (1,) * (levels - 1)
        dec = tuple(decoder_blocks) if decoder_blocks is not None else (1,) * (levels - 1) + (0,)
        if not (len(enc) == len(dec) == levels):
            raise ValueError(f"encoder_blocks {enc} and decoder_blocks {dec} need {levels} entries (one per level)")
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            ae = AutoencoderTiny(encoder_block_out_channels=(channels,) * levels,
                                 decoder_block_out_channels=(channels,) * levels, latent_channels=latent_channels,
                                 num_encoder_blocks=enc, num_decoder_blocks=dec)
        return cls(ae.eval())  # type: ignore[attr-defined]  # diffusers' ModelMixin hides nn.Module from mypy

    @classmethod
    def from_pretrained(cls, path: str | Path, device: str = "cpu") -> TinyAECodec:
        """Load a codec saved by :meth:`save_pretrained` (safetensors only).

        Raises:
            FileNotFoundError: ``path`` is not a saved codec (the message names what is missing).
        """
        from diffusers import AutoencoderTiny

        p = Path(path).expanduser()
        if not is_tiny_ae(p):
            raise FileNotFoundError(f"{str(p)!r} is not a saved TinyAECodec: it needs config.json and {STATS_FILE} "
                                    "(train one with `reference-world-lab train` and a `codec:` section of type tiny_ae)")
        ae = AutoencoderTiny.from_pretrained(str(p), use_safetensors=True, local_files_only=True).to(device).eval()
        stats = json.loads((p / STATS_FILE).read_text())
        return cls(ae, stats["mean"], stats["std"])

    def save_pretrained(self, path: str | Path) -> Path:
        """Write weights (safetensors), config and latent statistics into ``path``."""
        p = Path(path).expanduser()
        p.mkdir(parents=True, exist_ok=True)
        self.ae.save_pretrained(str(p), safe_serialization=True)
        stats = {"mean": self.mean.flatten().tolist(), "std": self.std.flatten().tolist()}
        (p / STATS_FILE).write_text(json.dumps(stats, indent=1))
        return p

    # ------------------------------------------------------------------ codec interface
    @property
    def device(self) -> torch.device:
        return next(self.ae.parameters()).device

    def num_pixel_frames(self, latent_frames: int) -> int:
        return latent_frames

    def _check_pixels(self, pixels: torch.Tensor) -> None:
        s = self.spatial_stride
        if pixels.ndim != 5 or pixels.shape[1] != 3 or pixels.shape[3] % s or pixels.shape[4] % s:
            raise ValueError(f"pixels must be [B, 3, T, H, W] with H, W multiples of {s}, got {tuple(pixels.shape)}")

    def encode_raw(self, pixels: torch.Tensor) -> torch.Tensor:
        """``[N, 3, H, W]`` in [-1, 1] -> un-normalised latents ``[N, C, H/s, W/s]`` (with gradients)."""
        return self.ae.encoder(pixels)

    def decode_raw(self, z: torch.Tensor) -> torch.Tensor:
        """Un-normalised latents ``[N, C, h, w]`` -> pixels ``[N, 3, h s, w s]`` (with gradients, unclamped)."""
        return self.ae.decoder(z)

    def encode(self, pixels: torch.Tensor) -> torch.Tensor:
        """``[B, 3, T, H, W]`` in [-1, 1] -> normalised latents ``[B, C, T, H/s, W/s]``."""
        import torch

        self._check_pixels(pixels)
        b, _, t, h, w = pixels.shape
        x = pixels.transpose(1, 2).reshape(b * t, 3, h, w).to(self.device, torch.float32)
        with torch.no_grad():
            z = self.encode_raw(x)
        z = (z - self.mean.to(z.device)) / self.std.to(z.device)
        return z.reshape(b, t, self.latent_channels, h // self.spatial_stride, w // self.spatial_stride).transpose(1, 2)

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        """Normalised latents ``[B, C, F, h, w]`` -> pixels ``[B, 3, F, h s, w s]`` in [-1, 1]."""
        import torch

        b, c, f, h, w = latents.shape
        if c != self.latent_channels:
            raise ValueError(f"latents must have {self.latent_channels} channels, got {c}")
        z = latents.transpose(1, 2).reshape(b * f, c, h, w).to(self.device, torch.float32)
        z = z * self.std.to(z.device) + self.mean.to(z.device)
        with torch.no_grad():
            x = self.decode_raw(z).clamp(-1, 1)
        s = self.spatial_stride
        return x.reshape(b, f, 3, h * s, w * s).transpose(1, 2)

    def stream_decoder(self) -> Any:
        from inferix.models.vae import _StatelessDecoder

        return _StatelessDecoder(self)
