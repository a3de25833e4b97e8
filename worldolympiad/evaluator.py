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

The evaluator in parts: this module plans a run (RunSpec, EvalConfig, resume, fingerprints) and
drives it; :mod:`worldolympiad.rundir` is the run directory and its store (file names, video
storage, the single-writer appender, stale rows); :mod:`worldolympiad.workers` is scheduling and
workers (units, the worker that generates and scores them, the process pool);
:mod:`worldolympiad.summary` is ``summary.json`` and the terminal tables.

Failure policy: nothing except an unusable suite stops a run. A broken case, an unknown
model, a failed generation, a crashing track each become rows with ``status="failed"``
and an error naming the file and the fix; a track that cannot judge a case gives a
``not_applicable`` row with the reason. All failures are listed once at the end.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from worldolympiad.inputs import BROKEN_CASE, known_stamps
from worldolympiad.progress import ProgressLine, WorkProgress, generate_prior
from worldolympiad.rundir import (
    RESULTS,
    RUN_SPEC,
    SUMMARY,
    TIMINGS,
    VIDEOS,
    JsonlAppender,
    _clear_run_dir,
    _drop_stale_rows,
    _forget_stored,
    video_format,
)
from worldolympiad.rundir import VIDEO_PIX_FMT as VIDEO_PIX_FMT  # re-exported: the evaluator's public names
from worldolympiad.rundir import VIDEO_QP as VIDEO_QP
from worldolympiad.rundir import video_storage as video_storage
from worldolympiad.shards import Shard, write_shard_file
from worldolympiad.summary import format_errors as format_errors
from worldolympiad.summary import format_results_table as format_results_table
from worldolympiad.summary import format_summary as format_summary
from worldolympiad.summary import format_warnings as format_warnings
from worldolympiad.summary import summarize
from worldolympiad.types import Case, RunSpec, TrackResult, Video
from worldolympiad.workers import (
    _applicability,
    _clip,
    _Env,
    _existing_video,
    _picklable,
    _run_in_processes,
    _Unit,
    _version_of,
    _Worker,
    failed_row,
)
from worldolympiad.workers import describe_error as describe_error
from worldolympiad.workers import die_with_parent as die_with_parent

logger = logging.getLogger(__name__)



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
        progress: show a progress line on stderr: work done (rows weighed by their estimated cost), the
            ETA, and the row(s) running now (:mod:`worldolympiad.progress`).
        cache_dir: shared cache root (``<out>/.cache`` when ``None``).
        shard: run only this shard's (case, seed) items, into ``<out>/<run>__shard-<i>-of-<N>/``
            (:mod:`worldolympiad.shards`; ``worldolympiad merge`` joins the shards).
        executor: who runs the units: ``local`` (this process, or ``workers`` spawned processes) or
            ``ray`` / ``ray:ADDRESS`` (:mod:`worldolympiad.ray_executor`); this process stays the only
            writer of ``results.jsonl`` either way.
        judge_workers: on Ray, the judge pool's actors (copies of an ``hf:`` judge's model, one GPU each on a
            cuda run; ``None``: 1); :mod:`worldolympiad.ray_judge_pool`.
    """

    out: Path = Path("runs")
    workers: int = 1
    device: str = "auto"
    resume: bool = True
    retry_failed: bool = False
    limit: int | None = None
    progress: bool = True
    cache_dir: Path | None = None
    shard: Shard | None = None
    executor: str = "local"
    judge_workers: int | None = None


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
        reused_videos: (case id, seed) -> the sibling run directory whose generated video this run read
            instead of generating it again (same model, weights, ``model.*`` options and case inputs;
            :mod:`worldolympiad.reuse`).
    """

    run_dir: Path
    rows: list[TrackResult]
    summary: dict[str, Any]
    computed: int = 0
    skipped: int = 0
    recomputed_inputs: int = 0
    changed: list[str] = field(default_factory=list)
    reused_failed: int = 0
    reused_videos: dict[tuple[str, int], str] = field(default_factory=dict)


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


