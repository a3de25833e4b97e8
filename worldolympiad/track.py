"""The ``Track`` interface and the context the evaluator hands to it.

A track scores one generated video of one case. It returns a :class:`TrackOutput`
(metrics, a score in [0, 1] or ``None``, coverage, artifacts); the evaluator wraps it in a
:class:`~worldolympiad.types.TrackResult` with the case id, model, seed and timings.

Contract:
    * :meth:`Track.applicability` says *why not* (a reason string) when the track cannot
      judge this case, e.g. "case has no camera trajectory". The evaluator then writes a
      ``not_applicable`` row — never a zero.
    * :meth:`Track.evaluate` may raise; the evaluator records the exception as the row's
      error and goes on. Prefer returning metrics with ``status="failed"`` and a reason
      when only some metrics fail.
    * Tracks are deterministic given ``ctx.seed``.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from worldolympiad.options import OptionSpec
from worldolympiad.types import Case, MetricValue, Video

if TYPE_CHECKING:
    from worldolympiad.trackspec import TrackSpec


@dataclass
class EvalContext:
    """What a track may use besides the video and the case.

    Attributes:
        seed: the evaluation seed (for any sampling inside the track).
        device: ``"cpu"`` or ``"cuda"`` (already resolved from ``auto``).
        work_dir: a folder private to this (case, seed, track) for artifacts.
        cache_dir: a folder shared by the run for content-addressed caches (judge calls...).
        judge_spec: the judge SPEC string (``"none"`` when no MLLM is configured).
        options: free-form track options from the RunSpec (``{"physics.segmenter": "sam:/ckpt"}``).
        reference_loader: returns the case's reference video (or ``None``); loaded lazily.
        run_dir: the run directory, when the evaluator runs the track: its judge ledger holds the
            run's judge budget, shared by every row and worker (``None``: the judge counts alone).
        judge_generator: where the judge's model runs when not in this process (the Ray executor's judge
            pool client, :mod:`worldolympiad.ray_judge_pool`); ``None``: the judge loads its own.
    """

    seed: int = 0
    device: str = "cpu"
    # Defaults for direct use (tests, notebooks): a fresh temp folder, never the cwd, removed with
    # the context (pass a work_dir to keep a track's artifacts past it).
    work_dir: Path = None  # type: ignore[assignment]  # set in __post_init__
    cache_dir: Path = field(default_factory=lambda: Path(tempfile.gettempdir()) / "worldolympiad-cache")
    judge_spec: str = "none"
    options: dict[str, Any] = field(default_factory=dict)
    reference_loader: Callable[[], Video | None] | None = None
    run_dir: Path | None = None
    judge_generator: Any = None
    timings: dict[str, float] = field(default_factory=dict)
    _reference: Video | None = field(default=None, repr=False)
    _reference_loaded: bool = field(default=False, repr=False)
    _judge: Any = field(default=None, repr=False)
    _own_dir: tempfile.TemporaryDirectory[str] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.work_dir is None:
            # a TemporaryDirectory deletes itself when collected or at exit: direct use leaves nothing in /tmp
            self._own_dir = tempfile.TemporaryDirectory(prefix="wo-track-")
            self.work_dir = Path(self._own_dir.name)

    def reference(self) -> Video | None:
        """The case's reference video, or ``None`` when the case has none."""
        if not self._reference_loaded:
            self._reference = self.reference_loader() if self.reference_loader else None
            self._reference_loaded = True
        return self._reference

    def judge(self) -> Any:
        """The configured MLLM judge (built once), or ``None`` when the spec is ``none``."""
        if self.judge_spec in ("", "none"):
            return None
        if self._judge is None:
            from worldolympiad.judges import build_judge

            pooled = {"generator": self.judge_generator} if self.judge_generator is not None else {}
            self._judge = build_judge(self.judge_spec, cache_dir=self.cache_dir / "judge", run_dir=self.run_dir,
                                      **pooled)
        return self._judge

    def option(self, key: str, default: Any = None) -> Any:
        return self.options.get(key, default)

    @contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        """Accumulate wall time of a stage into ``timings`` (reported per row)."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.timings[stage] = self.timings.get(stage, 0.0) + time.perf_counter() - t0


@dataclass
class TrackOutput:
    """What :meth:`Track.evaluate` returns."""

    metrics: list[MetricValue]
    score: float | None
    coverage: dict[str, Any] = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


class Track:
    """Base class of tracks. Subclasses set ``name``, ``version`` and implement :meth:`evaluate`.

    The ``--option <name>.<key>`` keys a track reads are declared in the ``options:`` of the
    ``track.yaml`` beside its module, or (a plugin without one) in ``OPTIONS``; see
    :mod:`worldolympiad.options`.
    """

    name: ClassVar[str] = "track"
    version: ClassVar[str] = "1"
    OPTIONS: ClassVar[Mapping[str, OptionSpec]] = {}
    # What scoring one video asks a Ray cluster for (a plugin without track.yaml; else its ``resources:``).
    RESOURCES: ClassVar[Mapping[str, float]] = {}

    @classmethod
    def resources(cls) -> dict[str, float]:
        """``num_cpus`` / ``num_gpus`` one (case, seed) of this track needs (default one CPU); the GPU
        request counts only on a ``--device cuda`` run (:mod:`worldolympiad.ray_executor`)."""
        spec = None if cls.RESOURCES else cls.spec()
        declared = dict(cls.RESOURCES) if cls.RESOURCES else dict(spec.resources) if spec is not None else {}
        return {"num_cpus": 1.0, **declared}

    @classmethod
    def declared_options(cls) -> dict[str, OptionSpec]:
        """The option keys (without the ``<name>.`` prefix) this track reads, with type, default and help."""
        if cls.OPTIONS:
            return dict(cls.OPTIONS)
        spec = cls.spec()
        return dict(spec.option_specs) if spec is not None else {}

    @classmethod
    def spec(cls) -> TrackSpec | None:
        """The parsed ``track.yaml`` beside this track's module (metrics, version, options), or
        ``None`` for a track that declares none. Readers go through the ``TRACKS`` registry and
        this method, never through a string import of the track's package."""
        file = getattr(sys.modules.get(cls.__module__), "__file__", None)
        if file and Path(file).with_name("track.yaml").is_file():
            from worldolympiad.trackspec import load_track_spec

            return load_track_spec(Path(file).with_name("track.yaml"))
        return None

    @classmethod
    def rules(cls) -> list[dict[str, Any]]:
        """The rule catalogue this track judges cases by (``id``, ``dimension``, ``description``,
        ...), for ``worldolympiad ls rules``; empty for a track without rules."""
        return []

    def applicability(self, case: Case) -> str | None:
        """``None`` if this track can judge ``case``, else the reason it cannot."""
        if self.name not in case.tracks:
            return f"case {case.id!r} does not list track {self.name!r} in its 'tracks'"
        return None

    def evaluate(self, video: Video, case: Case, ctx: EvalContext) -> TrackOutput:
        raise NotImplementedError


def mean_normalized(metrics: list[MetricValue], weights: dict[str, float] | None = None) -> float | None:
    """Weighted mean of the ``normalized`` values that exist (``None`` if none do).

    Metrics that are ``not_applicable`` are dropped; ``failed`` ones count with their
    documented floor when they carry one.
    """
    num = den = 0.0
    for m in metrics:
        if m.normalized is None:
            continue
        w = 1.0 if weights is None else weights.get(m.name, 0.0)
        num += w * m.normalized
        den += w
    return num / den if den > 0 else None
