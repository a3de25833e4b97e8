"""Split one run over independent jobs without Ray (``evaluate-model --shard i/N``) and join the shards
(``worldolympiad merge RUN...``) into the run directory the unsharded command would have written.

A shard is a run of the same :class:`~worldolympiad.types.RunSpec` (same hash: the shard is how the
work is executed, not what is computed) restricted to every N-th (case, seed) of the suite::

    items  = [(case, seed) for case in suite.cases[:limit] for seed in spec.seeds]
             + the same for the cases that could not be loaded (each gets failed rows)
    shard i of N takes items[k] for every k with k % N == i

Round robin over the suite order (rather than contiguous blocks) spreads the expensive families
over every shard. Each shard writes its own directory, ``<out>/<spec.dirname>__shard-<i>-of-<N>/``
(run_spec.json, results.jsonl, videos/, ... as any run) plus ``shard.json``: its index, the count,
``--limit`` and the (case, seed) items it owns, so a Slurm array can point every task at the same
``--out`` on shared storage and the tasks never share a run lock. A killed shard resumes like any
run when its command is run again.

:func:`merge_runs` checks that the directories are the N shards of one run (same spec hash, same N
and limit, every index once, each shard finished: every track has a row for every item it owns,
no row outside them, no key twice) and writes ``<out>/<spec.dirname>/``: rows concatenated in shard
order, videos, references and per-row artifacts hard-linked (copied across file systems), timings
and run logs concatenated, the judge ledgers summed, and ``summary.json`` computed from the merged
rows by the same :func:`~worldolympiad.summary.summarize` an unsharded run uses. Running the
unsharded command afterwards finds every row done and computes nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from worldolympiad.rundir import REFERENCES, RESULTS, RUN_LOG, RUN_SPEC, SUMMARY, TIMINGS, VIDEOS, JsonlAppender

SHARD_FILE = "shard.json"


class ShardError(ValueError):
    """A bad ``--shard`` value, or directories that are not the finished shards of one run (says how to fix it)."""


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (0-based, as Slurm's ``$SLURM_ARRAY_TASK_ID`` with ``--array=0-(N-1)``)."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise ShardError(f"--shard {self.index}/{self.count}: expected I/N with N >= 1 and 0 <= I < N "
                             f"(e.g. --shard 0/4 ... --shard 3/4)")

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"1/4"`` → ``Shard(1, 4)``.

        Raises:
            ShardError: not ``I/N`` with integers ``0 <= I < N``.
        """
        index, sep, count = text.partition("/")
        try:
            if not sep:
                raise ValueError
            return cls(int(index), int(count))
        except ValueError as e:
            raise ShardError(f"--shard must be I/N with integers 0 <= I < N (e.g. --shard 0/2), got {text!r}") from e

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def dirname(self, run_dirname: str) -> str:
        """The shard's run directory name beside the unsharded one: ``<run>__shard-<i>-of-<N>``."""
        return f"{run_dirname}__shard-{self.index}-of-{self.count}"

    def select(self, items: Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
        """The (case id, seed) items this shard owns: every ``count``-th of ``items``, from ``index``."""
        return [item for k, item in enumerate(items) if k % self.count == self.index]


def write_shard_file(run_dir: Path, shard: Shard, limit: int | None, items: Iterable[tuple[str, int]]) -> None:
    """Record in ``run_dir/shard.json`` which shard this directory is and the items it owns."""
    data = {"index": shard.index, "count": shard.count, "limit": limit,
            "items": [[case_id, int(seed)] for case_id, seed in items]}
    tmp = run_dir / (SHARD_FILE + ".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(run_dir / SHARD_FILE)


# ======================================================================= merge


@dataclass
class _ShardDir:
    path: Path
    spec: dict[str, Any]
    index: int
    count: int
    limit: int | None
    items: list[tuple[str, int]]
    rows: list[dict[str, Any]]


@dataclass
class MergeOutcome:
    """What :func:`merge_runs` returns.

    Attributes:
        run_dir: the merged run directory.
        rows: number of rows in its ``results.jsonl``.
        shards: the shard directories merged, in index order.
        summary: the merged ``summary.json``.
    """

    run_dir: Path
    rows: int
    shards: list[Path] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)


def _read_shard(path: Path) -> _ShardDir:
    path = Path(path)
    if not (path / RUN_SPEC).is_file():
        raise ShardError(f"{path}: no {RUN_SPEC}; pass the run directories that `evaluate-model --shard I/N` wrote")
    if not (path / SHARD_FILE).is_file():
        raise ShardError(f"{path}: no {SHARD_FILE}, so it is not a shard (an unsharded run is already whole); "
                         "pass the directories written with --shard I/N")
    try:
        spec = json.loads((path / RUN_SPEC).read_text())
        shard = json.loads((path / SHARD_FILE).read_text())
        items = [(str(c), int(s)) for c, s in shard["items"]]
        index, count, limit = int(shard["index"]), int(shard["count"]), shard.get("limit")
    except (ValueError, KeyError, TypeError) as e:
        raise ShardError(f"{path}: {RUN_SPEC} or {SHARD_FILE} is damaged ({type(e).__name__}: {e}); "
                         "run that shard's command again with --no-resume") from e
    rows = JsonlAppender(path / RESULTS).read()
    return _ShardDir(path, spec, index, count, limit, items, rows)


def _differing_fields(a: dict[str, Any], b: dict[str, Any]) -> str:
    keys = ("model", "suite", "tracks", "seeds", "judge", "options", "track_versions", "model_fingerprint",
            "video_format")
    diff = [k for k in keys if a.get(k) != b.get(k)]
    return ", ".join(diff) or "the hash"


def check_shards(paths: Sequence[Path]) -> list[_ShardDir]:
    """Read and check shard directories; returns them in shard order.

    Raises:
        ShardError: not the N finished shards of one run (what differs, what is missing, and the fix).
    """
    if not paths:
        raise ShardError("merge needs the shard run directories, e.g. worldolympiad merge runs/<run>__shard-*")
    shards = [_read_shard(Path(p)) for p in paths]
    first = shards[0]
    for s in shards[1:]:
        if s.spec.get("hash") != first.spec.get("hash"):
            raise ShardError(f"{s.path} is a shard of run {s.spec.get('hash')} but {first.path} of run "
                             f"{first.spec.get('hash')} ({_differing_fields(first.spec, s.spec)} differ): only "
                             "shards of one evaluate-model command can be merged")
        if (s.count, s.limit) != (first.count, first.limit):
            raise ShardError(f"{s.path} is shard {s.index}/{s.count} (--limit {s.limit}) but {first.path} is "
                             f"{first.index}/{first.count} (--limit {first.limit}): every shard must come from the "
                             "same --shard I/N split and --limit")
    by_index: dict[int, _ShardDir] = {}
    for s in shards:
        if s.index in by_index:
            raise ShardError(f"shard {s.index}/{s.count} given twice: {by_index[s.index].path} and {s.path}")
        by_index[s.index] = s
    missing = [i for i in range(first.count) if i not in by_index]
    if missing:
        raise ShardError(f"shard(s) {', '.join(f'{i}/{first.count}' for i in missing)} missing: run "
                         f"`evaluate-model ... --shard I/{first.count}` for them (same flags) and pass every "
                         "shard directory to merge")
    tracks = list(first.spec.get("tracks") or [])
    seen: dict[tuple[str, int, str], Path] = {}
    for s in (by_index[i] for i in range(first.count)):
        owned = set(s.items)
        for r in s.rows:
            key = (str(r.get("case_id")), int(r.get("seed", 0)), str(r.get("track")))
            if key[:2] not in owned:
                raise ShardError(f"{s.path}: row {key} is not one of this shard's items ({SHARD_FILE}); the "
                                 "directory was changed by hand or written by another split: rerun that shard "
                                 "with --no-resume")
            if key in seen:
                raise ShardError(f"row {key} is in both {seen[key]} and {s.path}: they overlap; rerun the "
                                 "shards with --no-resume")
            seen[key] = s.path
        have = {(str(r.get("case_id")), int(r.get("seed", 0)), str(r.get("track"))) for r in s.rows}
        todo = [(c, seed, t) for c, seed in s.items for t in tracks if (c, seed, t) not in have]
        if todo:
            shown = ", ".join(f"{c} s{seed} {t}" for c, seed, t in todo[:3]) + (" ..." if len(todo) > 3 else "")
            raise ShardError(f"shard {s.index}/{s.count} at {s.path} is unfinished: {len(todo)} row(s) missing "
                             f"({shown}); run its evaluate-model command again (it resumes), then merge")
    return [by_index[i] for i in range(first.count)]


def merge_runs(paths: Sequence[Path], out: Path | None = None, *, replace: bool = False) -> MergeOutcome:
    """Merge the shard directories of one run into ``<out>/<spec.dirname>/``.

    Args:
        paths: every shard directory of the run (any order).
        out: parent folder of the merged run (default: the first shard's parent, i.e. the same ``--out``).
        replace: replace an existing merged directory (e.g. after rerunning a shard).

    Raises:
        ShardError: the directories are not the N finished shards of one run, or the target exists.
    """
    from worldolympiad.summary import summarize
    from worldolympiad.types import RunSpec, TrackResult

    shards = check_shards(paths)
    first = shards[0]
    spec = RunSpec.from_dict(first.spec)
    parent = Path(out) if out is not None else first.path.parent
    target = parent / spec.dirname
    if target.exists() and not replace:
        raise ShardError(f"{target} already exists; pass --replace to write the merge over it, or --out DIR "
                         "for another parent folder")
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{spec.dirname}.merging-", dir=parent))
    try:
        tmp.chmod(0o755)  # mkdtemp makes it private; the merged run is as readable as any run directory
        (tmp / RUN_SPEC).write_text((first.path / RUN_SPEC).read_text())
        rows = [r for s in shards for r in s.rows]
        (tmp / RESULTS).write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows))
        for name in (TIMINGS, RUN_LOG):
            with open(tmp / name, "wb") as f:
                for s in shards:
                    if (s.path / name).is_file():
                        f.write((s.path / name).read_bytes())
        for sub in (VIDEOS, REFERENCES, "work"):
            for s in shards:
                if (s.path / sub).is_dir():
                    _link_tree(s.path / sub, tmp / sub)
        ledger = _merged_ledger(s.path for s in shards)
        summary = summarize([TrackResult.from_dict(r) for r in rows], spec,
                            suite_name=_suite_name(first.path) or spec.suite)
        if ledger is not None:
            from worldolympiad.judges.ledger import LEDGER, judge_run_summary

            (tmp / LEDGER).write_text(json.dumps(ledger, sort_keys=True))
            summary.update(judge_run_summary(tmp))
        (tmp / SUMMARY).write_text(json.dumps(summary, indent=2))
        if target.exists():
            old = parent / f".{spec.dirname}.replaced-{os.getpid()}"
            target.replace(old)
            tmp.replace(target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.replace(target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return MergeOutcome(run_dir=target, rows=len(rows), shards=[s.path for s in shards], summary=summary)


def _suite_name(run_dir: Path) -> str | None:
    try:
        return str(json.loads((run_dir / SUMMARY).read_text())["suite"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _link_tree(src: Path, dst: Path) -> None:
    """Hard-link (or copy, across file systems) every file of ``src`` into ``dst``; symlinks stay symlinks;
    a file already there (a reference both shards published) is kept."""
    for root, _dirs, files in os.walk(src):
        rel = Path(root).relative_to(src)
        (dst / rel).mkdir(parents=True, exist_ok=True)
        for name in files:
            a, b = Path(root) / name, dst / rel / name
            if b.exists() or b.is_symlink():
                continue
            if a.is_symlink():
                os.symlink(os.readlink(a), b)
                continue
            try:
                os.link(a, b)
            except OSError:
                shutil.copy2(a, b)


def _merged_ledger(run_dirs: Iterable[Path]) -> dict[str, Any] | None:
    """The shards' judge ledgers summed (``None`` when no shard sent a judge request)."""
    from worldolympiad.judges.ledger import COUNTS, LEDGER

    merged: dict[str, Any] | None = None
    for d in run_dirs:
        try:
            data = json.loads((d / LEDGER).read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        merged = merged if merged is not None else dict.fromkeys(COUNTS, 0)
        for k, v in data.items():
            if k in COUNTS and isinstance(v, int):
                merged[k] += v
            elif k not in COUNTS and v is not None:
                merged[k] = v
    return merged
