"""The evaluator: a :class:`~worldolympiad.types.RunSpec` in, a run directory out.

Run directory (DESIGN.md §4)::

    <out>/<spec.dirname>/
        run_spec.json        the frozen recipe (+ package versions, git hash)
        videos/              <case_id>__s<seed>.mp4 (+ _chunk_timestamps.json); reused on resume
        results.jsonl        one TrackResult per line, appended atomically by the parent only
        timings.jsonl        one line per stage: generate / read / <track>, with case and seed
        summary.json         per track and overall (the leaderboard's definition, worldolympiad.overall),
                             spread over seeds, status counts, errors
        report.html          written afterwards by ``evaluate-model`` via ``leaderboard.report``
        work/<case>/s<seed>/<track>/   per-row scratch space and artifacts
    <out>/.cache/            content-addressed caches shared by runs (reference renders, judge)

Work is split into units of one (case, seed) with the tracks still to do, so a video is
generated (or read) once and then scored by every pending track. Rows stream back to the
parent one at a time; a SIGKILL loses at most the row being computed, and workers die with
the parent (:func:`die_with_parent`). Resume reads ``results.jsonl`` (dropping a trailing
partial line; damaged lines go to ``results.jsonl.quarantine``) and skips every
(case, seed, track) already present whose inputs are unchanged: each row records per-file
fingerprints of what it was computed from (:mod:`worldolympiad.inputs`), so a replaced
video, an edited case or a video that now exists recomputes exactly its own rows.

Failure policy: nothing except an unusable suite stops a run. A broken case, an unknown
model, a failed generation, a crashing track each become rows with ``status="failed"``
and an error naming the file and the fix; a track that cannot judge a case gives a
``not_applicable`` row with the reason. All failures are listed once at the end.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import random
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from worldolympiad.inputs import BROKEN_CASE, changed_inputs, known_stamps
from worldolympiad.types import Case, CaseError, RunSpec, Status, TrackResult, Video

logger = logging.getLogger(__name__)

RESULTS = "results.jsonl"
TIMINGS = "timings.jsonl"
SUMMARY = "summary.json"
RUN_SPEC = "run_spec.json"
VIDEOS = "videos"
REFERENCES = "references"  # browser-playable copies of the references the tracks used (report, site)


class EvaluationError(RuntimeError):
    """The run cannot start at all (bad suite, bad device...). The message says how to fix it."""


# ============================================================== configuration


@dataclass
class EvalConfig:
    """How to execute a run (none of this changes the numbers, so it is not in the RunSpec).

    Attributes:
        out: parent folder of run directories.
        workers: processes scoring (case, seed) units in parallel (1 = in this process).
        device: ``auto``, ``cpu`` or ``cuda`` (resolved once by :func:`resolve_device`).
        resume: reuse ``results.jsonl`` and ``videos/`` of an existing run directory.
        retry_failed: on resume, recompute rows whose status is ``failed``.
        limit: only the first N cases of the suite.
        progress: show a tqdm progress bar with ETA on stderr.
        cache_dir: shared cache root (``<out>/.cache`` when ``None``).
    """

    out: Path = Path("runs")
    workers: int = 1
    device: str = "auto"
    resume: bool = True
    retry_failed: bool = False
    limit: int | None = None
    progress: bool = True
    cache_dir: Path | None = None


@dataclass
class RunOutcome:
    """What :func:`evaluate` returns.

    Attributes:
        run_dir: the run directory.
        rows: every row of ``results.jsonl`` (earlier ones included), as TrackResults.
        summary: the content of ``summary.json``.
        computed: number of rows written by this call.
        skipped: number of rows found finished and skipped.
        recomputed_inputs: rows of an earlier run computed again because their inputs changed
            (a replaced video, an edited case, a video that now exists; see :mod:`worldolympiad.inputs`).
        changed: ``"<case> s<seed>: <labels>"`` for each (case, seed) whose inputs changed.
        reused_failed: failed rows of an earlier run that were reused (``--retry-failed`` recomputes them).
    """

    run_dir: Path
    rows: list[TrackResult]
    summary: dict[str, Any]
    computed: int = 0
    skipped: int = 0
    recomputed_inputs: int = 0
    changed: list[str] = field(default_factory=list)
    reused_failed: int = 0


def resolve_device(device: str) -> str:
    """``auto`` → ``cuda`` if torch sees a GPU, else ``cpu``. Imports torch only when needed.

    Raises:
        EvaluationError: ``cuda`` was requested but is not available.
    """
    device = (device or "auto").lower()
    if device not in ("auto", "cpu", "cuda") and not device.startswith("cuda:"):
        raise EvaluationError(f"--device must be auto, cpu or cuda, got {device!r}")
    if device == "cpu":
        return "cpu"
    if device == "auto" and "torch" not in sys.modules and not _nvidia_device_nodes():
        return "cpu"  # no GPU device node: skip the ~3 s torch import (scoring files needs no torch)
    try:
        import torch

        has_cuda = bool(torch.cuda.is_available())
    except ImportError:
        has_cuda = False
    if device == "auto":
        return "cuda" if has_cuda else "cpu"
    if not has_cuda:
        raise EvaluationError(f"--device {device} requested but no CUDA device is available to torch; "
                              "use --device cpu or --device auto")
    return device


def _nvidia_device_nodes() -> bool:
    return os.name == "posix" and any(Path("/dev").glob("nvidia[0-9]*"))


def parse_options(pairs: Iterable[str]) -> dict[str, Any]:
    """``["a=1", "b.c=x"]`` → ``{"a": 1, "b.c": "x"}`` (values parsed as JSON when they are JSON).

    Raises:
        ValueError: an item has no ``=``.
    """
    out: dict[str, Any] = {}
    for item in pairs:
        if "=" not in item:
            raise ValueError(f"--option expects KEY=VALUE, got {item!r} (e.g. --option physics.segmenter=opencv)")
        k, v = item.split("=", 1)
        try:
            out[k.strip()] = json.loads(v)
        except json.JSONDecodeError:
            out[k.strip()] = v
    return out


def make_run_spec(
    model: str,
    suite: str,
    tracks: Sequence[str],
    seeds: Sequence[int] = (0,),
    judge: str = "none",
    options: Mapping[str, Any] | None = None,
) -> RunSpec:
    """Build a RunSpec, recording track versions (hashed) and package versions + git hash (not hashed).

    A suite given as a file path is stored as an absolute path so a resumed run finds it
    from any working directory.
    """
    from worldolympiad.models.base import model_fingerprint

    suite_ref = suite
    p = Path(suite)
    if p.suffix.lower() == ".json" or p.is_file() or "/" in suite:
        suite_ref = str(p.resolve())
    return RunSpec(
        model=model,
        suite=suite_ref,
        tracks=tuple(tracks),
        seeds=tuple(int(s) for s in seeds),
        judge=judge or "none",
        options=tuple(sorted((options or {}).items())),
        track_versions=tuple((t, _track_version(t)) for t in tracks),
        package_versions=tuple(sorted(_package_versions().items())),
        git_hash=_git_hash(),
        model_fingerprint=model_fingerprint(model),
        video_format=video_format(options or {}),
    )


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


def _track_version(name: str) -> str:
    from worldolympiad.registries import TRACKS

    try:
        return str(getattr(TRACKS.get(name), "version", "1"))
    except Exception:  # noqa: BLE001 - an unavailable track is recorded per row, not here
        return "unavailable"


def _package_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("worldolympiad", "numpy", "av", "torch", "diffusers", "transformers"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            continue
    return out


def _git_hash() -> str | None:
    try:
        r = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent,
                           capture_output=True, text=True, timeout=5)
        return r.stdout.strip() or None if r.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


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
        try:
            video = self.obtain_video(case, seed)
        except Exception as e:  # noqa: BLE001 - recorded per row
            msg = describe_error(e, f"model {self.env.spec.model!r}")
            for t in unit.tracks:
                row = failed_row(self.env.spec, case, seed, t, msg, self._version(t))
                row.inputs = unit.inputs
                self.emit("row", row.to_dict())
            return
        ref_cache: dict[str, Video | None] = {}

        def load_reference() -> Video | None:
            if "ref" not in ref_cache:
                from worldolympiad.models.reference import ReferenceStore

                t0 = time.perf_counter()
                ref_cache["ref"] = ReferenceStore(self.env.cache_dir).load(case)
                self.timing(case, seed, "reference", time.perf_counter() - t0)
                self.publish_reference(case, ref_cache["ref"])
            return ref_cache["ref"]

        warnings = self.input_warnings(case, seed, video)
        for t in unit.tracks:
            row = self.run_track(t, video, case, seed, load_reference)
            row.inputs = unit.inputs
            row.warnings = warnings
            self.emit("row", row.to_dict())

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
                h, w = video.frames.shape[1:3]
                found = check_frames(case, str(stored or ""), video.num_frames, (int(h), int(w)), float(video.fps))
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
        try:
            from worldolympiad.video.io import write_video

            write_video(path, ref.frames, ref.fps)
        except Exception:  # noqa: BLE001 - display copy only
            logger.debug("could not publish reference of %s", case.id, exc_info=True)

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
        model = self.model()
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
                          options=spec.option_dict, reference_loader=load_reference, run_dir=self.env.run_dir)
        _seed_everything(seed)
        t0 = time.perf_counter()
        try:
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


# ==================================================================== evaluate


def evaluate(spec: RunSpec, config: EvalConfig | None = None) -> RunOutcome:
    """Run ``spec`` into ``<config.out>/<spec.dirname>/`` and return every row and the summary.

    Raises:
        EvaluationError: the suite cannot be loaded at all, or the device is unavailable.
    """
    from worldolympiad.suites import SuiteError, load_suite_lenient

    config = config or EvalConfig()
    device = resolve_device(config.device)
    out = Path(config.out)
    run_dir = out / spec.dirname
    cache_dir = Path(config.cache_dir) if config.cache_dir else out / ".cache"
    try:
        suite = load_suite_lenient(spec.suite)
    except SuiteError as e:
        raise EvaluationError(str(e)) from e
    if not suite.cases and not suite.broken:
        raise EvaluationError(f"suite {spec.suite!r} has no cases; check the suite file or `worldolympiad ls suites`")

    run_dir.mkdir(parents=True, exist_ok=True)
    lock = _lock_run_dir(run_dir)
    try:
        return _evaluate_locked(spec, config, device, run_dir, cache_dir, suite)
    finally:
        lock.close()  # closing the file releases the lock (the OS also releases it if we are killed)


def _lock_run_dir(run_dir: Path) -> Any:
    """Hold an exclusive lock on ``run_dir/.lock`` so two runs never append to one results file."""
    f = open(run_dir / ".lock", "a+")  # noqa: SIM115 - kept open for the whole run
    try:
        import fcntl

        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except ImportError:  # not POSIX: no locking
        return f
    except OSError as e:
        f.close()
        raise EvaluationError(f"{run_dir} is being written by another evaluate-model process; wait for it to "
                              "finish or use another --out") from e
    return f


def _evaluate_locked(spec: RunSpec, config: EvalConfig, device: str, run_dir: Path, cache_dir: Path,
                     suite: Any) -> RunOutcome:
    from worldolympiad.registries import MODELS, TRACKS, parse_spec

    if not config.resume:
        _clear_run_dir(run_dir)
    (run_dir / VIDEOS).mkdir(parents=True, exist_ok=True)
    cache_dir.mkdir(parents=True, exist_ok=True)
    if not (run_dir / RUN_SPEC).exists():
        (run_dir / RUN_SPEC).write_text(json.dumps(spec.to_dict(), indent=2))

    cases = suite.cases[: config.limit] if config.limit is not None else suite.cases
    broken = suite.broken if config.limit is None else suite.broken[: max(0, config.limit - len(cases))]

    results = JsonlAppender(run_dir / RESULTS)
    timings = JsonlAppender(run_dir / TIMINGS, durable=False)
    previous = results.read()
    if config.retry_failed and any(r.get("status") == "failed" for r in previous):
        previous = [r for r in previous if r.get("status") != "failed"]
        results.rewrite(previous)

    # Tracks: resolve classes once; a track that cannot load fails its rows, not the run.
    track_classes: dict[str, Any] = {}
    track_errors: dict[str, str] = {}
    for name in spec.tracks:
        try:
            track_classes[name] = TRACKS.get(name)
        except Exception as e:  # noqa: BLE001
            track_errors[name] = f"track {name!r} is unavailable: {e} (or drop it from --tracks)"
    # Model: resolve the factory here (so runtime registrations reach spawn workers by
    # reference); build it lazily where the work runs.
    model_factory, model_arg, model_error = None, None, None
    try:
        prefix, model_arg = parse_spec(spec.model)
        model_factory = MODELS.get(prefix)
    except Exception as e:  # noqa: BLE001
        model_error = f"unknown model spec {spec.model!r}: {e} Fix --model (e.g. videos:DIR, reference)."
    model_options = {k[len("model."):]: v for k, v in spec.options if k.startswith("model.")}
    model_options.update(cache_dir=cache_dir, device=device)
    env = _Env(spec=spec, run_dir=run_dir, cache_dir=cache_dir, device=device, resume=config.resume,
               track_classes=track_classes, model_factory=model_factory, model_arg=model_arg,
               model_error=model_error, model_options=model_options)

    # Inputs: fingerprint what every (case, seed) is computed from; rows whose inputs changed are
    # dropped (with their stored video) and computed again.
    current = _current_inputs(cases, spec.seeds, model_factory, model_arg, previous)
    previous, stale, changed = _drop_stale_rows(previous, current)
    if stale:
        results.rewrite(previous)
        for case_id, seed in sorted({(r["case_id"], int(r["seed"])) for r in stale}):
            _forget_stored(run_dir, case_id, seed)
    done = {(r["case_id"], int(r["seed"]), r["track"]) for r in previous}
    failed_before = {(r["case_id"], int(r["seed"]), r["track"]) for r in previous if r.get("status") == "failed"}
    reused_failed = 0

    computed = 0
    skipped = 0

    def write_row(row: dict[str, Any]) -> None:
        nonlocal computed
        key = (row["case_id"], int(row["seed"]), row["track"])
        if key in done:  # never write a key twice (e.g. a duplicate message after a worker crash)
            return
        results.append(row)
        done.add(key)
        computed += 1
        bar.update(1)
        bar.set_postfix_str(f"{row['case_id']} s{row['seed']} {row['track']}: {row['status']}", refresh=False)

    # Plan every row: failed (broken case / missing track), not_applicable, or a unit to run.
    immediate: list[TrackResult] = []
    units: list[_Unit] = []
    parent_tracks: dict[str, Any] = {}
    for item in broken:
        for seed in spec.seeds:
            for name in spec.tracks:
                if (item.case_id, seed, name) in done:
                    skipped += 1
                    reused_failed += (item.case_id, seed, name) in failed_before
                    continue
                row = failed_row(spec, None, seed, name, item.error, _version_of(track_classes, name),
                                 case_id=item.case_id, scenario=item.scenario)
                row.inputs = dict(BROKEN_CASE)
                immediate.append(row)
    for case in cases:
        for seed in spec.seeds:
            pending = []
            for name in spec.tracks:
                if (case.id, seed, name) in done:
                    skipped += 1
                    reused_failed += (case.id, seed, name) in failed_before
                    continue
                if name in track_errors:
                    row = failed_row(spec, case, seed, name, track_errors[name], "unavailable")
                    row.inputs = current[(case.id, seed)]
                    immediate.append(row)
                    continue
                reason = _applicability(parent_tracks, track_classes, name, case)
                if reason is not None:
                    immediate.append(TrackResult(case_id=case.id, model=spec.model, seed=seed, track=name, score=None,
                                                 status="not_applicable", errors=[reason],
                                                 coverage={"reason": reason},
                                                 track_version=_version_of(track_classes, name),
                                                 scenario=case.scenario, suite=case.suite,
                                                 inputs=current[(case.id, seed)]))
                    continue
                pending.append(name)
            if pending:
                units.append(_Unit(len(units), case, seed, pending, inputs=current[(case.id, seed)]))

    total_rows = len(immediate) + sum(len(u.tracks) for u in units)
    from tqdm.auto import tqdm

    bar = tqdm(total=total_rows, unit="row", desc=f"{spec.model} on {suite.name}", disable=not config.progress,
               file=sys.stderr, dynamic_ncols=True)
    try:
        for row in immediate:
            write_row(row.to_dict())

        def on_message(kind: str, payload: Any) -> None:
            if kind == "row":
                write_row(payload)
            elif kind == "timing":
                timings.append(payload)

        workers = config.workers
        if workers > 1 and len(units) > 1 and not _picklable(env):
            logger.warning("--workers %d: the model or a track is not importable by name in a new process "
                           "(registered at runtime?); running in this process instead", workers)
            workers = 1
        if workers <= 1 or len(units) <= 1:
            worker = _Worker(env, on_message)
            try:
                for unit in units:
                    worker.run_unit(unit)
            finally:
                worker.close()
        else:
            _run_in_processes(env, units, workers, on_message, write_row)
    finally:
        bar.close()
        results.close()
        timings.close()

    rows = [TrackResult.from_dict(r) for r in JsonlAppender(run_dir / RESULTS).read()]
    summary = summarize(rows, spec, suite_name=suite.name)
    from worldolympiad.judges.ledger import judge_run_summary

    summary.update(judge_run_summary(run_dir))  # the judge's ledger; an outage is a run-level error
    tmp = run_dir / (SUMMARY + ".tmp")
    tmp.write_text(json.dumps(summary, indent=2))
    tmp.replace(run_dir / SUMMARY)
    return RunOutcome(run_dir=run_dir, rows=rows, summary=summary, computed=computed, skipped=skipped,
                      recomputed_inputs=len(stale), changed=changed, reused_failed=reused_failed)


def _current_inputs(cases: Sequence[Case], seeds: Sequence[int], factory: Any, arg: str | None,
                    previous: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
    """:func:`worldolympiad.inputs.case_inputs` of every planned (case, seed); files whose size and mtime
    match an earlier row's record are not read again."""
    from worldolympiad.inputs import case_inputs, model_input_files

    known = known_stamps(previous)
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for case in cases:
        for seed in seeds:
            files = model_input_files(factory, arg, case, seed) if factory is not None else {}
            inputs = case_inputs(case, files, known)
            known.update({str(st["path"]): st for st in inputs.values() if st.get("path") and st.get("sha256")})
            out[(case.id, seed)] = inputs
    return out


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


