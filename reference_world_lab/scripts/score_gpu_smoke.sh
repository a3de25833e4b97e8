#!/usr/bin/env bash
# Score, on the workstation, the smoke videos a device round generated (reference_world_lab/scripts/gpu_round.sh step 2):
# the shipped weights and the candidate as the GPU served them, and repeat-first-frame, on every smoke
# track (issue 9, acceptance 3: above repeat-first-frame on every track; physics is the one not met).
#
# The frames came back raw (`worldolympiad generate --format npz`); `evaluate-model --model videos:DIR`
# stores them as H.264 at its usual settings and scores the decode, so each number is what an
# `evaluate-model` run would give for those frames. The suite is rendered here losslessly, the way the
# device's copy was (prepare_gpu_round.sh), so the cases and first frames are the same.
#
# Usage: score_gpu_smoke.sh DIR [TRACKS]   DIR holds smoke.tar.gz from the round (or the smoke_* folders
#   it unpacks to); TRACKS is comma-separated (default: every track). About 5 minutes at 2 threads.
# Environment: PYTHON (python3), SUITE (DIR/smoke_suite: where the smoke suite is rendered, once).
# Output: DIR/smoke_runs/ (one evaluate-model run directory per model) and the table printed at the end.
set -euo pipefail
DIR=${1:?usage: score_gpu_smoke.sh DIR [TRACKS]}
TRACKS=${2:-physics,geometry,interaction,longvideo}
PY=${PYTHON:-python3}
SUITE=${SUITE:-$DIR/smoke_suite}
RUNS="$DIR/smoke_runs"

if [ -f "$DIR/smoke.tar.gz" ] && [ ! -d "$DIR/smoke_candidate" ]; then
    tar xzf "$DIR/smoke.tar.gz" -C "$DIR"
fi
[ -d "$DIR/smoke_candidate" ] || { echo "no smoke_candidate in $DIR: pass the folder holding smoke.tar.gz"; exit 2; }
[ -f "$SUITE/suite.json" ] || $PY -m worldolympiad scenarios render smoke "$SUITE" --lossless > /dev/null

score() {  # score MODEL_SPEC
    $PY -m worldolympiad.cli.evaluate --model "$1" --suite "$SUITE/suite.json" --tracks "$TRACKS" \
        --out "$RUNS" --no-progress --no-report > /dev/null 2>&1 || echo "scoring $1 ended with exit $? (rows that ran are kept)"
}
for name in shipped candidate; do
    [ -d "$DIR/smoke_$name" ] && score "videos:$DIR/smoke_$name"
done
score repeat-first-frame

$PY - "$RUNS" "$TRACKS" <<'PY'
# Each track's mean over the cases every model scored (a stopped device generation leaves some cases out;
# the evaluator fails their rows), with the count, so the rows compare the same cases.
import json, sys
from pathlib import Path

runs, tracks = Path(sys.argv[1]), sys.argv[2].split(",")
names = {"smoke_shipped": "shipped (GPU)", "smoke_candidate": "candidate (GPU)"}
scores = {}
for run in (d for d in runs.iterdir() if (d / "results.jsonl").is_file()):
    model = json.loads((run / "run_spec.json").read_text())["model"]
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines() if line.strip()]
    scores[names.get(Path(model).name, model)] = {(r["track"], r["case_id"]): r["score"] for r in rows
                                                 if r["status"] == "ok" and r["score"] is not None}
order = sorted(scores, key=lambda n: list(names.values()).index(n) if n in names.values() else 9)
common = {t: set.intersection(*({c for (tt, c) in scores[n] if tt == t} for n in order)) for t in tracks}
print("smoke, each track's mean over the cases every model scored (count in brackets)")
print(f"{'model':<24}" + "".join(f"{f'{t} ({len(common[t])})':>18}" for t in tracks))
for n in order:
    cells = [sum(scores[n][(t, c)] for c in common[t]) / len(common[t]) if common[t] else None for t in tracks]
    print(f"{n:<24}" + "".join(f"{'-' if v is None else f'{v:.3f}':>18}" for v in cells))
missing = {n: sum(1 for t in tracks for (tt, c) in scores[n] if tt == t and c not in common[t]) for n in order}
if any(missing.values()):
    print("rows left out (scored by some models only): " + ", ".join(f"{n} {k}" for n, k in missing.items() if k))
PY
