"""Acceptance on the scenario package's MuJoCo fly-through: recovered poses are accurate."""

from __future__ import annotations

import numpy as np


def test_flythrough_room_poses_within_two_percent(tmp_path):
    from tracks.geometry.sfm import recover_cameras
    from tracks.geometry.trajectory import path_length, trajectory_errors
    from worldolympiad.registries import GENERATORS

    gen = GENERATORS.get("flythrough.room")
    case = gen.make_case("geo_acc", seed=1, resolution=(96, 96), num_frames=24)
    video = gen.render(case).video
    rec = recover_cameras(video.frames, np.arange(24), tmp_path, K=case.camera.K)
    assert rec.registration_rate >= 0.9
    r = rec.registered
    err = trajectory_errors(rec.poses[r], case.camera.poses[r])
    assert err.ate_rmse / path_length(case.camera.poses[r]) < 0.02
