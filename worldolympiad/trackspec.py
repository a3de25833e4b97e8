"""A track's declared data (``track.yaml``) and the normalisation of raw metric values.

Every track ships a ``track.yaml`` next to its code::

    name: geometry
    version: "1"
    description: ...
    options:                              # optional; every ``--option <track>.<key>`` the track reads
      max_frames: {type: int, default: 24, help: frames sampled for SfM}   # see worldolympiad.options
    metrics:
      - name: heldout_psnr
        description: ...
        higher_is_better: true
        bounds: [12.0, 32.0]               # raw values map linearly onto [0, 1] between these
        version: "1"
      - name: rpe_rot
        higher_is_better: false
        bounds: [0.0, 5.0]
        curve: reciprocal                  # an error: 1 / (1 + (raw - low) / (high - low)), 0.5 at high, never 0
    score:
      weights: {heldout_psnr: 1.0, ...}    # weights of the track score; must name declared metrics

:func:`load_track_spec` parses and checks it once per path; :class:`MetricSpec` turns raw
values into :class:`~worldolympiad.types.MetricValue` with the declared bounds and direction.
Import-light: only ``yaml`` is loaded, on first parse.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from worldolympiad.options import OptionSpec, parse_option_specs
from worldolympiad.types import MetricValue

__all__ = ["MetricSpec", "TrackSpec", "load_track_spec"]

#: how a metric's raw value maps onto [0, 1] (:attr:`MetricSpec.curve`)
CURVES: tuple[str, ...] = ("linear", "reciprocal")


@dataclass(frozen=True)
class MetricSpec:
    """One metric as declared in ``track.yaml``.

    Attributes:
        name: Metric name, unique within the track.
        description: What the metric measures (one line).
        higher_is_better: Direction of the raw value.
        bounds: ``(low, high)`` raw values mapped to normalized 0 and 1 (before the direction flip).
        version: Bumped whenever the metric's numbers change.
        curve: ``"linear"`` (the default: clipped at the bounds) or ``"reciprocal"``, for an error
            (``higher_is_better`` false) whose size keeps mattering past ``high``: ``1 / (1 + (raw - low) /
            (high - low))``, 1 at ``low``, 0.5 at ``high``, 0 only at infinity. A linear error saturates: every
            shuffled turning camera's rotation error (5-98 deg on the tuning mazes) read 0 beside a 5 deg bound, so
            which of two shuffles was worse was left to the other metrics' noise (geometry v10).
    """

    name: str
    description: str
    higher_is_better: bool
    bounds: tuple[float, float]
    version: str
    curve: str = "linear"

    def normalize(self, raw: float) -> float:
        """Map ``raw`` from ``bounds`` onto ``[0, 1]``, 1 = best: linearly (clipped), or along the reciprocal curve
        (:attr:`curve`).

        Args:
            raw: The measured value. ``+inf``/``-inf`` clip to the high/low bound (reciprocal: to 0 and 1).

        Returns:
            The normalized value; for ``higher_is_better=False`` the mapping is flipped.

        Raises:
            ValueError: ``raw`` is NaN (report the metric as failed with a reason instead).
        """
        lo, hi = self.bounds
        if math.isnan(raw):
            raise ValueError(f"{self.name}: cannot normalise NaN; report the metric as failed with a reason")
        if self.curve == "reciprocal":  # an error (checked on load): 1 at low, 0.5 at high
            return 0.0 if math.isinf(raw) and raw > 0 else 1.0 / (1.0 + max(0.0, raw - lo) / (hi - lo))
        if math.isinf(raw):
            x = 1.0 if raw > 0 else 0.0
        else:
            x = min(1.0, max(0.0, (raw - lo) / (hi - lo)))
        return x if self.higher_is_better else 1.0 - x

    def value(self, raw: float, details: dict[str, Any] | None = None) -> MetricValue:
        """A ``status="ok"`` value with ``normalized`` from the declared bounds.

        Args:
            raw: The measured value.
            details: Extra JSON-able provenance; copied.
        """
        return MetricValue(
            self.name, float(raw), self.normalize(float(raw)), self.higher_is_better, self.version, dict(details or {})
        )

    def not_applicable(self, reason: str) -> MetricValue:
        """A ``status="not_applicable"`` value: the case does not allow this measurement.

        Args:
            reason: Why, for the report.
        """
        return MetricValue.not_applicable(
            self.name, reason, version=self.version, higher_is_better=self.higher_is_better
        )

    def failed(self, reason: str, *, floor: float | None = None, details: dict[str, Any] | None = None) -> MetricValue:
        """A ``status="failed"`` value: the measurement was attempted and could not be made.

        Args:
            reason: Why, for the report.
            floor: A documented normalized score to give the failure (e.g. ``0.0`` so an
                unreconstructable video never outscores a reconstructable one); ``None`` leaves
                the metric out of the track score.
            details: Extra JSON-able provenance.
        """
        return MetricValue.failed(
            self.name,
            reason,
            version=self.version,
            higher_is_better=self.higher_is_better,
            normalized=floor,
            details=details,
        )


@dataclass(frozen=True)
class TrackSpec:
    """A parsed ``track.yaml``.

    Attributes:
        name: Track name.
        version: Track version (bumped when any of its numbers change).
        description: What the track measures.
        metrics: Declared metrics by name, in file order.
        weights: Track-score weights by metric name (a subset of ``metrics``).
        options: Option defaults (``--option <track>.<key>`` overrides them).
        option_specs: The declared options (type, default, help) by key.
        resources: What one (case, seed) of this track asks a Ray cluster for (``num_cpus``, ``num_gpus``;
            ``resources:`` in track.yaml; ``num_gpus`` only on a ``--device cuda`` run; docs/cluster.md).
    """

    name: str
    version: str
    description: str
    metrics: dict[str, MetricSpec]
    weights: dict[str, float] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    option_specs: dict[str, OptionSpec] = field(default_factory=dict)
    resources: dict[str, float] = field(default_factory=dict)

    def __getitem__(self, name: str) -> MetricSpec:
        """The declared metric ``name``.

        Raises:
            KeyError: ``name`` is not declared; the message lists the declared metrics.
        """
        try:
            return self.metrics[name]
        except KeyError:
            raise KeyError(
                f"metric {name!r} is not declared in {self.name}/track.yaml; known: {sorted(self.metrics)}"
            ) from None


def load_track_spec(path: str | Path) -> TrackSpec:
    """Parse and check a ``track.yaml`` (cached per resolved path).

    Args:
        path: The ``track.yaml`` file.

    Returns:
        The parsed spec.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: A field is missing or malformed; the message names the file and the field.
    """
    return _load(Path(path).resolve())


@cache
def _load(path: Path) -> TrackSpec:
    import yaml

    d = yaml.safe_load(path.read_text())
    if not isinstance(d, dict):
        raise ValueError(f"{path}: expected a mapping with name, version, metrics; got {type(d).__name__}")
    for key in ("name", "version", "metrics"):
        if d.get(key) is None:
            raise ValueError(f"{path}: missing required field {key!r}")
    if not isinstance(d["metrics"], list):
        raise ValueError(f"{path}: 'metrics' must be a list of metric mappings, got {type(d['metrics']).__name__}")
    metrics: dict[str, MetricSpec] = {}
    for i, m in enumerate(d["metrics"]):
        spec = _metric_spec(path, i, m)
        if spec.name in metrics:
            raise ValueError(f"{path}: metrics[{i}].name {spec.name!r} is declared twice")
        metrics[spec.name] = spec
    score = d.get("score") or {}
    if not isinstance(score, dict):
        raise ValueError(f"{path}: 'score' must be a mapping with 'weights', got {score!r}")
    weights = {str(k): _number(path, f"score.weights.{k}", v) for k, v in (score.get("weights") or {}).items()}
    unknown = sorted(set(weights) - set(metrics))
    if unknown:
        raise ValueError(f"{path}: score.weights name undeclared metrics {unknown}; declared: {sorted(metrics)}")
    options = parse_option_specs(path, d.get("options"))
    return TrackSpec(str(d["name"]), str(d["version"]), str(d.get("description", "")), metrics, weights,
                     {k: o.default for k, o in options.items()}, options, _resources(path, d.get("resources")))


#: the keys a ``resources:`` mapping may hold (Ray's names for a task's requests)
RESOURCE_KEYS = ("num_cpus", "num_gpus")


def _resources(path: Path, d: Any) -> dict[str, float]:
    if d is None:
        return {}
    if not isinstance(d, dict) or set(d) - set(RESOURCE_KEYS):
        raise ValueError(f"{path}: 'resources' must map {' / '.join(RESOURCE_KEYS)} to numbers >= 0, got {d!r}")
    out = {str(k): _number(path, f"resources.{k}", v) for k, v in d.items()}
    if any(v < 0 for v in out.values()):
        raise ValueError(f"{path}: 'resources' must be numbers >= 0, got {d!r}")
    return out


def _metric_spec(path: Path, i: int, m: Any) -> MetricSpec:
    if not isinstance(m, dict):
        raise ValueError(f"{path}: metrics[{i}] must be a mapping, got {m!r}")
    if not m.get("name"):
        raise ValueError(f"{path}: metrics[{i}] is missing required field 'name'")
    where = f"metrics[{i}] ({m['name']})"
    hib = m.get("higher_is_better")
    if not isinstance(hib, bool):
        raise ValueError(f"{path}: {where}.higher_is_better must be true or false, got {hib!r}")
    bounds = m.get("bounds")
    if not isinstance(bounds, (list, tuple)) or len(bounds) != 2:
        raise ValueError(f"{path}: {where}.bounds must be [low, high], got {bounds!r}")
    lo, hi = (_number(path, f"{where}.bounds", b) for b in bounds)
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo == hi:
        raise ValueError(f"{path}: {where}.bounds must be two different finite numbers, got {bounds!r}")
    curve = m.get("curve", "linear")
    if curve not in CURVES:
        raise ValueError(f"{path}: {where}.curve must be one of {', '.join(CURVES)}, got {curve!r}")
    if curve == "reciprocal" and (hib or hi <= lo):
        raise ValueError(f"{path}: {where}: curve reciprocal is for an error (higher_is_better: false, bounds [low, "
                         f"high] with low < high: 1 at low, 0.5 at high), got higher_is_better {hib}, bounds {bounds!r}")
    return MetricSpec(str(m["name"]), str(m.get("description", "")), hib, (lo, hi), str(m.get("version", "1")), curve)


def _number(path: Path, where: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"{path}: {where} must be a number, got {v!r}")
    return float(v)
