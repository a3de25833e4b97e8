#!/usr/bin/env bash
# Prepare, on the workstation, what reference_world_lab/scripts/gpu_round.sh needs on the device machine, and check that it
# travels: the device tool sends the repository plus the carried paths, 64 MiB in all.
#
#   .gpu_data/train   the training renders (reference_world_lab/configs/reference_world_data), with only the
#                     ground truth the recipe reads: the object masks of the clips the object-weighted
#                     loss does not skip (the Atari games for reference_world_gpu5.yaml; KEEP_GT)
#   .gpu_data/gaming  the `gaming` suite without its ground truth (the bench reads the cases, first
#                     frames and reference videos)
#   .gpu_data/smoke   the `smoke` suite's cases and first frames (rendered lossless), which both models
#                     generate from on the device (reference_world_lab/scripts/score_gpu_smoke.sh scores them here)
#   .whl              wheels the device image lacks (jsonschema and its needs, for Python 3.12)
# The training and gaming renders are --playable (yuv420p): exact ones would not fit the carry (the gaming
# suite's videos are 59 MB exact, 9.7 MB playable), the shipped weights trained on playable renders, and
# the gate pairs both models against the same references. The smoke suite carries no videos.
# All of these are ignored by git (.git/info/exclude), so only `carry` takes them along.
#
# Usage: prepare_gpu_round.sh    (about 3 minutes; rerunning keeps what is there)
# Environment: PYTHON (python3), KEEP_GT (glob of the ground-truth files kept; 'train-atari_*').
set -euo pipefail
PY=${PYTHON:-python3}
KEEP_GT=${KEEP_GT:-train-atari_*}
LIMIT=$((64 * 1024 * 1024))
export MUJOCO_GL=${MUJOCO_GL:-egl}

info="$(git rev-parse --git-dir)/info"
mkdir -p "$info"
for p in /.gpu_data/ /.whl/; do grep -qxF "$p" "$info/exclude" 2>/dev/null || echo "$p" >> "$info/exclude"; done

if [ ! -f .gpu_data/train/suite.json ]; then
    $PY -m worldolympiad scenarios render reference_world_lab/configs/reference_world_data .gpu_data/train --playable
fi
find .gpu_data/train/ground_truth -name '*.npz' ! -name "$KEEP_GT" -delete

if [ ! -f .gpu_data/gaming/suite.json ]; then
    tmp=$(mktemp -d)
    $PY -m worldolympiad scenarios render gaming "$tmp/gaming" --playable
    mkdir -p .gpu_data/gaming
    cp -r "$tmp/gaming/cases" "$tmp/gaming/conditioning" "$tmp/gaming/videos" "$tmp/gaming/suite.json" .gpu_data/gaming/
    rm -rf "$tmp"
fi

if [ ! -f .gpu_data/smoke/suite.json ]; then
    # lossless, as evaluate-model's own reference cache: the first frames equal what a CPU run starts from.
    # Generation needs the cases and first frames only; score_gpu_smoke.sh scores against a local render.
    tmp=$(mktemp -d)
    $PY -m worldolympiad scenarios render smoke "$tmp/smoke" --lossless
    mkdir -p .gpu_data/smoke
    cp -r "$tmp/smoke/cases" "$tmp/smoke/conditioning" "$tmp/smoke/suite.json" .gpu_data/smoke/
    rm -rf "$tmp"
fi

mkdir -p .whl
if ! compgen -G ".whl/jsonschema-*.whl" > /dev/null; then
    $PY -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        -d .whl jsonschema referencing jsonschema-specifications rpds-py
fi

# what the tool sends: tracked files, untracked files git does not ignore, and the carried paths
tree=$(git ls-files -z --cached --others --exclude-standard | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
carried=$(find .gpu_data .whl -type f -print0 | xargs -0 stat -c %s | awk '{s += $1} END {print s + 0}')
total=$((tree + carried))
printf 'working tree %.1f MiB + carried %.1f MiB = %.1f MiB of the 64 MiB the device tool takes\n' \
    "$(echo "$tree / 1048576" | bc -l)" "$(echo "$carried / 1048576" | bc -l)" "$(echo "$total / 1048576" | bc -l)"
if [ "$total" -gt "$LIMIT" ]; then
    echo "too large: carry less (e.g. a --limit 24 subset of .gpu_data/gaming) or untrack what the call does not need"
    exit 1
fi
echo 'then: run(command="CFG=reference_world_lab/configs/reference_world_gpu5.yaml bash reference_world_lab/scripts/gpu_round.sh 240", carry=[".gpu_data", ".whl"], timeout_s=590)'
