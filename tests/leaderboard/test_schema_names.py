"""leaderboard/schema.yaml names only metrics the tracks declare (issue 57: it named a physics main
metric ``pass_rate`` that does not exist; the track declares ``rule_pass_rate``). Names are read
through the TRACKS registry (:meth:`worldolympiad.track.Track.spec`), as the site reads them."""

from __future__ import annotations

from importlib import resources

import yaml

from worldolympiad.registries import TRACKS


def _declared(track: str) -> set[str]:
    spec = TRACKS.get(track).spec()
    assert spec is not None, f"track {track!r} declares no track.yaml"
    return set(spec.metrics)


def test_every_metric_the_schema_names_is_declared_by_its_track():
    raw = yaml.safe_load(resources.files("leaderboard").joinpath("schema.yaml").read_text())
    named = [(t, d["main_metric"], "main_metric") for t, d in raw["tracks"].items()]
    named += [(d["track"], m, "metrics") for m, d in (raw.get("metrics") or {}).items()]
    named += [(c["track"], c["metric"], "metric_columns") for c in raw.get("metric_columns") or []]
    missing = [f"{where}: {track}.{metric}" for track, metric, where in named if metric not in _declared(track)]
    assert not missing, missing


def test_schema_tracks_are_the_registered_tracks():
    raw = yaml.safe_load(resources.files("leaderboard").joinpath("schema.yaml").read_text())
    assert set(raw["tracks"]) <= set(TRACKS.names())
