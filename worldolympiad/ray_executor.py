"""Run an evaluation's units on a Ray cluster (``evaluate-model --executor ray[:ADDRESS]``).

The driver (the ``evaluate-model`` process) plans the run exactly as a local run does (resume, input
fingerprints, not-applicable rows: :mod:`worldolympiad.evaluator`) and stays the only writer of
``results.jsonl``. The cluster does the work; rows come back as task results::

    driver (plans, writes)                    cluster
    ----------------------                    -------
    unit (case, seed, tracks) ─────────────►  _VideoActor x --workers: one model copy each, built once;
                                              generate → <run_dir>/videos/<case>__s<seed>.mp4
                              ◄───────────── StoredVideo (chunks, metadata, shape, CRC-32, warnings)
    one task per pending track ────────────►  _score (the track's resources): decode the stored file,
                                              check its CRC, score; an hf: judge's requests go to the
                                              judge pool (_JudgeActor x --judge-workers, one model each:
                                              :mod:`worldolympiad.ray_judge_pool`)
                              ◄───────────── TrackResult + timings
    write_row → results.jsonl (a key already written is dropped)

**Videos move through the run directory**, not the object store: every node must see the run
directory (and ``<out>/.cache``) at the same path (NFS, a shared volume; on one node, the local disk).
A stored video is decoded by each scoring task; the CRC-32 of the frames the generating actor scored
is checked, so a task never scores other frames than a local run would.

**Resources.** A model actor asks for ``num_gpus`` of the model's ``RESOURCES`` (default 1; only on a
``--device cuda`` run) and holds ``num_cpus`` only together with a GPU (a CPU model's actors hold no
CPU, so scoring tasks always find one). A scoring task asks for its track's ``resources`` in
``track.yaml`` (:meth:`worldolympiad.track.Track.resources`; default one CPU; ``num_gpus`` only on a
cuda run). A task or actor given no GPU runs on ``cpu``. ``--device auto`` means cuda when the
cluster has GPUs.

**Faults.** A scoring task whose worker dies is run again by Ray (:data:`TASK_RETRIES`); a model actor
that dies is restarted, its model built again, and its call run again (:data:`ACTOR_RESTARTS`). A task
returns its row only when it is finished, so a retried task still gives one row; when the retries are
spent the rows become ``failed`` rows that name the fix (``--retry-failed``), as with local worker
processes. When the driver dies, Ray ends the job's tasks and actors; the same command resumes from
``results.jsonl`` as a local run does.

Ray is imported only here, only when ``--executor ray`` is asked for (``pip install 'worldolympiad[ray]'``).
"""

from __future__ import annotations

import dataclasses
import logging
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from worldolympiad.types import Case, TrackResult
from worldolympiad.workers import StoredVideo, _Env, _Unit, _version_of, _Worker, describe_error, failed_row

logger = logging.getLogger(__name__)

#: times Ray runs a scoring task again after its worker process died
TASK_RETRIES = 3
#: times Ray restarts a model actor that died (and runs its call again)
ACTOR_RESTARTS = 3
#: calls queued on each model actor, so it starts the next video while the driver handles the last one
UNITS_PER_ACTOR = 2


class RayExecutorError(RuntimeError):
    """Ray is missing, the cluster cannot be reached, or it lacks what the run asks for (says how to fix it)."""


def _ray() -> Any:
    try:
        import ray
    except ImportError as e:
        raise RayExecutorError("--executor ray needs Ray: pip install 'worldolympiad[ray]' (or pip install ray) on "
                               "this machine and every node; docs/cluster.md") from e
    return ray


def parse_executor(text: str) -> str | None:
    """``"ray"`` → ``None`` (start Ray on this machine, or join ``RAY_ADDRESS``); ``"ray:ADDRESS"`` → ADDRESS.

    Raises:
        RayExecutorError: not ``ray`` or ``ray:ADDRESS``.
    """
    kind, _, address = text.partition(":")
    if kind != "ray":
        raise RayExecutorError(f"executor {text!r} is not ray or ray:ADDRESS (e.g. ray:auto, ray:10.0.0.1:6379)")
    return address or None


