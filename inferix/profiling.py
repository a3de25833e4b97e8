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
from collections.abc import Callable, Sequence
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
    stopped_early: str | None = None  # why fewer blocks than asked were profiled (a deadline)

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
                    model_name: str = "model", frames_per_latent: int = 1, deadline: float | None = None,
                    into: Profile | None = None) -> Profile:
    """Generate one session of ``num_blocks`` blocks on ``engine`` and profile every block.

    Args:
        deadline: a ``time.perf_counter()`` value; no block starts after it (the session is
            cancelled and :attr:`Profile.stopped_early` says so). FPS then covers the blocks done.
        into: a :class:`Profile` to fill (its blocks so far survive an exception that stops the run).
    """
    cfg = engine.config
    reset_peak_memory(cfg.device)
    prof = into or Profile(model_name, cfg.device, "", (0, 0), 0, 0)
    prof.model, prof.device, prof.policy = model_name, cfg.device, _policy_text(cfg.policy)
    prof.latent_hw, prof.block_frames, prof.steps = tuple(cfg.latent_hw), cfg.block_frames, cfg.sampling.num_steps
    start = time.perf_counter()
    frames = 0
    _sync(cfg.device)
    blocks = engine.stream(prompt, num_blocks=num_blocks, seed=seed, action=action)
    for out in blocks:
        _sync(cfg.device)
        now = time.perf_counter() - start
        prof.total_s = now
        kv = out.kv_bytes
        n = int(out.frames.shape[0])
        frames += n
        prof.blocks.append(BlockRecord(out.index, n, out.timings["denoise"], out.timings["cache_update"],
                                       out.timings["decode"], now, kv, out.kv_blocks))
        if prof.time_to_first_frame_s is None:
            prof.time_to_first_frame_s = now
        prof.kv_bytes_peak = max(prof.kv_bytes_peak, kv)
        if deadline is not None and len(prof.blocks) < num_blocks and time.perf_counter() > deadline:
            prof.stopped_early = f"time budget: {len(prof.blocks)} of {num_blocks} blocks done"
            blocks.close()  # cancels the session, frees its KV blocks
            break
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


# ----------------------------------------------------------------------------- benchmarks
#
# Ratios measured side by side in one run (bench/bench_inferix.py and `inferix bench` print
# them; nothing here asserts on time). Times are process CPU seconds (time.process_time) on CPU,
# where a shared machine makes wall time meaningless (other jobs steal the cores), and wall
# seconds after a device sync on CUDA.


def bench_clock(device: str) -> float:
    """The benchmarks' clock: wall seconds after a device sync on CUDA, process CPU seconds on CPU."""
    if str(device).startswith("cuda"):
        _sync(device)
        return time.perf_counter()
    return time.process_time()


def _bench_model(size: str, device: str, seed: int = 0) -> Any:
    """A random-init DiT for benchmarks: ``tiny`` (the test model) or ``small`` (dim 512, 4 layers)."""
    import torch

    from inferix.models.causal_wan import CausalWanModel
    from inferix.models.configs import get_config

    cfg = get_config("tiny")
    if size == "small":
        cfg = cfg.replace(num_attention_heads=8, attention_head_dim=64, ffn_dim=2048, num_layers=4, in_channels=16,
                          out_channels=16)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = CausalWanModel(cfg)
    return model.eval().to(device)


class _NullCodec:
    """Decoding excluded from the DiT benchmarks (the profile command includes it)."""

    spatial_stride = 1
    temporal_stride = 1

    def stream_decoder(self) -> Any:
        return self

    def decode(self, latents: Any) -> Any:
        return latents[:, :3].clamp(-1, 1)

    def num_pixel_frames(self, n: int) -> int:
        return n


