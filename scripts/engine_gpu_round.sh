#!/usr/bin/env bash
# The engine's GPU round (issue 60 item 1, inferix/gpu_round.py) on the device machine: one command, one JSON
# (random-init Wan2.1-1.3B DiT + the full Wan VAE at 832x480, 4 steps; FPS with decode, time to first block,
# per-block latency, peak memory, DiT/cache/VAE split, 1/2/4 sessions, the gpu-marked tests).
#
# The device image has torch, numpy and safetensors but not diffusers (/work/.library/device/KINDS.md); the
# round needs nothing else (tests/inferix/test_gpu_round.py checks what it imports). So, here, once:
#   bash scripts/engine_gpu_round.sh --prepare      # diffusers' wheel into .whl-engine/ (ignored by git)
# then one device call (about 8 minutes: machine start + BUDGET_S + imports):
#   run(command="bash scripts/engine_gpu_round.sh", carry=[".whl-engine"], timeout_s=540)
# It returns $OUT/engine_gpu_<date>.json and $OUT/round.log. Back here: copy the JSON to bench/records/,
# commit it, put the summary's numbers in NOTES.md and bench/README.md.
#
# Environment: BUDGET_S (420: the round's own budget; the process is stopped at BUDGET_S + 60 s with SIGTERM
#   and the JSON keeps what finished), OUT (/tmp/engine_gpu_out where the tool sets none), PYTHON (python3),
#   WHEELS (.whl-engine; a folder without wheels skips the install), ARGS (more `inferix bench --gpu` flags,
#   e.g. "--no-tests" or "--seconds 30"), DRY=1 (the same script on CPU at tiny size, in seconds).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
WHEELS=${WHEELS:-.whl-engine}
DIFFUSERS=${DIFFUSERS:-0.42.1}

if [ "${1:-}" = "--prepare" ]; then
    info="$(git rev-parse --git-dir)/info"
    mkdir -p "$info" "$WHEELS"
    grep -qxF "/$WHEELS/" "$info/exclude" 2>/dev/null || echo "/$WHEELS/" >> "$info/exclude"
    if ! compgen -G "$WHEELS/diffusers-$DIFFUSERS-*.whl" > /dev/null; then
        # pure Python; its needs (huggingface-hub >= 1.32, regex, requests, filelock, Pillow, safetensors) are
        # in the device image; importlib_metadata is only imported on Python < 3.8
        $PY -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
            -d "$WHEELS" "diffusers==$DIFFUSERS"
    fi
    ls -l "$WHEELS"
    # what the device tool sends: tracked files, untracked files git does not ignore, and the carried wheels
    tree=$(git ls-files -z --cached --others --exclude-standard | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
    carried=$(find "$WHEELS" -type f -print0 | xargs -0 stat -c %s | awk '{s += $1} END {print s + 0}')
    echo "working tree $((tree / 1048576)) MiB + carried $((carried / 1048576)) MiB of the 64 MiB the device tool takes"
    [ $((tree + carried)) -le $((64 * 1048576)) ] || { echo "too large: carry less or untrack what the round does not need"; exit 1; }
    echo 'then: run(command="bash scripts/engine_gpu_round.sh", carry=[".whl-engine"], timeout_s=540)'
    exit 0
fi

OUT=${OUT:-/tmp/engine_gpu_out}
mkdir -p "$OUT"
LOG="$OUT/round.log"
if [ -n "${DRY:-}" ]; then
    BUDGET_S=${BUDGET_S:-120}
    FLAGS="--dry"
    NAME=engine_gpu_dry.json
else
    BUDGET_S=${BUDGET_S:-420}
    FLAGS=""
    NAME="engine_gpu_$(date -u +%F).json"
fi
{
    echo "# engine GPU round $(date -u +%FT%TZ) budget ${BUDGET_S}s"
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 || echo "no nvidia-smi"
} | tee "$LOG"

if compgen -G "$WHEELS/*.whl" > /dev/null; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/engine_site \
        "$WHEELS"/*.whl 2>&1 | tee -a "$LOG"
    export PYTHONPATH="/tmp/engine_site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONUNBUFFERED=1
set +e
# shellcheck disable=SC2086
timeout -k 20 $((${BUDGET_S%.*} + 60)) $PY -m inferix.cli bench --gpu $FLAGS --budget-s "$BUDGET_S" \
    --out "$OUT/$NAME" ${ARGS:-} 2>&1 | tee -a "$LOG"
rc=${PIPESTATUS[0]}
set -e
echo "# exit $rc; JSON: $OUT/$NAME" | tee -a "$LOG"
exit "$rc"
