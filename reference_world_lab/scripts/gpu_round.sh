#!/usr/bin/env bash
# One device call that trains a candidate reference world model AND gates it:
#   1. train (reference_world_lab/scripts/train_reference_world_gpu.sh, sized to TRAIN_S);
#   2. smoke: the shipped weights and the candidate each generate the whole `smoke` suite on the GPU
#      (`worldolympiad generate --format npz`: raw frames, as the device has no video encoder). They
#      come back in smoke.tar.gz and are scored on the workstation by reference_world_lab/scripts/score_gpu_smoke.sh,
#      every track, exactly as `evaluate-model` would score a CPU run of the same frames: this is
#      acceptance 3 (physics above repeat-first-frame) decided from one call;
#   3. gaming: both models generate the `gaming` suite on the GPU and the bench pairs them chunk by chunk
#      (bench_reference_world.py --paired): acceptance 2. On the workstation that gate takes about 55
#      minutes a model at 2 CPU threads.
# Both sides of each gate are generated on the same machine: GPU and CPU arithmetic differ (so do two CPUs'
# kernel paths: HISTORY.md "Session 32"), so the candidate is compared with the shipped weights as the
# GPU serves them, not with the CPU records.
#
# Time: the whole round keeps within ROUND_S (default 560 s, for the tool's timeout_s=590). Training
# takes TRAIN_S plus about 70 s (profile, probe steps, teacher-forced check); the smoke generation gets
# at most SMOKE_S a model; the gaming gates share what is left, at most GATE_S each. Whatever is
# already in $OUT comes back even if the call is stopped.
#
# Prepare on the workstation: bash reference_world_lab/scripts/prepare_gpu_round.sh (renders .gpu_data/{train,gaming,smoke},
# downloads the jsonschema wheels the image lacks, checks the 64 MiB carry). Then one call:
#   run(command="CFG=reference_world_lab/configs/reference_world_gpu5.yaml bash reference_world_lab/scripts/gpu_round.sh 240",
#       carry=[".gpu_data", ".whl"], timeout_s=590)
# It returns at most 7 files (the tool brings back 8): model.tar.part-* (rejoin: cat model.tar.part-* |
# tar x), train.tar.gz (train.log, log.jsonl, teacher_forced.*, profile.txt), smoke.tar.gz (both
# models' smoke frames and generate.json), gate.tar.gz (both gaming benches' --json and output) and
# round.txt (the summary: the two gaming accuracies, per game, the paired changes with their McNemar p,
# the smoke generation). Then, on the workstation: bash reference_world_lab/scripts/score_gpu_smoke.sh DIR (DIR holds the
# files that came back; about 5 minutes) for the smoke tracks of both models beside repeat-first-frame.
#
# Usage: gpu_round.sh [TRAIN_S=240] [GATE_S=200] [SMOKE_S=90]
# Environment: OUT (/tmp/gpu_out), DEVICE (cuda), PYTHON (python3), ROUND_S (560), GAMING
#   (.gpu_data/gaming), SMOKE (.gpu_data/smoke), GATE_LIMIT (cases per model; 36 = the whole suite, the
#   acceptance number, taken round-robin over the games so a gate its time stops still covers every
#   game), WHEELS (.whl; a folder without wheels skips the install), and everything
#   reference_world_lab/scripts/train_reference_world_gpu.sh reads (CFG, DATA, EXTRA, PROBE_STEPS, PROFILE_STEPS).
# CPU dry run (about 15 minutes; in an environment like the device's: torch, OpenCV, pandas, scipy,
#   jsonschema, no PyAV): DEVICE=cpu PROBE_STEPS=3 PROFILE_STEPS=0 GATE_LIMIT=1 WHEELS=none ROUND_S=1500
#   EXTRA="--set train.batch_size=2" bash reference_world_lab/scripts/gpu_round.sh 20 300 400
set -euo pipefail
TRAIN_S=${1:-240}
GATE_S=${2:-200}
SMOKE_S=${3:-90}
ROUND_S=${ROUND_S:-560}
START=$SECONDS
left() { echo $(( ROUND_S - (SECONDS - START) )); }
OUT=${OUT:-/tmp/gpu_out}
DEVICE=${DEVICE:-cuda}
PY=${PYTHON:-python3}
GAMING=${GAMING:-.gpu_data/gaming}
SMOKE=${SMOKE:-.gpu_data/smoke}
GATE_LIMIT=${GATE_LIMIT:-36}
STAGE=$(mktemp -d)
CAND="$STAGE/candidate"
mkdir -p "$OUT"
[ -f "$GAMING/suite.json" ] || { echo "no gaming suite at $GAMING (render it first; see the header)"; exit 2; }

# wheels the image lacks, when carried (README of the device tool)
WHEELS=${WHEELS:-.whl}
if compgen -G "$WHEELS/*.whl" > /dev/null; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$WHEELS"/*.whl
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
summary() { tee -a "$OUT/round.txt"; }
echo "gpu_round: train ${TRAIN_S} s, smoke ${SMOKE_S} s and gate ${GATE_S} s a model, all within ${ROUND_S} s," \
    "device $DEVICE, cfg ${CFG:-default}" | summary

