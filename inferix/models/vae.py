"""Latent codecs: the Wan VAE decoded block by block, and a pixel-space identity codec.

Both implement the same small interface, used by the pipeline and the engine:

* ``latent_channels``, ``temporal_stride``, ``spatial_stride``;
* ``num_pixel_frames(latent_frames)`` -> pixel frames those latents decode to;
* ``stream_decoder()`` -> a :class:`StreamDecoder` for one video: ``decode(block)`` returns
  the pixels of that block of latents, carrying the decoder's causal state across calls;
* ``decode(latents)`` (whole video) and ``encode(pixels)`` (e.g. the first frame, for
  image-to-video conditioning).

Pixels are float ``[B, 3, T, H, W]`` in [-1, 1]; :func:`to_uint8` turns them into
``uint8 [B, T, H, W, 3]``.

Why the Wan VAE decodes seamlessly in blocks: its decoder is causal in time and already
runs one latent frame at a time, keeping the last two frames of every causal conv's input
in a feature cache (latent frame 0 -> 1 pixel frame, every later one -> 4). A
:class:`WanStreamDecoder` owns that cache per video and keeps it between blocks, so the
pixels of block k+1 see the same past as in a whole-video decode — no seam, no re-decode.
(The public engine resets the cache per block; that is the seam users see.)
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

__all__ = ["Codec", "IdentityCodec", "StreamDecoder", "WanVAECodec", "to_uint8"]


def to_uint8(pixels: torch.Tensor) -> torch.Tensor:
    """``[B, 3, T, H, W]`` in [-1, 1] -> ``uint8 [B, T, H, W, 3]``."""
    import torch

    x = ((pixels.float().clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8)
    return x.permute(0, 2, 3, 4, 1).contiguous()


class StreamDecoder(Protocol):
    """Decodes one video's latents block by block (state carried between calls)."""

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        """``[B, C, F, h, w]`` latents of the next block -> ``[B, 3, T, H, W]`` pixels."""
        ...

    def reset(self) -> None:
        """Forget the past (a new video)."""
        ...


class Codec(Protocol):
    latent_channels: int
    temporal_stride: int
    spatial_stride: int

    def num_pixel_frames(self, latent_frames: int) -> int: ...

    def stream_decoder(self) -> StreamDecoder: ...

    def decode(self, latents: torch.Tensor) -> torch.Tensor: ...

    def encode(self, pixels: torch.Tensor) -> torch.Tensor: ...


# -- identity codec ------------------------------------------------------------------------------