# ==================================================================== evaluate


def evaluate(spec: RunSpec, config: EvalConfig | None = None) -> RunOutcome:
    """Run ``spec`` into ``<config.out>/<spec.dirname>/`` and return every row and the summary.

    Raises:
        EvaluationError: the suite cannot be loaded at all, or the device is unavailable.
    """
    from worldolympiad.suites import SuiteError, load_suite_lenient

    config = config or EvalConfig()
    if config.executor != "local":
        from worldolympiad.ray_executor import RayExecutorError, parse_executor

        try:
            parse_executor(config.executor)  # checked before the run directory is made
        except RayExecutorError as e:
            raise EvaluationError(str(e)) from e
    # On Ray the cluster's devices count, not this machine's (worldolympiad.ray_executor resolves auto).
    device = resolve_device(config.device) if config.executor == "local" else config.device
    out = Path(config.out)
    run_dir = out / (config.shard.dirname(spec.dirname) if config.shard else spec.dirname)
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
    if config.shard is not None:  # every N-th (case, seed) of the suite order (worldolympiad.shards)
        owned = config.shard.select([(c.id, s) for c in cases for s in spec.seeds]
                                    + [(b.case_id, s) for b in broken for s in spec.seeds])
        write_shard_file(run_dir, config.shard, config.limit, owned)
        mine = set(owned)
        cases = [c for c in cases if any((c.id, s) in mine for s in spec.seeds)]
        broken = [b for b in broken if any((b.case_id, s) in mine for s in spec.seeds)]
    else:
        mine = None
    seeds_of = {c: [s for s in spec.seeds if mine is None or (c, s) in mine]
                for c in [c.id for c in cases] + [b.case_id for b in broken]}

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
    current = _current_inputs(cases, seeds_of, model_factory, model_arg, previous)
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
        progress.row(row["case_id"], int(row["seed"]), row["track"], str(row.get("status")),
                     (row.get("timings") or {}).get("total"))
        line.draw()

    # Plan every row: failed (broken case / missing track), not_applicable, or a unit to run.
    immediate: list[TrackResult] = []
    units: list[_Unit] = []
    parent_tracks: dict[str, Any] = {}
    for item in broken:
        for seed in seeds_of[item.case_id]:
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
        for seed in seeds_of[case.id]:
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
                                                 status="not_applicable", reason=reason,
                                                 coverage={"reason": reason},
                                                 track_version=_version_of(track_classes, name),
                                                 scenario=case.scenario, suite=case.suite,
                                                 inputs=current[(case.id, seed)]))
                    continue
                pending.append(name)
            if pending:
                units.append(_Unit(len(units), case, seed, pending, inputs=current[(case.id, seed)]))

    # Generations of a sibling run that differs only in how it scores (worldolympiad.reuse): linked in, then
    # read back like this run's own stored videos.
    reused_videos: dict[tuple[str, int], str] = {}
    if config.resume:
        from worldolympiad.reuse import adopt_generations

        reused_videos = adopt_generations(run_dir, spec.to_dict(), {
            (u.case.id, u.seed): u.inputs for u in units
            if _existing_video(run_dir / VIDEOS / f"{u.case.id}__s{u.seed}.mp4") is None})

    # Progress in work: each unit's video and pending tracks weighed by their cost (worldolympiad.progress);
    # reused and instantly settled rows are counts, not progress.
    progress = WorkProgress(priors={"generate": generate_prior(spec.model)})
    progress.add_reused(skipped)
    for u in units:
        stored = config.resume and _existing_video(run_dir / VIDEOS / f"{u.case.id}__s{u.seed}.mp4") is not None
        progress.plan(u.case.id, u.seed, u.case.num_frames, "read" if stored else "generate", u.tracks)
    line = ProgressLine(progress, f"{spec.model} on {suite.name}", enabled=config.progress).start()
    try:
        for row in immediate:
            write_row(row.to_dict())

        def on_message(kind: str, payload: Any) -> None:
            if kind == "row":
                write_row(payload)
            elif kind == "timing":
                timings.append(payload)
                if payload["stage"] in ("generate", "read"):
                    progress.finish(payload["case_id"], int(payload["seed"]), "video", payload["seconds"],
                                    kind=payload["stage"])
            elif kind == "start":
                progress.start(payload["case_id"], int(payload["seed"]), payload["stage"], worker=payload.get("pid"))

        if config.executor != "local":
            _run_on_ray(config, env, units, on_message, write_row)
        else:
            _run_locally(config.workers, env, units, on_message, write_row)
    finally:
        line.close()
        results.close()
        timings.close()

    rows = [TrackResult.from_dict(r) for r in JsonlAppender(run_dir / RESULTS).read()]
    summary = summarize(rows, spec, suite_name=suite.name)
    from worldolympiad.judges.ledger import judge_run_summary

    summary.update(judge_run_summary(run_dir))  # the judge's ledger; an outage is a run-level error
    if config.shard is not None:  # this directory holds part of the run: `worldolympiad merge` makes it whole
        summary["shard"] = str(config.shard)
    tmp = run_dir / (SUMMARY + ".tmp")
    tmp.write_text(json.dumps(summary, indent=2))
    tmp.replace(run_dir / SUMMARY)
    return RunOutcome(run_dir=run_dir, rows=rows, summary=summary, computed=computed, skipped=skipped,
                      recomputed_inputs=len(stale), changed=changed, reused_failed=reused_failed,
                      reused_videos=reused_videos)


