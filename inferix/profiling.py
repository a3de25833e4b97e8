"""Per-block profiling of the engine: denoise / cache-update / decode times, FPS, time to
first frame, peak memory, KV bytes — as JSON and a matplotlib plot (``inferix profile``).

FPS is *honest*: pixel frames delivered divided by wall time from the request to the last
decoded frame, VAE decode and KV bookkeeping included (the number users ask for).

Peak memory: ``torch.cuda.max_memory_allocated`` on CUDA (reset at the start); on CPU the
process's peak resident set (``ru_maxrss``), which cannot be reset — compare runs in
separate processes (the bench does).
"""

from __future__ import annotations

import json
import logging
import resource
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)


def peak_memory_bytes(device: str = "cpu") -> int:
    """Peak memory so far: CUDA allocator peak on a GPU, process peak RSS on CPU."""
    if str(device).startswith("cuda"):
        import torch

        return int(torch.cuda.max_memory_allocated())
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(rss if sys.platform == "darwin" else rss * 1024)  # Linux reports KiB


def reset_peak_memory(device: str = "cpu") -> None:
    if str(device).startswith("cuda"):
        import torch

        torch.cuda.reset_peak_memory_stats()


@dataclass
class BlockRecord:
    """Timings of one block (seconds) and the cache size after it."""

    index: int
    frames: int
    denoise_s: float
    cache_update_s: float
    decode_s: float
    wall_s: float  # since the request, when the block's frames were out
    kv_bytes: int
    kv_blocks: int


@dataclass
class Profile:
    """A profiled generation (JSON-able)."""

    model: str
    device: str
    policy: str
    latent_hw: tuple[int, int]
    block_frames: int
    steps: int
    blocks: list[BlockRecord] = field(default_factory=list)
    time_to_first_frame_s: float | None = None
    total_s: float = 0.0
    fps: float = 0.0
    peak_memory_bytes: int = 0
    kv_bytes_peak: int = 0
    fps_includes_decode: bool = True

    def summary(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("blocks")
        n = len(self.blocks)
        if n:
            d["mean_block_s"] = {k: sum(getattr(b, k) for b in self.blocks) / n
                                 for k in ("denoise_s", "cache_update_s", "decode_s")}
        return d

    def to_json(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(asdict(self), indent=2))

    def plot(self, path: str | Path) -> None:
        """Stacked per-block times and KV bytes, saved as an image."""
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        idx = [b.index for b in self.blocks]
        fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
        bottom = [0.0] * len(idx)
        for key, label in (("denoise_s", "denoise"), ("cache_update_s", "cache update"), ("decode_s", "decode")):
            vals = [getattr(b, key) * 1000 for b in self.blocks]
            ax1.bar(idx, vals, bottom=bottom, label=label)
            bottom = [a + v for a, v in zip(bottom, vals, strict=True)]
        ax1.set_ylabel("ms per block")
        ttff = f"{self.time_to_first_frame_s:.3f}" if self.time_to_first_frame_s is not None else "n/a"
        ax1.set_title(f"{self.model} on {self.device}: {self.fps:.1f} FPS (decode incl.), first frame {ttff} s")
        ax1.legend()
        ax2.plot(idx, [b.kv_bytes / 2**20 for b in self.blocks])
        ax2.set_ylabel("KV MiB")
        ax2.set_xlabel("block")
        fig.tight_layout()
        fig.savefig(path)
        plt.close(fig)


def profile_session(engine: Any, prompt: str, num_blocks: int, *, seed: int = 0, action: Any = None,
                    model_name: str = "model", frames_per_latent: int = 1) -> Profile:
    """Generate one session of ``num_blocks`` blocks on ``engine`` and profile every block."""
    cfg = engine.config
    reset_peak_memory(cfg.device)
    prof = Profile(model_name, cfg.device, _policy_text(cfg.policy), tuple(cfg.latent_hw), cfg.block_frames,
                   len(cfg.timesteps))
    start = time.perf_counter()
    frames = 0
    _sync(cfg.device)
    for out in engine.stream(prompt, num_blocks=num_blocks, seed=seed, action=action):
        _sync(cfg.device)
        now = time.perf_counter() - start
        kv = out.kv_bytes
        n = int(out.frames.shape[0])
        frames += n
        prof.blocks.append(BlockRecord(out.index, n, out.timings["denoise"], out.timings["cache_update"],
                                       out.timings["decode"], now, kv, out.kv_blocks))
        if prof.time_to_first_frame_s is None:
            prof.time_to_first_frame_s = now
        prof.kv_bytes_peak = max(prof.kv_bytes_peak, kv)
    prof.total_s = time.perf_counter() - start
    prof.fps = frames / prof.total_s if prof.total_s > 0 else 0.0
    prof.peak_memory_bytes = peak_memory_bytes(cfg.device)
    return prof


def _policy_text(p: Any) -> str:
    if p.kind == "full":
        return "full"
    if p.kind == "rolling":
        return f"rolling:{p.window}@{p.positions}"
    return f"sink:{p.sink}:{p.window}@{p.positions}"


def _sync(device: str) -> None:
    if str(device).startswith("cuda"):
        import torch

        torch.cuda.synchronize()