def _engine_for(model: Any, latent_hw: tuple[int, int], policy: str, device: str, steps: int = 4,
                max_batch: int = 1, max_sessions: int = 1, max_frames: int = 96, codec: Any = None,
                overlap_decode: bool = False) -> Any:
    """An engine over ``model`` with random prompt embeddings (seeded by the prompt's length) and
    ``codec`` (default: none, decoding excluded)."""
    import torch

    from inferix.engine import Engine, EngineConfig
    from inferix.kv_cache import CachePolicy
    from inferix.sampling import SamplingConfig
    from inferix.schedulers import timesteps

    text_len, text_dim = model.config.text_len, model.config.text_dim

    def text(prompt: str) -> Any:
        g = torch.Generator().manual_seed(len(prompt))
        return torch.randn(1, text_len, text_dim, generator=g)

    sampling = SamplingConfig(timesteps=tuple(timesteps("self_forcing"))[:steps])
    cfg = EngineConfig(latent_hw=latent_hw, block_frames=3, sampling=sampling,
                       policy=CachePolicy.parse(policy), max_batch=max_batch, max_sessions=max_sessions,
                       max_frames=max_frames, device=device, overlap_decode=overlap_decode)
    return Engine(model, _NullCodec() if codec is None else codec, text, cfg)


