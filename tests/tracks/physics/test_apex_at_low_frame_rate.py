"""Physics v20 (issue 56, tuned on bench/suites/physics_tune and cartoon_tune only): a low-frame-rate
throw's apex is no rebound off a ceiling.

An up-then-down turn is what gravity does by itself at an apex, and across a plateau of p frames (the
codec held the body, or the apex fell between frames) it changes the vertical velocity by p + 1 frames'
worth of gravity. v18-v19 called such a turn sharp, a rebound off something above, once its velocity jump
exceeded 3x one frame's worth: ``pt-projectile-18fps-checker-plate`` in H.264 crf 23, an ordinary mp4,
read "rebounds downward off nothing 1 time(s)" and its clean video scored 0.575 (lossless 1.0). From v20
the jump is compared with gravity over the steps the turn spans; a down-then-up turn, which gravity never
makes, is judged as before.
"""

from __future__ import annotations

import numpy as np

from tracks.physics.checks import CheckInput, run_check
from tracks.physics.checks._kinematics import bounces
from tracks.physics.synthetic import track_from_path
from tracks.physics.tracking import ObjectTrack

# pt-projectile-18fps-checker-plate, crf23 (160 x 96, 18 fps): the tracker's centroids of the green plate,
# thrown up to its apex at frames 4-5 (55.6, 55.6: held a frame), landing at frame 11, sliding out of view
PLATE = [(43.2, 65.3), (47.5, 61.5), (51.5, 59.4), (56.0, 57.1), (59.2, 55.6), (63.3, 55.6), (66.8, 57.5),
         (71.2, 60.0), (75.1, 62.4), (79.5, 66.5), (83.5, 71.2), (88.2, 74.9), (92.4, 74.7), (95.9, 74.9),
         (100.2, 74.8), (103.4, 74.6), (108.1, 74.4), (112.3, 74.5), (116.0, 74.6), (120.3, 74.6), (124.3, 74.6),
         (129.1, 75.1), (132.8, 75.0), (136.2, 75.1), (139.9, 74.8), (143.5, 74.4), (147.1, 74.9)]
PLATE_AREA = [68, 61, 62, 74, 59, 60, 54, 75, 77, 92, 93, 90, 85, 104, 84, 94, 85, 82, 69, 78, 76, 100, 98, 107, 96,
              120, 93]


def _track(cen: np.ndarray, area: np.ndarray, H: int, W: int) -> ObjectTrack:
    return track_from_path(1, "green_plate", cen, area, (H, W))


def _plate(T: int = 36) -> tuple[np.ndarray, np.ndarray]:
    cen = np.full((T, 2), np.nan)
    area = np.full(T, np.nan)
    cen[: len(PLATE)] = PLATE
    area[: len(PLATE)] = PLATE_AREA
    return cen, area


def _impact(cen: np.ndarray, area: np.ndarray, H: int, W: int, fps: float):
    tr = _track(cen, area, H, W)
    return run_check("impact", CheckInput([tr], np.zeros((len(cen), H, W, 3), np.uint8), fps, "impact"))


def test_a_throws_apex_held_a_frame_at_18_fps_is_no_rebound_off_the_ceiling():
    cen, area = _plate()
    y = cen[:, 1] / 96
    assert bounces(y, 18.0, direction=-1) == []  # v18-v19: [(4, 5)]
    res = _impact(cen, area, 96, 160, 18.0)
    assert res.measured["ceiling_bounces"] == 0 and res.status == "pass", res  # v18-v19: fail, 0.3


def test_a_mirrored_bounce_held_a_frame_at_its_turn_still_rebounds_off_nothing():
    """The same 18 fps clip's vertical motion mirrored about frame 11 (the landing): the plate rises,
    speeding up, to a turn at full speed, one frame held there, and leaves it downward at speed."""
    fall = np.array([p[1] for p in PLATE[4:12]])  # apex -> landing, speeding up
    up = fall[0] - (fall - fall[0])  # mirrored: rising, speeding up, 55.6 -> 36.3
    y = np.r_[up, up[-1], up[::-1][1:]]  # rise to the top, held a frame, fall back
    cen = np.full((36, 2), np.nan)
    cen[: len(y), 0] = np.linspace(43, 150, len(y))
    cen[: len(y), 1] = y
    area = np.where(np.isfinite(cen[:, 0]), 80.0, np.nan)
    assert len(bounces(cen[:, 1] / 96, 18.0, direction=-1)) == 1
    res = _impact(cen, area, 96, 160, 18.0)
    assert res.measured["ceiling_bounces"] == 1 and res.status == "fail", res
