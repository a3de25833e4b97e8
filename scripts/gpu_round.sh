#!/usr/bin/env bash
# One device call that trains a candidate reference world model AND gates it: the candidate and the
# shipped weights each generate the whole `gaming` suite on the GPU, and the bench pairs them chunk by
# chunk (bench_reference_world.py --compare). On the workstation that gate takes about 55 minutes a
# model at 2 CPU threads; on the GPU it fits beside the training in one call, so a session with 15
# minutes of device time can train, gate and decide.
#
# Both sides of the gate are generated on the same machine: GPU and CPU arithmetic differ, so the
# candidate is compared with the shipped weights as the GPU serves them, not with the CPU record.
#
# Prepare on the workstation (the device image has torch, OpenCV, pandas and scipy, not PyAV or
# jsonschema; worldolympiad's reader falls back to OpenCV, which decodes these renders identically):
#   echo /.gpu_data/ >> .git/info/exclude; echo /.whl/ >> .git/info/exclude
#   worldolympiad scenarios render inferix/train/configs/reference_world_data .gpu_data/train  # ~21 MB
#   worldolympiad scenarios render gaming /tmp/gaming && mkdir -p .gpu_data/gaming && \
#     cp -r /tmp/gaming/{cases,conditioning,videos,suite.json} .gpu_data/gaming/   # ~12 MB, no ground_truth
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_17_x86_64 -d .whl jsonschema referencing jsonschema-specifications rpds-py
# The repository (~30 MB) and these (~34 MB) stay under the tool's 64 MiB. Then one call:
#   run(command="CFG=inferix/train/configs/reference_world_gpu5.yaml bash scripts/gpu_round.sh 300 200",
#       carry=[".gpu_data", ".whl"], timeout_s=590)
# It returns at most 6 files (the tool brings back 8): model.tar.part-* (rejoin: cat model.tar.part-* |
# tar x), train.tar.gz (train.log, log.jsonl, teacher_forced.*, profile.txt), gate.tar.gz (both
# benches' --json and output) and round.txt (the summary: the two accuracies, per game, and the
# paired changes with their McNemar p). A candidate that wins here still needs smoke on the
# workstation (evaluate-model --model inferix:MODEL --no-baselines; physics takes 2 minutes).
#
# Usage: gpu_round.sh [TRAIN_S=300] [GATE_S=200]   (GATE_S per model; the call needs about
#   TRAIN_S + 2 x GATE_S + 60 s of start-up, probe and teacher-forced check)
# Environment: OUT (/tmp/gpu_out), DEVICE (cuda), PYTHON (python3), GAMING (.gpu_data/gaming),
#   GATE_LIMIT (cases per model; 36 = the whole suite, the acceptance number, taken round-robin over
#   the games so a gate its time stops still covers every game), WHEELS (.whl; a
#   folder without wheels skips the install), and everything
#   scripts/train_reference_world_gpu.sh reads (CFG, DATA, EXTRA, PROBE_STEPS, PROFILE_STEPS).
# CPU dry run (about 10 minutes; in an environment like the device's: torch, OpenCV, pandas, scipy,
#   jsonschema, no PyAV): DEVICE=cpu PROBE_STEPS=3 PROFILE_STEPS=0 GATE_LIMIT=1 WHEELS=none
#   EXTRA="--set train.batch_size=2" bash scripts/gpu_round.sh 20 300
set -euo pipefail
TRAIN_S=${1:-300}
GATE_S=${2:-200}
OUT=${OUT:-/tmp/gpu_out}
DEVICE=${DEVICE:-cuda}
PY=${PYTHON:-python3}
GAMING=${GAMING:-.gpu_data/gaming}
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
echo "gpu_round: train ${TRAIN_S} s, gate ${GATE_S} s a model, device $DEVICE, cfg ${CFG:-default}" | summary

# 1. train (sizes train.steps to the budget; logs and the split weights land in $STAGE/train)
OUT="$STAGE/train" KEEP="$CAND" DEVICE="$DEVICE" PYTHON="$PY" bash scripts/train_reference_world_gpu.sh "$TRAIN_S" \
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

# 2. gate: the shipped weights, then the candidate, each within GATE_S (a stopped bench keeps the cases
#    it scored: --json is rewritten after every case, and --paired pairs the cases both scored)
LIMIT=${GATE_LIMIT:+--limit $GATE_LIMIT}
gate() {  # gate NAME [--model-dir DIR]
    local name=$1; shift
    # shellcheck disable=SC2086
    timeout "$GATE_S" $PY bench/bench_reference_world.py --suite-dir "$GAMING" --models trained --skip-fps \
        --option "device=$DEVICE" --json "$STAGE/gaming_$name.json" $LIMIT "$@" > "$STAGE/gaming_$name.txt" 2>&1 \
        || echo "gate $name stopped (exit $?; timeout is 124): the cases it finished are kept" | summary
}
gate shipped
gate candidate --model-dir "$CAND"
# the pairing, on the cases both runs scored (loads no model)
if [ -f "$STAGE/gaming_shipped.json" ] && [ -f "$STAGE/gaming_candidate.json" ]; then
    $PY bench/bench_reference_world.py --paired "$STAGE/gaming_shipped.json" "$STAGE/gaming_candidate.json" \
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
