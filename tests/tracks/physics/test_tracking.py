"""Tracker on simulator masks: identities through a crossing, occlusion vs vanishing."""

from __future__ import annotations

import numpy as np

from tracks.physics.synthetic import crossing_balls
from tracks.physics.tracking import MISSING, OCCLUDED, VISIBLE, track_objects


def _by_name(tracks):
    return {t.name: t for t in tracks}


def test_identities_kept_through_a_crossing_without_names():
    scene = crossing_balls(T=32, H=48, W=64)
    seg = scene.segmentation()
    seg.names = [{} for _ in seg.names]  # no name hints: identity must come from motion + colour
    tracks = track_objects(scene.frames, seg)
    long = [t for t in tracks if t.visible.sum() >= 20]
    assert len(long) == 2, [t.summary() for t in tracks]
    for t in long:
        xs = t.centroid[t.visible, 0]
        # each track moves monotonically in one direction: it never swapped to the other ball
        d = np.diff(xs)
        assert (d > -0.5).all() or (d < 0.5).all()
        col = t.color[t.visible]
        assert np.ptp(col, axis=0).max() < 1.0  # one colour all along: one object


def test_occluded_frames_are_occluded_not_missing():
    scene = crossing_balls(T=32, H=48, W=64, occluder=True)
    tracks = _by_name(track_objects(scene.frames, scene.segmentation()))
    for name in ("red", "blue"):
        t = tracks[name]
        hidden = [s for s in t.state[t.first : t.last + 1] if s != VISIBLE]
        assert hidden, f"{name} should pass behind the pillar"
        assert all(s == OCCLUDED for s in hidden), t.state
        assert t.count(MISSING) == 0
    # exactly one track per object: the ball that re-emerges is the same track
    assert sorted(tracks) == ["blue", "pillar", "red"]


def test_erased_object_is_missing():
    scene = crossing_balls(T=32, H=48, W=64)
    masks = scene.masks.copy()
    masks[10:20][masks[10:20] == 1] = 0  # red vanishes in the open for 10 frames
    scene.masks = masks
    t = _by_name(track_objects(scene.frames, scene.segmentation()))["red"]
    assert t.count(MISSING) == 10
    assert t.count(OCCLUDED) == 0
