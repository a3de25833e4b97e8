"""The engine's GPU round (issue 60 item 1): one command that measures Inferix at real size on one
GPU in a few minutes and writes one JSON, whatever finishes.

::

    inferix bench --gpu                        # on one H100/H200: bench/records/engine_gpu_<date>.json
    inferix bench --gpu --dry --out dry.json   # the same code path at tiny size on CPU, in seconds

What runs (no downloads: every weight is random, built from a config under a fixed seed, so the
numbers are timings and the frames are noise):

* the DiT: Wan2.1-T2V-1.3B (``inferix.models.configs``: dim 1536, 30 layers) in bfloat16;
* the codec: diffusers' full ``AutoencoderKLWan`` at its default config (the Wan2.1 VAE), block-streamed
  decode (``inferix.models.vae.WanVAECodec``) in float32, as the engine serves it today;
* text: random umT5-shaped embeddings ``[1, 512, 4096]`` (the text encoder runs once per prompt);
* 832x480 pixels (60x104 latents, 1,560 tokens a latent frame), 4 steps (Self-Forcing's warped
  [1000, 750, 500, 250]), blocks of 3 latent frames (12 pixel frames; 9 for the first), Wan's 16 FPS.

Random weights cost what trained ones cost: the timings hold for a trained checkpoint of the same
architecture. KV policy ``rolling:18`` (each block attends over 21 latent frames, Self-Forcing's
training context).

Stages, each under its own time budget (default: setup 90 s, warm-up 60, single session 160, bf16 VAE
45, sessions 150, tests 90) cut by the round's (``budget_s``, 420 s), the JSON rewritten before and after each. A
SIGTERM (the script's ``timeout``) fails the running stage with that reason and keeps the blocks
already timed; a process killed outright leaves that stage marked ``running``::

    setup           build the DiT and the VAE on the device
    warmup          one session of a few blocks through the engine (untimed: kernels, allocator)
    single_session  a minute of video in one session (or as many blocks as the budget allows):
                    FPS with VAE decode, time to first block, per-block latency, DiT / cache / VAE
                    split, peak memory (``inferix.profiling.profile_session``)
    vae_bf16        the same streamed decode of two blocks' latents by the float32 VAE and by a bfloat16
                    copy: PSNR of bf16 against fp32, decode times and their ratio (issue 60 item 2 serves
                    the VAE in bf16 where PSNR >= 40 dB; random weights: the error bf16 arithmetic adds
                    on this architecture, to be measured again on a trained checkpoint)
    overlap_decode  one session's blocks with each VAE decode in line, then overlapped with the next
                    block's denoising (a worker thread on its own CUDA stream): wall seconds, their
                    ratio, frames identical (issue 60 item 2)
    sessions        1, 2 and 4 sessions batched through the engine: throughput and per-session FPS
    gpu_tests       the ``gpu``-marked Inferix tests in a subprocess: pass / fail / skip counts

A stage's ``status`` is ``ok``, ``partial`` (stopped by its budget; what finished is recorded),
``failed`` or ``skipped``, with a ``reason`` unless ``ok``.

The DiT / cache split comes from the engine's own per-block timings, which time each forward on the
host; the round wraps the model so that every forward waits for the device before it returns
(:class:`SyncedModel`) — otherwise a forward's GPU time lands in whatever syncs next. The engine
already syncs once per denoising step (its finite check), so the extra waits cost little.

Device tool (a session lent a GPU), after ``bash scripts/engine_gpu_round.sh --prepare`` here::

    run(command="bash scripts/engine_gpu_round.sh", carry=[".whl-engine"], timeout_s=540)

The JSON comes back under ``files_at``; commit it as ``bench/records/engine_gpu_<date>.json``.
"""

from __future__ import annotations

import json
import logging
import math
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from inferix.profiling import (
    Profile,
    _engine_for,
    _sync,
    bench_clock,
    dit_forward_flops,
    peak_memory_bytes,
    profile_session,
    reset_peak_memory,
)

logger = logging.getLogger(__name__)

__all__ = ["RoundSettings", "SyncedModel", "default_out", "run_gpu_round"]

SCHEMA = "inferix.engine_gpu_round/1"
STAGES = ("setup", "warmup", "single_session", "vae_bf16", "overlap_decode", "sessions", "gpu_tests")
#: issue 60 item 2: a bfloat16 VAE is worth serving where its decode stays this close to float32's
VAE_BF16_MIN_PSNR_DB = 40.0


