"""Acceptance on the scenario package's MuJoCo fly-through: recovered poses are accurate."""

from __future__ import annotations

import numpy as np


def test_flythrough_room_poses_within_two_percent(tmp_path, recovered_trajectory):
    from worldolympiad.registries import GENERATORS

    gen = GENERATORS.get("flythrough.room")
    case = gen.make_case("geo_acc", seed=1, resolution=(96, 96), num_frames=24)
    video = gen.render(case).video
    rate, ate = recovered_trajectory(video.frames, np.arange(24), tmp_path, case.camera.K, case.camera.poses)
    assert rate >= 0.9
    assert ate < 0.02
