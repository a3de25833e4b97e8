"""Physics track self-check: is every rule a case declares checkable on the case's own reference?

For each case of a suite that the physics track applies to, the simulator's reference is
scored against itself (model-free checks, no judge). A declared rule should get a verdict there
and pass; a rule with no verdict on the ground truth can only ever fail a model (through the
ride-along continuity / permanence / rigidity checks) and never pass it, so it is a defect of
the case or of the checks. Prints one line per unverified rule with the checks' reasons, then
the totals per generator and overall. Rules the track detected on its own (no declaration)
are listed for information.

Usage:
    MUJOCO_GL=egl python bench/bench_physics_coverage.py [--suite standard] [--limit N]

Session 7 (standard suite, 102 physics cases): 70 of 123 declared rules verified before the
fixes in tests/tracks/physics/test_reference_coverage.py; see NOTES.md for the count after.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("OMP_NUM_THREADS", "1")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", default="standard", help="registered suite name or suite file (default: standard)")
    ap.add_argument("--limit", type=int, default=0, help="stop after N physics cases (0 = all)")
    args = ap.parse_args(argv)

    from tracks.physics.track import PhysicsTrack, reference_rule_verdicts
    from worldolympiad.registries import GENERATORS
    from worldolympiad.suites import load_suite

    track = PhysicsTrack()
    work = Path(tempfile.mkdtemp(prefix="bench_physics_coverage_"))
    declared, verified = Counter(), Counter()
    detected: list[str] = []
    n = 0
    for case in load_suite(args.suite).cases:
        if track.applicability(case) or "generator" not in case.metadata:
            continue
        if args.limit and n >= args.limit:
            break
        n += 1
        group = re.sub(r"-(s?\d+)$", "", case.id)
        try:
            ref = GENERATORS.get(case.metadata["generator"]).render(case).video
        except Exception as e:  # one broken render must not stop the audit
            print(f"{case.id:40s} render failed: {type(e).__name__}: {e}")
            continue
        for r in reference_rule_verdicts(case, ref, work / case.id):
            if r["applicability_source"] != "case":
                detected.append(f"{case.id}:{r['rule']}={r['verdict']}")
                continue
            declared[group] += 1
            if r["verdict"] == "pass":
                verified[group] += 1
            else:
                why = "; ".join(f"{c['check']}: {c['reason']}" for c in r["checks"] if c["status"] != "pass")
                print(f"{case.id:40s} {r['rule']:14s} {r['verdict'] or 'no verdict':10s} {why}", flush=True)
    print(f"\n{'cases':40s} {'verified':>8s} / declared")
    for g in sorted(declared):
        print(f"{g:40s} {verified[g]:8d} / {declared[g]}")
    total, ok = sum(declared.values()), sum(verified.values())
    print(f"\n{n} physics cases: {ok} of {total} declared rules pass on their own reference")
    if detected:
        print(f"detected without a declaration ({len(detected)}): {', '.join(detected)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
