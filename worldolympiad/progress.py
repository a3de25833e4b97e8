"""Progress measured in work, not rows: what ``evaluate-model`` shows while it runs.

A run's rows cost wildly different amounts: a reused or not-applicable row costs nothing, a
physics row about a second, a geometry row (pycolmap SfM) half a minute. Counting rows made the
bar jump to 51/80 in a second and then sit still for minutes. Here every piece of work that is
still to do is a *stage* of one (case, seed) — its video (``generate``, or ``read`` when a stored
video is reused) and each pending track — weighed by an estimate of its cost in seconds::

    cost(stage) = seconds_per_frame(kind) x frames(case)

``seconds_per_frame`` starts at a documented prior (:data:`PRIOR_S_PER_FRAME`) and moves to what
this run measures as stages of that kind finish (the prior counts as one observation). The fraction
done is the estimated cost of finished stages (plus the elapsed time of running ones, capped below
their estimate) over the estimated cost of all stages; the ETA is the remaining cost divided by
the work done per second of wall time so far. Reused and instantly settled rows (not applicable,
broken case, unavailable track) are shown as counts ("50 reused", "38 n/a"), never as progress.

:class:`WorkProgress` is the bookkeeping (a clock is injected, so tests run in microseconds);
:class:`ProgressLine` draws it on a terminal, naming the row(s) running now.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Concatenate, ParamSpec, TextIO, TypeVar

#: Prior cost of a stage in seconds per video frame (one CPU core), used until this run has timed a
#: stage of that kind. Measured on the validity runs of session 45 (2-core machine, 16-64 frame cases):
#: a geometry row (SfM: features, matching, mappers, cross-check) took ~32 s median, physics ~0.5 s,
#: interaction ~0.6 s, long video ~0.4 s, generating a scripted/reference video ~0.13 s.
PRIOR_S_PER_FRAME: dict[str, float] = {
    "geometry": 0.6,
    "physics": 0.02,
    "interaction": 0.02,
    "longvideo": 0.02,
    "read": 0.002,
    "generate": 0.01,
}
#: A track with no prior above (a plug-in): assume it is as costly as a cheap built-in track.
DEFAULT_TRACK_PRIOR = 0.02
#: Generation by a neural model (any model that is not one of :data:`CHEAP_MODELS`) on a CPU core.
NEURAL_GENERATE_PRIOR = 1.0
#: Models whose "generation" renders or reads a file (cheap).
CHEAP_MODELS = ("videos", "reference", "repeat-first-frame", "perturbed", "file")
#: On a terminal the line is redrawn at most this often (rows finishing by the hundred redraw once).
MIN_REDRAW_S = 0.1
#: A running stage is credited with its elapsed time, at most this fraction of its estimate (a stage
#: that runs long does not push the bar to 100 %).
RUNNING_CREDIT = 0.9

Key = tuple[str, int, str]  # (case id, seed, stage) with stage "video" or a track name


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _locked(method: Callable[Concatenate[WorkProgress, _P], _R]) -> Callable[Concatenate[WorkProgress, _P], _R]:
    @functools.wraps(method)
    def wrapper(self: WorkProgress, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self.lock:
            return method(self, *args, **kwargs)

    return wrapper


def generate_prior(model: str) -> float:
    """The prior seconds per frame of generating with ``model`` (a model spec such as ``videos:DIR``)."""
    prefix = model.split(":", 1)[0]
    return PRIOR_S_PER_FRAME["generate"] if prefix in CHEAP_MODELS else NEURAL_GENERATE_PRIOR


@dataclass
class _Stage:
    kind: str  # what its cost is measured as: "generate", "read" or a track name
    frames: int
    done: bool = False
    started: float | None = None


class WorkProgress:
    """How much of a run's work is done, and how long the rest will take.

    Args:
        clock: seconds, monotonic (``time.monotonic``; a fake one in tests).
        priors: seconds per frame by stage kind, overriding :data:`PRIOR_S_PER_FRAME`.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic, priors: dict[str, float] | None = None) -> None:
        self.clock = clock
        self.priors = {**PRIOR_S_PER_FRAME, **(priors or {})}
        self.stages: dict[Key, _Stage] = {}
        self.running: dict[Any, Key] = {}  # worker id -> stage
        self.observed: dict[str, tuple[float, int, int]] = {}  # kind -> (seconds, frames, count)
        self.reused = 0
        self.settled: dict[str, int] = {}  # rows settled without work, by status
        self.rows_planned = 0
        self.rows_done = 0
        self.t0 = clock()
        self.lock = threading.RLock()  # events come from the run's thread, reads from the drawing thread

    # ---------------------------------------------------------------- planning
    @_locked
    def plan(self, case_id: str, seed: int, frames: int, video: str, tracks: list[str]) -> None:
        """A (case, seed) to compute: its video (``"generate"`` or ``"read"``) and its pending tracks."""
        frames = max(1, int(frames))
        self.stages[(case_id, seed, "video")] = _Stage(video, frames)
        for t in tracks:
            self.stages[(case_id, seed, t)] = _Stage(t, frames)
        self.rows_planned += len(tracks)

    @_locked
    def add_reused(self, n: int) -> None:
        """Rows found finished in ``results.jsonl``: shown as a count, weigh nothing."""
        self.reused += n

    # ------------------------------------------------------------------ events
    @_locked
    def start(self, case_id: str, seed: int, stage: str, worker: Any = 0) -> None:
        key = (case_id, seed, stage)
        st = self.stages.get(key)
        if st is None or st.done:
            return
        st.started = self.clock()
        self.running[worker] = key

    @_locked
    def finish(self, case_id: str, seed: int, stage: str, seconds: float | None = None, kind: str | None = None) -> None:
        """Stage done; ``seconds`` (when measured) teaches the cost of its kind (``kind`` overrides
        the planned one: a unit planned to read a stored video that had to generate it)."""
        key = (case_id, seed, stage)
        st = self.stages.get(key)
        if st is None or st.done:
            return
        st.done = True
        if kind is not None:
            st.kind = kind
        if seconds is not None and seconds >= 0:
            s, f, n = self.observed.get(st.kind, (0.0, 0, 0))
            self.observed[st.kind] = (s + float(seconds), f + st.frames, n + 1)
        for w, k in list(self.running.items()):
            if k == key:
                del self.running[w]

    @_locked
    def row(self, case_id: str, seed: int, track: str, status: str, seconds: float | None = None) -> None:
        """A row was written: a planned track stage finishes (and its video stage, which a failed
        generation never reports otherwise); any other row settled without work."""
        key = (case_id, seed, track)
        if key not in self.stages:
            self.settled[status] = self.settled.get(status, 0) + 1
            return
        if not self.stages[key].done:
            self.rows_done += 1
        video = self.stages.get((case_id, seed, "video"))
        if video is not None and not video.done:
            self.finish(case_id, seed, "video")
        self.finish(case_id, seed, track, seconds)

    # ---------------------------------------------------------------- estimates
    def rate(self, kind: str, overdue: tuple[float, int, int] = (0.0, 0, 0)) -> float:
        """Seconds per frame of ``kind``: the prior, as one observation, averaged with this run's
        (``overdue``: running stages of ``kind`` already past their estimate, counted at their elapsed time)."""
        prior = self.priors.get(kind, DEFAULT_TRACK_PRIOR)
        s, f, n = self.observed.get(kind, (0.0, 0, 0))
        s, f, n = s + overdue[0], f + overdue[1], n + overdue[2]
        if n == 0 or f == 0:
            return prior
        return (prior + n * (s / f)) / (1 + n)

    def rates(self) -> dict[str, float]:
        """:meth:`rate` of every planned kind now. A stage running past its estimate is evidence that its
        kind costs more (the first geometry row on a busy machine): it counts as an observation of its
        elapsed time so far, so the ETA grows while the row runs instead of after it."""
        now = self.clock()
        overdue: dict[str, tuple[float, int, int]] = {}
        for st in self.stages.values():
            if st.done or st.started is None:
                continue
            took = now - st.started
            if took > self.rate(st.kind) * st.frames:
                s, f, n = overdue.get(st.kind, (0.0, 0, 0))
                overdue[st.kind] = (s + took, f + st.frames, n + 1)
        return {k: self.rate(k, overdue.get(k, (0.0, 0, 0))) for k in {st.kind for st in self.stages.values()}}

    @_locked
    def work(self) -> tuple[float, float]:
        """``(done, total)`` estimated seconds of work (running stages credited their elapsed time, at
        most :data:`RUNNING_CREDIT` of their estimate)."""
        now = self.clock()
        rates = self.rates()
        done = total = 0.0
        for st in self.stages.values():
            c = rates[st.kind] * st.frames
            total += c
            if st.done:
                done += c
            elif st.started is not None:
                done += min(now - st.started, RUNNING_CREDIT * c)
        return done, total

    def fraction(self) -> float:
        done, total = self.work()
        return 1.0 if total <= 0 else min(1.0, done / total)

    def elapsed(self) -> float:
        return self.clock() - self.t0

    def eta(self) -> float | None:
        """Seconds left: remaining work / work done per second so far (``None`` before any work)."""
        done, total = self.work()
        elapsed = self.elapsed()
        if done >= total:
            return 0.0
        if done <= 0 or elapsed <= 0:
            return None
        return max(0.0, total - done) / (done / elapsed)

    @_locked
    def running_names(self) -> list[str]:
        now = self.clock()
        out = []
        for key in self.running.values():
            st = self.stages[key]
            what = st.kind if key[2] == "video" else key[2]
            took = "" if st.started is None else f" {_clock(now - st.started)}"
            out.append(f"{key[0]} s{key[1]} {what}{took}")
        return out

    # ------------------------------------------------------------------- text
    @_locked
    def line(self, desc: str = "", width: int = 100) -> str:
        """One line: ``desc  42% [#####.......] | 3/30 rows, 50 reused | 1:02<~1:25 | running: case s0 geometry 0:21``
        (elapsed < estimated time left)."""
        frac = self.fraction()
        bar_w = 12
        filled = int(round(frac * bar_w))
        parts = [f"{desc} {frac * 100:3.0f}% [{'#' * filled}{'.' * (bar_w - filled)}]".strip()]
        counts = [f"{self.rows_done}/{self.rows_planned} rows"]
        if self.reused:
            counts.append(f"{self.reused} reused")
        na = self.settled.get("not_applicable", 0)
        if na:
            counts.append(f"{na} n/a")
        other = sum(v for k, v in self.settled.items() if k != "not_applicable")
        if other:
            counts.append(f"{other} failed at once")
        parts.append(", ".join(counts))
        eta = self.eta()
        parts.append(f"{_clock(self.elapsed())}<" + ("?" if eta is None else f"~{_clock(eta)}"))
        running = self.running_names()
        if running:
            parts.append("running: " + "; ".join(running))
        text = " | ".join(parts)
        return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def _clock(seconds: float) -> str:
    s = int(round(max(0.0, seconds)))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class ProgressLine:
    """Draws a :class:`WorkProgress` on the terminal while a run works.

    A daemon thread draws it every ``interval`` seconds, so it keeps moving (and names the running row)
    during a long row: redrawn in place on a terminal; elsewhere (a log file, CI) printed as a new line
    at most every ``log_interval`` seconds, and once at the end. The line is written to a
    duplicate of the terminal's stderr taken at start, so it still reaches the terminal while a
    stage's native output (pycolmap/glog, MuJoCo) is redirected into the run's log file.
    """

    def __init__(self, progress: WorkProgress, desc: str, *, enabled: bool = True, stream: TextIO | None = None,
                 interval: float = 1.0, log_interval: float = 30.0) -> None:
        self.progress, self.desc, self.enabled = progress, desc, enabled
        self.interval, self.log_interval = interval, log_interval
        self.lock = threading.Lock()
        self._owned: TextIO | None = None
        self.stream = stream if stream is not None else self._terminal()
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_draw = -1e18
        self._last_log = progress.clock()  # off a terminal, the first line after log_interval (or the last)

    def _terminal(self) -> TextIO:
        try:
            fd = sys.stderr.fileno()
        except (AttributeError, OSError, ValueError):  # replaced stderr (pytest capsys, a notebook)
            return sys.stderr
        if fd != 2:
            return sys.stderr
        self._owned = os.fdopen(os.dup(fd), "w", buffering=1, encoding="utf-8", errors="replace")
        return self._owned

    def start(self) -> ProgressLine:
        if self.enabled:
            if self.tty:
                self._lift_log_lines()
            self._thread = threading.Thread(target=self._tick, name="progress", daemon=True)
            self._thread.start()
        return self

    def _lift_log_lines(self) -> None:
        """Log records printed to stderr while the line is drawn start on a cleared line (not after the
        bar's text), and the bar is redrawn below them."""
        self._lifted: list[tuple[logging.StreamHandler[Any], Any]] = []
        for h in logging.getLogger().handlers:
            if type(h) is logging.StreamHandler and h.stream is sys.stderr:
                self._lifted.append((h, h.stream))
                h.setStream(_AboveTheLine(self, h.stream))

    def _tick(self) -> None:
        while not self._stop.wait(self.interval):
            self.draw()

    def draw(self, final: bool = False) -> None:
        """Redraw (terminal) or log a line (elsewhere: at most every ``log_interval`` s, and at the end)."""
        if not self.enabled:
            return
        with self.lock:
            try:
                if self.tty:
                    now = time.monotonic()  # real time: redraws cost O(stages), at most 10 a second
                    if not final and now - self._last_draw < MIN_REDRAW_S:
                        return
                    self._last_draw = now
                    width = max(20, shutil.get_terminal_size((100, 20)).columns - 1)
                    self.stream.write("\r\x1b[2K" + self.progress.line(self.desc, width) + ("\n" if final else ""))
                else:
                    now = self.progress.clock()
                    if not final and now - self._last_log < self.log_interval:
                        return
                    self._last_log = now
                    self.stream.write(self.progress.line(self.desc, 10_000) + "\n")
                self.stream.flush()
            except (OSError, ValueError):  # a closed terminal never stops a run
                pass

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        for h, stream in getattr(self, "_lifted", []):
            h.setStream(stream)
        self.draw(final=True)
        if self._owned is not None:
            with contextlib.suppress(OSError):
                self._owned.close()


class _AboveTheLine:
    """A log handler's stream that clears the progress line before a record and redraws it after."""

    def __init__(self, line: ProgressLine, stream: TextIO) -> None:
        self.line, self.stream = line, stream

    def write(self, text: str) -> int:
        with self.line.lock:
            with contextlib.suppress(OSError, ValueError):
                self.line.stream.write("\r\x1b[2K")
                self.line.stream.flush()
            n = self.stream.write(text)
        return n

    def flush(self) -> None:
        self.stream.flush()
        if not self.line._stop.is_set():
            self.line.draw()