@dataclass(frozen=True)
class RoundSettings:
    """What the round runs. The defaults are the real size; :meth:`dry` is the CPU check.

    Attributes:
        model: a named DiT config (``inferix.models.configs.CONFIGS``), random weights.
        vae: ``wan`` (diffusers' ``AutoencoderKLWan()`` default config: the Wan2.1 VAE) or
            ``wan-tiny`` (the same class, 4 channels wide: the tests' VAE).
        pixel_hw: output height and width.
        steps: denoising steps per block (the first ``steps`` of Self-Forcing's schedule).
        block_frames: latent frames per block.
        policy: KV policy; ``rolling:18`` lets a block see 18 past latent frames, so with its own 3
            it attends over 21 — Self-Forcing's 81-frame training context.
        dtype: the DiT's (and the KV cache's) dtype.
        vae_dtype: the VAE's dtype.
        fps: pixel frames per second of video (Wan: 16).
        video_seconds: video length of the single-session stage (a minute).
        warmup_blocks: untimed blocks before any timing.
        session_counts: sessions batched in the sessions stage.
        session_blocks: blocks each session generates there.
        device: ``cuda`` (``cpu`` for the dry run).
        budget_s: the whole round's wall-clock budget.
        stage_budget_s: each stage's cap (the round's deadline cuts it further).
        gpu_tests: test files run with ``-m gpu`` (empty: the stage is skipped).
        seed: weights and noise.
    """

    model: str = "wan2.1-1.3b"
    vae: str = "wan"
    pixel_hw: tuple[int, int] = (480, 832)
    steps: int = 4
    block_frames: int = 3
    policy: str = "rolling:18"
    dtype: str = "bfloat16"
    vae_dtype: str = "float32"
    fps: float = 16.0
    video_seconds: float = 60.0
    warmup_blocks: int = 2
    session_counts: tuple[int, ...] = (1, 2, 4)
    session_blocks: int = 4
    device: str = "cuda"
    budget_s: float = 420.0
    stage_budget_s: dict[str, float] = field(default_factory=lambda: {
        "setup": 90.0, "warmup": 60.0, "single_session": 160.0, "vae_bf16": 45.0, "overlap_decode": 45.0,
        "sessions": 150.0, "gpu_tests": 90.0})
    gpu_tests: tuple[str, ...] = ("tests/inferix/test_model_gpu.py",)
    seed: int = 0

    @classmethod
    def dry(cls, **changes: Any) -> RoundSettings:
        """The same stages at tiny size on CPU (seconds): the ``tiny`` DiT, the tests' Wan VAE, 64x64."""
        base = cls(model="tiny", vae="wan-tiny", pixel_hw=(64, 64), dtype="float32", video_seconds=3.0,
                   warmup_blocks=1, session_blocks=2, device="cpu", budget_s=120.0,
                   stage_budget_s={s: 60.0 for s in STAGES})
        return replace(base, **changes)

    def blocks_for(self, seconds: float, num_pixel_frames: Callable[[int], int]) -> int:
        """Blocks whose decoded frames cover ``seconds`` of video."""
        want = math.ceil(seconds * self.fps)
        k = 1
        while num_pixel_frames(k * self.block_frames) < want:
            k += 1
        return k


class SyncedModel:
    """The DiT, waiting for the device after every forward, so the engine's host-side timings of a
    forward hold its device time. Everything else is the model's."""

    def __init__(self, model: Any, device: str) -> None:
        self._model = model
        self._device = device

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out = self._model(*args, **kwargs)
        _sync(self._device)
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)


def default_out(dry: bool) -> Path:
    """``bench/records/engine_gpu_<date>.json`` (a dry run: ``bench/_out/engine_gpu_dry.json``)."""
    if dry:
        return Path("bench/_out/engine_gpu_dry.json")
    return Path(f"bench/records/engine_gpu_{datetime.now(timezone.utc):%Y-%m-%d}.json")


class _InterruptedError(BaseException):
    """SIGTERM (``timeout`` around the round): stop the stage, write what finished. A BaseException, so
    the engine's per-session ``except Exception`` does not turn it into one failed session."""


