"""`bench_reference_world.py --compare`: the paired, chunk-by-chunk change between two bench runs."""

from __future__ import annotations

import json

import pytest

from .conftest import BENCH_DIR, load_bench


@pytest.fixture(scope="module")
def bench():
    return load_bench("bench_reference_world")


def test_paired_change_counts_only_chunks_that_flipped_on_cases_both_runs_scored(bench):
    old = {"p0": [True, False, False, False], "f0": [True, True], "gone": [False]}
    new = {"p0": [True, True, True, True], "f0": [False, True], "added": [True]}
    change = bench.paired_change(old, new, {"p0": "pong", "f0": "freeway"})
    assert change["pong"] == {"chunks": 4, "old": 0.25, "new": 1.0, "gained": 3, "lost": 0, "p": 0.25}
    assert change["freeway"] == {"chunks": 2, "old": 1.0, "new": 0.5, "gained": 0, "lost": 1, "p": 1.0}
    # "gone" and "added" were scored by one run only: not in the paired total
    assert change["all"]["chunks"] == 6 and (change["all"]["gained"], change["all"]["lost"]) == (3, 1)
    assert change["all"]["p"] == pytest.approx(0.625)  # exact two-sided binomial, 3 of 4 discordant
    assert list(change)[-1] == "all"


def test_paired_change_of_identical_runs_is_no_change_with_p_one(bench):
    runs = {"a": [True, False, True]}
    assert bench.paired_change(runs, runs, {"a": "maze"})["all"] == {
        "chunks": 3, "old": 0.667, "new": 0.667, "gained": 0, "lost": 0, "p": 1.0}


def test_paired_change_refuses_cases_rendered_with_different_chunks(bench):
    with pytest.raises(ValueError, match="not the same render"):
        bench.paired_change({"a": [True, True]}, {"a": [True]}, {})


def test_compare_finds_the_trained_model_in_old_json_files_with_or_without_roles(bench):
    per_case = {"a": [True]}
    with_roles = {"roles": {"trained": "inferix:/m"}, "direction": {
        "inferix:/m": {"per_case": per_case}, "inferix:reference-world": {"per_case": {}}}}
    legacy = {"direction": {"inferix:reference-world": {"per_case": per_case},
                            "inferix:reference-world-random": {"per_case": {}}, "repeat-first-frame": {}}}
    assert bench._trained_per_case(with_roles) == per_case
    assert bench._trained_per_case(legacy) == per_case
    with pytest.raises(SystemExit, match="which model was the trained one"):
        bench._trained_per_case({"direction": {"inferix:a": {}, "inferix:b": {}}})


def test_the_shipped_models_record_is_a_comparable_24_case_run(bench):
    """reference_world_lab/records/reference_world_gaming24.json is what `--compare` checks candidates against."""
    record = json.loads((BENCH_DIR.parent / "records" / "reference_world_gaming24.json").read_text())
    per_case = bench._trained_per_case(record)
    assert len(per_case) == 24 and all(len(chunks) == 6 for chunks in per_case.values())
    games = {cid.split("-")[1] for cid in per_case}
    assert games == {"breakout", "freeway", "maze", "pong"}
    change = bench.paired_change(per_case, per_case, {cid: cid.split("-")[1] for cid in per_case})
    assert change["all"]["old"] == pytest.approx(record["direction"]["inferix:reference-world"]["direction_accuracy"], abs=1e-3)
