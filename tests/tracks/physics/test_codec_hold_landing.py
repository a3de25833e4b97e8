"""Physics v27 (issue 56, tuned on bench/suites/physics_tune only): a codec's one-frame hold before a landing is no
energy from nowhere.

H.264 repeats a small body's pixels for a frame (a skip block) and then shows it where it has got to. The tracker's
centroids of ``pt-free-fall-20fps-tiny``'s clean render after ``crf35_s0.75`` (72 x 48, 20 fps; ``bench/validity.py``)
hold still from frame 7 to 8 and catch up by 0.15 frame heights into the landing. ``kinetic_gain`` took the mean
squared speed of the three steps on each side of the landing, so the catch-up made the steps after it faster than the
fall: "a collision added energy (speed² after/before 2.70)", impact 0.62 and the clean video 0.66 against 1.0
lossless. The median of each side's steps is robust to one held step; a contact that adds energy speeds up every
step after it.
"""

from __future__ import annotations

import numpy as np

from tracks.physics.checks._kinematics import kinetic_gain, landings, speed2d
from tracks.physics.checks.impact import ALLOWED_GAIN, KINETIC_SLACK

FPS = 20.0
# the ball's centroid (frame heights): held from frame 7 to 8, landed at 10, at rest after
HELD = [0.3243, 0.3243, 0.3430, 0.3822, 0.4106, 0.4510, 0.4820, 0.5665, 0.5685, 0.7165] + [0.7326] * 30


def _gain(y: list[float], t: int) -> float | None:
    cen = np.stack([np.full(len(y), 0.5), np.asarray(y)], axis=1)
    return kinetic_gain([speed2d(cen, FPS)[1:] ** 2], t)


def test_a_codec_hold_before_a_landing_adds_no_energy():
    assert landings(np.asarray(HELD), FPS) == [8]  # the landing is read at the held frame
    gain = _gain(HELD, 8)
    assert gain is not None and gain < ALLOWED_GAIN * KINETIC_SLACK  # v26 (the mean): 2.70


def test_a_contact_that_speeds_the_body_up_still_adds_energy():
    # the same fall, but from frame 8 the body moves on at twice its last speed in every step
    kicked = HELD[:9] + [0.5685 + 0.17 * k for k in range(1, 4)] + [1.08] * 28
    gain = _gain(kicked, 8)
    assert gain is not None and gain > ALLOWED_GAIN * KINETIC_SLACK
