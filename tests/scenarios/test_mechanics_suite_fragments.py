"""Suite fragments of helper A's families (mechanics, thermal, material, flythrough) are valid."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from worldolympiad.registries import GENERATORS

SUITES = Path(__file__).resolve().parents[2] / "scenarios" / "suites"
FAMILIES = ("mechanics", "thermal", "material", "flythrough")


def _entries(suite):
    out = []
    for fam in FAMILIES:
        p = SUITES / suite / f"{fam}.yaml"
        if p.exists():
            out += [(fam, e) for e in yaml.safe_load(p.read_text())["cases"]]
    return out


@pytest.mark.parametrize("suite", ["smoke", "physics", "realworld", "standard"])
def test_fragments_name_registered_generators_of_their_family(suite):
    entries = _entries(suite)
    assert entries
    ids = [e["id"] for _, e in entries]
    assert len(ids) == len(set(ids))
    for fam, e in entries:
        assert e["generator"].split(".")[0] == fam and e["generator"] in GENERATORS
        assert {"resolution", "num_frames", "fps"} <= set(e["params"])


def test_smoke_is_tiny_and_covers_every_family():
    entries = _entries("smoke")
    assert {fam for fam, _ in entries} == set(FAMILIES)
    for _, e in entries:
        assert max(e["params"]["resolution"]) <= 64 and e["params"]["num_frames"] <= 32


def test_standard_provides_at_least_80_cases_at_128_to_256_px():
    entries = _entries("standard")
    assert len(entries) >= 80
    for _, e in entries:
        assert min(e["params"]["resolution"]) >= 128 and max(e["params"]["resolution"]) <= 256
    assert len({(e["generator"], e["seed"]) for _, e in entries}) == len(entries)


def test_smoke_cases_build_from_the_fragments():
    for _fam, e in _entries("smoke"):
        case = GENERATORS.get(e["generator"]).make_case(e["id"], seed=e["seed"], **e["params"])
        assert case.num_frames == e["params"]["num_frames"] and list(case.resolution) == e["params"]["resolution"]
