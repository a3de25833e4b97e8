"""Physics v15, continuity v9: a codec's trail behind a fast body before its landing is no jump.

`ct-pentagon-stripes-bands-12fps-tall` after the crf 35 resize (96 x 72): the pentagon falls 7.4 px
a frame, the encoder smears a trail behind it in the frame before it lands (its mask 1.3x its
area, its centroid 2.4 px behind), so that step reads 4.2 px and the landing step 10.8 px. v8
allowed a bounce to reverse a step only as large as the step either side of it, read a 3.2 px
jump (continuity 0.51; the clean video scored 0.26). A bounce may now reverse a step as large as
any within two of it (`continuity.jump_excess`).
"""

from __future__ import annotations

import numpy as np

from tracks.physics.checks.continuity import jump_excess

# the tracker's centroid y of the clean crf 35 video, frames 5-17 (x stays within a pixel)
Y = [26.0, 30.3, 34.9, 39.3, 46.0, 53.4, 57.6, 68.4, 67.9, 64.8, 60.3, 57.2, 56.4]
AREA = [219, 195, 194, 183, 172, 199, 252, 182, 192, 206, 185, 191, 184]


def _path(y: list[float], x: float = 23.5) -> np.ndarray:
    return np.stack([np.full(len(y), x), np.asarray(y, float)], 1)


def test_a_trail_before_a_landing_is_no_jump():
    excess, _ = jump_excess(_path(Y), 1.5, np.asarray(AREA, float), rigid=True)
    assert excess < 0.5, excess  # v8: 3.2 px at the landing (continuity 0.51)


def test_a_teleport_is_still_a_jump():
    y = np.asarray(Y)
    x = np.full(len(y), 23.5)
    x[7:] += 4.5  # a quarter-strength teleport after the 0.75x resize, sideways at the landing
    excess, frame = jump_excess(np.stack([x, y], 1), 1.5, np.asarray(AREA, float), rigid=True)
    assert excess > 2.0 and frame == 7, (excess, frame)
    rest = _path([60.0] * 6 + [64.0] * 6)  # a resting body moved 4 px down
    assert jump_excess(rest, 1.5)[0] > 2.0
