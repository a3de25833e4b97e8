"""Issue 9's acceptance 3, per track and per generation seed: is the reference world model above both
weak baselines and below the simulator on `smoke`?

The default run (``evaluate-model`` with no arguments) scores four rows: ``inferix:reference-world``,
its random-weight twin ``inferix:reference-world-random``, ``repeat-first-frame`` and the simulator's
``reference``. This bench reads those rows' ``summary.json`` (each track's mean over a seed's cases,
per seed, as the leaderboard shows it) and prints, for every track and seed, the model's score, the
better weak baseline, the simulator, the margin over the weak baseline and a verdict; then the
track's mean and the margin's smallest value over seeds. A single seed's physics score moves by a
few hundredths with the generation seed (``HISTORY.md``), so judge the verdicts over several seeds.

Usage::

    python reference_world_lab/bench/bench_smoke_acceptance.py --run --seeds 0,1,2,3,4 --out runs/acceptance   # evaluate, then judge
    python reference_world_lab/bench/bench_smoke_acceptance.py --out runs/acceptance                            # judge existing runs
    python reference_world_lab/bench/bench_smoke_acceptance.py --out runs/acceptance --json record.json

``--run`` calls ``evaluate-model --seeds S --out OUT`` (the default run, all four rows; it resumes
what OUT already holds). The exit status is 1 when a track fails at any seed, 2 when a row is
missing, so the bench can gate a candidate's weights.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from worldolympiad.cli.evaluate import DEFAULT_MODEL as MODEL
from worldolympiad.cli.evaluate import main as evaluate_model
from worldolympiad.evaluator import SUMMARY
from worldolympiad.models.baselines import LEADERBOARD_BASELINES

# the leaderboard's rows, lowest expectation first: the weak baselines below the model, the simulator above
_ROWS = list(LEADERBOARD_BASELINES)
WEAK = tuple(_ROWS[: _ROWS.index(MODEL)])
CEILING = _ROWS[-1]


def read_rows(out: Path, suite: str = "smoke") -> dict[str, dict[str, Any]]:
    """``{model spec: summary.json}`` of every run directory under ``out`` that scored ``suite``; of
    two runs of one model (an older commit's, say), the one with more seeds, then the newer file."""
    rows: dict[str, dict[str, Any]] = {}
    found = sorted(out.glob(f"*/{SUMMARY}"), key=lambda p: p.stat().st_mtime)
    for path in found:
        s = json.loads(path.read_text())
        if s.get("suite") != suite:
            continue
        old = rows.get(s["model"])
        if old is None or len(s.get("seeds", [])) >= len(old.get("seeds", [])):
            rows[s["model"]] = s
    return rows


def judge(rows: dict[str, dict[str, Any]], seeds: list[int] | None = None) -> dict[str, Any]:
    """Per track and seed: the model's score, the better weak baseline's, the simulator's, and whether
    the model is above the one and below the other (``verdicts``); per track the mean, the smallest
    margin over seeds and ``ok`` (every seed passes).

    Raises:
        KeyError: a row of the four, a track or a seed is missing from ``rows``.
    """
    missing = [m for m in (MODEL, *WEAK, CEILING) if m not in rows]
    if missing:
        raise KeyError(f"no smoke run of {', '.join(missing)} (evaluate-model with no --model scores all four)")
    tracks = list(rows[MODEL]["tracks"])
    seeds = seeds if seeds is not None else [int(s) for s in rows[MODEL]["seeds"]]
    out: dict[str, Any] = {"seeds": seeds, "tracks": {}}
    for t in tracks:
        per_seed = []
        for s in seeds:
            def score(m: str, t: str = t, s: int = s) -> float:
                track = rows[m]["tracks"].get(t)
                if track is None or str(s) not in track["per_seed"] or track["per_seed"][str(s)] is None:
                    raise KeyError(f"{m} has no {t} score at seed {s}: rerun with --run --seeds {','.join(map(str, seeds))}")
                return float(track["per_seed"][str(s)])

            model, ceiling = score(MODEL), score(CEILING)
            weak_name = max(WEAK, key=score)
            weak = score(weak_name)
            per_seed.append({"seed": s, "model": model, "weak": weak, "weak_model": weak_name, "reference": ceiling,
                             "margin": model - weak, "ok": weak < model < ceiling})
        out["tracks"][t] = {"per_seed": per_seed, "mean": sum(r["model"] for r in per_seed) / len(per_seed),
                            "min_margin": min(r["margin"] for r in per_seed), "ok": all(r["ok"] for r in per_seed)}
    out["ok"] = all(v["ok"] for v in out["tracks"].values())
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="runs/acceptance", help="parent folder of the four runs (evaluate-model --out)")
    ap.add_argument("--run", action="store_true", help="first run `evaluate-model --seeds SEEDS --out OUT` (resumes)")
    ap.add_argument("--seeds", default=None, help="comma-separated generation seeds (default: the model run's own)")
    ap.add_argument("--json", default=None, help="also write the verdicts to this file")
    args = ap.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else None
    out = Path(args.out)
    if args.run:
        cmd = ["--out", str(out), "--no-progress", "--seeds", ",".join(map(str, seeds or [0]))]
        print("$ evaluate-model " + " ".join(cmd), flush=True)
        if evaluate_model(cmd) != 0:
            print("bench_smoke_acceptance: evaluate-model failed; judging what it wrote", file=sys.stderr)
    try:
        res = judge(read_rows(out), seeds)
    except KeyError as e:
        print(f"bench_smoke_acceptance: {e.args[0]} (under {out})", file=sys.stderr)
        return 2
    print(f"{'track':<12} {'seed':>4} {'model':>7} {'weak':>7} {'(which)':<31} {'simulator':>9} {'margin':>7}  verdict")
    for t, v in res["tracks"].items():
        for r in v["per_seed"]:
            verdict = "ok" if r["ok"] else ("BELOW a weak baseline" if r["margin"] <= 0 else "NOT below the simulator")
            print(f"{t:<12} {r['seed']:>4} {r['model']:7.3f} {r['weak']:7.3f} {r['weak_model']:<31} "
                  f"{r['reference']:9.3f} {r['margin']:+7.3f}  {verdict}")
        print(f"{t:<12} {'all':>4} {v['mean']:7.3f} {'':7} {'':31} {'':9} {v['min_margin']:+7.3f}  "
              f"{'every seed' if v['ok'] else 'FAILS at some seed'} (smallest margin)")
    print("acceptance 3 (smoke, every track, every seed):", "met" if res["ok"] else "NOT met")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    return 0 if res["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
