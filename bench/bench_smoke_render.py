"""Time the `smoke` suite render (every family, both scenario helpers) on this machine.

Usage: ``OMP_NUM_THREADS=1 python bench/bench_smoke_render.py [--suite smoke] [--workers 1]``

Prints seconds per case and per family, the total (build + render + write), and the ratio
to the 60 s budget of issue 3 (acceptance 4). Never fails on a timing.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import defaultdict

BUDGET_S = 60.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="smoke")
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args(argv)

    from scenarios.render import render_cases
    from scenarios.suites import build_suite

    t0 = time.perf_counter()
    cases = build_suite(args.suite)
    t_build = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as out:
        t1 = time.perf_counter()
        report = render_cases(cases, out, name=args.suite, workers=args.workers)
        t_render = time.perf_counter() - t1
    family: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    print(f"{'case':40s} {'generator':24s} {'frames':>6s} {'HxW':>9s} {'seconds':>8s}")
    for c in cases:
        gen = c.metadata["generator"]
        s = report.seconds.get(c.id)
        fam = gen.split(".")[0]
        if s is not None:
            family[fam] += s
            count[fam] += 1
        shown = f"{s:8.2f}" if s is not None else "  FAILED"
        print(f"{c.id:40s} {gen:24s} {c.num_frames:6d} {c.height:4d}x{c.width:<4d} {shown}")
    print()
    for fam in sorted(family):
        print(f"family {fam:12s} {count[fam]:3d} case(s) {family[fam]:7.2f} s")
    total = t_build + t_render
    print(f"\nbuild {t_build:.2f} s + render/write {t_render:.2f} s = {total:.2f} s for {len(cases)} cases "
          f"(workers={args.workers}, cpus={os.cpu_count()})")
    print(f"ratio to the {BUDGET_S:.0f} s budget: {total / BUDGET_S:.2f}")
    for cid, err in report.failed.items():
        print(f"FAILED {cid}: {err}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