def _clear_run_dir(run_dir: Path) -> None:
    import shutil

    for name in (RESULTS, TIMINGS, SUMMARY, RUN_SPEC, "judge_ledger.json"):  # the ledger: issue 59.2
        (run_dir / name).unlink(missing_ok=True)
    for sub in (VIDEOS, "work"):
        shutil.rmtree(run_dir / sub, ignore_errors=True)


# ===================================================================== summary


def _mean_std(values: Sequence[float]) -> tuple[float | None, float | None]:
    """Mean and sample std (ddof=1; 0.0 for a single value)."""
    if not values:
        return None, None
    arr = np.asarray(values, dtype=np.float64)
    std = float(arr.std(ddof=1)) if len(arr) > 1 else 0.0
    return float(arr.mean()), std


def summarize(rows: Sequence[TrackResult], spec: RunSpec, suite_name: str = "",
              weights: Mapping[str, float] | None = None) -> dict[str, Any]:
    """Per-track and overall scores, their spread over seeds, status counts and the failure table.

    Track ``mean`` and overall ``mean`` follow the one definition of the leaderboard
    (:mod:`worldolympiad.overall`, ``leaderboard/schema.yaml``): seeds first, then cases, then
    the weighted mean of the track scores the run has; rows of a track at another version than
    its newest are left out. ``per_seed`` holds the same numbers computed on each seed's rows
    alone and ``std`` is their sample std (ddof=1; 0.0 for one seed).

    Args:
        weights: track weights of the overall (default: :func:`worldolympiad.overall.overall_weights`).
    """
    from worldolympiad.overall import overall_score, overall_weights, track_score, version_key

    seeds = list(spec.seeds)
    weights = dict(weights) if weights is not None else overall_weights(spec.tracks)
    tracks: dict[str, Any] = {}
    # track -> seed -> case -> scores (seed None: every seed)
    scored: dict[str, dict[int | None, dict[str, list[float]]]] = {}
    for name in spec.tracks:
        rs = [r for r in rows if r.track == name]
        counts = {s: sum(1 for r in rs if r.status == s) for s in ("ok", "not_applicable", "failed")}
        versions = sorted({r.track_version for r in rs}, key=version_key)
        ok = [r for r in rs if r.status == "ok" and r.score is not None and versions and r.track_version == versions[-1]]
        by_seed: dict[int | None, dict[str, list[float]]] = {}
        for r in ok:
            for key in (None, r.seed):
                by_seed.setdefault(key, {}).setdefault(r.case_id, []).append(float(r.score))  # type: ignore[arg-type]
        scored[name] = by_seed
        per_seed = {str(seed): v for seed in seeds if (v := track_score(by_seed.get(seed, {}))) is not None}
        _, std = _mean_std(list(per_seed.values()))
        tracks[name] = {"mean": track_score(by_seed.get(None, {})), "std": std, "per_seed": per_seed,
                        "counts": counts, "n_cases_scored": len(by_seed.get(None, {})), "versions": versions}
    overall_seed: dict[str, float] = {}
    for seed in seeds:
        o = overall_score({t: track_score(s.get(seed, {})) for t, s in scored.items()}, weights)
        if o is not None:
            overall_seed[str(seed)] = o
    mean = overall_score({t: v["mean"] for t, v in tracks.items()}, weights)
    _, std = _mean_std(list(overall_seed.values()))
    counts = {s: sum(1 for r in rows if r.status == s) for s in ("ok", "not_applicable", "failed")}
    errors = [{"case_id": r.case_id, "seed": r.seed, "track": r.track, "error": "; ".join(r.errors)}
              for r in rows if r.status == "failed"]
    warnings: dict[tuple[str, int], list[str]] = {}
    for r in rows:
        if r.warnings:
            warnings.setdefault((r.case_id, r.seed), list(r.warnings))
    return {
        "run": spec.hash,
        "model": spec.model,
        "suite": suite_name or spec.suite,
        "seeds": seeds,
        "num_cases": len({r.case_id for r in rows}),
        "num_rows": len(rows),
        "tracks": tracks,
        "overall": {"mean": mean, "std": std, "per_seed": overall_seed, "counts": counts, "weights": weights,
                    "definition": "weighted mean of the track scores (seeds, then cases, then tracks); "
                                  "leaderboard/schema.yaml overall"},
        "errors": errors,
        "warnings": [{"case_id": cid, "seed": seed, "warnings": w} for (cid, seed), w in sorted(warnings.items())],
    }