# 1. train (sizes train.steps to the budget; logs and the split weights land in $STAGE/train)
OUT="$STAGE/train" KEEP="$CAND" DEVICE="$DEVICE" PYTHON="$PY" bash reference_world_lab/scripts/train_reference_world_gpu.sh "$TRAIN_S" \
    > "$STAGE/train_stdout.txt" 2>&1 || { echo "training failed:"; tail -n 30 "$STAGE/train_stdout.txt"; } | summary
# what is already in $OUT comes back even if the gate below runs out of time
if [ -f "$CAND/diffusion_pytorch_model.safetensors" ]; then
    tar cf - -C "$CAND" . | split -b 15M - "$OUT/model.tar.part-"
fi
cp "$STAGE/train_stdout.txt" "$STAGE/train/" 2>/dev/null || true
tar czf "$OUT/train.tar.gz" -C "$STAGE/train" --exclude model . 2>/dev/null || true
{ grep -h "probe:\|^trained " "$STAGE/train/train.log"; tail -n 1 "$STAGE/train/log.jsonl"
  sed -n '/^per generator/,$p' "$STAGE/train/teacher_forced.txt"; } 2>/dev/null | summary || true
[ -f "$CAND/diffusion_pytorch_model.safetensors" ] || exit 1

# 2. smoke: both models generate the smoke suite as raw frames (scored on the workstation:
#    reference_world_lab/scripts/score_gpu_smoke.sh). A stopped generation keeps the cases it wrote.
cap() {  # cap BUDGET SHARES: BUDGET, or less so that SHARES such stages fit in what is left (20 s spare)
    local t=$(( ($(left) - 20) / $2 )); [ "$t" -lt "$1" ] || t=$1; [ "$t" -gt 0 ] || t=1; echo "$t"
}
if [ -f "$SMOKE/suite.json" ]; then
    smoke() {  # smoke NAME MODEL SHARES
        local t; t=$(cap "$SMOKE_S" "$3")
        timeout "$t" $PY -m worldolympiad generate "$SMOKE/suite.json" --model "$2" --device "$DEVICE" --format npz \
            --out "$STAGE/smoke_$1" --no-progress > "$STAGE/smoke_$1.txt" 2>&1 \
            || echo "smoke $1 stopped or failed (exit $?; timeout is 124, after $t s)" | summary
        $PY - "$STAGE/smoke_$1/generate.json" "$1" <<'PY' 2>/dev/null | summary || true
import json, sys
manifest = json.load(open(sys.argv[1]))
ok = [r for r in manifest["cases"].values() if r.get("status") == "ok"]
print(f"== smoke {sys.argv[2]}: {len(ok)} of {manifest.get('planned', len(manifest['cases']))} cases generated,"
      f" {sum(r.get('seconds', 0) for r in ok):.0f} s")
PY
    }
    smoke shipped inferix:reference-world 4
    smoke candidate "inferix:$CAND" 3
    tar czf "$OUT/smoke.tar.gz" -C "$STAGE" $(cd "$STAGE" && ls -d smoke_* 2>/dev/null) 2>/dev/null || true
else
    echo "no smoke suite at $SMOKE: smoke not generated (reference_world_lab/scripts/prepare_gpu_round.sh renders it)" | summary
fi

# 3. gate: the shipped weights, then the candidate, each within GATE_S and half of what is left (a stopped
#    bench keeps the cases it scored: --json is rewritten after every case, and --paired pairs the cases
#    both scored)
LIMIT=${GATE_LIMIT:+--limit $GATE_LIMIT}
gate() {  # gate NAME SHARES [--model-dir DIR]
    local name=$1 t; t=$(cap "$GATE_S" "$2"); shift 2
    # shellcheck disable=SC2086
    timeout "$t" $PY reference_world_lab/bench/bench_reference_world.py --suite-dir "$GAMING" --models trained --skip-fps \
        --option "device=$DEVICE" --json "$STAGE/gaming_$name.json" $LIMIT "$@" > "$STAGE/gaming_$name.txt" 2>&1 \
        || echo "gate $name stopped (exit $?; timeout is 124, after $t s): the cases it finished are kept" | summary
}
gate shipped 2
gate candidate 1 --model-dir "$CAND"
# the pairing, on the cases both runs scored (loads no model)
if [ -f "$STAGE/gaming_shipped.json" ] && [ -f "$STAGE/gaming_candidate.json" ]; then
    $PY reference_world_lab/bench/bench_reference_world.py --paired "$STAGE/gaming_shipped.json" "$STAGE/gaming_candidate.json" \
        > "$STAGE/gaming_compare.txt" 2>&1 || true
else
    echo "no pairing: a gate scored no case (see its output in gate.tar.gz)" > "$STAGE/gaming_compare.txt"
fi
for name in shipped candidate; do
    n=$(grep -c "chunks followed" "$STAGE/gaming_$name.txt" 2>/dev/null || true)
    echo "== $name: ${n:-0} cases scored" | summary
    grep -h "direction accuracy\|^    [a-z]* *failed chunks\|above chance\|at chance or below" "$STAGE/gaming_$name.txt" 2>/dev/null \
        | grep -v "^chance" | summary || true
done
echo "== candidate against shipped (paired, same cases, both on $DEVICE)" | summary
summary < "$STAGE/gaming_compare.txt" || true
tar czf "$OUT/gate.tar.gz" -C "$STAGE" $(cd "$STAGE" && ls gaming_* 2>/dev/null) 2>/dev/null || true
