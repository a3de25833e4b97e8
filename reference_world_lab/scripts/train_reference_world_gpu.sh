#!/usr/bin/env bash
# Train reference_world_lab/configs/reference_world_gpu.yaml on one GPU inside a fixed time budget, in
# one call, and leave the exported bundle and the logs in $OUT (the device tool's return folder).
#
# Prepare on the workstation (the device machine has torch and OpenCV but not this project's
# other dependencies, and reaches no network; the reader falls back to OpenCV without PyAV):
#   worldolympiad scenarios render reference_world_lab/configs/reference_world_data .gpu_data/train --playable
#   echo /.gpu_data/ >> .git/info/exclude          # 21 MB: carried, never committed
# Then one device call, e.g. run(command="bash reference_world_lab/scripts/train_reference_world_gpu.sh 420",
# carry=[".gpu_data"], timeout_s=560). Afterwards, on the workstation:
#   cat <files_at>/model/*.part-* > MODEL/diffusion_pytorch_model.safetensors   (+ the .json files)
#   python reference_world_lab/bench/bench_reference_world.py --model-dir MODEL --limit 24 --one-block
# $OUT/teacher_forced.txt already holds reference_world_lab/bench/bench_teacher_forced.py, the new weights against the shipped ones.
#
# Usage: train_reference_world_gpu.sh [BUDGET_S=420]
# Environment: OUT (default /tmp/gpu_out), DATA (.gpu_data/train), DEVICE (cuda), PYTHON (python3),
#   CFG (the recipe; reference_world_gpu.yaml), TEACHER_FORCED (1; 0 skips step 3), KEEP (a folder that also gets the unsplit bundle;
#   reference_world_lab/scripts/gpu_round.sh gates it), PROBE_STEPS (30), PROFILE_STEPS (10; 0 skips
#   reference_world_lab/bench/profile_train_step.py, whose table goes to $OUT/profile.txt), EXTRA (more --set
#   overrides; e.g. a rollout fine-tune of the shipped weights: EXTRA="--set
#   init_from=inferix/weights/reference_world --set train.rollout=0.3 --set train.lr=0.0003"),
#   or for a CPU dry run: DEVICE=cpu PROBE_STEPS=3 PROFILE_STEPS=2 EXTRA="--set train.batch_size=2"
#   bash reference_world_lab/scripts/train_reference_world_gpu.sh 20).
set -euo pipefail
BUDGET=${1:-420}
OUT=${OUT:-/tmp/gpu_out}
DATA=${DATA:-.gpu_data/train}
DEVICE=${DEVICE:-cuda}
PY=${PYTHON:-python3}
PROBE_STEPS=${PROBE_STEPS:-30}
PROFILE_STEPS=${PROFILE_STEPS:-10}
TEACHER_FORCED=${TEACHER_FORCED:-1}
EXTRA=${EXTRA:-}
CFG=${CFG:-reference_world_lab/configs/reference_world_gpu.yaml}
WORK=$(mktemp -d)
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
mkdir -p "$OUT/model"
[ -f "$DATA/suite.json" ] || { echo "no training data at $DATA (render it first; see the header)"; exit 2; }
$PY -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())" | tee "$OUT/train.log"

# 0. where a step's time goes (session 9 measured 165 ms a step on an H200 and did not profile it);
#    a failure here is logged and does not stop the training
if [ "$PROFILE_STEPS" -gt 0 ]; then
    # shellcheck disable=SC2086
    $PY reference_world_lab/bench/profile_train_step.py --config $CFG --device "$DEVICE" --steps "$PROFILE_STEPS" \
        --set "data.roots=[$DATA]" $EXTRA > "$OUT/profile.txt" 2>&1 || echo "profile failed (see profile.txt)"
    grep -m 1 "train_step" "$OUT/profile.txt" | tee -a "$OUT/train.log" || true
fi

# 1. time a short run of the real configuration (the first steps include warm-up, so skip them)
# shellcheck disable=SC2086
$PY -m inferix.cli train --config $CFG --device "$DEVICE" --no-progress --out-dir "$WORK/probe" \
    --set "data.roots=[$DATA]" --set "train.steps=$PROBE_STEPS" --set train.ckpt_every=0 \
    --set train.log_every=1 $EXTRA >> "$OUT/train.log" 2>&1
STEPS=$($PY - "$WORK/probe/log.jsonl" "$BUDGET" <<'PY'
import json, sys
rows = [r for r in map(json.loads, open(sys.argv[1])) if "loss" in r]
a, b = rows[len(rows) // 3], rows[-1]
per_step = (b["wall_s"] - a["wall_s"]) / max(1, b["step"] - a["step"])
print(max(1, int(float(sys.argv[2]) / per_step)))
PY
)
echo "probe: $STEPS steps fit in ${BUDGET} s" | tee -a "$OUT/train.log"

# 2. the run: train.steps sized so the cosine decay ends inside the budget
# shellcheck disable=SC2086
$PY -m inferix.cli train --config $CFG --device "$DEVICE" --no-progress --out-dir "$WORK/run" \
    --set "data.roots=[$DATA]" --set "train.steps=$STEPS" $EXTRA >> "$OUT/train.log" 2>&1
cp "$WORK/run/model/"* "$OUT/model/"
# KEEP=DIR: also leave the whole bundle there, for a gate that runs after this script in the same call
if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$WORK/run/model/"* "$KEEP/"; fi
# The device tool returns files of at most 16 MiB; the fp32 weights are ~17.2 MiB, so they travel in
# parts. Rejoin on the workstation: cat model/*.safetensors.part-* > model/diffusion_pytorch_model.safetensors
for f in "$OUT/model/"*.safetensors; do
    if [ "$(stat -c %s "$f")" -gt $((15 * 1024 * 1024)) ]; then split -b 15M "$f" "$f.part-" && rm "$f"; fi
done
cp "$WORK/run/log.jsonl" "$OUT/log.jsonl"

# 3. the teacher-forced check (reference_world_lab/bench/bench_teacher_forced.py): the new weights against the shipped
#    ones on the same clips and noise (new / old < 1 = better); a failure here is logged and loses
#    nothing above
if [ "$TEACHER_FORCED" != 0 ]; then
    # shellcheck disable=SC2086
    $PY reference_world_lab/bench/bench_teacher_forced.py "$DATA" --model-dir "$WORK/run/model" --against inferix/weights/reference_world \
        --config $CFG --json "$OUT/teacher_forced.json" > "$OUT/teacher_forced.txt" 2>&1 \
        || echo "teacher-forced check failed (see teacher_forced.txt)"
    grep -A 30 "^per generator" "$OUT/teacher_forced.txt" | tee -a "$OUT/train.log" || true
fi
tail -n 3 "$OUT/train.log"