def format_warnings(summary: Mapping[str, Any]) -> str:
    """One line counting the input warnings of the run's videos by kind (empty string when there is none)."""
    items = summary.get("warnings") or []
    if not items:
        return ""
    kinds: dict[str, int] = {}
    for item in items:
        for w in item["warnings"]:
            kinds[w.split(":")[0]] = kinds.get(w.split(":")[0], 0) + 1
    counted = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
    first = items[0]
    return (f"input warnings on {len(items)} video(s) ({counted}; e.g. {first['case_id']} s{first['seed']}: "
            f"{first['warnings'][0]}); each row's 'warnings' and summary.json list them")


# ====================================================================== tables


def _fmt(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def format_results_table(rows: Sequence[TrackResult], tracks: Sequence[str]) -> str:
    """Case × track table of scores (mean over seeds); ``n/a`` not applicable, ``FAIL`` failed."""
    case_ids = sorted({r.case_id for r in rows})
    cells: dict[tuple[str, str], list[TrackResult]] = {}
    for r in rows:
        cells.setdefault((r.case_id, r.track), []).append(r)
    width = max([len("case")] + [len(c) for c in case_ids])
    header = "case".ljust(width) + "".join(f"  {t:>11}" for t in tracks)
    lines = [header, "-" * len(header)]
    for cid in case_ids:
        line = cid.ljust(width)
        for t in tracks:
            rs = cells.get((cid, t), [])
            scores = [r.score for r in rs if r.status == "ok" and r.score is not None]
            if scores:
                cell = f"{np.mean(scores):.3f}"
            elif any(r.status == "failed" for r in rs):
                cell = "FAIL"
            elif rs and all(r.status == "not_applicable" for r in rs):
                cell = "n/a"
            else:
                cell = "-"
            line += f"  {cell:>11}"
        lines.append(line)
    return "\n".join(lines)


def format_summary(summary: Mapping[str, Any]) -> str:
    """Per-track score ± std over seeds with status counts, then overall, to the leaderboard's 4 decimals."""
    lines = [f"{'track':<12} {'score ± std (over seeds)':>24}   ok  n/a  failed"]
    for name, t in summary["tracks"].items():
        c = t["counts"]
        ms = f"{_fmt(t['mean'], 4)} ± {_fmt(t['std'], 4)}" if t["mean"] is not None else "-"
        lines.append(f"{name:<12} {ms:>24}  {c['ok']:>3}  {c['not_applicable']:>3}  {c['failed']:>6}")
    o = summary["overall"]
    c = o["counts"]
    ms = f"{_fmt(o['mean'], 4)} ± {_fmt(o['std'], 4)}" if o["mean"] is not None else "-"
    lines.append(f"{'overall':<12} {ms:>24}  {c['ok']:>3}  {c['not_applicable']:>3}  {c['failed']:>6}")
    return "\n".join(lines)


def format_errors(summary: Mapping[str, Any], max_len: int = 300) -> str:
    """One table of every failure (empty string when there is none)."""
    errors = summary.get("errors") or []
    if not errors:
        return ""
    lines = [f"{len(errors)} failed row(s):"]
    for e in errors:
        msg = e["error"] if len(e["error"]) <= max_len else e["error"][: max_len - 3] + "..."
        lines.append(f"  {e['case_id']} s{e['seed']} {e['track']}: {msg}")
    return "\n".join(lines)


# ================================================================ single video


def score_video(
    video_path: str | Path,
    case: Case,
    tracks: Sequence[str],
    *,
    seed: int = 0,
    judge: str = "none",
    device: str = "auto",
    options: Mapping[str, Any] | None = None,
    work_dir: str | Path | None = None,
    cache_dir: str | Path | None = None,
) -> list[TrackResult]:
    """Score one video file of ``case`` on ``tracks`` (``worldolympiad score``); no run directory.

    Unknown/unloadable tracks and crashing tracks give ``failed`` rows, tracks that cannot
    judge the case give ``not_applicable`` rows, exactly as in :func:`evaluate`.

    Raises:
        VideoError: the video cannot be read (there is nothing to score).
    """
    import tempfile

    from worldolympiad.models.reference import default_cache_dir
    from worldolympiad.registries import TRACKS
    from worldolympiad.video.io import read_video

    video_path = Path(video_path)
    spec = RunSpec(model=f"file:{video_path}", suite=case.suite or case.id, tracks=tuple(tracks), seeds=(seed,),
                   judge=judge or "none", options=tuple(sorted((options or {}).items())))
    work = Path(work_dir) if work_dir else Path(tempfile.mkdtemp(prefix="wo-score-"))
    classes: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for name in tracks:
        try:
            classes[name] = TRACKS.get(name)
        except Exception as e:  # noqa: BLE001
            errors[name] = f"track {name!r} is unavailable: {e}"
    env = _Env(spec=spec, run_dir=work, cache_dir=Path(cache_dir) if cache_dir else default_cache_dir(),
               device=resolve_device(device), resume=False, track_classes=classes)
    worker = _Worker(env, lambda kind, payload: None)
    from worldolympiad.budgets import decode_limits

    video = read_video(video_path, **decode_limits(case))
    video.chunks = _clip(case.chunks, video.num_frames)
    ref_cache: dict[str, Video | None] = {}

    def load_reference() -> Video | None:
        if "ref" not in ref_cache:
            from worldolympiad.models.reference import ReferenceStore

            ref_cache["ref"] = ReferenceStore(env.cache_dir).load(case)
        return ref_cache["ref"]

    rows: list[TrackResult] = []
    parent: dict[str, Any] = {}
    for name in tracks:
        if name in errors:
            rows.append(failed_row(spec, case, seed, name, errors[name], "unavailable"))
            continue
        reason = _applicability(parent, classes, name, case)
        if reason is not None:
            rows.append(TrackResult(case.id, spec.model, seed, name, None, status="not_applicable", errors=[reason],
                                    coverage={"reason": reason}, track_version=_version_of(classes, name),
                                    scenario=case.scenario, suite=case.suite))
            continue
        row = worker.run_track(name, video, case, seed, load_reference)
        row.artifacts["video"] = str(video_path)
        rows.append(row)
    return rows
