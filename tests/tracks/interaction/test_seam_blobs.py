"""A seam that shifts the whole picture of a fixed camera is no motion of an agent found without a window (version 18,
issue 56).

Version 16 moved an Atari agent's search window with the picture (``test_seam_shift.py``); the blob tracker (no colour
known: a robot arm) and the colour tracker without a window (the objects a case names) still read the shifted frames.
The blob tracker took the temporal median of the shifted and unshifted chunks for the background, so the scene's own
texture, a few pixels off in every other chunk, became foreground, and the view no longer looked still: on the tuning
split's robot pick (bench/suites/interaction_tune, itune-pick-s410) ``seam_cut`` 0.5 scored below 1 (direction 0.33,
magnitude error 0.98 against 0.67 / 0.91) and the robot place's 1 below 2 at crf 23. Since version 18 the frames are
moved back onto the first frame's picture (:func:`undo_jumps`) when that leaves a still view, and what a shifted frame
does not show is neither background nor agent (:func:`shown_area`).
"""

from __future__ import annotations

import numpy as np
import pytest

from tracks.interaction.motion import agent_motion, shown_area, undo_jumps
from worldolympiad.types import Chunk, Video

SIZE, CHUNK = 64, 10
# the agent's velocity (px a frame) in each chunk: right, down, left, still
VELOCITIES = [(1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, 0.0)]


def _scene() -> tuple[np.ndarray, np.ndarray, tuple[Chunk, ...]]:
    """A fixed camera on a textured floor (smoothed noise, grey 60-190) and a white 6 x 6 block moving over it (no
    colour given: the blob tracker). Returns the frames, the block's true centres and the chunks."""
    import cv2

    noise = np.random.default_rng(0).uniform(0, 255, (SIZE, SIZE)).astype(np.float32)
    floor = cv2.GaussianBlur(noise, (0, 0), 2.0)
    floor = 60 + 130 * (floor - floor.min()) / (floor.max() - floor.min())
    bg = np.repeat(floor[..., None], 3, axis=2).astype(np.uint8)
    frames, centres = [], []
    pos = np.array([20.0, 20.0])
    for v in VELOCITIES:
        for _ in range(CHUNK):
            f = bg.copy()
            x, y = pos.round().astype(int)
            f[y - 3 : y + 3, x - 3 : x + 3] = 250
            frames.append(f)
            centres.append(pos - 0.5)  # the block covers x - 3 ... x + 2
            pos = pos + np.asarray(v)
    chunks = tuple(Chunk(index=i, frame_start=i * CHUNK, frame_end=(i + 1) * CHUNK) for i in range(len(VELOCITIES)))
    return np.stack(frames), np.array(centres), chunks


def _seam(frames: np.ndarray, chunks: tuple[Chunk, ...], s: float) -> np.ndarray:
    """The scenario library's ``seam_cut``: chunks 1 and 3 shifted sideways by ``s`` x 8 % of the width."""
    from worldolympiad.registries import PERTURBATIONS

    return PERTURBATIONS.get("seam_cut")(Video(frames, 10.0, chunks=chunks), None, s, np.random.default_rng(0),
                                         None).frames


@pytest.fixture(scope="module")
def scene():
    return _scene()


def test_the_blob_tracker_reads_the_agent_not_the_seam(scene):
    frames, centres, chunks = scene
    clean = agent_motion(frames)
    assert clean.tracking == "blobs"
    assert np.nanmax(np.linalg.norm(clean.positions - centres, axis=1)) <= 1.0
    for s in (0.5, 1.0):  # 2.6 and 5.1 px: the block stays in the picture
        m = agent_motion(_seam(frames, chunks, s))
        # on the first frame's picture, in every frame: a seam moves no agent (version 17: 2.5 / 5.5 px off, the
        # shifted chunks read where the seam put them)
        err = np.linalg.norm(m.positions - centres, axis=1)
        assert np.all(err <= 1.0), err.round(1).tolist()
        # and inside every chunk the block moves as it does in the clean video (version 17 read the first chunk's 1 px
        # a frame as 0.73 / 0.55: the median of shifted and unshifted floors left its texture in the foreground)
        for c in chunks:
            inner = slice(c.frame_start, c.frame_end - 1)
            assert np.allclose(m.translation[inner].mean(axis=0), clean.translation[inner].mean(axis=0), atol=0.2 / SIZE)


def test_what_a_shifted_frame_does_not_show_is_left_out(scene):
    frames, _, chunks = scene
    shifted, undone = undo_jumps(_seam(frames, chunks, 1.0))
    assert undone is not None
    assert np.all(undone[:CHUNK] == 0) and np.all(np.abs(undone[CHUNK : 2 * CHUNK, 0] - 5) <= 1)
    shown = shown_area(undone, frames.shape[1:3])
    dx = int(undone[CHUNK, 0])
    # the frame moved left by dx shows nothing in its last dx columns (they repeat its edge)
    assert shown[:CHUNK].all() and not shown[CHUNK, :, SIZE - dx :].any() and shown[CHUNK, :, : SIZE - dx].all()
    # at half the size, a column the resize blends with the repeated edge is left out too
    half = shown_area(undone, frames.shape[1:3], (SIZE // 2, SIZE // 2))
    assert not half[CHUNK, :, (SIZE - dx) // 2 :].any()


def test_a_video_whose_picture_never_jumps_is_read_as_it_is(scene):
    frames, _, _ = scene
    same, undone = undo_jumps(frames)
    assert undone is None and same is frames


def test_a_sprite_over_a_flat_field_is_no_jump_of_the_picture():
    """The whole picture shifted by the sprite's step explains each pair (the sprite maps onto itself, the field onto
    field), but 1 % of the picture changes: no jump to undo (without ``JUMP_SHARE`` the jumps undone held the sprite at
    its first place for the whole walk, and the colour tracker of
    ``test_colour_erased.py::test_a_sprite_that_keeps_its_colour_is_still_tracked_by_colour`` read 14-26 px off)."""
    frames = np.full((30, 48, 24, 3), 142, np.uint8)
    for t in range(30):
        y = 38 - min(t, 20)
        frames[t, y - 1 : y + 2, 10:13] = (252, 252, 84)
    same, undone = undo_jumps(frames)
    assert undone is None and same is frames
    m = agent_motion(frames, {"color": [252, 252, 84], "window": None, "resolution": [48, 24]})
    assert np.allclose(m.positions[:, 1], [38 - min(t, 20) for t in range(30)], atol=0.5)
