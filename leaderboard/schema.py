"""The declared leaderboard schema (``schema.yaml``) as typed objects."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class TrackSpec:
    name: str
    display: str
    short: str
    column: str
    description: str
    weight: float
    main_metric: str


@dataclass(frozen=True)
class Schema:
    """What the leaderboard shows and how it combines numbers."""

    version: str
    tracks: dict[str, TrackSpec]
    scenarios: dict[str, dict[str, str]]
    metrics: dict[str, dict[str, Any]]
    overall_display: str
    bootstrap_resamples: int
    bootstrap_confidence: float
    bootstrap_seed: int
    submission: dict[str, Any] = field(default_factory=dict)
    metric_columns: tuple[dict[str, str], ...] = ()
    row_format: tuple[str, ...] = ()

    @property
    def major(self) -> str:
        return self.version.split(".")[0]

    def weights(self) -> dict[str, float]:
        return {n: t.weight for n, t in self.tracks.items()}


def parse_schema(d: dict[str, Any]) -> Schema:
    """Build a :class:`Schema` from the YAML mapping; raises ``ValueError`` naming a bad key."""
    try:
        tracks = {
            name: TrackSpec(
                name=name,
                display=str(t["display"]),
                short=str(t.get("short", t["display"])),
                column=str(t.get("column", t["display"])),
                description=str(t.get("description", "")).strip(),
                weight=float(t.get("weight", 1.0)),
                main_metric=str(t["main_metric"]),
            )
            for name, t in d["tracks"].items()
        }
        boot = d.get("bootstrap", {})
        return Schema(
            version=str(d["schema_version"]),
            tracks=tracks,
            scenarios={k: dict(v) for k, v in (d.get("scenarios") or {}).items()},
            metrics={k: dict(v) for k, v in (d.get("metrics") or {}).items()},
            overall_display=str((d.get("overall") or {}).get("display", "All")),
            bootstrap_resamples=int(boot.get("resamples", 1000)),
            bootstrap_confidence=float(boot.get("confidence", 0.95)),
            bootstrap_seed=int(boot.get("seed", 0)),
            submission=dict(d.get("submission") or {}),
            metric_columns=tuple(dict(c) for c in d.get("metric_columns") or ()),
            row_format=tuple(str(c) for c in d.get("row_format") or ()),
        )
    except KeyError as e:
        raise ValueError(f"leaderboard schema: missing key {e}") from e


@lru_cache(maxsize=4)
def load_schema(path: str | None = None) -> Schema:
    """Load ``leaderboard/schema.yaml`` (or another file)."""
    import yaml

    text = Path(path).read_text() if path else resources.files("leaderboard").joinpath("schema.yaml").read_text()
    return parse_schema(yaml.safe_load(text))
