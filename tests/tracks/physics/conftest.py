"""Shared fixtures of the physics-track tests: tiny law-based scenes with exact masks."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="session")
def ball():
    from tracks.physics.synthetic import bouncing_ball

    return bouncing_ball(T=48, H=64, W=64)


@pytest.fixture(scope="session")
def ball_hints(ball):
    return ball.object_hints()


@pytest.fixture(scope="session")
def analyse_scene():
    """scene -> tracks with the default OpenCV segmenter and the scene's colour hints."""
    from tracks.physics.segmentation import OpenCVSegmenter
    from tracks.physics.tracking import track_objects

    seg = OpenCVSegmenter()

    def run(scene, hints):
        return track_objects(scene.frames, seg.segment(scene.frames, hints))

    return run