def request(declared: Mapping[str, float], device: str, *, holds_cpu_without_gpu: bool = True) -> dict[str, float]:
    """The Ray resource request of a task or actor that declared ``declared`` on a run on ``device``.

    ``num_gpus`` counts only on a cuda run. ``holds_cpu_without_gpu=False`` (model actors): no CPU is held
    unless a GPU is too.
    """
    gpus = float(declared.get("num_gpus", 0)) if str(device).startswith("cuda") else 0.0
    cpus = float(declared.get("num_cpus", 1))
    if not gpus and not holds_cpu_without_gpu:
        cpus = 0.0
    return {"num_cpus": cpus, "num_gpus": gpus}


def _on(env: _Env, gpu: bool) -> _Env:
    """``env`` for a task or actor given (``gpu``) or not given a GPU: without one it runs on the CPU."""
    if gpu or env.device == "cpu":
        return env
    return dataclasses.replace(env, device="cpu", model_options={**env.model_options, "device": "cpu"})


# ================================================================ remote side


class _VideoActor:
    """One model copy on the cluster: generates (or, resuming, reads) units' videos into the run directory."""

    def __init__(self, env: _Env) -> None:
        self._messages: list[tuple[str, Any]] = []
        self.worker = _Worker(env, lambda kind, payload: self._messages.append((kind, payload)))

    def video(self, case: Case, seed: int) -> tuple[StoredVideo | None, str | None, list[tuple[str, Any]]]:
        """``(stored video, None, messages)``, or ``(None, error, messages)`` when no video could be made."""
        self._messages = []
        try:
            stored = self.worker.store_video(case, seed)
        except Exception as e:  # noqa: BLE001 - recorded on the unit's rows by the driver
            return None, describe_error(e, f"model {self.worker.env.spec.model!r}"), self._messages
        return stored, None, self._messages

    def close(self) -> None:
        self.worker.close()


def _probe(env: _Env) -> bool:
    """Nothing: receiving ``env`` imports the model adapter and every track class on a worker (the pre-flight)."""
    return env is not None


def _score(env: _Env, case: Case, seed: int, track: str, stored: StoredVideo
           ) -> tuple[TrackResult, list[tuple[str, Any]]]:
    """Score one (case, seed, track) from the video in the run directory; the row and the worker's messages."""
    messages: list[tuple[str, Any]] = []
    worker = _Worker(env, lambda kind, payload: messages.append((kind, payload)))
    try:
        video = worker.video_from_store(case, seed, stored)
    except Exception as e:  # noqa: BLE001 - recorded as the row's error
        return failed_row(env.spec, case, seed, track, describe_error(e, f"track {track!r}"),
                          _version_of(env.track_classes, track)), messages
    return worker.run_track(track, video, case, seed, worker.reference_loader(case, seed)), messages


# ================================================================= driver side


def _cause(e: BaseException, limit: int = 300) -> str:
    """The line of a Ray error that says what went wrong (its last line, colours stripped), shortened."""
    import re

    lines = [ln.strip() for ln in re.sub(r"\x1b\[[0-9;]*m", "", str(e)).splitlines()]
    lines = [ln for ln in lines if ln and set(ln) - set("^~ ")]
    text = lines[-1] if lines else type(e).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _crashed(ray: Any, e: BaseException) -> bool:
    """The worker process died (killed, out of memory, a native crash), as opposed to code that raised."""
    if isinstance(e, ray.exceptions.ActorDiedError):
        return not e.actor_init_failed
    return isinstance(e, (ray.exceptions.WorkerCrashedError, ray.exceptions.OutOfMemoryError,
                          ray.exceptions.NodeDiedError, ray.exceptions.RayActorError))


