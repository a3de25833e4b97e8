"""Physics v28 (issue 56, tuned on bench/suites/physics_tune only): a codec's one-frame hold before a landing is no
energy from nowhere.

H.264 repeats a small body's pixels for a frame (a skip block) and then shows it where it has got to. The tracker's
centroids of ``pt-free-fall-20fps-tiny``'s clean render after ``crf35_s0.75`` (72 x 48, 20 fps; ``bench/validity.py``)
nearly hold from frame 7 to 8 and catch up by 0.15 frame heights into the landing, read at frame 8. ``kinetic_gain``
compared the three steps on each side of that frame, so the catch-up, the first step after it, made the steps after
the landing faster than the fall: "a collision added energy (speed² after/before 2.70)", impact 0.62 and the clean
video 0.66 against 1.0 lossless. At a landing the step next to the contact on each side is now left out (a landing
stops the body; its frame is known to a frame); a contact that adds energy speeds up the steps after it, not only the
one across it.
"""

from __future__ import annotations

import numpy as np

from tracks.physics.checks._kinematics import kinetic_gain, landings, speed2d
from tracks.physics.checks.impact import ALLOWED_GAIN, KINETIC_SLACK, contact_events

FPS = 20.0
# the ball's centroid (frame heights): held from frame 7 to 8, landed at 10, at rest after
HELD = [0.3243, 0.3243, 0.3430, 0.3822, 0.4106, 0.4510, 0.4820, 0.5665, 0.5685, 0.7165] + [0.7326] * 30


def _gain(y: list[float], t: int) -> float | None:
    cen = np.stack([np.full(len(y), 0.5), np.asarray(y)], axis=1)
    return kinetic_gain([speed2d(cen, FPS)[1:] ** 2], t, margin=1)


def test_a_codec_hold_before_a_landing_adds_no_energy():
    assert landings(np.asarray(HELD), FPS) == [8]  # the landing is read at the held frame
    gain = _gain(HELD, 8)
    assert gain is not None and gain < ALLOWED_GAIN * KINETIC_SLACK  # v26: 2.70


def test_a_contact_that_speeds_the_body_up_still_adds_energy():
    # the same fall, but from frame 8 the body moves on at 0.17 frame heights a step, faster than it fell
    kicked = HELD[:9] + [0.5685 + 0.17 * k for k in range(1, 4)] + [1.08] * 28
    gain = _gain(kicked, 8)
    assert gain is not None and gain > ALLOWED_GAIN * KINETIC_SLACK


def test_contact_events_leave_out_the_held_step_at_a_landing():
    from tracks.physics.synthetic import track_from_path

    T = len(HELD)
    cen = np.stack([np.full(T, 30.0), np.asarray(HELD) * 48], axis=1)
    track = track_from_path(1, "cyan_ball", cen, np.full(T, 12.0), (48, 72))
    hits, gain = contact_events([track], ["cyan_ball"], T, 48, FPS)
    assert hits == 1 and gain < ALLOWED_GAIN * KINETIC_SLACK  # v26: 2.70