class IdentityCodec:
    """Pixel-space "latents" for tiny models: each ``p x p`` pixel patch becomes ``3 p^2`` channels.

    ``patch = 1`` is the plain identity (3 channels). No temporal compression, so block
    streaming is trivially seamless. Decoded pixels are clamped to [-1, 1].

    Args:
        patch: spatial patch (pixel-unshuffle factor).
    """

    temporal_stride = 1

    def __init__(self, patch: int = 1) -> None:
        if patch < 1:
            raise ValueError(f"patch must be >= 1, got {patch}")
        self.patch = patch
        self.spatial_stride = patch
        self.latent_channels = 3 * patch * patch

    def num_pixel_frames(self, latent_frames: int) -> int:
        return latent_frames

    def encode(self, pixels: torch.Tensor) -> torch.Tensor:
        """``[B, 3, T, H, W]`` -> ``[B, 3 p^2, T, H/p, W/p]``."""
        import torch.nn.functional as F

        b, c, t, h, w = pixels.shape
        if c != 3 or h % self.patch or w % self.patch:
            raise ValueError(
                f"pixels must be [B, 3, T, H, W] with H, W multiples of {self.patch}, got {tuple(pixels.shape)}"
            )
        x = pixels.transpose(1, 2).reshape(b * t, c, h, w)
        x = F.pixel_unshuffle(x, self.patch)
        return x.reshape(b, t, -1, h // self.patch, w // self.patch).transpose(1, 2)

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        """``[B, 3 p^2, F, h, w]`` -> ``[B, 3, F, h p, w p]``."""
        import torch.nn.functional as F

        b, c, f, h, w = latents.shape
        if c != self.latent_channels:
            raise ValueError(f"latents must have {self.latent_channels} channels, got {c}")
        x = latents.transpose(1, 2).reshape(b * f, c, h, w)
        x = F.pixel_shuffle(x, self.patch)
        return x.reshape(b, f, 3, h * self.patch, w * self.patch).transpose(1, 2).clamp(-1, 1)

    def stream_decoder(self) -> StreamDecoder:
        return _StatelessDecoder(self)


class _StatelessDecoder:
    """Per-frame codecs (no temporal state): a block decodes on its own."""

    def __init__(self, codec: Codec) -> None:
        self.codec = codec

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        return self.codec.decode(latents)

    def reset(self) -> None:
        pass


# -- Wan VAE ---------------------------------------------------------------------------------------


def random_wan_codec(latent_channels: int, base_dim: int = 4, seed: int = 0, device: str = "cpu") -> WanVAECodec:
    """A random-init diffusers ``AutoencoderKLWan`` of the given latent channels, one residual block per level and
    ``base_dim`` wide, on raw latents (``normalize=False``): a small VAE with the Wan decoder's causal state, for
    benchmarks and tests (no weights are downloaded)."""
    import torch
    from diffusers import AutoencoderKLWan

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        vae: Any = AutoencoderKLWan(base_dim=base_dim, z_dim=latent_channels, dim_mult=[1, 1, 1, 1],
                                    num_res_blocks=1, temperal_downsample=[False, True, True])
    return WanVAECodec(vae.to(device).eval(), normalize=False)


class WanVAECodec:
    """diffusers ``AutoencoderKLWan`` with block-streamed decoding.

    Latents seen by the DiT are normalised per channel (``(z - mean) / std`` with the VAE
    config's ``latents_mean`` / ``latents_std``, as Wan's pipelines do); ``normalize=False``
    works on raw VAE latents.

    Args:
        vae: an ``AutoencoderKLWan`` (tiling is not used: streaming keeps memory bounded per block).
        normalize: apply the latent normalisation.
    """

    def __init__(self, vae: Any, normalize: bool = True) -> None:
        import torch

        self.vae = vae.eval()
        cfg = vae.config
        self.latent_channels = int(cfg.z_dim)
        self.temporal_stride = int(getattr(cfg, "scale_factor_temporal", None) or 4)
        self.spatial_stride = int(getattr(cfg, "scale_factor_spatial", None) or 8)
        self.patch_size = getattr(cfg, "patch_size", None)
        self.normalize = normalize
        mean = torch.tensor(cfg.latents_mean, dtype=torch.float32)[: self.latent_channels]
        std = torch.tensor(cfg.latents_std, dtype=torch.float32)[: self.latent_channels]
        self._mean = mean.view(1, -1, 1, 1, 1)
        self._std = std.view(1, -1, 1, 1, 1)

    @classmethod
    def from_pretrained(
        cls,
        path: str | Path,
        device: str | torch.device = "cpu",
        dtype: torch.dtype | None = None,
        normalize: bool = True,
    ) -> WanVAECodec:
        """Load a local ``AutoencoderKLWan`` directory (or a pipeline directory with a ``vae/`` folder)."""
        import torch
        from diffusers import AutoencoderKLWan

        path = Path(path).expanduser()
        if not path.exists():
            raise FileNotFoundError(f"VAE path {str(path)!r} does not exist")
        sub = path / "vae"
        vae = AutoencoderKLWan.from_pretrained(str(sub if sub.is_dir() else path), torch_dtype=dtype or torch.float32)
        return cls(vae.to(device), normalize=normalize)

    @property
    def device(self) -> torch.device:
        return next(self.vae.parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        return next(self.vae.parameters()).dtype

    def num_pixel_frames(self, latent_frames: int) -> int:
        """Causal VAE: the first latent frame is one pixel frame, every later one ``temporal_stride``."""
        return 0 if latent_frames <= 0 else 1 + self.temporal_stride * (latent_frames - 1)

    def _denormalize(self, latents: torch.Tensor) -> torch.Tensor:
        if not self.normalize:
            return latents.to(self.dtype)
        mean, std = self._mean.to(latents.device), self._std.to(latents.device)
        return (latents.float() * std + mean).to(self.dtype)

    def _check(self, latents: torch.Tensor) -> None:
        if latents.ndim != 5 or latents.shape[1] != self.latent_channels:
            raise ValueError(f"latents must be [B, C={self.latent_channels}, F, h, w], got {tuple(latents.shape)}")

    def stream_decoder(self) -> WanStreamDecoder:
        return WanStreamDecoder(self)

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        """Whole-video decode through diffusers (the reference for the streamed decode).

        Args:
            latents: ``[B, C, F, h, w]`` (normalised unless ``normalize=False``).

        Returns:
            ``[B, 3, 1 + 4 (F - 1), H, W]`` in [-1, 1].
        """
        import torch

        self._check(latents)
        with torch.no_grad():
            return self.vae.decode(self._denormalize(latents), return_dict=False)[0]

    def encode(
        self, pixels: torch.Tensor, sample: bool = False, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        """Encode pixels (e.g. the conditioning first frame, ``T = 1``) to normalised latents.

        Args:
            pixels: ``[B, 3, T, H, W]`` in [-1, 1], ``T = 1 + 4k``.
            sample: draw from the posterior instead of taking its mode.
            generator: for ``sample``.

        Returns:
            ``[B, C, 1 + k, H/8, W/8]``.
        """
        import torch

        t = pixels.shape[2]
        if pixels.ndim != 5 or pixels.shape[1] != 3 or (t - 1) % self.temporal_stride:
            raise ValueError(
                f"pixels must be [B, 3, T, H, W] with T = 1 + {self.temporal_stride}k, got {tuple(pixels.shape)}"
            )
        with torch.no_grad():
            dist = self.vae.encode(pixels.to(self.device, self.dtype)).latent_dist
            z = dist.sample(generator) if sample else dist.mode()
        if not self.normalize:
            return z
        return ((z.float() - self._mean.to(z.device)) / self._std.to(z.device)).to(z.dtype)


class WanStreamDecoder:
    """One video's streamed Wan decode (see the module docstring).

    Not thread-safe; one per session. The feature cache holds two frames per causal conv
    (a few MB at 480p), independent of video length.
    """

    def __init__(self, codec: WanVAECodec) -> None:
        self.codec = codec
        self.reset()

    def reset(self) -> None:
        vae = self.codec.vae
        self._feat_map: list[Any] = [None] * vae._cached_conv_counts["decoder"]
        self._frames_done = 0

    @property
    def frames_decoded(self) -> int:
        """Latent frames decoded so far."""
        return self._frames_done

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        """Decode the next block of latents.

        Args:
            latents: ``[B, C, F, h, w]`` — the latent frames following those already decoded.

        Returns:
            ``[B, 3, T, H, W]`` in [-1, 1]; ``T = 1 + 4 (F - 1)`` for the first block, ``4 F`` after.
        """
        import torch

        codec, vae = self.codec, self.codec.vae
        codec._check(latents)
        outs = []
        with torch.no_grad():
            z = vae.post_quant_conv(codec._denormalize(latents))  # 1x1x1 conv: no temporal state
            for i in range(z.shape[2]):
                first = self._frames_done == 0
                # Same call sequence as AutoencoderKLWan._decode, one latent frame at a time.
                outs.append(vae.decoder(z[:, :, i : i + 1], feat_cache=self._feat_map, feat_idx=[0], first_chunk=first))
                self._frames_done += 1
        out = torch.cat(outs, 2)
        if codec.patch_size is not None:
            from diffusers.models.autoencoders.autoencoder_kl_wan import unpatchify

            out = unpatchify(out, patch_size=codec.patch_size)
        return out.clamp(-1.0, 1.0)
