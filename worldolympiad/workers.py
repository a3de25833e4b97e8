"""Scheduling and workers: units of one (case, seed) with the tracks still to run, the worker that
generates (or reads) a unit's video once and scores it with every pending track, and the spawned
process pool whose rows stream back to the parent, the run directory's single writer.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import random
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from worldolympiad.rundir import REFERENCES, RUN_LOG, VIDEOS, native_output_to, video_storage
from worldolympiad.types import Case, CaseError, RunSpec, Status, TrackResult, Video

logger = logging.getLogger(__name__)


# =================================================================== work units


@dataclass
class _Unit:
    """One (case, seed) and the tracks still to run on it."""

    uid: int
    case: Case
    seed: int
    tracks: list[str]
    inputs: dict[str, Any] = field(default_factory=dict)  # worldolympiad.inputs, recorded on every row


@dataclass
class _Env:
    """Everything a worker needs; pickled once per worker process."""

    spec: RunSpec
    run_dir: Path
    cache_dir: Path
    device: str
    resume: bool
    track_classes: dict[str, Any]
    model_factory: Any = None
    model_arg: str | None = None
    model_error: str | None = None
    model_options: dict[str, Any] = field(default_factory=dict)
    judge_generator: Any = None  # the Ray judge pool's client (worldolympiad.ray_judge_pool); None: in process


@dataclass
class StoredVideo:
    """A unit's video as it lies in the run directory (``videos/<case>__s<seed>.*``), plus what its decode
    alone does not carry. It crosses from the worker that generated the video to the workers that score it
    (:mod:`worldolympiad.ray_executor`), which decode the file again (:meth:`_Worker.video_from_store`).

    Attributes:
        chunks: the chunk boundaries the scored video has.
        metadata: the scored video's metadata.
        shape: ``[T, H, W, 3]`` of the scored frames.
        crc32: CRC-32 of the scored frames' bytes; a decode that differs is refused, never scored.
        warnings: what weakens the evidence of this video (recorded on each of its rows).
    """

    chunks: tuple[Any, ...]
    metadata: dict[str, Any]
    shape: tuple[int, ...]
    crc32: int
    warnings: list[str] = field(default_factory=list)


def _frames_crc32(frames: np.ndarray) -> int:
    import zlib

    return zlib.crc32(np.ascontiguousarray(frames).data) & 0xFFFFFFFF


class _Worker:
    """Scores units. Lives in the parent (``workers=1``) or once per worker process."""

    def __init__(self, env: _Env, emit: Callable[[str, Any], None]) -> None:
        self.env = env
        self.emit = emit
        self._model: Any = None
        self._model_error = env.model_error
        self._tracks: dict[str, Any] = {}

    # ------------------------------------------------------------------ pieces
    def model(self) -> Any:
        if self._model is None and self._model_error is None:
            try:
                m = self.env.model_factory(self.env.model_arg, **self.env.model_options)
                m.name = self.env.spec.model
                self._model = m
            except Exception as e:  # noqa: BLE001
                self._model_error = (f"model {self.env.spec.model!r} could not be built: {type(e).__name__}: {e}; "
                                     "fix --model")
        if self._model_error:
            raise _ModelBuildError(self._model_error)
        return self._model

    def track(self, name: str) -> Any:
        if name not in self._tracks:
            self._tracks[name] = self.env.track_classes[name]()
        return self._tracks[name]

    def close(self) -> None:
        if self._model is not None:
            try:
                self._model.close()
            except Exception:  # noqa: BLE001
                logger.debug("model.close failed", exc_info=True)

    # -------------------------------------------------------------------- unit
    def run_unit(self, unit: _Unit) -> None:
        case, seed = unit.case, unit.seed
        self.started(case, seed, "video")
        try:
            video = self.obtain_video(case, seed)
        except Exception as e:  # noqa: BLE001 - recorded per row
            msg = describe_error(e, f"model {self.env.spec.model!r}")
            for t in unit.tracks:
                row = failed_row(self.env.spec, case, seed, t, msg, self._version(t))
                row.inputs = unit.inputs
                self.emit("row", row.to_dict())
            return
        load_reference = self.reference_loader(case, seed)
        warnings = self.input_warnings(case, seed, video)
        for t in unit.tracks:
            row = self.run_track(t, video, case, seed, load_reference)
            row.inputs = unit.inputs
            row.warnings = warnings
            self.emit("row", row.to_dict())

    def reference_loader(self, case: Case, seed: int) -> Callable[[], Video | None]:
        """Loads the case's reference once, on the first call of any track that asks (timed, published)."""
        ref_cache: dict[str, Video | None] = {}

        def load_reference() -> Video | None:
            if "ref" not in ref_cache:
                from worldolympiad.models.reference import ReferenceStore

                t0 = time.perf_counter()
                ref_cache["ref"] = ReferenceStore(self.env.cache_dir).load(case)
                self.timing(case, seed, "reference", time.perf_counter() - t0)
                self.publish_reference(case, ref_cache["ref"])
            return ref_cache["ref"]

        return load_reference

    def store_video(self, case: Case, seed: int) -> StoredVideo:
        """Generate (or, resuming, read) the video of ``case`` and ``seed`` into the run directory, as
        :meth:`run_unit` does, and say what scoring it needs beyond the file.

        Raises:
            Exception: whatever :meth:`obtain_video` raises (the caller records it on the unit's rows).
        """
        video = self.obtain_video(case, seed)
        return StoredVideo(chunks=tuple(video.chunks), metadata=dict(video.metadata),
                           shape=tuple(int(x) for x in video.frames.shape), crc32=_frames_crc32(video.frames),
                           warnings=self.input_warnings(case, seed, video))

    def video_from_store(self, case: Case, seed: int, stored: StoredVideo) -> Video:
        """The frames :meth:`store_video` produced, decoded from the run directory.

        Raises:
            VideoError: the file is gone, unreadable, or decodes to other frames than those stored
                (a run directory that is not the same on every machine: see docs/cluster.md).
        """
        from worldolympiad.budgets import decode_limits
        from worldolympiad.video.io import VideoError, read_video

        path = _existing_video(self.video_path(case, seed))
        if path is None:
            raise VideoError(f"{self.video_path(case, seed)}: the stored video is not in the run directory on this "
                             "machine; every Ray node must see the run directory (shared storage, docs/cluster.md)")
        video = read_video(path, **decode_limits(case))
        if tuple(video.frames.shape) != stored.shape or _frames_crc32(video.frames) != stored.crc32:
            raise VideoError(f"{path} decodes to other frames ({list(video.frames.shape)}) than the ones stored "
                             f"({list(stored.shape)}); the file changed after it was written: rerun with "
                             "--retry-failed")
        video.chunks = stored.chunks
        video.metadata = dict(stored.metadata)
        return video

    def input_warnings(self, case: Case, seed: int, video: Video) -> list[str]:
        """What weakens the evidence of this video (``kind: finding``; recorded on its rows).

        A user's file (linked into the run as it is) is checked for 4:2:0 chroma, lossy coding, size,
        length and frame rate (:func:`worldolympiad.models.videos.check_video_file`); a video the run
        generated and stored itself only for size, length and frame rate against the case.
        """
        from worldolympiad.models.videos import check_frames, check_video_file

        stored = _existing_video(self.video_path(case, seed))
        try:
            if stored is not None and stored.is_symlink():
                found = [w for w in check_video_file(stored.resolve(), case) if w.kind != "missing"]
            else:
                h, w = video.metadata.get("resized_from") or video.frames.shape[1:3]  # the size the model wrote
                rate = video.metadata.get("retimed_from_fps") or video.metadata.get("file_fps") or video.fps  # its rate
                found = check_frames(case, str(stored or ""), video.num_frames, (int(h), int(w)), float(rate))
        except Exception:  # noqa: BLE001 - advice only; never costs a row
            logger.debug("input check of %s s%d failed", case.id, seed, exc_info=True)
            return []
        return [x.brief for x in found]

    def publish_reference(self, case: Case, ref: Video | None) -> None:
        """Put a yuv420p copy of the reference in the run folder, next to the generated video.

        The cache keeps references bit-exact as RGB H.264, which browsers do not play; the
        report and the leaderboard's model page show this copy. Best effort: a failure here
        never affects scores.
        """
        if ref is None:
            return
        path = self.env.run_dir / REFERENCES / f"{case.id}.mp4"
        if path.exists():
            return
        tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp.mp4")  # tracks of one case may publish at once
        try:
            from worldolympiad.video.io import write_video

            write_video(tmp, ref.frames, ref.fps)
            tmp.replace(path)
        except Exception:  # noqa: BLE001 - display copy only
            logger.debug("could not publish reference of %s", case.id, exc_info=True)
            tmp.unlink(missing_ok=True)

    def video_path(self, case: Case, seed: int) -> Path:
        return self.env.run_dir / VIDEOS / f"{case.id}__s{seed}.mp4"

    def obtain_video(self, case: Case, seed: int) -> Video:
        """The video to score: the stored one on resume, else generate → store → decode back.

        Generated frames are written to mp4 and decoded again, so a fresh run and a resumed
        run score exactly the same frames (lossy compression included). Pre-generated files
        (``metadata["stored_file"]``) are linked, not re-encoded.
        """
        from worldolympiad.video.io import VideoError, read_chunk_timestamps, read_video, write_chunk_timestamps

        path = self.video_path(case, seed)
        stored = _existing_video(path)
        ts_path = path.with_name(path.stem + "_chunk_timestamps.json")
        if stored is not None and self.env.resume:
            t0 = time.perf_counter()
            try:
                from worldolympiad.budgets import decode_limits

                video = read_video(stored, **decode_limits(case))  # as the videos: model reads a linked file
                if ts_path.is_file():
                    _, _, chunks = read_chunk_timestamps(ts_path, [c.caption for c in case.chunks],
                                                         [c.action for c in case.chunks])
                    video.chunks = chunks
                else:
                    video.chunks = _clip(case.chunks, video.num_frames)
                self.timing(case, seed, "read", time.perf_counter() - t0)
                return video
            except VideoError as e:
                logger.warning("stored video %s unreadable (%s); generating again", stored, e)
                stored.unlink(missing_ok=True)
        with native_output_to(self.env.run_dir / RUN_LOG, f"generate {case.id} s{seed}"):
            model = self.model()  # built on first use: weight loading prints too (diffusers, torch)
            t0 = time.perf_counter()
            video = model.generate(case, seed=seed)
        if not isinstance(video, Video):
            raise TypeError(f"{type(model).__name__}.generate returned {type(video).__name__}, expected a Video")
        self.timing(case, seed, "generate", time.perf_counter() - t0)
        t0 = time.perf_counter()
        for old in path.parent.glob(f"{case.id}__s{seed}.*"):
            if old.name != ts_path.name:
                old.unlink(missing_ok=True)
        src = video.metadata.get("stored_file")
        if src and Path(src).is_file():
            link = path.with_suffix(Path(src).suffix.lower())
            link.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.symlink(Path(src).resolve(), link)
            except OSError:
                import shutil

                shutil.copyfile(src, link)
            scored = video
        else:
            from worldolympiad.video.io import write_video

            pix_fmt, qp = video_storage(self.env.spec.option_dict)
            write_video(path, video.frames, video.fps, qp=qp, pix_fmt=pix_fmt)
            from worldolympiad.budgets import decode_limits

            scored = read_video(path, **decode_limits(case))
            scored.metadata.update({k: v for k, v in video.metadata.items() if k not in scored.metadata})
        scored.chunks = _clip(video.chunks or case.chunks, scored.num_frames)
        if scored.chunks:
            write_chunk_timestamps(ts_path, path.name, scored.fps, scored.num_frames, scored.chunks)
        self.timing(case, seed, "store", time.perf_counter() - t0)
        return scored

    def run_track(self, name: str, video: Video, case: Case, seed: int,
                  load_reference: Callable[[], Video | None]) -> TrackResult:
        from worldolympiad.track import EvalContext

        spec = self.env.spec
        version = self._version(name)
        work_dir = self.env.run_dir / "work" / case.id / f"s{seed}" / name
        work_dir.mkdir(parents=True, exist_ok=True)
        ctx = EvalContext(seed=seed, device=self.env.device, work_dir=work_dir,
                          cache_dir=self.env.cache_dir, judge_spec=spec.judge,
                          options=spec.option_dict, reference_loader=load_reference, run_dir=self.env.run_dir,
                          judge_generator=self.env.judge_generator)
        _seed_everything(seed)
        self.started(case, seed, name)
        t0 = time.perf_counter()
        try:
            with native_output_to(self.env.run_dir / RUN_LOG, f"{name} {case.id} s{seed}"):
                track = self.track(name)
                out = track.evaluate(video, case, ctx)
        except Exception as e:  # noqa: BLE001 - recorded as the row's error
            (work_dir / "traceback.txt").write_text(traceback.format_exc())
            msg = describe_error(e, f"track {name!r}")
            row = failed_row(spec, case, seed, name, msg, version)
            row.artifacts["traceback"] = str((work_dir / "traceback.txt").relative_to(self.env.run_dir))
            row.timings = {**ctx.timings, "total": time.perf_counter() - t0}
            self.timing(case, seed, name, row.timings["total"], status="failed")
            return row
        total = time.perf_counter() - t0
        with contextlib.suppress(OSError):
            work_dir.rmdir()  # only succeeds when the track left nothing there
        score = out.score
        if score is not None and (not isinstance(score, (int, float)) or not math.isfinite(score) or not 0 <= score <= 1):
            return failed_row(spec, case, seed, name,
                              f"track {name!r} returned score {score!r}, expected a number in [0, 1] or None "
                              "(a bug in the track)", version)
        status = _row_status(out)
        artifacts = {"video": str(self.video_path(case, seed).relative_to(self.env.run_dir))}
        for k, v in out.artifacts.items():
            artifacts[k] = _relative(v, self.env.run_dir)
        errors = list(out.errors)
        if status == "failed" and not errors:
            errors = [f"{m.name}: {m.reason}" for m in out.metrics if m.status == "failed"]
        row = TrackResult(
            case_id=case.id, model=spec.model, seed=seed, track=name,
            score=float(score) if score is not None else None, metrics=list(out.metrics),
            coverage=dict(out.coverage), artifacts=artifacts, timings={**ctx.timings, "total": total},
            errors=errors, status=status, track_version=version, scenario=case.scenario, suite=case.suite,
        )
        self.timing(case, seed, name, total, status=status)
        return row

    def started(self, case: Case, seed: int, stage: str) -> None:
        """Tell the parent what this worker works on now (``stage``: ``video`` or a track; the progress line)."""
        self.emit("start", {"case_id": case.id, "seed": seed, "stage": stage, "pid": os.getpid()})

    def timing(self, case: Case, seed: int, stage: str, seconds: float, **extra: Any) -> None:
        self.emit("timing", {"case_id": case.id, "seed": seed, "stage": stage, "seconds": round(seconds, 6),
                             "pid": os.getpid(), "time": round(time.time(), 3), **extra})

    def _version(self, name: str) -> str:
        cls = self.env.track_classes.get(name)
        return str(getattr(cls, "version", "1")) if cls is not None else "unavailable"


