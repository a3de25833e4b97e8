"""The run directory and its store: file names, how generated videos are stored, the single-writer
JSONL appender, and the row bookkeeping a resumed run needs (stale rows, stored videos, a fresh start).

Layout (DESIGN.md §4; :mod:`worldolympiad.evaluator` writes it)::

    <out>/<spec.dirname>/
        run_spec.json  videos/  references/  results.jsonl  timings.jsonl  summary.json  run.log  work/

``run.log`` receives what third-party native code prints while a video is generated or a track
scores (pycolmap's glog lines, MuJoCo and pybullet banners, absl), one header line per stage, so
the terminal keeps only the progress line and the run's own messages (:func:`native_output_to`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from worldolympiad.inputs import changed_inputs

logger = logging.getLogger(__name__)

RESULTS = "results.jsonl"
TIMINGS = "timings.jsonl"
SUMMARY = "summary.json"
RUN_SPEC = "run_spec.json"
VIDEOS = "videos"
REFERENCES = "references"  # browser-playable copies of the references the tracks used (report, site)
RUN_LOG = "run.log"  # third-party output of generation and tracks (native_output_to)


# Generated videos are stored as H.264 and decoded back before scoring. 4:4:4 keeps the colour of
# 1-2 px sprites: 4:2:0 (the browser default) averages each 2x2 block's chroma, and at 64 px the
# Atari paddles then no longer match their colour, so no tracker finds them in any model's video
# while the simulator reference (stored lossless) keeps them. ``--option video.pix_fmt=yuv420p``
# writes browser-friendlier files. The quantizer is constant (``video.qp``): x264's CRF rate
# control encoded the same frames differently from call to call (see write_video).
VIDEO_PIX_FMT = "yuv444p"
VIDEO_QP = 18


def video_storage(options: Mapping[str, Any]) -> tuple[str, int]:
    """``(pix_fmt, qp)`` the run's generated videos are written with (``video.pix_fmt`` / ``video.qp``)."""
    if "video.crf" in options:
        raise ValueError("--option video.crf is gone: generated videos are stored at a constant quantizer, "
                         "set it with video.qp (default 18; CRF encoded the same frames differently from run to run)")
    return str(options.get("video.pix_fmt", VIDEO_PIX_FMT)), int(options.get("video.qp", VIDEO_QP))


def video_format(options: Mapping[str, Any]) -> str:
    """The storage format of a run's generated videos, e.g. ``h264 yuv444p qp18`` (hashed in the RunSpec;
    until session 12 ``h264 yuv444p crf18``, whose runs start anew rather than mix the two encodings)."""
    pix_fmt, qp = video_storage(options)
    return f"h264 {pix_fmt} qp{qp}"


# ================================================================ the run's log


@contextlib.contextmanager
def native_output_to(log_path: Path, header: str = "") -> Iterator[None]:
    """Send everything written to file descriptors 1 and 2 inside the block to ``log_path`` (appended).

    pycolmap logs through glog and MuJoCo / pybullet print from C, straight to the process's stdout and
    stderr descriptors: Python's ``logging`` and ``sys.stderr`` cannot catch them (one smoke run printed
    ~1,700 glog lines into the terminal). The descriptors themselves are pointed at the log file for the
    block and restored after it, C stdio buffers flushed on both sides so nothing crosses over. Python
    output written to ``sys.stdout`` / ``sys.stderr`` in the block lands there too. The block runs in
    this process (the geometry track calls pycolmap in-process), so a worker process redirects its own
    descriptors; the progress line writes to a duplicate of the terminal taken before (it stays visible).
    Where descriptors cannot be redirected (no fd 1/2, not POSIX) the block runs unchanged.
    """
    try:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError:
        logger.debug("cannot open %s; native output stays on the terminal", log_path, exc_info=True)
        yield
        return
    saved: list[tuple[int, int]] = []
    try:
        if header:
            os.write(log_fd, f"==== {header} (pid {os.getpid()})\n".encode())
        _flush_all()
        for fd in (1, 2):
            try:
                saved.append((fd, os.dup(fd)))
            except OSError:  # no such descriptor (a daemon): nothing to redirect there
                continue
            os.dup2(log_fd, fd)
        yield
    finally:
        _flush_all()
        for fd, copy in saved:
            os.dup2(copy, fd)
            os.close(copy)
        os.close(log_fd)


