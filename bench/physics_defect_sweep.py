"""Which object defects does the physics track miss on a suite's cases?

Scores ``reference`` and each physics defect of the perturbation library at one strength through the
public CLI (``evaluate-model --model perturbed:NAME@S``, one shared ``--out`` so the reference renders
once), then lists every (case, defect) whose defect video scores at least what the case's reference
scores: a defect the track cannot see there. That is how the hardness cases' presses were found
(session 61: ``vanish`` and ``teleport`` of one of two presses scored 1.0 like the clean video; physics
v24). A defect that leaves the case's video unchanged is listed apart (the perturbation found nothing to
act on), not as a miss.

The suites here are tuning-split suites (``smoke``, ``standard``, ...): never point this at the held-out
split (``scenarios/heldout``), whose cases no track may be tuned on.

Usage:
    MUJOCO_GL=egl python bench/physics_defect_sweep.py --suite smoke --out OUT [--strength 1.0]
        [--defects teleport,vanish,...] [--seeds 0] [--record NAME]

``--record NAME`` also writes the listing to ``bench/records/NAME.md`` with the command, the commit measured, the
physics track version and the date (a record to commit; add the triage by hand).

Session 61 (smoke, seed 0, strength 1.0, physics v24): ``bench/records/physics_defect_sweep_s61_smoke.md``;
session 62 (``physics_tune``, physics v25 and v26): ``bench/records/physics_defect_sweep_s62_physics_tune.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("OMP_NUM_THREADS", "1")

#: the perturbations a physics rule is about (objects that jump, vanish, pop up, pass through each
#: other, change shape or size, fall the wrong way, freeze or run backwards); the others act on the
#: camera, the actions or the picture, which the interaction, geometry and long-video tracks judge
#: (session 61's smoke sweep also listed ``identity_swap``, a body's hue turning, the interaction track's, and
#: ``scale_pumping``, the whole picture zooming in and out, a camera's, which the geometry track judges).
PHYSICS_DEFECTS = ("teleport", "vanish", "appear", "gravity_reversed", "gravity_scaled", "interpenetration",
                   "shape_morph", "time_reversal", "frozen")


def _run_dir(out: Path, model: str, suite: str, seeds: list[int]) -> Path:
    """``model``'s run directory at the current track version."""
    from worldolympiad.evaluator import make_run_spec

    return out / make_run_spec(model, suite, ["physics"], seeds).dirname


def _scores(out: Path, model: str, suite: str, seeds: list[int]) -> dict[tuple[str, int], tuple[dict, Path]]:
    """``(case, seed) -> (physics row, its run directory)`` of ``model``'s run at the current track version."""
    run = _run_dir(out, model, suite, seeds)
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    return {(r["case_id"], int(r["seed"])): (r, run) for r in rows if r.get("track") == "physics"}


def _same_video(a: tuple[dict, Path], b: tuple[dict, Path]) -> bool:
    pa, pb = (run / (row.get("artifacts") or {}).get("video", "-") for row, run in (a, b))
    return pa.is_file() and pb.is_file() and pa.read_bytes() == pb.read_bytes()


