"""Continuity v7: a body half found in one frame does not hide a jump.

At crf 35 after a 0.75x resize, the collision tuning case's orange ball was found whole (50 px)
before its teleport and only in part (22 px) in the frame it reappeared, 36 px to the side; v6
left out every step across which the area broke from its trend, so the jump went unseen and the
teleport scored as the clean video. The half-found sighting is now dropped and the path links
the whole sightings either side of it.
"""

from __future__ import annotations

import numpy as np

from tracks.physics.checks.continuity import jump_excess, partial_sightings


def _rolling(T: int = 12, jump_at: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    x = 10.0 + 2.0 * np.arange(T)
    if jump_at is not None:
        x[jump_at:] += 36.0
    cen = np.stack([x, np.full(T, 40.0)], 1) / 84.0
    return cen, np.full(T, 50.0)


def test_a_teleport_whose_first_sighting_is_half_found_is_still_a_jump():
    cen, area = _rolling(jump_at=6)
    area[6] = 22.0  # the reappearing body is half found in that one frame
    excess, at = jump_excess(cen, 0.02, area)
    assert excess > 0.1 and at == 7, (excess, at)  # v6: 0.0, None


def test_a_half_found_frame_on_a_smooth_path_is_no_jump():
    cen, area = _rolling()
    area[6] = 22.0
    cen[6, 0] += 3.0 / 84  # its centroid is biased toward the part that was found
    assert jump_excess(cen, 0.02, area) == (0.0, None)


def test_only_isolated_breaks_are_partial():
    assert partial_sightings(np.array([50, 50, 22, 52, 50.0]), 1.5).tolist() == [False, False, True, False, False]
    # a split that lasts (a melting body breaking in two) keeps its new area: nothing dropped
    assert not partial_sightings(np.array([50, 50, 22, 22, 22.0]), 1.5).any()
