"""Model-free OpenCV segmenter against the simulator's exact masks."""

from __future__ import annotations

import numpy as np
import pytest

from tracks.physics.segmentation import OpenCVSegmenter, build_segmenter


def _iou(a, b):
    return (a & b).sum() / max((a | b).sum(), 1)


def test_colour_hints_find_the_ball_in_every_frame_even_at_rest(ball, ball_hints):
    seg = OpenCVSegmenter().segment(ball.frames, ball_hints)
    ious = [_iou(seg.labels[t] > 0, ball.masks[t] > 0) for t in range(len(ball.frames))]
    assert min(ious) > 0.8
    assert all(set(n.values()) == {"ball"} for n in seg.names)


def test_motion_only_finds_moving_ball_without_hints(ball):
    seg = OpenCVSegmenter().segment(ball.frames, ())
    # the ball moves in the first half of the video: motion segmentation must see it there
    ious = [_iou(seg.labels[t] > 0, ball.masks[t] > 0) for t in range(0, 20)]
    assert np.mean(ious) > 0.6


def test_resting_object_leaves_no_ghost(ball, ball_hints):
    # the ball rests at the end: the median background holds it, and its absence elsewhere
    # must not produce a second, phantom object
    seg = OpenCVSegmenter().segment(ball.frames, ball_hints)
    assert max(len(seg.instances(t)) for t in range(len(ball.frames))) == 1


def test_tiny_blobs_are_dropped():
    frames = np.full((4, 64, 64, 3), 200, np.uint8)
    frames[:, 10:11, 10:13] = (255, 0, 0)  # 3 px < 4 px floor
    seg = OpenCVSegmenter().segment(frames, [{"name": "speck", "color": [255, 0, 0]}])
    assert (seg.labels == 0).all()


def test_bad_frames_error_says_how_to_fix():
    with pytest.raises(ValueError, match="uint8 frames"):
        OpenCVSegmenter().segment(np.zeros((2, 8, 8, 3), np.float32))


def test_registry_resolves_opencv_spec():
    assert isinstance(build_segmenter("opencv"), OpenCVSegmenter)