def _flush_all() -> None:
    """Flush Python's and C's stdout/stderr buffers (so text lands on the side it was written on)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    with contextlib.suppress(Exception):
        _libc().fflush(None)


@functools.cache
def _libc() -> Any:
    import ctypes

    return ctypes.CDLL(None)


# ================================================================ result files


class JsonlAppender:
    """Append-only JSON-lines file where each line lands in one ``write(2)`` call.

    With ``O_APPEND`` and one write per full line (plus ``fsync`` when ``durable``), a
    crash can leave at most one partial *last* line, which :meth:`read` drops.
    """

    def __init__(self, path: Path, durable: bool = True) -> None:
        self.path = path
        self.durable = durable
        self._fd: int | None = None

    def read(self) -> list[dict[str, Any]]:
        """All complete lines; a trailing partial line (killed writer) is truncated away."""
        if not self.path.exists():
            return []
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            keep = data.rfind(b"\n") + 1
            logger.warning("%s: dropping a partial last line (%d bytes) left by an interrupted run",
                           self.path, len(data) - keep)
            with open(self.path, "r+b") as f:
                f.truncate(keep)
            data = data[:keep]
        rows: list[dict[str, Any]] = []
        kept: list[bytes] = []
        damaged: list[bytes] = []
        for line in data.splitlines(keepends=True):
            if not line.strip():
                continue
            try:
                row = json.loads(line.decode("utf-8"))
                if not isinstance(row, dict):
                    raise ValueError("not a JSON object")
            except ValueError:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
                damaged.append(line)
                continue
            rows.append(row)
            kept.append(line)
        if damaged:
            self._quarantine(damaged, kept)
        return rows

    @property
    def quarantine_path(self) -> Path:
        """Where damaged lines are kept: ``<name>.quarantine`` beside the file."""
        return self.path.with_name(self.path.name + ".quarantine")

    def _quarantine(self, damaged: list[bytes], kept: list[bytes]) -> None:
        """Move damaged lines (not UTF-8, not a JSON object) out of the file into :attr:`quarantine_path`.

        They are appended there byte for byte and the file is rewritten atomically without them, so
        every later reader (``leaderboard add``, ``worldolympiad report``) sees rows only.
        """
        with open(self.quarantine_path, "ab") as f:
            f.writelines(x if x.endswith(b"\n") else x + b"\n" for x in damaged)
            f.flush()
            os.fsync(f.fileno())
        self.close()
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_bytes(b"".join(kept))
        tmp.replace(self.path)
        logger.warning("%s: %d damaged line(s) (not UTF-8 or not a JSON row) moved to %s; any row they held "
                       "is computed again", self.path, len(damaged), self.quarantine_path)

    def append(self, row: Mapping[str, Any]) -> None:
        data = (json.dumps(row, separators=(",", ":")) + "\n").encode()
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        n = os.write(self._fd, data)
        if n != len(data):  # regular files do not short-write in practice; fail loudly if one does
            raise OSError(f"short write to {self.path}: {n} of {len(data)} bytes")
        if self.durable:
            os.fsync(self._fd)

    def rewrite(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Replace the file's content atomically (used by ``retry_failed``)."""
        self.close()
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows))
        tmp.replace(self.path)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None



def _drop_stale_rows(previous: list[dict[str, Any]], current: Mapping[tuple[str, int], Mapping[str, Any]]
                     ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """Split earlier rows into (kept, stale, one line per changed (case, seed)).

    A row is stale when the inputs it records differ from the current ones. Rows written before inputs
    were recorded are kept, except failed rows whose video was missing and now exists. (A case that could
    not be loaded records that on its rows, so once it loads its rows are stale.)
    """
    kept: list[dict[str, Any]] = []
    stale: list[dict[str, Any]] = []
    changed: dict[tuple[str, int], list[str]] = {}
    for r in previous:
        key = (str(r.get("case_id")), int(r.get("seed", 0)))
        now = current.get(key)
        recorded = r.get("inputs")
        labels: list[str] = []
        if now is not None and isinstance(recorded, Mapping) and recorded:
            labels = changed_inputs(recorded, now)
        elif now is not None and r.get("status") == "failed":  # a row from before inputs were recorded
            error = " ".join(str(e) for e in r.get("errors") or ())
            video = now.get("model.video") or {"missing": True}
            if "no video for case" in error and not video.get("missing"):
                labels = ["model.video"]
        if labels:
            stale.append(r)
            changed.setdefault(key, labels)
        else:
            kept.append(r)
    lines = [f"{cid} s{seed}: {', '.join(labels)}" for (cid, seed), labels in sorted(changed.items())]
    return kept, stale, lines


def _forget_stored(run_dir: Path, case_id: str, seed: int) -> None:
    """Remove what a (case, seed) left in the run directory (its stored video, timestamps, artifacts and
    the published reference), so nothing computed from its old inputs is reused."""
    import shutil

    stem = f"{case_id}__s{seed}"
    for p in (run_dir / VIDEOS).glob(f"{stem}.*"):
        p.unlink(missing_ok=True)
    (run_dir / VIDEOS / f"{stem}_chunk_timestamps.json").unlink(missing_ok=True)
    (run_dir / REFERENCES / f"{case_id}.mp4").unlink(missing_ok=True)
    shutil.rmtree(run_dir / "work" / case_id / f"s{seed}", ignore_errors=True)


def _clear_run_dir(run_dir: Path) -> None:
    import shutil

    for name in (RESULTS, TIMINGS, SUMMARY, RUN_SPEC, "judge_ledger.json"):  # the ledger: issue 59.2
        (run_dir / name).unlink(missing_ok=True)
    for sub in (VIDEOS, "work"):
        shutil.rmtree(run_dir / sub, ignore_errors=True)
