"""Evaluator overhead and worker scaling, measured side by side (prints ratios; never fails on timing).

* overhead: wall time of ``evaluate()`` vs the same work done by hand (decode + track) → ratio.
* resume: a rerun of a finished run (everything skipped) vs the first run.
* workers: ``--workers 2`` vs 1 on a CPU-bound track (spawned processes).

Run: ``python bench/bench_evaluator.py``
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import numpy as np

from worldolympiad.registries import TRACKS
from worldolympiad.track import Track, TrackOutput
from worldolympiad.types import Case, MetricValue


class BurnTrack(Track):
    """A CPU-bound stand-in for a real track (~tens of ms of numpy per video)."""

    name = "burn"
    version = "1"

    def applicability(self, case):
        return None

    def evaluate(self, video, case, ctx):
        x = video.frames.astype(np.float32)
        acc = 0.0
        for _ in range(int(ctx.option("burn.rounds", 20))):
            acc += float(np.abs(np.diff(x, axis=0)).mean() + np.fft.rfft2(x[..., 0]).real.mean())
        s = 1 / (1 + abs(acc) / 1e4)
        return TrackOutput(metrics=[MetricValue("burn", acc, s)], score=s)


def _setup(root: Path, n_cases: int) -> tuple[Path, Path]:
    from worldolympiad.video import write_video

    vids = root / "videos"
    vids.mkdir(parents=True)
    cases = []
    rng = np.random.default_rng(0)
    for i in range(n_cases):
        cid = f"b{i:03d}"
        frames = rng.integers(0, 255, (16, 48, 64, 3)).astype(np.uint8)
        write_video(vids / f"{cid}.mp4", frames, 8)
        cases.append({"id": cid, "scenario": "realworld", "fps": 8, "num_frames": 16, "resolution": [48, 64]})
    suite = root / "suite.json"
    suite.write_text(json.dumps({"name": "bench", "cases": cases}))
    return suite, vids


def main() -> None:
    from worldolympiad.evaluator import EvalConfig, evaluate, make_run_spec
    from worldolympiad.track import EvalContext
    from worldolympiad.video import read_video

    TRACKS.register("burn", BurnTrack, override=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        suite, vids = _setup(root, 12)
        spec = make_run_spec(f"videos:{vids}", str(suite), ["burn"], [0])

        t0 = time.perf_counter()
        track = BurnTrack()
        for f in sorted(vids.glob("*.mp4")):
            v = read_video(f)
            track.evaluate(v, Case(f.stem, "realworld", 8, 16, (48, 64)), EvalContext(seed=0))
        by_hand = time.perf_counter() - t0

        t0 = time.perf_counter()
        evaluate(spec, EvalConfig(out=root / "r1", progress=False, device="cpu"))
        one = time.perf_counter() - t0
        t0 = time.perf_counter()
        evaluate(spec, EvalConfig(out=root / "r1", progress=False, device="cpu"))
        resume = time.perf_counter() - t0
        t0 = time.perf_counter()
        evaluate(spec, EvalConfig(out=root / "r2", progress=False, device="cpu", workers=2))
        two = time.perf_counter() - t0

    print("12 cases x 1 seed, 16x48x64 frames, CPU-bound track")
    print(f"by hand (decode + track)      {by_hand:7.2f} s")
    print(f"evaluate(), 1 process         {one:7.2f} s   overhead ratio {one / by_hand:5.2f}x")
    print(f"evaluate(), resume (all done) {resume:7.2f} s   ratio to first run {resume / one:5.2f}x")
    print(f"evaluate(), --workers 2       {two:7.2f} s   speedup vs 1 process {one / two:5.2f}x "
          "(includes spawning 2 interpreters)")


if __name__ == "__main__":
    main()
