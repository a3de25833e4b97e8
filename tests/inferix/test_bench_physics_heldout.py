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