class _ModelBuildError(RuntimeError):
    pass


def _row_status(out: Any) -> Status:
    """Row status from a TrackOutput: a score means ok; no score → failed if any metric failed,
    else not_applicable if every metric was, else ok (a track may legitimately give no score)."""
    if out.score is not None:
        return "ok"
    statuses = {m.status for m in out.metrics}
    if "failed" in statuses or out.errors:
        return "failed"
    if statuses == {"not_applicable"}:
        return "not_applicable"
    return "ok"


def _existing_video(path: Path) -> Path | None:
    for p in sorted(path.parent.glob(path.stem + ".*")):
        if p.suffix.lower() in (".mp4", ".webm", ".avi", ".mkv", ".gif") and p.exists():
            return p
    return None


def _clip(chunks: Sequence[Any], n: int) -> tuple[Any, ...]:
    from worldolympiad.types import Chunk

    return tuple(Chunk(c.index, c.frame_start, min(c.frame_end, n), c.caption, c.action)
                 for c in chunks if c.frame_start < n)


def _relative(p: str, root: Path) -> str:
    try:
        return str(Path(p).resolve().relative_to(root.resolve()))
    except ValueError:
        return str(p)


def _seed_everything(seed: int) -> None:
    """Seed global RNGs a track might use by accident (torch only if already imported)."""
    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)