def _run_locally(workers: int, env: _Env, units: list[_Unit], on_message: Any, write_row: Any) -> None:
    """The units in this process (``workers`` 1) or in ``workers`` spawned processes; this process writes every row."""
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


def _run_on_ray(config: EvalConfig, env: _Env, units: list[_Unit], on_message: Any, write_row: Any) -> None:
    """The units on a Ray cluster (:mod:`worldolympiad.ray_executor`); this process writes every row."""
    from worldolympiad.ray_executor import RayExecutor, RayExecutorError

    if not _picklable(env):
        raise EvaluationError("--executor ray: the model or a track is not importable by name on the cluster "
                              "(registered at runtime?); register it in an installed package or use --executor local")
    executor = RayExecutor(config.executor, config.workers, config.judge_workers)  # address checked by evaluate()
    try:
        executor.run(env, units, on_message, write_row)
    except RayExecutorError as e:
        raise EvaluationError(str(e)) from e
    finally:
        executor.close()


def _current_inputs(cases: Sequence[Case], seeds: Mapping[str, Sequence[int]], factory: Any, arg: str | None,
                    previous: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
    """:func:`worldolympiad.inputs.case_inputs` of every planned (case, seed) (``seeds``: the seeds planned
    for each case id); files whose size and mtime match an earlier row's record are not read again."""
    from worldolympiad.inputs import case_inputs, model_input_files

    known = known_stamps(previous)
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for case in cases:
        for seed in seeds[case.id]:
            files = model_input_files(factory, arg, case, seed) if factory is not None else {}
            inputs = case_inputs(case, files, known)
            known.update({str(st["path"]): st for st in inputs.values() if st.get("path") and st.get("sha256")})
            out[(case.id, seed)] = inputs
    return out


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
            rows.append(TrackResult(case.id, spec.model, seed, name, None, status="not_applicable", reason=reason,
                                    coverage={"reason": reason}, track_version=_version_of(classes, name),
                                    scenario=case.scenario, suite=case.suite))
            continue
        row = worker.run_track(name, video, case, seed, load_reference)
        row.artifacts["video"] = str(video_path)
        rows.append(row)
    return rows
