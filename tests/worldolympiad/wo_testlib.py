"""Helpers shared by the worldolympiad tests (importable by spawned workers and subprocesses).

The test directory is put on ``sys.path`` by ``conftest.py`` and on ``PYTHONPATH`` for
subprocesses, so classes defined here pickle by reference into spawn workers.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from worldolympiad.options import OptionSpec
from worldolympiad.track import EvalContext, Track, TrackOutput
from worldolympiad.types import Case, MetricValue, Video

HERE = Path(__file__).resolve().parent


class CountingTrack(Track):
    """A test track: score = mean brightness + a seed-dependent jitter; logs every call to a file.

    Options: ``counting.calls`` (file that gets one line per evaluate call),
    ``counting.sleep`` (seconds to sleep per call, to make a run killable halfway).
    """

    name = "counting"
    version = "3"
    OPTIONS = {"calls": OptionSpec("path", None, "file that gets one line per evaluate call"),
               "sleep": OptionSpec("float", 0, "seconds to sleep per call"),
               "pids": OptionSpec("path", None, "file that gets '<case> <seed> <pid>' per call, before the sleep")}

    def applicability(self, case: Case) -> str | None:
        if case.metadata.get("skip_counting"):
            return f"case {case.id!r} asks to skip the counting track"
        return None

    def evaluate(self, video: Video, case: Case, ctx: EvalContext) -> TrackOutput:
        calls = ctx.option("counting.calls")
        if calls:
            with open(calls, "a") as f:
                f.write(f"{case.id} {ctx.seed}\n")
        pids = ctx.option("counting.pids")
        if pids:
            with open(pids, "a") as f:
                f.write(f"{case.id} {ctx.seed} {os.getpid()}\n")
        time.sleep(float(ctx.option("counting.sleep", 0)))
        with ctx.timed("brightness"):
            brightness = float(video.frames.mean()) / 255.0
        jitter = float(np.random.default_rng(ctx.seed).uniform(0, 0.01))
        score = min(1.0, brightness * 0.99 + jitter)
        ref = ctx.reference()
        metrics = [MetricValue("brightness", brightness, brightness, version="1",
                               details={"frames": video.num_frames, "shape": list(video.frames.shape)})]
        if ref is None:
            metrics.append(MetricValue.not_applicable("ref_diff", "case has no reference video"))
        else:
            n = min(ref.num_frames, video.num_frames)
            diff = float(np.abs(ref.frames[:n].astype(np.int16) - video.frames[:n].astype(np.int16)).mean())
            metrics.append(MetricValue("ref_diff", diff, max(0.0, 1 - diff / 255)))
        return TrackOutput(metrics=metrics, score=score, coverage={"frames": video.num_frames})


class CrashingTrack(Track):
    """A test track whose evaluate always raises (a bug in a track)."""

    name = "crashing"
    version = "1"

    def applicability(self, case: Case) -> str | None:
        return None

    def evaluate(self, video: Video, case: Case, ctx: EvalContext) -> TrackOutput:
        raise RuntimeError("boom")


def register_test_tracks() -> None:
    from worldolympiad.registries import TRACKS

    TRACKS.register("counting", CountingTrack, override=True)
    TRACKS.register("crashing", CrashingTrack, override=True)


def case_dict(case_id: str, num_frames: int = 6, res: tuple[int, int] = (16, 16), **extra: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "id": case_id, "scenario": "realworld", "fps": 8, "num_frames": num_frames, "resolution": list(res),
        "prompt": f"a test scene {case_id}", "tracks": ["physics", "geometry", "interaction", "longvideo"],
        "chunks": [{"index": 0, "frame_start": 0, "frame_end": num_frames // 2, "caption": "first", "action": "left"},
                   {"index": 1, "frame_start": num_frames // 2, "frame_end": num_frames, "caption": "second",
                    "action": "right"}],
    }
    d.update(extra)
    return d


def frames_for(case_id: str, num_frames: int = 6, res: tuple[int, int] = (16, 16), seed: int = 0) -> np.ndarray:
    """Deterministic smooth frames (compress well, differ per case)."""
    rng = np.random.default_rng(sum(map(ord, case_id)) + seed)
    base = rng.integers(30, 220, size=3)
    h, w = res
    yy, xx = np.mgrid[0:h, 0:w]
    out = np.empty((num_frames, h, w, 3), np.uint8)
    for t in range(num_frames):
        for c in range(3):
            out[t, :, :, c] = np.clip(base[c] + 20 * np.sin((xx + 2 * t) / 4.0 + c) + yy, 0, 255)
    return out


def write_suite(path: Path, cases: list[Any], name: str = "testsuite") -> Path:
    path.write_text(json.dumps({"name": name, "version": "1", "cases": cases}, indent=2))
    return path


def subprocess_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["OMP_NUM_THREADS"] = "1"
    return env


def rows_by_key(run_dir: Path) -> dict[tuple[str, int, str], dict[str, Any]]:
    """``results.jsonl`` rows by ``(case_id, seed, track)``, without their timings (wall-clock seconds
    differ from run to run); a key written twice fails the calling test."""
    out: dict[tuple[str, int, str], dict[str, Any]] = {}
    for line in (Path(run_dir) / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        r.pop("timings", None)
        key = (r["case_id"], r["seed"], r["track"])
        assert key not in out, f"row {key} written twice"
        out[key] = r
    return out
