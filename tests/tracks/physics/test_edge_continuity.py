"""Continuity of a body reaching in from the frame's edge (physics v26, continuity v12).

A press hanging from the top edge touches the border in every frame, so it never has a whole sighting and
continuity gave it no path: on the `hardness` cases its sideways `teleport` passed (3 of 8 caught at
strength 0.5, through permanence only). Along the side it hangs from its centroid is its own (the cut
moves only the other coordinate), and that is what continuity now judges.
"""

from __future__ import annotations

import numpy as np

from tracks.physics.checks import CheckInput, run_check
from tracks.physics.checks.continuity import edge_path
from tracks.physics.segmentation import OpenCVSegmenter
from tracks.physics.tracking import track_objects

GREY, DARK, STEEL = (200, 200, 195), (60, 60, 70), (150, 155, 165)


def _press(T: int = 24, H: int = 64, W: int = 64, *, jump_at: int | None = None, jump_px: int = 12,
           block: bool = False, x0: int = 20) -> np.ndarray:
    """A press hanging from the top edge that comes down (and stops on a block below it when ``block``);
    from ``jump_at`` on it is ``jump_px`` further right."""
    frames = np.empty((T, H, W, 3), np.uint8)
    frames[:] = GREY
    for t in range(T):
        x = x0 + (jump_px if jump_at is not None and t >= jump_at else 0)
        bottom = min(30 + t, 40) if block else 30 + t // 2
        if block:
            frames[t, 40:50, 19:33] = STEEL  # the press stops on it and touches it from frame 10 on
        frames[t, 0:bottom, x + 3 : x + 7] = DARK  # the shaft, cut by the top edge
        frames[t, bottom - 4 : bottom, x : x + 10] = DARK  # the head
    return frames


def _continuity(frames: np.ndarray, block: bool = False):
    hints = [{"name": "press", "color": list(DARK), "rigid": True, "role": "context"}]
    if block:  # a still body is found where the case's first-frame box says it is
        hints.append({"name": "steel_block", "color": list(STEEL), "rigid": True, "role": "context",
                      "box": [19, 40, 33, 50]})
    tracks = track_objects(frames, OpenCVSegmenter().segment(frames, hints))
    return run_check("continuity", CheckInput(tracks, frames, 12.0, "hardness", objects=hints)), tracks


def test_a_hanging_press_that_jumps_sideways_breaks_continuity():
    clean, tracks = _continuity(_press())
    assert clean.status == "pass" and clean.measured["objects"]["press"]["along_edge"] == "top"
    jumped, _ = _continuity(_press(jump_at=12))
    assert jumped.status == "fail" and jumped.measured["objects"]["press"]["frame"] == 12  # v25: no path, a pass
    assert jumped.score < 0.2


def test_a_press_touching_what_it_presses_is_still_judged_along_its_edge():
    clean, tracks = _continuity(_press(block=True), block=True)
    press = next(tr for tr in tracks if tr.name == "press")
    assert press.touching_mask[12:].all() and not press.touching_mask[:8].any()  # on the block from frame 10
    assert clean.status == "pass", clean.measured
    jumped, _ = _continuity(_press(block=True, jump_at=16), block=True)
    assert jumped.status == "fail" and jumped.measured["objects"]["press"]["frame"] == 16


def test_only_a_body_touching_one_side_in_every_sighting_gets_an_edge_path():
    _, tracks = _continuity(_press())
    axis, alone, near, side = edge_path(next(tr for tr in tracks if tr.name == "press"))
    assert (axis, side) == (0, "top") and alone.all() and not near.any()
    _, corner = _continuity(_press(x0=0))  # against the top-left corner: both coordinates are cut
    assert edge_path(next(tr for tr in corner if tr.name == "press")) is None