def describe_error(e: BaseException, who: str) -> str:
    """One line naming what failed, where, and the fix.

    Our own errors (VideoError, ModelError, CaseError...) already name the file and the fix;
    anything else is a bug in ``who``, located by its innermost frame.
    """
    from worldolympiad.models.base import ModelError
    from worldolympiad.registry import UnknownNameError
    from worldolympiad.video.io import VideoError

    if isinstance(e, (VideoError, ModelError, CaseError, _ModelBuildError)):
        return str(e)
    if isinstance(e, UnknownNameError):
        return f"{who}: {e}"
    tb = traceback.extract_tb(e.__traceback__)
    where = f" (at {tb[-1].filename}:{tb[-1].lineno} in {tb[-1].name})" if tb else ""
    return (f"{who} raised {type(e).__name__}: {e}{where}; this is a bug or unsupported input in {who} — "
            "see work/<case>/s<seed>/<track>/traceback.txt or rerun with --workers 1 -v")


def failed_row(spec: RunSpec, case: Case | None, seed: int, track: str, error: str, version: str = "1",
               *, case_id: str | None = None, scenario: str = "") -> TrackResult:
    """A ``failed`` row carrying ``error``."""
    return TrackResult(
        case_id=case.id if case is not None else str(case_id), model=spec.model, seed=seed, track=track,
        score=None, errors=[error], status="failed", track_version=version,
        scenario=case.scenario if case is not None else scenario, suite=case.suite if case is not None else "",
    )


