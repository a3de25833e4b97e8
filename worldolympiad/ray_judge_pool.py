"""The MLLM judge as a Ray actor pool (``evaluate-model --executor ray`` with ``--judge hf:PATH``).

Locally each scoring row builds its judge, and an ``hf:`` judge loads its model in that process.
On Ray that would be one model load per scoring task; instead the driver starts a pool of judge
actors, each holding one copy of the model (one GPU each on a cuda run), and every scoring task's
judge sends its requests there::

    scoring task (any track, any node)                         judge pool (x --judge-workers)
    ----------------------------------                         ------------------------------
    ctx.judge() → HFJudge(generator=PoolClient)                _JudgeActor: HFGenerator, loaded once
      cache, JSON repair, votes, retries,   generate(...) ──►    one request → Generation
      budget (run ledger), accounting       ◄── Generation       (or the exception it raised)

Only the model moves: the judge protocol (cache, repair, retries, the run's budget in
``judge_ledger.json``, per-row accounting) runs in the scoring task exactly as in a local run, so a
Ray run's rows equal the local run's, and ``budget=N`` still means N requests in the whole run
(each is counted in the ledger before it is sent to the pool). Requests go round-robin over the
actors, starting at a random one per row; an actor answers one request at a time (no batching:
a request's answer is the answer the same model gives it in one process). An actor that dies is
restarted (the model loaded again) and its request run again; when its restarts are spent the
request fails as a ``connection`` failure, which the judge retries on the next actor.

Judges whose backend is a server (``openai:``) are not pooled: the server is already the one model
every task shares (vLLM batches their requests). The tracks never see Ray: they get a judge with the
interface of the in-process one.
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from worldolympiad.judges.base import Generation, TransientJudgeError

#: times Ray restarts a judge actor that died (and runs its request again)
JUDGE_RESTARTS = 3
#: the file in the run directory where the driver writes what each judge actor did (loads, requests, busy time)
POOL_STATS = "judge_pool.json"


def pooled_judge_class(spec: str) -> Any | None:
    """The judge class of ``spec`` when its model can live in a pool (it has a ``generator_class``), else ``None``."""
    from worldolympiad.registries import JUDGES, parse_spec

    prefix, _ = parse_spec(spec)
    if prefix in ("", "none") or prefix not in JUDGES:
        return None
    cls = JUDGES.get(prefix)
    return cls if getattr(cls, "generator_class", None) is not None else None


class _JudgeActor:
    """One judge model on the cluster (a Ray actor): built once, answers one request at a time."""

    def __init__(self, spec: str) -> None:
        from worldolympiad.registries import parse_spec

        cls = pooled_judge_class(spec)
        assert cls is not None, spec
        t0 = time.perf_counter()
        self.generator = cls.load_generator(parse_spec(spec)[1])
        self.stats = {"pid": os.getpid(), "loads": 1, "load_seconds": round(time.perf_counter() - t0, 3),
                      "requests": 0, "busy_seconds": 0.0, **self.generator.info()}

    def info(self) -> dict[str, Any]:
        return self.generator.info()  # type: ignore[no-any-return]

    def generate(self, prompt: str, images: Sequence[np.ndarray], kwargs: dict[str, Any]
                 ) -> tuple[Generation | None, BaseException | None]:
        """``(answer, None)``, or ``(None, what the model raised)``: the caller's judge handles it as in one process."""
        t0 = time.perf_counter()
        self.stats["requests"] += 1
        try:
            return self.generator.generate(prompt, images, **kwargs), None
        except Exception as e:  # noqa: BLE001 - returned: the judge in the scoring task records it
            return None, _portable(e)
        finally:
            self.stats["busy_seconds"] = round(self.stats["busy_seconds"] + time.perf_counter() - t0, 3)

    def report(self) -> dict[str, Any]:
        return dict(self.stats)


def _portable(e: BaseException) -> BaseException:
    """``e`` if it survives pickling, else a RuntimeError with its type and message."""
    import pickle

    try:
        pickle.loads(pickle.dumps(e))
    except Exception:  # noqa: BLE001 - any pickling failure
        return RuntimeError(f"{type(e).__name__}: {e}")
    return e


class PoolClient:
    """A scoring task's handle on the judge pool, with the model's ``generate`` and ``info`` (picklable).

    Args:
        actors: the pool's Ray actor handles.
        info: the model's :meth:`~worldolympiad.judges.hf.HFGenerator.info` (the same for every actor).
    """

    def __init__(self, actors: Sequence[Any], info: dict[str, Any]) -> None:
        self.actors = list(actors)
        self._info = dict(info)
        self._next: int | None = None

    def info(self) -> dict[str, Any]:
        return dict(self._info)

    def generate(self, prompt: str, images: Sequence[np.ndarray], **kwargs: Any) -> Generation:
        """Send one request to the next actor (round-robin); re-raise what the model raised there.

        Raises:
            TransientJudgeError: the actor died and Ray's restarts are spent (``connection``: the judge
                retries, on the next actor).
        """
        import ray

        if self._next is None:  # a random start per row (random.seed is the row's seed: use the OS's)
            self._next = random.SystemRandom().randrange(len(self.actors))
        slot = self._next
        self._next = (slot + 1) % len(self.actors)
        try:
            gen, error = ray.get(self.actors[slot].generate.remote(prompt, list(images), dict(kwargs)))
        except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as e:
            raise TransientJudgeError(f"judge pool actor {slot} is gone ({type(e).__name__}); its restarts are spent",
                                      kind="connection") from e
        if error is not None:
            raise error
        assert gen is not None
        return gen  # type: ignore[no-any-return]


class JudgePool:
    """The judge actors of one run (started by :class:`worldolympiad.ray_executor.RayExecutor`).

    Args:
        ray: the connected ``ray`` module.
        spec: the run's judge SPEC (a pooled one: :func:`pooled_judge_class`).
        size: actors to start.
        request: each actor's Ray resource request (``worldolympiad.ray_executor.request``).

    Raises:
        RuntimeError: an actor could not load the model (the message has the cause).
    """

    def __init__(self, ray: Any, spec: str, size: int, request: dict[str, float]) -> None:
        self.ray = ray
        self.request = dict(request)
        cls = ray.remote(_JudgeActor).options(max_restarts=JUDGE_RESTARTS, max_task_retries=JUDGE_RESTARTS,
                                              **request)
        self.actors = [cls.remote(spec) for _ in range(max(1, size))]
        infos = ray.get([a.info.remote() for a in self.actors])  # waits for every load; raises if one failed
        self.client = PoolClient(self.actors, infos[0])

    def report(self) -> dict[str, Any]:
        """What each actor did: ``{"request": ..., "actors": [{"pid", "loads", "requests", "busy_seconds", ...}]}``."""
        actors: list[dict[str, Any]] = []
        for a in self.actors:
            try:
                actors.append(self.ray.get(a.report.remote(), timeout=30))
            except Exception as e:  # noqa: BLE001 - a dead actor says so, the run is not stopped for it
                actors.append({"error": f"{type(e).__name__}"})
        return {"request": self.request, "actors": actors}

    def close(self) -> None:
        for a in self.actors:
            with contextlib.suppress(Exception):  # already gone
                self.ray.kill(a)