def _block_times(engine: Any, num_blocks: int, prompt: str = "bench") -> list[float]:
    dev = engine.config.device
    times = []
    t = bench_clock(dev)
    for _ in engine.stream(prompt, num_blocks=num_blocks, seed=0):
        now = bench_clock(dev)
        times.append(now - t)
        t = now
    return times


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    return s[len(s) // 2]


def bench_latency_growth(model: Any, latent_hw: tuple[int, int], device: str, late: int = 100,
                         policy: str = "rolling:9") -> dict[str, Any]:
    """Per-block latency at block ``late`` vs block 5 (medians of 5 blocks around each)."""
    eng = _engine_for(model, latent_hw, policy, device, max_frames=3 * (late + 4))
    times = _block_times(eng, late + 3)
    early, late_t = _median(times[3:8]), _median(times[late - 2 : late + 3])
    return {"policy": policy, "block5_s": early, f"block{late}_s": late_t, "ratio": late_t / early}


def bench_cached_vs_recompute(model: Any, latent_hw: tuple[int, int], device: str, num_blocks: int = 30,
                              steps: int = 4) -> dict[str, Any]:
    """``num_blocks`` blocks with the KV cache vs recomputing all past blocks at every step (no cache)."""
    import torch

    from inferix.models.attention import FullAttention
    from inferix.models.causal_wan import velocity_to_x0
    from inferix.schedulers import timesteps

    eng = _engine_for(model, latent_hw, "full", device, steps=steps, max_frames=3 * num_blocks + 6)
    cached = sum(_block_times(eng, num_blocks))

    ts = tuple(timesteps("self_forcing"))[:steps]
    c = model.config.out_channels
    h, w = latent_hw
    s = (h // model.config.patch_size[1]) * (w // model.config.patch_size[2])
    ctx = model.cross_attention_kv(torch.randn(1, model.config.text_len, model.config.text_dim, device=device))
    clean = torch.zeros(1, c, 0, h, w, device=device)
    g = torch.Generator().manual_seed(0)
    t0 = bench_clock(device)
    with torch.no_grad():
        for b in range(num_blocks):
            x = torch.randn((1, c, 3, h, w), generator=g).to(device)
            f = 3 * (b + 1)
            mask = FullAttention.block_causal(f, 3, s, device=device)
            for i, t in enumerate(ts):
                seq = torch.cat([clean, x], 2)
                tt = torch.cat([torch.zeros(3 * b), torch.full((3,), t)])[None].to(device)
                v = model(seq, tt, ctx, mask)[:, :, -3:]
                x0 = velocity_to_x0(x, v, t)
                x = x0 if i + 1 == len(ts) else (1 - ts[i + 1] / 1000) * x0 + ts[i + 1] / 1000 * torch.randn(
                    x.shape, generator=g).to(device)
            clean = torch.cat([clean, x], 2)
    recompute = bench_clock(device) - t0
    return {"blocks": num_blocks, "cached_s": cached, "recompute_s": recompute, "speedup": recompute / cached}


def bench_lean_vs_gather(model: Any, latent_hw: tuple[int, int], device: str, num_blocks: int = 30,
                         policy: str = "full", repeats: int = 3) -> dict[str, Any]:
    """Cached generation of ``num_blocks`` blocks through the rotated-key buffers (issue 60's lean path)
    vs the pool gather path before it, runs interleaved, best of ``repeats`` each, and how far their
    latents are apart (0.0 when bit-identical)."""
    import torch

    def run(rotated: bool) -> tuple[float, Any]:
        eng = _engine_for(model, latent_hw, policy, device, max_frames=3 * num_blocks + 6)
        eng.backend.rotated_buffers = rotated
        t0 = bench_clock(device)
        lat = [o.latents for o in eng.stream("bench", num_blocks=num_blocks, seed=0)]
        return bench_clock(device) - t0, torch.stack(lat)

    times: dict[bool, list[float]] = {False: [], True: []}
    outs: dict[bool, Any] = {}
    for _ in range(repeats):
        for rotated in (False, True):
            t, outs[rotated] = run(rotated)
            times[rotated].append(t)
    gather_s, lean_s = min(times[False]), min(times[True])
    return {"blocks": num_blocks, "policy": policy, "gather_s": gather_s, "lean_s": lean_s,
            "speedup": gather_s / lean_s, "max_abs_diff": float((outs[True] - outs[False]).abs().max()),
            "bit_identical": bool(torch.equal(outs[True], outs[False]))}


def bench_overlap_decode(model: Any, latent_hw: tuple[int, int], device: str, num_blocks: int = 8,
                         repeats: int = 3, vae_base_dim: int = 4) -> dict[str, Any]:
    """One session of ``num_blocks`` blocks with each block's VAE decode in line vs overlapped with the next
    block's denoising (``EngineConfig.overlap_decode``: a worker thread, its own CUDA stream on a GPU), runs
    interleaved, best of ``repeats`` each, and whether their frames are identical.

    The codec is a random-init diffusers ``AutoencoderKLWan`` (``base_dim=vae_base_dim``, the DiT's latent
    channels) so the decode carries causal state as the Wan VAE does. Timed by the wall clock, also on CPU:
    the overlap runs on a second thread, which process CPU time would count twice. On CPU it can only help
    with a core to spare (``OMP_NUM_THREADS=1`` on a 2-core machine) and never more than
    ``(dit + decode) / max(dit, decode)``, reported as ``bound``."""
    import numpy as np

    from inferix.models.vae import random_wan_codec

    codec = random_wan_codec(model.config.out_channels, base_dim=vae_base_dim, device=device)

    def run(overlap: bool) -> tuple[float, list[Any], float, float]:
        eng = _engine_for(model, latent_hw, "rolling:9", device, codec=codec, overlap_decode=overlap)
        _sync(device)
        t0 = time.perf_counter()
        outs = list(eng.stream("bench", num_blocks=num_blocks, seed=0))
        _sync(device)
        wall = time.perf_counter() - t0
        dit = sum(o.timings["denoise"] + o.timings["cache_update"] for o in outs)
        return wall, [o.frames for o in outs], dit, sum(o.timings["decode"] for o in outs)

    run(False)  # warm-up: kernels, allocator
    times: dict[bool, list[float]] = {False: [], True: []}
    frames: dict[bool, list[Any]] = {}
    split: dict[bool, tuple[float, float]] = {}
    for _ in range(repeats):
        for overlap in (False, True):
            t, frames[overlap], dit, dec = run(overlap)
            if not times[overlap] or t < min(times[overlap]):
                split[overlap] = (dit, dec)
            times[overlap].append(t)
    in_line, overlapped = min(times[False]), min(times[True])
    dit, dec = split[False]
    return {"blocks": num_blocks, "clock": "wall", "vae_base_dim": vae_base_dim, "in_line_s": in_line,
            "overlapped_s": overlapped, "speedup": in_line / overlapped, "dit_s": dit, "decode_s": dec,
            "bound": (dit + dec) / max(dit, dec),
            "frames_identical": all(np.array_equal(a, b) for a, b in zip(frames[False], frames[True], strict=True))}


def _matmul_flops_per_s(device: str, n: int = 512, repeats: int = 5) -> float:
    """FLOP/s of a square fp32 matmul: the compute-bound ceiling the batching and FLOP benches compare to."""
    import torch

    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    with torch.no_grad():
        a @ b
        t0 = bench_clock(device)
        for _ in range(repeats):
            a @ b
        return 2 * n**3 * repeats / (bench_clock(device) - t0)


def bench_batched_sessions(model: Any, latent_hw: tuple[int, int], device: str,
                           sessions: Sequence[int] = (1, 2, 4, 8), num_blocks: int = 8,
                           policy: str = "rolling:9") -> dict[str, Any]:
    """Throughput of 1, 2, 4, 8... sessions batched in one engine, total and per session, against the
    compute-bound limit.

    Batching B sessions does B times the FLOPs per forward, so it can only help while a forward is
    bound by something else (Python and launch overhead, memory traffic). The limit: frames/s if every
    FLOP ran at the speed of a plain matmul on this device, ``matmul FLOP/s / DiT FLOPs per frame``
    (:func:`dit_forward_flops`, attention included, at the window's mean cache length, every
    denoising step and the commit pass counted). ``fraction_of_limit`` says how close each batch gets;
    no batch size can pass 1.0 on a device that runs one forward at a time.
    """
    pol = _parse_policy(policy)
    steps = 4
    bound = pol.max_visible_frames()
    per_block_flops = 0
    for b in range(num_blocks):  # cached frames grow until the window is full
        past = 3 * b if bound is None else min(3 * b, bound)
        per_block_flops += (steps + 1) * dit_forward_flops(model.config, latent_hw, 3, past)
    flops_per_frame = per_block_flops / (3 * num_blocks)
    mm = _matmul_flops_per_s(device)
    limit_fps = mm / flops_per_frame
    runs: dict[str, Any] = {}
    one = None
    for n in sessions:
        eng = _engine_for(model, latent_hw, policy, device, steps=steps, max_batch=n, max_sessions=n)
        ids = [eng.add_session(f"p{i}", num_blocks=num_blocks, seed=i) for i in range(n)]
        t0 = bench_clock(device)
        eng.run()
        total = 3 * num_blocks * n / (bench_clock(device) - t0)
        assert all(eng.session(i).blocks_done == num_blocks for i in ids)
        one = total if one is None else one
        runs[str(n)] = {"total_fps": total, "per_session_fps": total / n, "throughput_vs_1": total / one,
                        "fraction_of_limit": total / limit_fps}
    return {"policy": policy, "blocks": num_blocks, "sessions": list(sessions), "runs": runs,
            "dit_gflop_per_frame": flops_per_frame / 1e9, "matmul_gflops_per_s": mm / 1e9,
            "compute_bound_limit_fps": limit_fps,
            "limit_note": "frames/s if every DiT FLOP (attention included) ran at plain-matmul speed on this "
                          "device; batching cannot pass it, it only removes per-forward overhead below it"}


def _parse_policy(policy: str) -> Any:
    from inferix.kv_cache import CachePolicy

    return CachePolicy.parse(policy)


def dit_forward_flops(cfg: Any, latent_hw: tuple[int, int], frames: int, cached_frames: int = 0,
                      text_len: int | None = None) -> int:
    """FLOPs of one DiT forward over ``frames`` latent frames that attend to ``cached_frames`` cached ones
    too: every matmul (patch embedding, q/k/v/o, cross-attention q/o, FFN, head) and both attentions
    (2 FLOPs a multiply-add). The text's cross-attention keys/values are computed once per prompt and not
    counted; time-embedding MLPs are (negligible and) not counted. Equal to ``FlopCounterMode`` on a
    meta-device forward (tests/inferix/test_gpu_round.py), which, unlike a CPU run, counts attention.

    Args:
        cfg: a ``WanConfig``.
        latent_hw: latent height, width.
        frames: latent frames in the forward (a block).
        cached_frames: latent frames of KV cache the block attends to.
        text_len: text tokens (default: ``cfg.text_len``).
    """
    pt, ph, pw = cfg.patch_size
    s = (latent_hw[0] // ph) * (latent_hw[1] // pw)
    q = (frames // pt) * s
    k = q + (cached_frames // pt) * s
    d, f = cfg.dim, cfg.ffn_dim
    t = cfg.text_len if text_len is None else text_len
    patch = pt * ph * pw
    per_layer = 2 * q * d * d * 4 + 2 * q * d * d * 2 + 2 * q * d * f * 2 + 4 * q * k * d + 4 * q * t * d
    return cfg.num_layers * per_layer + 2 * q * d * cfg.in_channels * patch + 2 * q * d * cfg.out_channels * patch


def bench_flops(model: Any, latent_hw: tuple[int, int], device: str, repeats: int = 5) -> dict[str, Any]:
    """Achieved FLOP/s of one DiT block forward as a fraction of a plain matmul with the same FLOP count.

    FLOPs are :func:`dit_forward_flops` (every matmul *and* attention; equal to ``FlopCounterMode`` on a
    meta-device forward, ``tests/inferix/test_gpu_round.py``). ``FlopCounterMode`` on a CPU forward counts
    no FLOPs for CPU SDPA; its count is kept as ``counter_gflop_cpu`` to show the difference.
    """
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from inferix.models.attention import FullAttention

    cfg = model.config
    h, w = latent_hw
    x = torch.randn(1, cfg.in_channels, 3, h, w, device=device)
    ctx = model.cross_attention_kv(torch.randn(1, cfg.text_len, cfg.text_dim, device=device))
    be = FullAttention()
    flops = dit_forward_flops(cfg, latent_hw, 3)
    pt, ph, pw = cfg.patch_size
    q = (3 // pt) * (h // ph) * (w // pw)
    attention = cfg.num_layers * (4 * q * q * cfg.dim + 4 * q * cfg.text_len * cfg.dim)
    with torch.no_grad():
        counter = FlopCounterMode(display=False)
        with counter:
            model(x, torch.tensor([500.0], device=device), ctx, be)
        counted = counter.get_total_flops()
        model(x, torch.tensor([500.0], device=device), ctx, be)  # warm-up
        t0 = bench_clock(device)
        for _ in range(repeats):
            model(x, torch.tensor([500.0], device=device), ctx, be)
        dit_s = (bench_clock(device) - t0) / repeats
        n = max(64, round((flops / 2) ** (1 / 3)))  # square matmul with ~ the same FLOPs
        a = torch.randn(n, n, device=device)
        b = torch.randn(n, n, device=device)
        a @ b
        t0 = bench_clock(device)
        for _ in range(repeats):
            a @ b
        mm_s = (bench_clock(device) - t0) / repeats
    dit_flops, mm_flops = flops / dit_s, 2 * n**3 / mm_s
    return {"dit_gflop": flops / 1e9, "attention_gflop": attention / 1e9, "counter_gflop_cpu": counted / 1e9,
            "flops_counted_by": "inferix.profiling.dit_forward_flops (matmuls + self/cross attention)",
            "dit_gflops_per_s": dit_flops / 1e9, "matmul_n": n,
            "matmul_gflops_per_s": mm_flops / 1e9, "fraction_of_matmul": dit_flops / mm_flops}


def bench_memory_long_vs_short(long_s: float = 60.0, short_s: float = 5.0, policy: str = "rolling:9",
                               steps: int = 1) -> dict[str, Any]:
    """Peak resident memory of ``inferix generate --model tiny`` for a long vs a short video,
    each in a fresh process (peak RSS cannot be reset inside one)."""
    import subprocess
    import tempfile

    code = ("import resource,sys; from inferix.cli import main; "
            "rc = main(sys.argv[1:]); "
            "print('PEAK', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)")
    out: dict[str, Any] = {"policy": policy}
    with tempfile.TemporaryDirectory() as d:
        for name, secs in (("short", short_s), ("long", long_s)):
            cmd = [sys.executable, "-c", code, "generate", "--model", "tiny", "--seconds", str(secs), "--out",
                   f"{d}/{name}.mp4", "--policy", policy, "--steps", str(steps), "--height", "32", "--width", "32"]
            r = subprocess.run(cmd, capture_output=True, text=True, check=True)
            peak = int(next(line.split()[1] for line in r.stdout.splitlines() if line.startswith("PEAK")))
            out[f"{name}_{secs:g}s_peak_bytes"] = peak
    out["ratio"] = out[f"long_{long_s:g}s_peak_bytes"] / out[f"short_{short_s:g}s_peak_bytes"]
    return out


BENCHES = ("latency_rolling", "latency_full", "cached_vs_recompute", "lean_vs_gather", "overlap_decode",
           "batched_sessions", "flops_small", "flops_tiny", "memory")


def run_bench(quick: bool = False, device: str = "cpu", only: Sequence[str] | None = None) -> dict[str, Any]:
    """The Inferix benchmarks (:data:`BENCHES`, or those named in ``only``); ``quick`` shrinks sizes for a
    smoke run."""
    import platform

    import torch

    unknown = sorted(set(only or ()) - set(BENCHES))
    if unknown:
        raise ValueError(f"unknown benchmark(s) {unknown}; choose from {list(BENCHES)}")
    torch.manual_seed(0)
    tiny = _bench_model("tiny", device)
    small = _bench_model("small", device)
    results: dict[str, Any] = {
        "device": device,
        "clock": "wall (synced)" if device.startswith("cuda") else "process CPU time",
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "machine": platform.processor() or platform.machine(),
        "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() and device.startswith("cuda") else None,
    }
    late = 20 if quick else 100
    # engine-level ratios on the tiny DiT (64 tokens per latent frame): cheap enough for 100+ blocks on CPU
    hw = (16, 16)
    benches: dict[str, Callable[[], dict[str, Any]]] = {
        "latency_rolling": lambda: bench_latency_growth(tiny, hw, device, late=late, policy="rolling:9"),
        "latency_full": lambda: bench_latency_growth(tiny, hw, device, late=late, policy="full"),
        "cached_vs_recompute": lambda: bench_cached_vs_recompute(tiny, hw, device, num_blocks=8 if quick else 30),
        "lean_vs_gather": lambda: bench_lean_vs_gather(tiny, hw, device, num_blocks=8 if quick else 30,
                                                       repeats=1 if quick else 3),
        # the wider DiT: the tiny one's forward is too cheap beside any VAE decode to overlap with
        "overlap_decode": lambda: bench_overlap_decode(small, hw, device, num_blocks=3 if quick else 8,
                                                       repeats=1 if quick else 3),
        "batched_sessions": lambda: bench_batched_sessions(tiny, hw, device, sessions=(1, 2, 4, 8),
                                                           num_blocks=3 if quick else 8),
        # arithmetic efficiency on a wider DiT (dim 512, 768 tokens per block) and on the tiny one
        "flops_small": lambda: bench_flops(small, (32, 32), device),
        "flops_tiny": lambda: bench_flops(tiny, hw, device),
        "memory": lambda: bench_memory_long_vs_short(20.0 if quick else 60.0, 5.0),
    }
    for name in BENCHES:
        if only is None or name in only:
            results[name] = benches[name]()
    return results
