"""Every built-in track has a page in docs/tracks/ that keeps up with its track.yaml: it names every
declared metric and option key (in backticks) and says which track version it documents, so a new
metric, a new option or a version bump without its documentation fails here (issue 57 item 6)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from worldolympiad.registries import TRACKS as TRACK_REGISTRY
from worldolympiad.types import TRACKS

DOCS = Path(__file__).resolve().parents[1] / "docs" / "tracks"
VERSION_LINE = re.compile(r"^Documents track version (\S+)\.$", re.MULTILINE)


def _page(name: str) -> str:
    path = DOCS / f"{name}.md"
    assert path.is_file(), f"track {name!r} has no documentation page: write {path}"
    return path.read_text()


@pytest.mark.parametrize("name", TRACKS)
def test_page_documents_the_current_track_version(name):
    spec = TRACK_REGISTRY.get(name).spec()
    found = VERSION_LINE.findall(_page(name))
    assert found == [spec.version], (
        f"docs/tracks/{name}.md documents version {found or 'none'}, track.yaml declares {spec.version}: "
        f"update the page and its line 'Documents track version {spec.version}.'"
    )


@pytest.mark.parametrize("name", TRACKS)
def test_page_names_every_declared_metric_and_option(name):
    spec = TRACK_REGISTRY.get(name).spec()
    text = _page(name)
    missing_metrics = [m for m in spec.metrics if f"`{m}`" not in text]
    missing_options = [k for k in spec.option_specs if f"`{k}`" not in text]
    assert not missing_metrics, f"docs/tracks/{name}.md does not name metrics {missing_metrics}"
    assert not missing_options, f"docs/tracks/{name}.md does not name options {missing_options}"