def _evaluate(model: str, suite: str, seeds: str, out: Path) -> None:
    cmd = [sys.executable, "-m", "worldolympiad.cli.evaluate", "--model", model, "--suite", suite, "--seeds", seeds,
           "--tracks", "physics", "--out", str(out), "--no-progress", "--no-report", "--no-baselines"]
    print("$", " ".join(cmd[2:]), flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def suite_arg(name: str, out: Path) -> str:
    """What ``evaluate-model --suite`` is given for ``name``: a built-in suite name or a suite file as is; a
    bench tuning suite (``physics_tune``, a folder of ``bench/suites``) is built into ``OUT/suites/NAME.json``
    (``evaluate-model`` knows only the built-in suite names)."""
    from scenarios.heldout.splits import SPLITS, tuning_suite
    from scenarios.suites import SUITE_NAMES

    if name in SUITE_NAMES or Path(name).is_file():
        return name
    folder = tuning_suite(name)
    if folder is None:
        raise SystemExit(f"--suite: {name!r} is neither a suite name ({', '.join(SUITE_NAMES)}), a suite file nor a "
                         f"tuning-split suite folder ({', '.join(sorted(p.name for p in SPLITS['tuning']))})")
    from scenarios.suites import build_suite
    from worldolympiad.suites import write_suite

    path = out / "suites" / f"{folder.name}.json"
    if not path.is_file():  # written once: every run of the sweep then sees the same suite file
        write_suite(path, folder.name, build_suite(str(folder)))
    return str(path)


def listing(judged: int, missed: list[tuple[str, int, str, float, float]],
            unchanged: list[tuple[str, int, str, float, float]], strength: float) -> str:
    """The sweep's verdict as printed: how many pairs were judged, then each miss and each no-op."""
    lines = [f"{judged} (case, seed, defect) pairs with a verdict on both; the defect scored at least the reference on"
             f" {len(missed)} (and left the video unchanged on {len(unchanged)}):"]
    lines += [f"  MISSED   {case} s{seed} {d}@{strength:g}: reference {rs:.3f}, defect {ds:.3f}"
              for case, seed, d, rs, ds in missed]
    lines += [f"  no-op    {case} s{seed} {d}@{strength:g}: the same video ({rs:.3f})" for case, seed, d, rs, _ in unchanged]
    return "\n".join(lines)


def record_text(text: str, argv: list[str], suite: str, spec: dict) -> str:
    """A record of the listing: the command, and the commit and physics version the reference run recorded
    (``spec``: its ``run_spec.json``), and the date."""
    from datetime import datetime, timezone

    version = dict(spec.get("track_versions") or []).get("physics", "?")
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    commit = spec.get("git_hash")
    made = f"commit `{commit}`" if commit else "a tree that is not a git checkout (commit unknown)"
    return (f"# Physics defect sweep: {suite}\n\nMeasured on {made}, physics v{version}, {when}. Command:\n\n"
            f"```\nMUJOCO_GL=egl OMP_NUM_THREADS=1 python bench/physics_defect_sweep.py {' '.join(argv)}\n```\n\n"
            f"```\n{text}\n```\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="example: python bench/physics_defect_sweep.py --suite smoke --out /tmp/sweep")
    ap.add_argument("--suite", default="smoke", help="a tuning-split suite: a built-in name (smoke, standard, ...), a "
                    "bench tuning suite (physics_tune, cartoon_tune, ...) or a suite file (default: smoke)")
    ap.add_argument("--out", required=True, type=Path, help="output folder (shared by every run; reruns resume)")
    ap.add_argument("--strength", type=float, default=1.0, help="defect strength (default: 1.0)")
    ap.add_argument("--defects", default=",".join(PHYSICS_DEFECTS), help="comma-separated perturbation names")
    ap.add_argument("--seeds", default="0", help="comma-separated seeds (default: 0)")
    ap.add_argument("--record", default=None, metavar="NAME", help="also write the listing to bench/records/NAME.md")
    args = ap.parse_args(argv)
    from scenarios.heldout.splits import SPLITS

    path = Path(args.suite).resolve()
    if "heldout" in args.suite or any(path == f or f in path.parents for f in SPLITS["heldout"]):
        ap.error("the held-out split is never swept for tuning: pick a tuning-split suite (smoke, standard, ...)")
    seeds = [int(x) for x in args.seeds.split(",") if x]

    defects = [d for d in args.defects.split(",") if d]
    suite = suite_arg(args.suite, args.out)
    _evaluate("reference", suite, args.seeds, args.out)
    for d in defects:
        _evaluate(f"perturbed:{d}@{args.strength:g}", suite, args.seeds, args.out)

    ref = _scores(args.out, "reference", suite, seeds)
    missed: list[tuple[str, int, str, float, float]] = []
    unchanged: list[tuple[str, int, str, float, float]] = []
    judged = 0
    for d in defects:
        for key, (r, run) in sorted(_scores(args.out, f"perturbed:{d}@{args.strength:g}", suite, seeds).items()):
            if key not in ref or ref[key][0].get("score") is None or r.get("score") is None:
                continue
            judged += 1
            base = ref[key][0]["score"]
            if r["score"] >= base:
                (unchanged if _same_video((r, run), ref[key]) else missed).append((key[0], key[1], d, base, r["score"]))
    text = listing(judged, missed, unchanged, args.strength)
    print("\n" + text)
    if args.record:
        dst = Path(__file__).resolve().parent / "records" / f"{args.record}.md"
        spec = json.loads((_run_dir(args.out, "reference", suite, seeds) / "run_spec.json").read_text())
        dst.write_text(record_text(text, sys.argv[1:] if argv is None else list(argv), args.suite, spec))
        print(f"recorded {dst}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
