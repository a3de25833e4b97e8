"""How far a world model's rollout wanders from its first frame, per case, against the simulator's.

For each case of a suite (by default ``smoke``'s mechanics, robotics, thermal and material cases)
every model generates the video from the case's first frame (as ``evaluate-model`` gives it); the
script prints, in grey levels (0-255, mean absolute difference over pixels and channels):

* ``ref``: the simulator's own last frame against its first (a falling ball moves a few pixels: 2;
  a dye spreading: 20; deposition frosting the whole pane: 54);
* per model, ``last``: its last frame against that first frame, the mean over ``--seeds``, and with
  two or more seeds their spread (max - min).

A model that keeps the scene sits near ``ref``; one that loses it drifts towards what a start from
noise gives (67 on smoke bounce). ``tests/worldolympiad/test_inferix_bridge.py`` holds the shipped
weights to ``last < 30`` on smoke bounce at seed 0; run this on a candidate before the gaming bench
and before copying it into the package (session 24's run D passed every bench and failed that test
in the fresh-clone CI at 66.7).

Usage::

    python reference_world_lab/bench/bench_rollout_drift.py [--models inferix:reference-world,inferix:/tmp/rw/run/model]
        [--suite smoke] [--families mechanics,robotics,thermal,material] [--seeds 0,1,2] [--json F]

About 95 s per model and seed for the 15 smoke cases on 2 idle CPU cores (3.5 min beside another job). Prints numbers; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

DEFAULT_FAMILIES = ("mechanics", "robotics", "thermal", "material")
# test_inferix_bridge.py's bound on smoke bounce's last frame (seed 0)
BRIDGE_CASE, BRIDGE_BOUND = "smoke-mechanics-bounce", 30.0


def frame_error(a: np.ndarray, b: np.ndarray) -> float:
    """Mean absolute difference of two ``uint8 [H, W, 3]`` frames, in grey levels."""
    if a.shape != b.shape:
        raise ValueError(f"frames differ in shape: {a.shape} vs {b.shape}")
    return float(np.abs(a.astype(np.int32) - b.astype(np.int32)).mean())


def summarize(rows: list[dict]) -> dict[str, dict]:
    """Per model: the mean ``last`` over its cases, the mean ``ref`` over the same cases, their
    ratio, the largest seed spread, and the cases that drift the bridge bound or more beyond the
    simulator's own drift (``last - ref``; only :data:`BRIDGE_CASE` is tested, at ``last`` < 30,
    the others are listed for reading: thermal deposition's reference itself moves 54)."""
    out: dict[str, dict] = {}
    for model in dict.fromkeys(r["model"] for r in rows):
        rs = [r for r in rows if r["model"] == model]
        last = float(np.mean([r["last"] for r in rs]))
        ref = float(np.mean([r["ref"] for r in rs]))
        out[model] = {
            "cases": len(rs),
            "last": last,
            "ref": ref,
            "last_over_ref": last / ref if ref > 0 else float("inf"),
            "max_spread": max((r["spread"] for r in rs), default=0.0),
            "over_bound": sorted(r["case"] for r in rs if r["last"] - r["ref"] >= BRIDGE_BOUND),
            "bridge_case": next((r["last"] for r in rs if r["case"] == BRIDGE_CASE), None),
        }
    return out


