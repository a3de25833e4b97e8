"""Physics v21 (issue 56, tuned on bench/suites/physics_tune and cartoon_tune only): a body that rises and
stops for good in mid-air hit nothing, and a smooth turn seen between two gaps is no contact.

``gravity_reversed`` at full strength mirrors a throw: the ball rises faster and faster, stops dead where
its landing was, and slides on along nothing. v20's ``impact`` counted that stop as the collision the rule
demands and passed it, so the strongest defect (gravity 0, impact 1: 0.5) outscored the weaker mirrored
videos whose turns it did see (about 0). From v21 a rise that stops and stays up for
:data:`~tracks.physics.checks.impact.STUCK_FRAMES` frames is a stop against nothing above: no collision, and
a failure where the video has collisions too. A mirrored bounce that leaves the frame at the top comes back
into view for a few frames around its turn; with no step seen around them, v20 compared their velocity
changes with no change at all and read the smooth turn as a contact. The arrays are the tracker's
centroids on tuning-split renders (lossless).
"""

from __future__ import annotations

import numpy as np

from tracks.physics.checks import CheckInput, run_check
from tracks.physics.checks._kinematics import collisions, fill_single_gaps
from tracks.physics.checks.impact import STUCK_FRAMES, ceiling_stops
from tracks.physics.synthetic import track_from_path

# pt-projectile-15fps-far.gravity_reversed-1 (160 x 96, 15 fps): the thrown ball mirrored; it stops rising at
# frame 9-10 and slides on at one height to the clip's end
MIRRORED_THROW = [(49.2, 62.6), (52.5, 67.0), (55.9, 70.5), (59.4, 72.9), (62.6, 73.9), (66.3, 73.5), (69.7, 72.2),
                  (73.0, 69.5), (76.4, 65.9), (79.8, 60.7), (83.2, 57.1), (86.6, 56.9), (90.0, 56.8), (93.4, 56.9),
                  (96.8, 56.7), (100.3, 56.5), (103.5, 56.8), (107.1, 56.9), (110.4, 56.9), (113.9, 56.8), (117.4, 56.9),
                  (120.5, 56.8), (124.2, 56.4), (127.5, 56.8), (130.9, 56.8), (134.2, 56.9), (137.7, 56.8), (141.0, 56.8),
                  (144.4, 56.8), (147.9, 56.8), (151.4, 56.8), None]
# pt-projectile-25fps-small-ball (192 x 144, 25 fps), clean: thrown up, a slow apex at frames 6-9, landing at 17
THROW = [(42.2, 97.8), (47.1, 92.8), (51.9, 88.5), (56.7, 85.1), (61.5, 82.1), (66.3, 80.2), (71.0, 79.0), (75.9, 78.5),
         (80.6, 78.6), (85.5, 79.7), (90.1, 81.5), (95.0, 84.0), (99.6, 87.0), (104.5, 91.1), (109.5, 95.9),
         (114.2, 101.4), (118.9, 107.7), (123.7, 110.3), (128.5, 110.1), (133.4, 110.8), (138.4, 110.6), (143.1, 110.6),
         (147.7, 110.6), (152.6, 110.6), (157.6, 110.6), (162.3, 110.6), (166.9, 110.5), (171.5, 110.7), (176.2, 110.7),
         (181.0, 110.6), (186.0, 110.6)] + [None] * 17