def _failure(ray: Any, e: BaseException, what: str, tries: int) -> str:
    """A failed row's error for ``what`` (e.g. "scoring case 'x' seed 0 track 'physics'") whose Ray call ended in ``e``."""
    if _crashed(ray, e):
        return (f"the Ray worker {what} died {tries} time(s) ({type(e).__name__}: {_cause(e)}); likely out of memory "
                "or a native crash: rerun with --retry-failed (or --executor local --workers 1 to see the error)")
    return (f"the Ray cluster could not run the work {what} ({type(e).__name__}: {_cause(e)}); every node must import "
            "the project, the model and the tracks at this machine's version (docs/cluster.md), then rerun with "
            "--retry-failed")


def check_reachable(address: str, timeout: float = 10.0) -> None:
    """Fail fast when ``HOST:PORT`` (or ``ray://HOST:PORT``) accepts no TCP connection; other forms
    (``auto``) are left to Ray.

    Raises:
        RayExecutorError: nothing answers there within ``timeout`` seconds.
    """
    import socket

    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit() or not host:
        return
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as e:
        raise RayExecutorError(f"no Ray cluster answers at {address} ({e}); check the head node's address and port "
                               "(`ray status` there; GCS port 6379, Ray Client 10001), or use ray:auto on a node of "
                               "the cluster") from e


