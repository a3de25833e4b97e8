"""Shared tiny fly-through data for the geometry tests (64 px, 24 frames, exact poses)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="session")
def flythrough():
    from tracks.geometry.synthetic import fly_through

    return fly_through(num_frames=24, height=64, width=64, seed=0)


@pytest.fixture(scope="session")
def flythrough_case(flythrough):
    from worldolympiad.types import CameraSpec, Case

    return Case(id="geo_ft", scenario="realworld", fps=8.0, num_frames=24, resolution=(64, 64),
                camera=CameraSpec.from_arrays(flythrough.K, flythrough.poses), tracks=("geometry",))


def _evaluate(video, case, tmp_path, **options):
    from tracks.geometry.track import GeometryTrack
    from worldolympiad.track import EvalContext

    ctx = EvalContext(work_dir=tmp_path, options={f"geometry.{k}": v for k, v in options.items()})
    return GeometryTrack().evaluate(video, case, ctx), ctx


@pytest.fixture(scope="session")
def reference_result(flythrough, flythrough_case, tmp_path_factory):
    from worldolympiad.types import Video

    return _evaluate(Video(flythrough.frames, 8.0), flythrough_case, tmp_path_factory.mktemp("ref"))


@pytest.fixture(scope="session")
def evaluate():
    """``evaluate(video, case, work_dir, **geometry_options) -> (TrackOutput, EvalContext)``."""
    return _evaluate


def _recovered_trajectory(frames, idx, work_dir, K, poses, masks=None):
    """SfM on ``frames`` against their exact ``poses``: ``(registration rate, ATE RMSE / path length)``."""
    from tracks.geometry.sfm import recover_cameras
    from tracks.geometry.trajectory import path_length, trajectory_errors

    rec = recover_cameras(frames, idx, work_dir, K=K, masks=masks)
    r = rec.registered
    err = trajectory_errors(rec.poses[r], poses[r])
    return rec.registration_rate, err.ate_rmse / path_length(poses[r])


@pytest.fixture(scope="session")
def recovered_trajectory():
    """``recovered_trajectory(frames, idx, work_dir, K, poses, masks=None) -> (registration rate, ATE / path)``."""
    return _recovered_trajectory
