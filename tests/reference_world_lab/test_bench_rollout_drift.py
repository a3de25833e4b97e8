"""`bench_rollout_drift.py`: the pre-ship check of how far a rollout wanders from its first frame."""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import load_bench


@pytest.fixture(scope="module")
def bench():
    return load_bench("bench_rollout_drift")


def test_a_still_video_does_not_drift_and_the_simulator_drifts_by_its_own_reference(bench, tmp_path):
    """repeat-first-frame's last frame is its first (0); the simulator's rollout drifts exactly as
    much as the reference it is (the ``ref`` column), so the two columns share one yardstick."""
    from worldolympiad.suites import load_suite

    case = next(c for c in load_suite("smoke").cases if c.id == bench.BRIDGE_CASE)
    rows = bench.measure(["repeat-first-frame", "reference"], [case], [0], str(tmp_path))
    still, sim = rows
    assert still["last"] == 0.0 and still["first"] == 0.0
    assert sim["ref"] > 0.5  # the ball moves
    assert sim["last"] == pytest.approx(sim["ref"]) and sim["first"] == 0.0


def test_the_summary_flags_cases_that_drift_the_bridge_bound_beyond_the_simulator(bench):
    """Bounce at 34.9 against the simulator's 2 is flagged; deposition at 54 against its own 54 is not."""
    rows = [
        {"model": "m", "case": bench.BRIDGE_CASE, "ref": 2.0, "last": 34.9, "spread": 4.0},
        {"model": "m", "case": "smoke-thermal-melting", "ref": 8.0, "last": 13.0, "spread": 1.0},
        {"model": "m", "case": "smoke-thermal-deposition", "ref": 54.3, "last": 52.1, "spread": 1.0},
        {"model": "still", "case": bench.BRIDGE_CASE, "ref": 2.0, "last": 0.0, "spread": 0.0},
    ]
    s = bench.summarize(rows)
    assert s["m"]["over_bound"] == [bench.BRIDGE_CASE] and s["m"]["bridge_case"] == 34.9
    assert s["m"]["last_over_ref"] == pytest.approx((34.9 + 13.0 + 52.1) / (2.0 + 8.0 + 54.3))
    assert s["m"]["max_spread"] == 4.0
    assert s["still"]["over_bound"] == [] and s["still"]["last"] == 0.0


def test_frames_of_different_shapes_are_an_error(bench):
    with pytest.raises(ValueError, match="shape"):
        bench.frame_error(np.zeros((4, 4, 3), np.uint8), np.zeros((8, 8, 3), np.uint8))