# ============================================================ process workers

_WORKER: _Worker | None = None


def _worker_init(env: _Env, queue: Any, parent_pid: int | None = None) -> None:
    global _WORKER
    if parent_pid is not None:
        die_with_parent(parent_pid)
    logging.basicConfig(level=logging.WARNING)
    _WORKER = _Worker(env, lambda kind, payload: queue.put((kind, payload)))


#: how often a worker's watchdog looks for its parent (seconds)
PARENT_POLL_S = 1.0


def die_with_parent(parent_pid: int) -> None:
    """Make this (worker) process exit when ``parent_pid`` dies, however it dies.

    A worker of a SIGKILLed or SIGTERMed ``evaluate-model`` otherwise lives on, holding its
    model in memory, until it finishes its unit and blocks forever on the queue. Two
    mechanisms: Linux's parent-death signal (``prctl(PR_SET_PDEATHSIG, SIGKILL)``: the kernel
    kills this process the moment the thread that started it exits), and, on every platform,
    a daemon thread that polls ``os.getppid()`` (a dead parent's children are re-parented) and
    exits within :data:`PARENT_POLL_S`.
    """
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

            pr_set_pdeathsig = 1
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0) != 0:
                logger.debug("prctl(PR_SET_PDEATHSIG) failed: errno %d", ctypes.get_errno())
        except (OSError, AttributeError):  # no libc / no prctl: the watchdog below still works
            logger.debug("prctl unavailable", exc_info=True)
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(1)
    import threading

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()


