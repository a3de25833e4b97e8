"""The Ray executor against local execution, side by side in one run (prints ratios; never fails on timing).

* per-task overhead: a track that does no work (``burn.rounds=0``) on Ray vs locally, divided by the tasks
  Ray ran (one model call per (case, seed) plus one scoring task per row): what each task costs.
* speedup: a CPU-bound track (``burn.rounds=N``) on a Ray instance of 1 CPU vs one of 2 CPUs, and the same
  for local ``--workers 1`` vs ``--workers 2`` (spawned processes). Each Ray instance runs the slice once
  to start its worker processes (``cold``, reported) and then again into a fresh run directory (``warm``).

The speedup needs 2 free cores: the script prints how many this process may use. Run:
``OMP_NUM_THREADS=1 python bench/bench_ray.py [--cases 12] [--rounds 100]``
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import bench_evaluator  # the same CPU-bound `burn` track and suite as the local bench

from worldolympiad.registries import TRACKS


def _timed(spec, out: Path, **config) -> float:  # type: ignore[no-untyped-def]
    from worldolympiad.evaluator import EvalConfig, evaluate

    t0 = time.perf_counter()
    outcome = evaluate(spec, EvalConfig(out=out, progress=False, device="cpu", **config))
    seconds = time.perf_counter() - t0
    assert outcome.computed == len(outcome.rows) and all(r.status == "ok" for r in outcome.rows), "bench run failed"
    return seconds


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", type=int, default=12)
    p.add_argument("--rounds", type=int, default=100, help="burn rounds per row of the CPU-bound slice")
    args = p.parse_args()
    import ray
    import ray.cloudpickle

    from worldolympiad.evaluator import make_run_spec

    # the burn track's class travels to Ray's workers by value: they cannot import this folder's modules
    ray.cloudpickle.register_pickle_by_value(bench_evaluator)

    TRACKS.register("burn", bench_evaluator.BurnTrack, override=True)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        suite, vids = bench_evaluator._setup(root, args.cases)
        noop = make_run_spec(f"videos:{vids}", str(suite), ["burn"], [0], options={"burn.rounds": 0})
        burn = make_run_spec(f"videos:{vids}", str(suite), ["burn"], [0], options={"burn.rounds": args.rounds})
        t: dict[str, float] = {}
        t["local noop"] = _timed(noop, root / "l0")
        t["local 1"] = _timed(burn, root / "l1")
        t["local 2"] = _timed(burn, root / "l2", workers=2)
        for cpus in (1, 2):
            ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
            try:
                t[f"ray{cpus} cold"] = _timed(burn, root / f"r{cpus}c", executor="ray")
                t[f"ray{cpus}"] = _timed(burn, root / f"r{cpus}", executor="ray")
                if cpus == 1:
                    t["ray noop"] = _timed(noop, root / "r0", executor="ray")
            finally:
                ray.shutdown()
    tasks = 2 * args.cases  # a model call per (case, seed) and a scoring task per row
    print(f"{args.cases} cases x 1 seed x 1 track, 16x48x64 frames; this process may use {cores} core(s)")
    print(f"no-work track:  local {t['local noop']:6.2f} s   ray (1 CPU) {t['ray noop']:6.2f} s   "
          f"overhead {(t['ray noop'] - t['local noop']) / tasks * 1000:6.1f} ms per Ray task ({tasks} tasks), "
          f"ratio {t['ray noop'] / t['local noop']:5.2f}x")
    print(f"burn x{args.rounds}:      local 1 process {t['local 1']:6.2f} s   ray 1 CPU {t['ray1']:6.2f} s "
          f"(cold {t['ray1 cold']:6.2f} s)   ratio ray/local {t['ray1'] / t['local 1']:5.2f}x")
    print(f"2 over 1:       ray 2 CPUs {t['ray2']:6.2f} s (cold {t['ray2 cold']:6.2f} s)   speedup "
          f"{t['ray1'] / t['ray2']:5.2f}x   |   local --workers 2 {t['local 2']:6.2f} s   speedup "
          f"{t['local 1'] / t['local 2']:5.2f}x (includes spawning 2 interpreters)")


if __name__ == "__main__":
    main()
