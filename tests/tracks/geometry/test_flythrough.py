"""Acceptance on the scenario package's MuJoCo fly-through: recovered poses are accurate."""

from __future__ import annotations

import numpy as np
import pytest


def test_flythrough_room_poses_within_two_percent(tmp_path):
    import torch  # noqa: F401 - import before MuJoCo's EGL renderer (see bench_geometry.py)

    from worldolympiad.registries import GENERATORS

    if "flythrough.room" not in GENERATORS.names():
        pytest.skip("scenarios' flythrough.room generator is not registered in this checkout")
    from tracks.geometry.sfm import recover_cameras
    from tracks.geometry.trajectory import path_length, trajectory_errors

    gen = GENERATORS.get("flythrough.room")
    case = gen.make_case("geo_acc", seed=1, resolution=(96, 96), num_frames=24)
    video = gen.render(case).video
    rec = recover_cameras(video.frames, np.arange(24), tmp_path, K=case.camera.K)
    assert rec.registration_rate >= 0.9
    r = rec.registered
    err = trajectory_errors(rec.poses[r], case.camera.poses[r])
    assert err.ate_rmse / path_length(case.camera.poses[r]) < 0.02