def _worker_run(unit: _Unit) -> int:
    assert _WORKER is not None
    try:
        _WORKER.run_unit(unit)
    finally:
        _WORKER.emit("unit_done", unit.uid)
    return unit.uid


def _picklable(obj: Any) -> bool:
    import pickle

    try:
        pickle.dumps(obj)
        return True
    except Exception:  # noqa: BLE001 - PicklingError, AttributeError on local classes...
        return False


def _version_of(track_classes: Mapping[str, Any], name: str) -> str:
    cls = track_classes.get(name)
    return str(getattr(cls, "version", "1")) if cls is not None else "unavailable"


def _applicability(cache: dict[str, Any], classes: Mapping[str, Any], name: str, case: Case) -> str | None:
    try:
        if name not in cache:
            cache[name] = classes[name]()
        return cache[name].applicability(case)  # type: ignore[no-any-return]
    except Exception as e:  # noqa: BLE001 - a crashing check must not stop the run; let evaluate() report
        logger.warning("track %s applicability(%s) raised %s; trying evaluate", name, case.id, e)
        return None


def _run_in_processes(env: _Env, units: list[_Unit], workers: int,
                      on_message: Callable[[str, Any], None], write_row: Callable[[dict[str, Any]], None]) -> None:
    """Score units in ``workers`` spawned processes; this process stays the only writer."""
    import multiprocessing as mp
    import queue as queue_mod
    from concurrent.futures import ProcessPoolExecutor

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    finished: set[int] = set()
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_worker_init,
                             initargs=(env, q, os.getpid())) as ex:
        futures = {ex.submit(_worker_run, u): u for u in units}
        crashed: dict[int, BaseException] = {}
        while len(finished) + len(crashed) < len(units):
            try:
                kind, payload = q.get(timeout=0.2)
            except queue_mod.Empty:
                for f, u in futures.items():
                    if f.done() and f.exception() is not None and u.uid not in finished:
                        crashed[u.uid] = f.exception()  # type: ignore[assignment]
                continue
            if kind == "unit_done":
                finished.add(int(payload))
            else:
                on_message(kind, payload)
        for uid, exc in crashed.items():
            unit = units[uid]
            for name in unit.tracks:
                msg = (f"worker process died while scoring case {unit.case.id!r} seed {unit.seed} "
                       f"({type(exc).__name__}: {exc}); likely out of memory or a native crash — "
                       "rerun with --workers 1 --retry-failed to see the error")
                write_row(failed_row(env.spec, unit.case, unit.seed, name, msg, _version_of(env.track_classes, name))
                          .to_dict())