class RayExecutor:
    """Runs a plan's units on Ray; :meth:`run` is called by :func:`worldolympiad.evaluator.evaluate`.

    Args:
        executor: ``ray`` (start a Ray instance on this machine, or join ``RAY_ADDRESS``) or ``ray:ADDRESS``
            (``ray:auto``: the cluster ``ray start`` made on this machine; ``ray:HOST:PORT``; ``ray:ray://HOST:10001``,
            Ray Client). A process already connected to Ray (``ray.init`` in a notebook) keeps its connection.
        workers: model actors (copies of the model) to start.
        judge_workers: judge pool actors (copies of an ``hf:`` judge's model, one GPU each on a cuda run) to
            start when the run has such a judge (default 1; :mod:`worldolympiad.ray_judge_pool`).
    """

    def __init__(self, executor: str, workers: int = 1, judge_workers: int | None = None) -> None:
        self.address = parse_executor(executor)
        self.workers = max(1, int(workers))
        self.judge_workers = max(1, int(judge_workers or 1))
        self._started = False

    def connect(self) -> Any:
        """The ``ray`` module, connected (an existing connection of this process is reused)."""
        ray = _ray()
        if ray.is_initialized():
            return ray
        kwargs: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING}
        if self.address is None:
            kwargs["include_dashboard"] = False
        else:
            check_reachable(self.address)  # ray.init waits minutes for an address nobody answers at
        try:
            ray.init(address=self.address, **kwargs)
        except Exception as e:  # noqa: BLE001 - ConnectionError, RuntimeError, ValueError from ray.init
            where = self.address or "a new local instance"
            raise RayExecutorError(f"could not start or reach Ray at {where}: {type(e).__name__}: {e}; check the "
                                   "address (`ray status` on the head node) or use --executor local") from e
        self._started = True
        return ray

    def close(self) -> None:
        """Disconnect (and stop the Ray instance this executor started)."""
        if self._started:
            _ray().shutdown()
            self._started = False

    def device(self, ray: Any, requested: str) -> str:
        """``--device`` on the cluster: ``auto`` → ``cuda`` when it has GPUs, else ``cpu``.

        Raises:
            RayExecutorError: ``cuda`` asked for on a cluster without GPUs.
        """
        gpus = float(ray.cluster_resources().get("GPU", 0))
        requested = (requested or "auto").lower()
        if requested == "auto":
            return "cuda" if gpus > 0 else "cpu"
        if requested.startswith("cuda") and gpus <= 0:
            raise RayExecutorError(f"--device {requested} but the Ray cluster has no GPU (`ray status`); use "
                                   "--device auto or cpu, or add GPU nodes")
        return requested

    def run(self, env: _Env, units: list[_Unit], on_message: Callable[[str, Any], None],
            write_row: Callable[[dict[str, Any]], None]) -> None:
        """Generate and score ``units`` on the cluster; every row goes through ``write_row`` in this process.

        Raises:
            RayExecutorError: Ray is missing or unreachable, or the cluster lacks the GPU asked for.
        """
        if not units:
            return
        ray = self.connect()
        device = self.device(ray, env.device)
        env = dataclasses.replace(env, device=device, model_options={**env.model_options, "device": device})
        declared = getattr(env.model_factory, "RESOURCES", None)
        model_req = request(declared if declared is not None else {"num_gpus": 1}, device,
                            holds_cpu_without_gpu=False)
        actor_env = _on(env, model_req["num_gpus"] > 0)  # passed by value: a restarted actor needs it again
        track_req: dict[str, dict[str, float]] = {}
        for name in {t for u in units for t in u.tracks}:
            cls = env.track_classes[name]
            track_req[name] = request(cls.resources() if hasattr(cls, "resources") else {}, device)
        try:  # pre-flight: a worker can import what the run needs (else one clear error, not a failed row each)
            ray.get(ray.remote(_probe).options(num_cpus=0).remote(actor_env))
        except Exception as e:  # noqa: BLE001 - RayTaskError / RaySystemError wrapping the import error
            raise RayExecutorError(f"a Ray worker cannot load what this run needs ({type(e).__name__}: {_cause(e)}); "
                                   "install the project, your model and any plugin track at this machine's version "
                                   "on every node, or submit with `ray job submit --working-dir .` "
                                   "(docs/cluster.md)") from e
        pool = self._judge_pool(ray, env, device, model_req, min(self.workers, len(units)), track_req)
        if pool is not None:
            env = dataclasses.replace(env, judge_generator=pool.client)  # scoring tasks ask the pool
        track_env: dict[str, Any] = {}
        envs: dict[bool, Any] = {}
        for name, req in track_req.items():
            gpu = req["num_gpus"] > 0
            if gpu not in envs:
                envs[gpu] = ray.put(_on(env, gpu))
            track_env[name] = envs[gpu]
        actor_cls = ray.remote(_VideoActor).options(max_restarts=ACTOR_RESTARTS, max_task_retries=ACTOR_RESTARTS,
                                                    **model_req)
        score = ray.remote(_score)
        n = min(self.workers, len(units))
        actors = [actor_cls.remote(actor_env) for _ in range(n)]
        queue = deque(units)
        videos: dict[Any, tuple[_Unit, int]] = {}
        scores: dict[Any, tuple[_Unit, str, list[str]]] = {}

        def feed(slot: int) -> None:
            if queue:
                unit = queue.popleft()
                videos[actors[slot].video.remote(unit.case, unit.seed)] = (unit, slot)
                on_message("start", {"case_id": unit.case.id, "seed": unit.seed, "stage": "video",
                                     "pid": f"ray-actor-{slot}"})

        def replay(messages: list[tuple[str, Any]]) -> None:
            for kind, payload in messages:
                if kind != "start":  # stages started on the cluster are announced when submitted
                    on_message(kind, payload)

        try:
            for slot in range(n):
                for _ in range(UNITS_PER_ACTOR):
                    feed(slot)
            while videos or scores:
                (ref,), _ = ray.wait([*videos, *scores], num_returns=1)
                if ref in videos:
                    unit, slot = videos.pop(ref)
                    stored, error, messages, dead = self._video_result(ray, ref, unit)
                    if dead:
                        actors[slot] = actor_cls.remote(actor_env)  # its restarts are spent: a fresh one
                    replay(messages)
                    if stored is None:
                        for t in unit.tracks:
                            row = failed_row(env.spec, unit.case, unit.seed, t, str(error),
                                             _version_of(env.track_classes, t))
                            row.inputs = unit.inputs
                            write_row(row.to_dict())
                    else:
                        for t in unit.tracks:
                            task = score.options(max_retries=TASK_RETRIES, **track_req[t])
                            scores[task.remote(track_env[t], unit.case, unit.seed, t, stored)] = (unit, t,
                                                                                                stored.warnings)
                            on_message("start", {"case_id": unit.case.id, "seed": unit.seed, "stage": t,
                                                 "pid": f"ray:{unit.case.id}:{unit.seed}:{t}"})
                    feed(slot)
                else:
                    unit, t, warnings = scores.pop(ref)
                    try:
                        row, messages = ray.get(ref)
                    except Exception as e:  # noqa: BLE001 - retries spent: a failed row, never a lost one
                        what = f"scoring case {unit.case.id!r} seed {unit.seed} track {t!r}"
                        row = failed_row(env.spec, unit.case, unit.seed, t, _failure(ray, e, what, TASK_RETRIES + 1),
                                         _version_of(env.track_classes, t))
                        messages = []
                    replay(messages)
                    row.inputs = unit.inputs
                    row.warnings = warnings
                    write_row(row.to_dict())
        finally:
            for a in actors:
                try:
                    ray.kill(a)
                except Exception:  # noqa: BLE001 - already gone
                    logger.debug("could not kill a model actor", exc_info=True)
            if pool is not None:
                self._close_pool(pool, env.run_dir)

    def _judge_pool(self, ray: Any, env: _Env, device: str, model_req: Mapping[str, float], model_actors: int,
                    track_req: Mapping[str, Mapping[str, float]]) -> Any:
        """The run's judge pool (:mod:`worldolympiad.ray_judge_pool`), started, or ``None`` when its judge has no
        model to pool (``none``, ``openai:``).

        Raises:
            RayExecutorError: the pool, the model actors and one GPU scoring task need more GPUs than the cluster
                has (it would wait forever), or a judge actor could not load the model.
        """
        from worldolympiad.ray_judge_pool import JudgePool, pooled_judge_class

        cls = pooled_judge_class(env.spec.judge)
        if cls is None:
            return None
        req = request(cls.generator_class.RESOURCES, device, holds_cpu_without_gpu=False)
        gpus = float(ray.cluster_resources().get("GPU", 0))
        needed = (self.judge_workers * req["num_gpus"] + model_actors * model_req["num_gpus"]
                  + max((r["num_gpus"] for r in track_req.values()), default=0.0))
        if req["num_gpus"] and needed > gpus:
            raise RayExecutorError(
                f"the judge pool ({self.judge_workers} x {req['num_gpus']:g} GPU), {model_actors} model actor(s) "
                f"({model_req['num_gpus']:g} GPU each) and a GPU scoring task need {needed:g} GPUs; the cluster has "
                f"{gpus:g}: lower --judge-workers or --workers, or add GPU nodes (docs/cluster.md)")
        try:
            return JudgePool(ray, env.spec.judge, self.judge_workers, req)
        except Exception as e:  # noqa: BLE001 - RayActorError / RayTaskError wrapping the load error
            raise RayExecutorError(f"the judge pool could not load --judge {env.spec.judge} ({type(e).__name__}: "
                                   f"{_cause(e)}); the model folder must be at the same path on every node "
                                   "(docs/cluster.md)") from e

    @staticmethod
    def _close_pool(pool: Any, run_dir: Path) -> None:
        """Write what the judge actors did to ``<run_dir>/judge_pool.json`` and stop them."""
        import json

        from worldolympiad.ray_judge_pool import POOL_STATS

        try:
            (run_dir / POOL_STATS).write_text(json.dumps(pool.report(), indent=1, sort_keys=True))
        finally:
            pool.close()

    @staticmethod
    def _video_result(ray: Any, ref: Any, unit: _Unit
                      ) -> tuple[StoredVideo | None, str | None, list[tuple[str, Any]], bool]:
        """A model actor's answer ``(stored, error, messages, actor_dead)``."""
        try:
            stored, error, messages = ray.get(ref)
            return stored, error, messages, False
        except Exception as e:  # noqa: BLE001 - RayActorError once its restarts are spent
            what = f"generating case {unit.case.id!r} seed {unit.seed} (a model actor)"
            return None, _failure(ray, e, what, ACTOR_RESTARTS + 1), [], True