class _Round:
    """The record being built and written after every stage."""

    def __init__(self, settings: RoundSettings, out: Path, dry: bool) -> None:
        self.s = settings
        self.out = out
        self.start = time.perf_counter()
        self.deadline = self.start + settings.budget_s
        self.record: dict[str, Any] = {
            "schema": SCHEMA,
            "dry": dry,
            "started_utc": _utc_now(),
            "finished_utc": None,
            "wall_s": None,
            "complete": False,
            "settings": _settings_json(settings),
            "environment": {},
            "stages": {name: {"status": "skipped", "reason": "not reached"} for name in STAGES},
            "summary": {},
        }
        self.state: dict[str, Any] = {}  # objects passed between stages (model, codec)

    def write(self) -> None:
        self.record["wall_s"] = round(time.perf_counter() - self.start, 3)
        self.out.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.out.with_name(self.out.name + ".tmp")
        tmp.write_text(json.dumps(self.record, indent=2, default=_json_default))
        os.replace(tmp, self.out)

    @contextmanager
    def stage(self, name: str, needs: tuple[str, ...] = ()) -> Iterator[dict[str, Any] | None]:
        """Run a stage: yields its record (``None``: skipped, the reason recorded) and its deadline
        in ``rec["_deadline"]``; an exception fails the stage, never the round."""
        stages = self.record["stages"]
        missing = [n for n in needs if stages[n]["status"] not in ("ok", "partial")]
        left = self.deadline - time.perf_counter()
        if missing:
            stages[name] = {"status": "skipped", "reason": f"needs stage {missing[0]!r}, which did not finish"}
            yield None
            return
        if left < 1.0:
            stages[name] = {"status": "skipped", "reason": f"no time left in the round's {self.s.budget_s:g} s budget"}
            yield None
            return
        budget = min(self.s.stage_budget_s.get(name, left), left)
        rec: dict[str, Any] = {"status": "running", "budget_s": round(budget, 1),
                               "reason": "the process ended during this stage (time limit or crash)"}
        stages[name] = rec
        self.write()
        t0 = time.perf_counter()
        rec["_deadline"] = t0 + budget
        try:
            if _device_ready(self.s.device):
                reset_peak_memory(self.s.device)
            yield rec
            if rec["status"] == "running":
                rec["status"] = "ok"
                rec.pop("reason", None)
        except _InterruptedError:
            rec.update(status="failed", reason="stopped by SIGTERM (the round's outer time limit)")
            raise
        except BaseException as e:  # one stage's failure never loses the record
            rec.update(status="failed", reason=f"{type(e).__name__}: {e}",
                       traceback=traceback.format_exc(limit=8)[-4000:])
            if not isinstance(e, Exception):
                raise
        finally:
            rec.pop("_deadline", None)
            rec["seconds"] = round(time.perf_counter() - t0, 3)
            if _device_ready(self.s.device):
                rec.setdefault("peak_memory_bytes", peak_memory_bytes(self.s.device))
            _free_device_memory(self.s.device)
            self.write()


def run_gpu_round(settings: RoundSettings, out: str | Path, dry: bool = False) -> dict[str, Any]:
    """Run every stage and write the JSON to ``out`` (after each stage). Returns the record.

    The record always exists at the end, with a status and, unless ``ok``, a reason per stage.
    """
    rnd = _Round(settings, Path(out), dry)
    previous = signal.getsignal(signal.SIGTERM)

    def on_term(signum: int, frame: Any) -> None:
        raise _InterruptedError()

    in_main = _in_main_thread()
    if in_main:
        signal.signal(signal.SIGTERM, on_term)
    try:
        rnd.record["environment"] = _environment(settings.device)
        rnd.write()
        _stage_setup(rnd)
        _stage_warmup(rnd)
        _stage_single_session(rnd)
        _stage_vae_bf16(rnd)
        _stage_overlap_decode(rnd)
        _stage_sessions(rnd)
        _stage_gpu_tests(rnd)
    except _InterruptedError:
        logger.warning("SIGTERM: the round stops; the JSON holds what finished")
        for st in rnd.record["stages"].values():
            if st.get("reason") == "not reached":
                st["reason"] = "not reached: SIGTERM stopped the round in an earlier stage"
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, previous)
        rnd.record["finished_utc"] = _utc_now()
        rnd.record["complete"] = all(st["status"] == "ok" for st in rnd.record["stages"].values())
        rnd.record["summary"] = _summary(rnd.record)
        rnd.write()
    return rnd.record


# ----------------------------------------------------------------------------------------- stages


