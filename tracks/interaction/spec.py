"""Reading a track's ``track.yaml`` (metrics, bounds, weights) and normalising raw values.

Shared by the interaction and long-video tracks; the file format is the one every track
declares (name, version, description, metrics[{name, description, higher_is_better, bounds,
version}], score.weights).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from worldolympiad.types import MetricValue


@dataclass(frozen=True)
class MetricSpec:
    """One metric as declared in ``track.yaml``."""

    name: str
    description: str
    higher_is_better: bool
    bounds: tuple[float, float]
    version: str

    def normalize(self, raw: float) -> float:
        """Map ``raw`` linearly from ``bounds`` onto ``[0, 1]`` (clipped), 1 = best."""
        lo, hi = self.bounds
        if math.isnan(raw):
            raise ValueError(f"{self.name}: cannot normalise NaN")
        if math.isinf(raw):
            x = 1.0 if raw > 0 else 0.0
        else:
            x = min(1.0, max(0.0, (raw - lo) / (hi - lo)))
        return x if self.higher_is_better else 1.0 - x

    def value(self, raw: float, details: dict[str, Any] | None = None) -> MetricValue:
        """A ``status="ok"`` :class:`MetricValue` with ``normalized`` from the declared bounds."""
        return MetricValue(self.name, float(raw), self.normalize(float(raw)), self.higher_is_better,
                           self.version, dict(details or {}))

    def not_applicable(self, reason: str) -> MetricValue:
        return MetricValue.not_applicable(self.name, reason, version=self.version, higher_is_better=self.higher_is_better)

    def failed(self, reason: str, details: dict[str, Any] | None = None) -> MetricValue:
        return MetricValue.failed(self.name, reason, version=self.version, higher_is_better=self.higher_is_better,
                                  details=details)


@dataclass(frozen=True)
class TrackSpec:
    """A parsed ``track.yaml``."""

    name: str
    version: str
    description: str
    metrics: dict[str, MetricSpec]
    weights: dict[str, float] = field(default_factory=dict)

    def __getitem__(self, name: str) -> MetricSpec:
        try:
            return self.metrics[name]
        except KeyError:
            raise KeyError(f"metric {name!r} is not declared in {self.name}/track.yaml; known: {sorted(self.metrics)}") from None


@cache
def load_track_spec(path: str | Path) -> TrackSpec:
    """Parse a ``track.yaml`` (cached per path)."""
    import yaml

    d = yaml.safe_load(Path(path).read_text())
    metrics = {}
    for m in d["metrics"]:
        lo, hi = m["bounds"]
        metrics[m["name"]] = MetricSpec(m["name"], m.get("description", ""), bool(m["higher_is_better"]),
                                        (float(lo), float(hi)), str(m.get("version", "1")))
    weights = {k: float(v) for k, v in ((d.get("score") or {}).get("weights") or {}).items()}
    unknown = sorted(set(weights) - set(metrics))
    if unknown:
        raise ValueError(f"{path}: score weights name undeclared metrics {unknown}")
    return TrackSpec(str(d["name"]), str(d["version"]), str(d.get("description", "")), metrics, weights)
