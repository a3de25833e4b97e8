"""`bench_physics_heldout.py`'s case selection: the held-out check of acceptance 3 covers every
generator whose cases smoke's physics mean covers, robotics included."""

from __future__ import annotations

import pytest

from .conftest import load_bench


@pytest.fixture(scope="module")
def bench():
    return load_bench("bench_physics_heldout")


def test_the_heldout_physics_cases_cover_every_physics_generator_of_standard_robotics_included(bench) -> None:
    from worldolympiad.suites import load_suite

    def generators(cases) -> set[str]:
        return {c.metadata["generator"] for c in cases if "physics" in c.tracks}

    held = bench.heldout_cases(1)
    assert {c.metadata["generator"] for c in held} == generators(load_suite("standard").cases)
    assert len(held) == len(generators(held))  # one case each at --per-generator 1
    # smoke's physics mean includes push and pick: before session 38 the robotics ids
    # (robotics-<generator>-s<seed>) did not parse and were silently left out
    assert {"robotics.push", "robotics.pick"} <= generators(held)
    assert generators(load_suite("smoke").cases) <= generators(held)
    assert len(bench.heldout_cases(2)) == 2 * len(held)


def test_skip_and_families_pick_the_later_cases_of_the_named_families_only(bench) -> None:
    first, later = bench.heldout_cases(1), bench.heldout_cases(1, skip=1)
    assert {c.metadata["generator"] for c in later} == {c.metadata["generator"] for c in first}
    assert not {c.id for c in later} & {c.id for c in first}
    assert {c.metadata["seed"] for c in later} == {1}  # each generator's second case, scenario seed 1
    warm = bench.heldout_cases(1, skip=1, families=("thermal", "material"))
    assert {c.metadata["generator"].split(".")[0] for c in warm} == {"thermal", "material"}
    assert len(warm) == 10 and {c.id for c in warm} <= {c.id for c in later}
    with pytest.raises(SystemExit, match="no such physics family"):
        bench.heldout_cases(1, families=("thermals",))
    with pytest.raises(SystemExit, match="--skip"):
        bench.heldout_cases(1, skip=-1)
