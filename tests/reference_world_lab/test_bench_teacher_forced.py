"""`bench_teacher_forced.py`: the per-generator summary, and `--against`'s new / old verdict."""

from __future__ import annotations

import pytest

from .conftest import load_bench


@pytest.fixture(scope="module")
def bench():
    return load_bench("bench_teacher_forced")


def _row(gen: str, copy: float, new: float, old: float | None = None) -> dict:
    row = {"case": f"{gen}-case", "generator": gen, "copy": copy, "x0": {1.0: new}}
    if old is not None:
        row["x0_against"] = {1.0: old}
    return row


def test_generators_average_their_videos_and_new_over_old_is_a_geometric_mean_over_generators(bench):
    rows = [_row("mechanics.bounce", 1.0, 4.0, 8.0), _row("mechanics.bounce", 3.0, 2.0, 4.0),
            _row("robotics.pick", 3.0, 6.0, 3.0)]
    s = bench.summarize(rows, (1.0,))
    bounce = s["mechanics.bounce"]
    assert bounce["videos"] == 2 and bounce["copy"] == 2.0 and bounce["x0"][1.0] == 3.0
    assert bounce["x0_over_copy"][1.0] == 1.5 and bounce["new_over_old"][1.0] == 0.5
    assert s["robotics.pick"]["new_over_old"][1.0] == 2.0
    # twice as good on one generator and twice as bad on the other is no change overall
    assert s["all"]["new_over_old"][1.0] == pytest.approx(1.0)


def test_without_a_second_model_there_is_no_verdict_and_a_still_clip_has_no_copy_ratio(bench):
    s = bench.summarize([_row("thermal.vaporization", 0.003, 2.4)], (1.0,))
    assert s["thermal.vaporization"]["x0_over_copy"][1.0] is None  # not 800x: the block is still
    assert "new_over_old" not in s["thermal.vaporization"] and "all" not in s
