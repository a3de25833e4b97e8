"""Stage 0 of a ``tiny_ae`` recipe: train the latent codec on the training frames.

One step: ``batch_size`` frames from one grid group (drawn with the scenario weights), a random
``crop x crop`` window each (the codec is fully convolutional), then::

    z    = encoder(x)
    z'   = z + latent_noise * std(z) * eps          the decoder must tolerate generated latents
    x'   = decoder(z')
    loss = mean(w * |x' - x|) / mean(w)
    w    = 1 + motion_weight * |x - median frame of x's video| + edge_weight * |x - box3(x)|

The weight puts the loss where the tracks look: sprites, balls and moving objects are few
pixels, and a plain L1 is already low when they are blurred away (measured: an unweighted-edge
8x codec trained 1,500 steps erased every Atari paddle, so the downsampled-reference ceiling of
gaming direction accuracy fell from 0.99 to 0.25). Afterwards the per-channel
latent mean and std are measured on up to 2,048 whole frames and stored with the codec, so the
DiT sees unit-scale latents. Then ``decoder_steps`` more steps train the decoder alone (the
encoder frozen, so the latents — and everything the DiT learns on them — do not change; the
decoder fine-tune of Stable Diffusion's ``sd-vae-ft-mse`` is the same idea): small saturated
sprites (a 2-pixel green paddle) get their colour back late in training. Output: ``OUT/codec/`` (``TinyAECodec.save_pretrained``) and
``OUT/codec_log.jsonl``. The stage is short (minutes on a CPU); an interrupted one restarts.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import torch

    from inferix.models.tiny_ae import TinyAECodec
    from reference_world_lab.config import CodecConfig
    from reference_world_lab.data import ClipDataset

logger = logging.getLogger(__name__)

__all__ = ["codec_batch", "codec_loss", "finetune_decoder", "latent_stats", "train_codec"]


def _medians(data: ClipDataset) -> list[np.ndarray]:
    return [np.median(v.frames, axis=0).astype(np.float32) for v in data.videos]


def codec_batch(data: ClipDataset, medians: list[np.ndarray], batch_size: int, crop: int, stride: int,
                generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """``(pixels [B, 3, c, c] in [-1, 1], weight base [B, 1, c, c] = |x - median| in [0, 1])``."""
    import torch

    (h, w), vids = data.draw_videos(batch_size, generator)
    ch, cw = (min(crop, h) // stride) * stride, (min(crop, w) // stride) * stride
    xs, ds = [], []
    for vi in vids:
        v = data.videos[vi]
        t = int(torch.randint(0, len(v.frames), (1,), generator=generator))
        y0 = int(torch.randint(0, h - ch + 1, (1,), generator=generator))
        x0 = int(torch.randint(0, w - cw + 1, (1,), generator=generator))
        f = v.frames[t, y0 : y0 + ch, x0 : x0 + cw].astype(np.float32)
        m = medians[vi][y0 : y0 + ch, x0 : x0 + cw]
        xs.append(torch.from_numpy(f / 127.5 - 1.0))
        ds.append(torch.from_numpy(np.abs(f - m).mean(-1, keepdims=True) / 255.0))
    x = torch.stack(xs).permute(0, 3, 1, 2).contiguous()
    d = torch.stack(ds).permute(0, 3, 1, 2).contiguous()
    return x, d


def codec_loss(codec: TinyAECodec, x: torch.Tensor, diff: torch.Tensor, motion_weight: float,
               latent_noise: float, generator: torch.Generator, edge_weight: float = 0.0,
               freeze_encoder: bool = False) -> torch.Tensor:
    """Weighted L1 reconstruction loss of one batch (see the module docstring)."""
    import torch
    import torch.nn.functional as F

    if freeze_encoder:
        with torch.no_grad():
            z = codec.encode_raw(x)
    else:
        z = codec.encode_raw(x)
    if latent_noise > 0:
        std = z.detach().std(dim=(0, 2, 3), keepdim=True)
        z = z + latent_noise * std * torch.randn(z.shape, generator=generator)
    rec = codec.decode_raw(z)
    wmap = 1.0 + motion_weight * diff
    if edge_weight > 0:  # local contrast in [0, 1]: sprite outlines, thin lines, text
        box = F.avg_pool2d(x, 3, stride=1, padding=1, count_include_pad=False)
        wmap = wmap + edge_weight * (x - box).abs().mean(1, keepdim=True) / 2
    return (wmap * (rec - x).abs()).mean() / wmap.mean()


def latent_stats(codec: TinyAECodec, data: ClipDataset, max_frames: int = 2048) -> tuple[list[float], list[float]]:
    """Per-channel mean and std of the raw latents of (an even sample of) the training frames."""
    import torch

    total = sum(len(v.frames) for v in data.videos)
    step = max(1, total // max_frames)
    s1 = torch.zeros(codec.latent_channels, dtype=torch.float64)
    s2 = torch.zeros_like(s1)
    n = 0
    with torch.no_grad():
        for v in data.videos:
            frames = v.frames[::step]
            for i in range(0, len(frames), 32):
                x = torch.from_numpy(frames[i : i + 32]).permute(0, 3, 1, 2).float() / 127.5 - 1.0
                z = codec.encode_raw(x.to(codec.device)).double().cpu()
                s1 += z.sum(dim=(0, 2, 3))
                s2 += (z**2).sum(dim=(0, 2, 3))
                n += z.shape[0] * z.shape[2] * z.shape[3]
    mean = s1 / n
    std = (s2 / n - mean**2).clamp(min=1e-8).sqrt()
    return mean.tolist(), std.tolist()


def train_codec(codec: TinyAECodec, data: ClipDataset, cfg: CodecConfig, out: Path, seed: int = 0,
                progress: bool = True) -> dict[str, Any]:
    """Train ``codec`` in place, measure its latent statistics and save it to ``out / "codec"``.

    Returns:
        ``{"steps", "wall_s", "final_loss", "psnr_db"}`` (PSNR of whole training frames, 256 of them).
    """
    import torch
    from tqdm import tqdm

    gen = torch.Generator().manual_seed(seed + 1)
    medians = _medians(data)
    ae = codec.ae.train()
    opt = torch.optim.AdamW(ae.parameters(), lr=cfg.lr, weight_decay=0.0, betas=(0.9, 0.99))
    out.mkdir(parents=True, exist_ok=True)
    losses: list[float] = []
    t0 = time.perf_counter()
    with (out / "codec_log.jsonl").open("w") as log:
        for step in tqdm(range(1, cfg.steps + 1), disable=not progress, desc="codec", unit="step"):
            for g in opt.param_groups:  # cosine decay to 10 %: the last steps polish edges
                g["lr"] = cfg.lr * (0.55 + 0.45 * np.cos(np.pi * step / cfg.steps))
            x, d = codec_batch(data, medians, cfg.batch_size, cfg.crop, codec.spatial_stride, gen)
            loss = codec_loss(codec, x.to(codec.device), d.to(codec.device), cfg.motion_weight, cfg.latent_noise, gen,
                              edge_weight=cfg.edge_weight)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(ae.parameters(), 1.0)
            opt.step()
            losses.append(float(loss.detach()))
            if step == 1 or step % 50 == 0 or step == cfg.steps:
                log.write(json.dumps({"step": step, "loss": float(np.mean(losses[-50:])),
                                      "wall_s": round(time.perf_counter() - t0, 1)}) + "\n")
                log.flush()
    ae.eval()
    wall = time.perf_counter() - t0
    mean, std = latent_stats(codec, data)
    codec.mean = torch.tensor(mean, dtype=torch.float32).view(1, -1, 1, 1)
    codec.std = torch.tensor(std, dtype=torch.float32).view(1, -1, 1, 1)
    if cfg.decoder_steps:
        finetune_decoder(codec, data, cfg, out, cfg.decoder_steps, seed=seed, progress=progress, medians=medians)
        wall = time.perf_counter() - t0
    psnr = reconstruction_psnr(codec, data)
    codec.save_pretrained(out / "codec")
    info = {"steps": cfg.steps, "decoder_steps": cfg.decoder_steps, "wall_s": round(wall, 1), "final_loss": float(np.mean(losses[-50:])) if losses else None,
            "psnr_db": round(psnr, 2)}
    (out / "codec" / "training.json").write_text(json.dumps(info, indent=1))
    logger.info("codec: %s", info)
    return info


def finetune_decoder(codec: TinyAECodec, data: ClipDataset, cfg: CodecConfig, out: Path, steps: int, seed: int = 0,
                     progress: bool = True, medians: list[np.ndarray] | None = None) -> list[float]:
    """Train the decoder alone for ``steps`` (encoder frozen: the latent space stays exactly as it is).

    Returns:
        the losses (also appended to ``out/codec_log.jsonl`` with ``"stage": "decoder"``).
    """
    import torch
    from tqdm import tqdm

    gen = torch.Generator().manual_seed(seed + 2)
    medians = medians if medians is not None else _medians(data)
    ae = codec.ae
    ae.encoder.eval().requires_grad_(False)
    ae.decoder.train().requires_grad_(True)
    opt = torch.optim.AdamW(ae.decoder.parameters(), lr=cfg.lr * 0.5, weight_decay=0.0, betas=(0.9, 0.99))
    losses: list[float] = []
    t0 = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    with (out / "codec_log.jsonl").open("a") as log:
        for step in tqdm(range(1, steps + 1), disable=not progress, desc="decoder", unit="step"):
            for g in opt.param_groups:
                g["lr"] = cfg.lr * 0.5 * (0.55 + 0.45 * np.cos(np.pi * step / steps))
            x, d = codec_batch(data, medians, cfg.batch_size, cfg.crop, codec.spatial_stride, gen)
            loss = codec_loss(codec, x.to(codec.device), d.to(codec.device), cfg.motion_weight, cfg.latent_noise, gen,
                              edge_weight=cfg.edge_weight, freeze_encoder=True)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(ae.decoder.parameters(), 1.0)
            opt.step()
            losses.append(float(loss.detach()))
            if step == 1 or step % 50 == 0 or step == steps:
                log.write(json.dumps({"stage": "decoder", "step": step, "loss": float(np.mean(losses[-50:])),
                                      "wall_s": round(time.perf_counter() - t0, 1)}) + "\n")
                log.flush()
    ae.eval().requires_grad_(False)
    return losses


def reconstruction_psnr(codec: TinyAECodec, data: ClipDataset, frames: int = 256) -> float:
    """Mean PSNR (dB, uint8 scale) of encode -> decode over an even sample of whole training frames."""
    import torch

    total = sum(len(v.frames) for v in data.videos)
    step = max(1, total // frames)
    vals = []
    for v in data.videos:
        f = v.frames[::step]
        if not len(f):
            continue
        x = torch.from_numpy(f).permute(3, 0, 1, 2)[None].float() / 127.5 - 1.0
        rec = ((codec.decode(codec.encode(x))[0].permute(1, 2, 3, 0).cpu() + 1) * 127.5).round().clamp(0, 255).numpy()
        mse = ((rec - f.astype(np.float32)) ** 2).mean(axis=(1, 2, 3))
        vals.extend((10 * np.log10(255.0**2 / np.maximum(mse, 1e-10))).tolist())
    return float(np.mean(vals)) if vals else float("nan")
