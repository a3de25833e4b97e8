"""The geometry track's declared data (``track.yaml``): metric bounds, weights, option defaults."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from worldolympiad.types import MetricValue

TRACK_YAML = Path(__file__).with_name("track.yaml")

#: normalized value given to metrics of a video that cannot be reconstructed (documented in track.yaml)
FAILURE_FLOOR = 0.0


@dataclass(frozen=True)
class MetricSpec:
    name: str
    description: str
    higher_is_better: bool
    bounds: tuple[float, float]
    version: str

    def normalize(self, raw: float) -> float:
        """Map ``raw`` to [0, 1] by the declared bounds (1 = best)."""
        lo, hi = self.bounds
        x = (raw - lo) / (hi - lo)
        x = x if self.higher_is_better else 1.0 - x
        return float(min(1.0, max(0.0, x)))

    def value(self, raw: float, details: dict[str, Any] | None = None) -> MetricValue:
        return MetricValue(self.name, float(raw), self.normalize(raw), self.higher_is_better, self.version, details or {})

    def not_applicable(self, reason: str) -> MetricValue:
        return MetricValue.not_applicable(self.name, reason, version=self.version, higher_is_better=self.higher_is_better)

    def failed(self, reason: str, *, floor: bool = True, details: dict[str, Any] | None = None) -> MetricValue:
        """A failed metric; ``floor`` gives it the lowest normalized score (unreconstructable video)."""
        return MetricValue.failed(self.name, reason, version=self.version, higher_is_better=self.higher_is_better,
                                  normalized=FAILURE_FLOOR if floor else None, details=details)


@dataclass(frozen=True)
class TrackSpec:
    name: str
    version: str
    metrics: dict[str, MetricSpec]
    weights: dict[str, float]
    options: dict[str, Any]


@lru_cache(maxsize=1)
def load_spec() -> TrackSpec:
    import yaml

    d = yaml.safe_load(TRACK_YAML.read_text())
    metrics = {
        m["name"]: MetricSpec(m["name"], m["description"], bool(m["higher_is_better"]),
                              (float(m["bounds"][0]), float(m["bounds"][1])), str(m["version"]))
        for m in d["metrics"]
    }
    return TrackSpec(d["name"], str(d["version"]), metrics, dict(d["score"]["weights"]), dict(d.get("options") or {}))
