#!/usr/bin/env bash
# Commit only the given paths, retrying while another process holds the git index lock.
# Usage: scripts/commit.sh "message" path [path ...]
set -u
msg="$1"; shift
for i in $(seq 1 30); do
  # `git add` may refuse a path already removed with `git rm`; the commit still records it.
  git add -A -- "$@" 2>/dev/null || true
  if git commit -q -m "$msg" -- "$@"; then exit 0; fi
  if [ -f .git/index.lock ]; then sleep 2; continue; fi
  # nothing to commit, or a real error
  git status --short -- "$@" | head -5
  exit 1
done
echo "could not get the git index lock" >&2; exit 1
