"""VDE against hand-computed values (REFERENCE.md §B), both weightings and the edge cases."""

from __future__ import annotations

import math

import pytest

from tracks.longvideo.vde import chunk_bounds, normalized_vde, vde_weights, video_drift_error


def test_weights_are_n_minus_i_plus_one_and_their_log():
    assert vde_weights(4, "linear").tolist() == [3.0, 2.0, 1.0]
    assert vde_weights(4, "log").tolist() == pytest.approx([math.log(3), math.log(2), 0.0])


def test_linear_and_log_vde_of_a_four_chunk_example():
    # m = [2, 3, 1, 2]: relative deviations 0.5, 0.5, 0 with weights (3, 2, 1) / (ln3, ln2, ln1).
    m = [2.0, 3.0, 1.0, 2.0]
    assert video_drift_error(m, "linear") == pytest.approx(3 * 0.5 + 2 * 0.5 + 1 * 0.0)
    assert video_drift_error(m, "log") == pytest.approx(math.log(3) * 0.5 + math.log(2) * 0.5)


def test_ten_chunk_linear_ramp_matches_hand_sum():
    # m_i = 1 + 0.1 (i - 1): deviation 0.1 k for k = i - 1 = 1..9, weight 10 - k.
    m = [1 + 0.1 * k for k in range(10)]
    # linear: 0.1 * sum k (10 - k) = 0.1 * (9 + 16 + 21 + 24 + 25 + 24 + 21 + 16 + 9) = 16.5
    assert video_drift_error(m, "linear") == pytest.approx(16.5)
    # log: 0.1 * (1 ln9 + 2 ln8 + 3 ln7 + 4 ln6 + 5 ln5 + 6 ln4 + 7 ln3 + 8 ln2 + 9 ln1) = 4.89613
    assert video_drift_error(m, "log") == pytest.approx(4.89613, abs=1e-4)


def test_deviation_is_absolute_so_drops_and_rises_count_alike():
    assert video_drift_error([4, 2, 4], "linear") == video_drift_error([4, 6, 4], "linear") == pytest.approx(2 * 0.5)


def test_first_chunk_zero_gives_infinity():
    assert video_drift_error([0.0, 1.0, 2.0], "linear") == math.inf
    assert video_drift_error([0.0, 1.0, 2.0], "log") == math.inf


def test_fewer_than_two_chunks_gives_zero():
    assert video_drift_error([], "linear") == 0.0
    assert video_drift_error([5.0], "log") == 0.0
    assert normalized_vde([5.0]) == 0.0


def test_constant_signal_has_no_drift():
    assert video_drift_error([3.0] * 10) == 0.0
    assert normalized_vde([3.0] * 10) == 0.0


def test_nan_is_an_error_not_a_number():
    with pytest.raises(ValueError, match="NaN"):
        video_drift_error([1.0, float("nan")])


def test_unknown_weighting_is_rejected():
    with pytest.raises(ValueError, match="linear"):
        video_drift_error([1.0, 2.0], "quadratic")  # type: ignore[arg-type]


def test_normalized_vde_hand_value_and_bounds():
    # m = [2, 3, 1, 2]: symmetric deviations 1/5, 1/3, 0 with linear weights 3, 2, 1 (sum 6).
    assert normalized_vde([2.0, 3.0, 1.0, 2.0]) == pytest.approx((3 * 0.2 + 2 / 3) / 6)
    # bounded and maximal when m_1 = 0, and maximal when everything later is zero vs non-zero start.
    assert normalized_vde([0.0, 1.0, 1.0]) == pytest.approx(1.0)
    assert normalized_vde([1.0, 0.0, 0.0]) == pytest.approx(1.0)
    assert 0.0 <= normalized_vde([1.0, 100.0, 0.01, 7.0], "log") <= 1.0


def test_chunk_bounds_drop_the_remainder():
    b = chunk_bounds(105, 10)
    assert b[0] == (0, 10) and b[-1] == (90, 100) and len(b) == 10
    with pytest.raises(ValueError, match="only 7 frames"):
        chunk_bounds(7, 10)


def test_a_signal_that_is_zero_from_the_first_chunk_drifts_maximally_as_vde_is_infinite():
    """A still video's dynamic degree is 0 in every chunk: the published VDE is infinite there, and the
    bounded companion must agree (track v1 counted the pair of zeros as no drift, so a still image got a
    perfect long-video score, above the simulator's own videos)."""
    still = [0.0] * 10
    assert math.isinf(video_drift_error(still)) and math.isinf(video_drift_error(still, "log"))
    assert normalized_vde(still) == 1.0 and normalized_vde(still, "log") == 1.0
    # a tiny but real first-chunk signal is an ordinary ratio again
    assert normalized_vde([1e-6] * 10) == 0.0