def _stage_setup(rnd: _Round) -> None:
    import torch

    s = rnd.s
    with rnd.stage("setup") as rec:
        if rec is None:
            return
        if s.device.startswith("cuda") and not torch.cuda.is_available():
            raise RuntimeError(f"device {s.device!r} asked for, but torch sees no CUDA device "
                               "(torch.cuda.is_available() is False); `inferix bench --gpu --dry` is the CPU check")
        t0 = time.perf_counter()
        codec = _build_codec(s)
        rec["vae_build_s"] = round(time.perf_counter() - t0, 3)
        t0 = time.perf_counter()
        model = _build_dit(s, codec.latent_channels)
        _sync(s.device)
        rec["dit_build_s"] = round(time.perf_counter() - t0, 3)
        h, w = s.pixel_hw
        stride = codec.spatial_stride
        if h % (stride * model.config.patch_size[1]) or w % (stride * model.config.patch_size[2]):
            raise ValueError(f"pixel_hw {s.pixel_hw} must divide by the VAE stride x patch "
                             f"({stride} x {model.config.patch_size[1:]})")
        latent_hw = (h // stride, w // stride)
        tokens = (latent_hw[0] // model.config.patch_size[1]) * (latent_hw[1] // model.config.patch_size[2])
        rec.update(
            dit_parameters=sum(p.numel() for p in model.parameters()),
            vae_parameters=sum(p.numel() for p in codec.vae.parameters()),
            dit_dtype=str(model.dtype).removeprefix("torch."),
            vae_dtype=str(codec.dtype).removeprefix("torch."),
            latent_hw=list(latent_hw),
            latent_channels=codec.latent_channels,
            tokens_per_latent_frame=tokens,
            pixel_frames_per_block={"first": codec.num_pixel_frames(s.block_frames),
                                    "later": codec.num_pixel_frames(2 * s.block_frames)
                                    - codec.num_pixel_frames(s.block_frames)},
            weights_bytes=_allocated(s.device),
        )
        rnd.state.update(model=SyncedModel(model, s.device), codec=codec, latent_hw=latent_hw)


def _engine(rnd: _Round, sessions: int = 1, max_frames: int = 96, model: Any = None, overlap_decode: bool = False) -> Any:
    """An engine over the round's model (``model``: another wrapping of it) and codec."""
    st = rnd.state
    return _engine_for(st["model"] if model is None else model, st["latent_hw"], rnd.s.policy, rnd.s.device,
                       steps=rnd.s.steps, max_batch=sessions, max_sessions=sessions, max_frames=max_frames,
                       codec=st["codec"], overlap_decode=overlap_decode)


def _stage_warmup(rnd: _Round) -> None:
    with rnd.stage("warmup", needs=("setup",)) as rec:
        if rec is None:
            return
        engine = _engine(rnd)
        times = []
        t = bench_clock(rnd.s.device)
        for _ in engine.stream("warm-up", num_blocks=rnd.s.warmup_blocks, seed=rnd.s.seed + 1):
            now = bench_clock(rnd.s.device)
            times.append(now - t)
            t = now
        rec["block_s"] = [round(x, 4) for x in times]
        rec["cold_first_block_s"] = round(times[0], 4)
        rnd.state["engine"] = engine  # the timed session runs on this warm engine (a server's steady state)


def _stage_single_session(rnd: _Round) -> None:
    s = rnd.s
    with rnd.stage("single_session", needs=("warmup",)) as rec:
        if rec is None:
            return
        engine = rnd.state.pop("engine")
        codec = rnd.state["codec"]
        want = s.blocks_for(s.video_seconds, codec.num_pixel_frames)
        prof = Profile(s.model, s.device, "", (0, 0), 0, 0)
        try:
            profile_session(engine, "a timed minute of video", want, seed=s.seed, model_name=s.model,
                            deadline=rec["_deadline"], into=prof)
        except _InterruptedError:
            if prof.blocks:  # keep what finished before SIGTERM
                prof.fps = sum(b.frames for b in prof.blocks) / prof.total_s
                prof.peak_memory_bytes = peak_memory_bytes(s.device)
                rec.update(_session_results(s, prof, want, _block_flops(rnd)))
            raise
        rec.update(_session_results(s, prof, want, _block_flops(rnd)))
        if prof.stopped_early:
            rec.update(status="partial", reason=prof.stopped_early)


def _block_flops(rnd: _Round) -> Callable[[int], int]:
    """DiT FLOPs of a session's block ``i`` (its denoising passes and its clean pass), which attends to
    the frames the KV policy keeps."""
    from inferix.kv_cache import CachePolicy

    s, cfg, hw = rnd.s, rnd.state["model"].config, rnd.state["latent_hw"]
    bound = CachePolicy.parse(s.policy).max_visible_frames()

    def flops(i: int) -> int:
        past = s.block_frames * i if bound is None else min(s.block_frames * i, bound)
        return (s.steps + 1) * dit_forward_flops(cfg, hw, s.block_frames, past)

    return flops


def _session_results(s: RoundSettings, prof: Profile, want: int, block_flops: Callable[[int], int]) -> dict[str, Any]:
    """The single-session stage's numbers from a (possibly partial) profile."""
    blocks = prof.blocks
    dit_s = sum(b.denoise_s + b.cache_update_s for b in blocks)
    dit_flops = sum(block_flops(b.index) for b in blocks)
    latencies, prev = [], 0.0
    for b in blocks:
        latencies.append(b.wall_s - prev)
        prev = b.wall_s
    frames = sum(b.frames for b in blocks)
    split = {"dit_denoise_s": sum(b.denoise_s for b in blocks),
             "cache_commit_s": sum(b.cache_update_s for b in blocks),
             "vae_decode_s": sum(b.decode_s for b in blocks)}
    split["other_s"] = prof.total_s - sum(split.values())
    first = blocks[0] if blocks else None
    return dict(
        blocks_planned=want,
        blocks_done=len(blocks),
        video_seconds_done=frames / s.fps,
        frames=frames,
        total_s=prof.total_s,
        fps_including_decode=prof.fps,
        steady_fps_including_decode=((frames - first.frames) / (prof.total_s - latencies[0])
                                     if first and len(blocks) > 1 else None),
        time_to_first_block_s=prof.time_to_first_frame_s,
        realtime_factor=prof.fps / s.fps,
        per_block=[{"index": b.index, "frames": b.frames, "latency_s": lat, "dit_denoise_s": b.denoise_s,
                    "cache_commit_s": b.cache_update_s, "vae_decode_s": b.decode_s, "kv_bytes": b.kv_bytes}
                   for b, lat in zip(blocks, latencies, strict=True)],
        per_block_latency_s={"median": _median(latencies), "p90": _quantile(latencies, 0.9),
                             "max": max(latencies) if latencies else None},
        time_split_s=split,
        time_split_fraction={k: v / prof.total_s for k, v in split.items()} if prof.total_s > 0 else None,
        time_split_note="dit_denoise: the DiT's denoising passes; cache_commit: its clean pass at t = 0 that "
                        "writes the block's keys/values (plus the KV bookkeeping); vae_decode: streamed VAE "
                        "decode, to uint8 and to the host; other: scheduling, noise, host work",
        dit_tflop=dit_flops / 1e12,
        dit_tflop_per_block_steady=block_flops(10**6) / 1e12,
        dit_tflops_per_s=dit_flops / dit_s / 1e12 if dit_s > 0 else None,
        dit_flops_note="inferix.profiling.dit_forward_flops (matmuls + attention, as FlopCounterMode counts a "
                       "forward) over every pass of the blocks done, divided by their DiT time (denoise + commit)",
        peak_memory_bytes=prof.peak_memory_bytes,
        kv_bytes_peak=prof.kv_bytes_peak,
        policy=prof.policy,
    )


def psnr_db(a: Any, b: Any, peak: float = 2.0) -> float | None:
    """PSNR of ``b`` against ``a`` (tensors of one shape, values in a range ``peak`` wide: [-1, 1] for decoded
    pixels); ``None`` where they are equal (an infinite PSNR has no JSON)."""
    mse = float(((a.float() - b.float()) ** 2).mean())
    return None if mse == 0.0 else 10.0 * math.log10(peak * peak / mse)


def _stage_vae_bf16(rnd: _Round) -> None:
    """Decode two blocks' latents (one session's first and second block, streamed as the engine decodes) with
    a float32 VAE and a bfloat16 copy; record PSNR, the largest pixel difference and both decode times."""
    import copy

    import torch

    from inferix.models.vae import WanVAECodec

    s = rnd.s
    with rnd.stage("vae_bf16", needs=("setup",)) as rec:
        if rec is None:
            return
        codec = rnd.state["codec"]
        ref = codec if codec.dtype == torch.float32 else WanVAECodec(copy.deepcopy(codec.vae).float())
        low = WanVAECodec(copy.deepcopy(codec.vae).to(torch.bfloat16))
        h, w = rnd.state["latent_hw"]
        gen = torch.Generator().manual_seed(s.seed + 2)
        blocks = [torch.randn(1, codec.latent_channels, s.block_frames, h, w, generator=gen).to(s.device)
                  for _ in range(2)]

        def decode(c: Any) -> tuple[Any, float]:
            dec = c.stream_decoder()
            _sync(s.device)
            t0 = time.perf_counter()
            out = torch.cat([dec.decode(z) for z in blocks], 2)
            _sync(s.device)
            return out, time.perf_counter() - t0

        decode(ref), decode(low)  # untimed: kernels and allocator warm for both dtypes
        a, ta = decode(ref)
        b, tb = decode(low)
        psnr = psnr_db(a, b)
        rec.update(
            weights="random (diffusers' AutoencoderKLWan at the round's config, seed "
                    f"{s.seed}): the error bfloat16 arithmetic adds on this architecture; measure a trained "
                    "checkpoint again before serving it in bf16",
            latent_frames=2 * s.block_frames, pixel_frames=int(a.shape[2]),
            psnr_db=None if psnr is None else round(psnr, 2),
            max_abs_diff=round(float((a.float() - b.float()).abs().max()), 5),
            fp32_decode_s=round(ta, 4), bf16_decode_s=round(tb, 4),
            bf16_speedup=round(ta / tb, 3) if tb > 0 else None,
            min_psnr_db=VAE_BF16_MIN_PSNR_DB,
            bf16_acceptable=psnr is None or psnr >= VAE_BF16_MIN_PSNR_DB,
        )
        del ref, low, a, b
        _free_device_memory(s.device)


def _stage_overlap_decode(rnd: _Round) -> None:
    """One session's blocks with each VAE decode in line, then overlapped with the next block's denoising
    (``EngineConfig.overlap_decode``: a worker thread on its own CUDA stream), on the warm model and codec:
    wall seconds of each (device synced at the ends), their ratio, and whether the frames are identical.

    The DiT runs unwrapped here: :class:`SyncedModel` waits for the whole device after every forward, which
    would wait for the decode stream too."""
    import numpy as np

    s = rnd.s
    with rnd.stage("overlap_decode", needs=("setup",)) as rec:
        if rec is None:
            return
        model = rnd.state["model"]._model
        blocks = max(2, s.session_blocks * 2)
        half = (rec["_deadline"] - time.perf_counter()) / 2

        def run(overlap: bool) -> tuple[float, list[Any], bool]:
            eng = _engine(rnd, model=model, overlap_decode=overlap)
            stop = time.perf_counter() + half
            _sync(s.device)
            t0 = time.perf_counter()
            frames = []
            for out in eng.stream("overlap", num_blocks=blocks, seed=s.seed + 3):
                frames.append(out.frames)
                if time.perf_counter() > stop:
                    break
            _sync(s.device)
            return time.perf_counter() - t0, frames, len(frames) == blocks

        t_in, f_in, full_in = run(False)
        t_ov, f_ov, full_ov = run(True)
        t_in, t_ov = round(t_in, 4), round(t_ov, 4)  # the speedup is the ratio of the times recorded
        n = min(len(f_in), len(f_ov))
        rec.update(blocks=blocks, in_line_s=t_in, overlapped_s=t_ov,
                   blocks_done={"in_line": len(f_in), "overlapped": len(f_ov)},
                   speedup=round(t_in / t_ov, 3) if full_in and full_ov and t_ov > 0 else None,
                   frames_identical=all(np.array_equal(a, b) for a, b in zip(f_in[:n], f_ov[:n], strict=True)),
                   clock="wall seconds, device synced at both ends")
        if not (full_in and full_ov):
            rec.update(status="partial", reason="the stage's time budget ran out before both runs finished")


def _stage_sessions(rnd: _Round) -> None:
    s = rnd.s
    with rnd.stage("sessions", needs=("setup",)) as rec:
        if rec is None:
            return
        deadline = rec["_deadline"]
        runs: dict[str, Any] = {}
        rec["runs"] = runs
        for n in s.session_counts:
            if time.perf_counter() > deadline:
                runs[str(n)] = {"status": "skipped", "reason": "the stage's time budget ran out"}
                continue
            runs[str(n)] = _batched_sessions(rnd, n, deadline)
            _free_device_memory(s.device)
            rnd.write()
        one = runs.get("1", {}).get("throughput_fps")
        for r in runs.values():
            if one and r.get("throughput_fps"):
                r["throughput_vs_one_session"] = r["throughput_fps"] / one
        bad = [k for k, r in runs.items() if r["status"] != "ok"]
        if bad:
            rec.update(status="partial", reason=f"sessions {', '.join(bad)}: " +
                       "; ".join(str(runs[k].get("reason")) for k in bad))


def _batched_sessions(rnd: _Round, n: int, deadline: float) -> dict[str, Any]:
    """``n`` sessions of ``session_blocks`` blocks batched in one engine, after one untimed block each."""
    s = rnd.s
    dev = s.device
    reset_peak_memory(dev)
    engine = _engine(rnd, sessions=n)
    try:
        warm = [engine.add_session(f"warm {i}", num_blocks=1, seed=100 + i) for i in range(n)]
        engine.run()
        for sid in warm:
            engine.remove(sid)
        ids = [engine.add_session(f"session {i}", num_blocks=s.session_blocks, seed=s.seed + i) for i in range(n)]
        t0 = bench_clock(dev)
        wall0 = time.perf_counter()
        first: dict[str, float] = {}
        frames = 0
        stopped = None
        while engine.has_unfinished:
            for out in engine.step():
                frames += int(out.frames.shape[0])
                first.setdefault(out.session_id, bench_clock(dev) - t0)
            if engine.has_unfinished and time.perf_counter() > deadline:
                stopped = "the stage's time budget ran out"
                break
        elapsed = bench_clock(dev) - t0
        done = [engine.session(i).blocks_done for i in ids]
        failed = {i: engine.session(i).error for i in ids if engine.session(i).error}
        r: dict[str, Any] = {"status": "ok", "sessions": n, "blocks_per_session": s.session_blocks,
                             "blocks_done": done, "frames": frames, "seconds": elapsed,
                             "wall_s": time.perf_counter() - wall0,
                             "throughput_fps": frames / elapsed if elapsed > 0 else None,
                             "fps_per_session": frames / elapsed / n if elapsed > 0 else None,
                             "first_block_s": [first.get(i) for i in ids],
                             "peak_memory_bytes": peak_memory_bytes(dev)}
        if failed:
            r.update(status="failed", reason=f"session errors: {failed}")
        elif stopped:
            r.update(status="partial", reason=f"{stopped}: {sum(done)} of {n * s.session_blocks} blocks done")
        return r
    except Exception as e:  # e.g. out of memory at 4 sessions: the smaller counts still stand
        return {"status": "failed", "sessions": n, "reason": f"{type(e).__name__}: {e}"}
    finally:
        for sid in list(engine.sessions):
            engine.remove(sid)


def _stage_gpu_tests(rnd: _Round) -> None:
    s = rnd.s
    rnd.state.clear()  # the tests' process builds its own 1.3B model: give it the memory
    _free_device_memory(s.device)
    with rnd.stage("gpu_tests") as rec:
        if rec is None:
            return
        if not s.gpu_tests:
            rec.update(status="skipped", reason="no test files given")
            return
        files = [f for f in s.gpu_tests if Path(f).exists()]
        if not files:
            rec.update(status="skipped", reason=f"none of {list(s.gpu_tests)} exists here")
            return
        timeout = max(1.0, rec["_deadline"] - time.perf_counter())
        with tempfile.TemporaryDirectory() as d:
            xml = Path(d) / "junit.xml"
            cmd = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider",
                   f"--junitxml={xml}", *files]
            rec["command"] = " ".join(cmd[1:]).replace(str(xml), "JUNIT.xml")
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired as e:
                rec.update(status="partial", reason=f"pytest ran past the stage's {timeout:.0f} s",
                           output_tail=_text(e.stdout)[-2000:])
                return
            rec["returncode"] = proc.returncode
            rec["output_tail"] = (proc.stdout + proc.stderr)[-2000:]
            rec.update(_junit_counts(xml))
        if rec.get("failed") or rec.get("errors") or proc.returncode not in (0, 5):
            rec.update(status="failed", reason=f"pytest exit {proc.returncode}: {rec.get('failed', 0)} failed, "
                                               f"{rec.get('errors', 0)} errors")


# ------------------------------------------------------------------------------------------ parts


def _build_codec(s: RoundSettings) -> Any:
    import torch

    from inferix.models.vae import WanVAECodec

    try:
        from diffusers import AutoencoderKLWan
    except ImportError as e:
        raise RuntimeError(f"the Wan VAE needs diffusers ({e}); on the device machine carry its wheel: here "
                           "`bash scripts/engine_gpu_round.sh --prepare`, then run(..., carry=['.whl-engine'])") from e

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(s.seed)
        if s.vae == "wan":
            vae = AutoencoderKLWan()  # the default config is the Wan2.1 VAE (z_dim 16, base_dim 96)
        elif s.vae == "wan-tiny":
            vae = AutoencoderKLWan(base_dim=4, z_dim=4, dim_mult=[1, 1, 1, 1], num_res_blocks=1,
                                   temperal_downsample=[False, True, True])
        else:
            raise ValueError(f"vae must be 'wan' or 'wan-tiny', got {s.vae!r}")
    module: Any = vae.to(s.device)  # type: ignore[attr-defined]  # an nn.Module; diffusers' stubs hide .to
    if s.vae_dtype != "float32":  # a float32 cast makes diffusers warn for nothing
        module = module.to(getattr(torch, s.vae_dtype))
    return WanVAECodec(module.eval())


def _build_dit(s: RoundSettings, latent_channels: int) -> Any:
    """The named config with random weights, built on the device (a 1.3B init on the CPU takes long)."""
    import torch

    from inferix.models.causal_wan import CausalWanModel
    from inferix.models.configs import get_config

    cfg = get_config(s.model)
    if cfg.in_channels != latent_channels:  # the tiny config is 4 channels wide; match the codec's
        cfg = cfg.replace(in_channels=latent_channels, out_channels=latent_channels)
    with torch.random.fork_rng(devices=[] if s.device == "cpu" else None), torch.device(s.device):
        torch.manual_seed(s.seed)
        model = CausalWanModel(cfg)
    return model.to(s.device).to_dtype(getattr(torch, s.dtype)).eval()  # .to: any tensor made off the device


def _environment(device: str) -> dict[str, Any]:
    import numpy
    import torch

    env: dict[str, Any] = {
        "device": device,
        "device_name": "cpu",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": None,
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "git_commit": _git_commit(),
    }
    try:
        import diffusers

        env["diffusers"] = diffusers.__version__
    except ImportError:
        env["diffusers"] = None
    if device.startswith("cuda") and torch.cuda.is_available():
        props = torch.cuda.get_device_properties(torch.device(device))
        env.update(device_name=props.name, gpu_memory_bytes=props.total_memory,
                   compute_capability=f"{props.major}.{props.minor}", multiprocessors=props.multi_processor_count,
                   cudnn=torch.backends.cudnn.version(),
                   tf32={"matmul": torch.backends.cuda.matmul.allow_tf32, "cudnn": torch.backends.cudnn.allow_tf32},
                   driver=_nvidia_driver())
    elif device.startswith("cuda"):
        env["device_name"] = None
    return env


def _summary(record: dict[str, Any]) -> dict[str, Any]:
    """The headline numbers (``None`` where their stage did not finish)."""
    st = record["stages"]
    one = st["single_session"]
    runs = st["sessions"].get("runs", {})
    env = record["environment"]
    return {
        "device_name": env.get("device_name"),
        "fps_including_decode": one.get("fps_including_decode"),
        "time_to_first_block_s": one.get("time_to_first_block_s"),
        "median_block_latency_s": (one.get("per_block_latency_s") or {}).get("median"),
        "video_seconds_done": one.get("video_seconds_done"),
        "peak_memory_bytes": max((v.get("peak_memory_bytes") or 0 for v in st.values()), default=0),
        "time_split_fraction": one.get("time_split_fraction"),
        "dit_tflops_per_s": one.get("dit_tflops_per_s"),
        "vae_bf16_psnr_db": st["vae_bf16"].get("psnr_db"),
        "vae_bf16_speedup": st["vae_bf16"].get("bf16_speedup"),
        "overlap_decode_speedup": st["overlap_decode"].get("speedup"),
        "sessions_throughput_fps": {k: r.get("throughput_fps") for k, r in runs.items()},
        "gpu_tests": {k: st["gpu_tests"].get(k) for k in ("passed", "failed", "errors", "skipped")},
        "stages": {k: v["status"] for k, v in st.items()},
    }


def _junit_counts(xml: Path) -> dict[str, int]:
    import xml.etree.ElementTree as ET

    if not xml.exists():
        return {"tests": 0, "passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    root = ET.parse(xml).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    n = {k: sum(int(x.get(k, 0)) for x in suites) for k in ("tests", "failures", "errors", "skipped")}
    return {"tests": n["tests"], "passed": n["tests"] - n["failures"] - n["errors"] - n["skipped"],
            "failed": n["failures"], "errors": n["errors"], "skipped": n["skipped"]}


def _settings_json(s: RoundSettings) -> dict[str, Any]:
    from inferix.models.configs import get_config
    from inferix.schedulers import timesteps

    d = asdict(s)
    d["timesteps"] = list(timesteps("self_forcing"))[: s.steps]
    d["dit_config"] = get_config(s.model).to_dict()
    d["weights"] = "random init from the configs under the seed (no downloads): timings only, frames are noise"
    d["text_encoder"] = "random embeddings shaped [1, text_len, text_dim] (umT5 runs once per prompt, not timed)"
    d["clock"] = ("wall seconds after a device sync on CUDA (inferix.profiling.bench_clock, profile_session); "
                  "on CPU (--dry) the warm-up and sessions stages count process CPU seconds")
    return d


def _device_ready(device: str) -> bool:
    """Whether the device's memory counters can be read (a CUDA device that torch sees, or the CPU)."""
    if device.startswith("cuda"):
        import torch

        return bool(torch.cuda.is_available())
    return True


def _allocated(device: str) -> int | None:
    if device.startswith("cuda"):
        import torch

        return int(torch.cuda.memory_allocated())
    return None


def _free_device_memory(device: str) -> None:
    import gc

    gc.collect()
    if device.startswith("cuda"):
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()


def _git_commit() -> str | None:
    try:
        r = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        return r.stdout.strip() or None if r.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def _nvidia_driver() -> str | None:
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=10)
        return r.stdout.strip().splitlines()[0] if r.returncode == 0 and r.stdout.strip() else None
    except (OSError, subprocess.SubprocessError):
        return None


def _median(xs: list[float]) -> float | None:
    return _quantile(xs, 0.5)


def _quantile(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def _text(x: Any) -> str:
    return x.decode(errors="replace") if isinstance(x, bytes) else (x or "")


def _utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _in_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _json_default(o: Any) -> Any:
    if isinstance(o, tuple | set):
        return list(o)
    return str(o)