# pt-bounce-24fps-silver-plate (160 x 128, 24 fps), clean: its last five sightings are a still patch of grey floor
# above the floor line, taken for the plate (it "rises" 98.5 -> 88 and stays for the clip's last 4 frames)
PLATE = [(63.4, 53.5), (63.5, 54.0), (63.4, 55.0), (63.5, 57.5), (63.6, 60.5), (63.7, 64.5), (63.7, 69.0), (63.9, 74.5),
         (64.6, 81.1), (63.7, 88.0), (63.5, 97.0), (63.7, 98.5), None, (62.8, 87.2), (63.4, 81.7), (63.1, 77.9),
         (63.9, 75.0), (63.7, 73.0), (63.7, 72.0), (63.8, 71.5), (63.7, 72.0), (63.7, 73.0), (63.9, 75.0), (63.1, 77.9),
         (63.6, 81.7), (62.5, 87.5), None, (63.7, 98.5), (63.6, 98.0), (63.5, 95.5), (64.1, 88.0), (62.8, 87.2),
         (63.2, 84.4), (61.9, 82.5), (61.6, 82.4), (61.9, 82.5), (63.2, 84.4), (62.8, 87.2), (64.1, 88.0), (63.5, 95.5),
         (63.7, 98.5), (63.8, 99.0), (63.5, 96.5), None, (65.2, 88.0), (64.5, 88.0), (64.1, 88.0), (64.6, 88.0)]
# pt-bounce-18fps.gravity_reversed-1 (176 x 120, 18 fps): a mirrored bounce; the ball leaves the frame at the top
# and is back in view for frames 11-19 and 26-30 only, each time around a smooth (mirrored) apex
MIRRORED_BOUNCE = ([(68.6, 39.4), (68.6, 39.1), (68.6, 36.6), (68.5, 32.5), (68.6, 27.0), (68.6, 20.0), (68.6, 10.7)]
                   + [None] * 4
                   + [(68.6, 8.9), (68.6, 15.0), (68.5, 19.5), (68.6, 21.8), (68.5, 23.5), (68.6, 22.9), (68.6, 20.9),
                      (68.6, 17.3), (68.6, 12.3)]
                   + [None] * 6
                   + [(68.6, 9.0), (68.6, 11.3), (68.6, 12.3), (68.6, 12.0), (68.6, 10.1)]
                   + [None] * 14)


def _cen(points: list) -> np.ndarray:
    return np.array([(np.nan, np.nan) if p is None else p for p in points], float)


def _impact(points: list, H: int, W: int, fps: float, area: float = 50.0):
    cen = _cen(points)
    tr = track_from_path(1, "ball", cen, area, (H, W))
    return run_check("impact", CheckInput([tr], np.zeros((len(cen), H, W, 3), np.uint8), fps, "impact"))


def test_a_rise_that_stops_for_good_in_mid_air_is_no_collision():
    y = _cen(MIRRORED_THROW)[:, 1] / 96
    assert ceiling_stops(y, 15.0) == [9]
    res = _impact(MIRRORED_THROW, 96, 160, 15.0)
    # v20: pass, 1.0 ("collisions": 1, the stop itself)
    assert res.status == "fail" and res.score == 0.0, res
    assert res.measured["ceiling_stops"] == 1 and res.measured["collisions"] == 0
    assert "against nothing above" in res.reason


def test_a_throws_slow_apex_is_no_stop_in_mid_air():
    y = _cen(THROW)[:, 1] / 144
    assert ceiling_stops(y, 25.0) == []  # the rise slows to a stop over frames 4-8, then the ball falls 0.2 frames
    res = _impact(THROW, 144, 192, 25.0)
    assert res.status == "pass" and res.measured["ceiling_stops"] == 0, res


def test_a_stop_seen_only_in_the_clips_last_frames_is_too_little_evidence():
    cen = _cen(PLATE)
    seen_after = np.isfinite(cen[43:, 1]).sum()
    assert seen_after < STUCK_FRAMES
    y = fill_single_gaps(cen)[:, 1] / 128
    assert ceiling_stops(y, 24.0) == []


def test_a_smooth_turn_seen_between_two_gaps_is_no_contact():
    cen = _cen(MIRRORED_BOUNCE) / 120
    assert collisions(cen, 18.0) == []  # v20: [28], the apex of the stretch seen at frames 26-30
    res = _impact(MIRRORED_BOUNCE, 120, 176, 18.0, area=191.0)
    # nothing collides in view: v20 passed it on that false contact (1.0)
    assert res.status == "fail" and res.score == 0.0, res