def measure(models: list[str], cases: list, seeds: list[int], cache_dir: str) -> list[dict]:
    """One row per (model, case): ``ref``, ``first`` and ``last`` (means over seeds), ``spread``."""
    from worldolympiad.models.base import ModelError, build_model
    from worldolympiad.models.baselines import first_frame
    from worldolympiad.models.reference import ReferenceStore

    store = ReferenceStore(cache_dir)
    refs = {}
    for case in cases:
        video = store.load(case)
        start = first_frame(case, cache_dir)
        refs[case.id] = (start, frame_error(np.asarray(video.frames[-1]), np.asarray(video.frames[0])))
    rows: list[dict] = []
    for spec in models:
        model = build_model(spec, cache_dir=cache_dir)
        t0 = time.perf_counter()
        try:
            for case in cases:
                start, ref = refs[case.id]
                firsts, lasts = [], []
                try:
                    for seed in seeds:
                        frames = model.generate(case, seed=seed).frames
                        firsts.append(frame_error(frames[0], start))
                        lasts.append(frame_error(frames[-1], start))
                except ModelError as e:  # one bad case never stops the run
                    print(f"  {spec} {case.id}: failed: {e}", flush=True)
                    continue
                rows.append(
                    {
                        "model": spec,
                        "case": case.id,
                        "generator": case.metadata.get("generator", ""),
                        "ref": ref,
                        "first": float(np.mean(firsts)),
                        "last": float(np.mean(lasts)),
                        "spread": float(max(lasts) - min(lasts)),
                        "lasts": lasts,
                    }
                )
                print(f"  {spec:40s} {case.id:32s} ref {ref:5.1f}  last {rows[-1]['last']:5.1f}", flush=True)
        finally:
            model.close()
        print(f"{spec}: {time.perf_counter() - t0:.0f} s", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--models",
        default="inferix:reference-world",
        help="comma-separated model specs (evaluate-model's --model syntax)",
    )
    ap.add_argument("--suite", default="smoke")
    ap.add_argument(
        "--families",
        default=",".join(DEFAULT_FAMILIES),
        help="generator families to run (the part of metadata.generator before the dot); 'all' for every case",
    )
    ap.add_argument("--seeds", default="0", help="comma-separated seeds; two or more print the spread")
    ap.add_argument("--json", default=None, help="write the rows and the summary here")
    args = ap.parse_args(argv)

    from worldolympiad.suites import load_suite

    families = None if args.families == "all" else set(args.families.split(","))
    cases = [
        c
        for c in load_suite(args.suite).cases
        if families is None or c.metadata.get("generator", "").split(".")[0] in families
    ]
    if not cases:
        ap.error(f"no case of suite {args.suite!r} has a generator in {sorted(families or [])}")
    models = [m for m in args.models.split(",") if m]
    seeds = [int(s) for s in args.seeds.split(",")]
    with tempfile.TemporaryDirectory(prefix="wo-drift-") as tmp:
        rows = measure(models, cases, seeds, tmp)

    by_case = {c.id: {} for c in cases}
    for r in rows:
        by_case[r["case"]][r["model"]] = r
    width = max(12, *(len(m) for m in models))
    print(f"\nlast frame against the first, grey levels (mean over seeds {seeds})")
    print(f"{'case':32s} {'ref':>6s} " + " ".join(f"{m[-width:]:>{width}s}" for m in models))
    for cid, per in by_case.items():
        ref = next(iter(per.values()))["ref"] if per else float("nan")
        cells = []
        for m in models:
            r = per.get(m)
            cells.append(
                f"{'failed':>{width}s}"
                if r is None
                else f"{r['last']:{width - 7 if len(seeds) > 1 else width}.1f}"
                + (f" ±{r['spread'] / 2:4.1f}" if len(seeds) > 1 else "")
            )
        print(f"{cid:32s} {ref:6.1f} " + " ".join(cells))
    summary = summarize(rows)
    print()
    for m, s in summary.items():
        bridge = "n/a" if s["bridge_case"] is None else f"{s['bridge_case']:.1f}"
        print(
            f"{m}: mean last {s['last']:.1f} against ref {s['ref']:.1f} ({s['last_over_ref']:.2f}x); "
            f"{BRIDGE_CASE} {bridge} (bridge test bound {BRIDGE_BOUND:g}); {BRIDGE_BOUND:g} or more beyond ref: "
            f"{', '.join(s['over_bound']) or 'none'}"
        )
    if args.json:
        Path(args.json).write_text(
            json.dumps({"suite": args.suite, "seeds": seeds, "rows": rows, "summary": summary}, indent=1)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
