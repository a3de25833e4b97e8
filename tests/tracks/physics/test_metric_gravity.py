"""Physics v11: a fall is compared with g where the case declares the body's size.

Without a metric scale a weaker gravity looks like a farther camera, so `gravity_reversed` at
strength 0.34 (vertical motion scaled by 0.32: a parabola at a third of g) passed the gravity
check with 1.0 on every tuning case (`validity_tuning_s50_physics`: 10 of 16 cases, lossless).
Mechanics cases now declare each body's ``size_m``; the body's metres per pixel follow from its
silhouette (a convex body's orientation-averaged projected area is a quarter of its surface), and
the fall reads in m/s² (a moving case camera turns this off; a static one's focal length gives the
depth for the evidence).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tracks.physics.checks import CheckInput, run_check
from tracks.physics.checks.gravity import G_LOW, mean_projected_area
from tracks.physics.segmentation import OpenCVSegmenter
from tracks.physics.track import case_focal
from tracks.physics.tracking import track_objects
from worldolympiad.types import CameraSpec, Case


def test_mean_projected_area_is_a_quarter_of_the_surface():
    assert mean_projected_area([0.2]) == pytest.approx(math.pi * 0.01)  # a sphere's disc, any view
    assert mean_projected_area([0.2, 0.2, 0.2]) == pytest.approx(6 * 0.04 / 4)  # a cube: 6 faces / 4
    assert mean_projected_area([0.2, 0.1]) == pytest.approx((2 * math.pi * 0.01 + 2 * math.pi * 0.1 * 0.1) / 4)
    assert mean_projected_area([0.1, 0.2, 0.3, 0.4]) is None
    assert mean_projected_area(["a"]) is None
    assert mean_projected_area([0.0]) is None


def _case(poses: list[np.ndarray] | None) -> Case:
    K = np.array([[80.0, 0, 47.5], [0, 80.0, 31.5], [0, 0, 1]])
    cam = None if poses is None else CameraSpec.from_arrays(K, np.stack(poses))
    return Case(id="c", scenario="realworld", fps=10.0, num_frames=len(poses or [0, 0]), resolution=(64, 96),
                prompt="a ball falls", camera=cam)


def test_focal_is_scaled_to_the_video_and_refused_for_a_moving_camera():
    from tracks.physics.track import case_camera_moves

    still = _case([np.eye(4), np.eye(4)])
    assert case_focal(still, 64) == pytest.approx(80.0)
    assert case_focal(still, 48) == pytest.approx(60.0)  # a 0.75x resize
    moved = np.eye(4)
    moved[0, 3] = 0.5
    assert case_focal(_case([np.eye(4), moved]), 64) is None
    assert case_camera_moves(_case([np.eye(4), moved])) and not case_camera_moves(still)
    assert case_focal(_case(None), 64) is None and not case_camera_moves(_case(None))


@pytest.fixture(scope="module")
def fall():
    from scenarios.perturb import table
    from worldolympiad.registries import GENERATORS

    gen = GENERATORS.get("mechanics.free_fall")
    case = gen.make_case("metric-fall", seed=3, resolution=(96, 128), num_frames=32, fps=20, num_chunks=2)
    rendered = gen.render(case)
    weak = table()["gravity_reversed"].fn(rendered.video, case, 0.34, rendered=rendered)
    return case, rendered.video, weak


def _gravity(case: Case, frames: np.ndarray, fps: float, *, focal: float | None, sized: bool = True,
             moving: bool = False):
    hints = [dict(o) for o in case.physics.objects]
    if not sized:
        hints = [{k: v for k, v in h.items() if k != "size_m"} for h in hints]
    seg = OpenCVSegmenter().segment(frames, hints)
    tracks = track_objects(frames, seg)
    return run_check("gravity", CheckInput(tracks, frames, fps, "gravity", objects=hints, noise=seg.noise, focal=focal,
                                           camera_moves=moving))


def test_mechanics_cases_declare_each_bodys_size_in_metres(fall):
    case, _, _ = fall
    (ball,) = case.physics.objects
    assert ball["shape"] == "sphere" and len(ball["size_m"]) == 1 and 0.05 < ball["size_m"][0] < 1.0
    assert case_focal(case, 96) == pytest.approx(case.camera.K[1, 1])


def test_a_fall_at_a_third_of_g_fails_where_the_case_gives_a_size(fall):
    case, clean, weak = fall
    focal = case_focal(case, clean.frames.shape[1])
    good = _gravity(case, clean.frames, clean.fps, focal=focal)
    assert good.status == "pass" and good.score == 1.0, good
    assert 0.85 <= good.measured["metric"]["g_ratio"] <= 1.2, good.measured  # the render falls at g
    # the depth the size implies is the camera's distance to the ball (3-4 m in these scenes)
    assert 2.5 < good.measured["metric"]["depth_m"] < 5.0, good.measured
    slow = _gravity(case, weak.frames, weak.fps, focal=focal)
    assert slow.status == "fail" and slow.measured["metric"]["g_ratio"] < G_LOW, slow.measured
    assert slow.score < 0.5 * good.score and "g for the size the case declares" in slow.reason
    # Without the size the same slow fall is a clean (if short) parabola: the metric part is what sees it.
    blind = _gravity(case, weak.frames, weak.fps, focal=focal, sized=False)
    assert "skipped" in blind.measured["metric"] and blind.score > 2 * slow.score, (blind, slow)


def test_the_size_alone_scales_the_fall_but_a_moving_camera_does_not(fall):
    case, clean, weak = fall
    focal = case_focal(case, clean.frames.shape[1])
    with_camera = _gravity(case, weak.frames, weak.fps, focal=focal).measured["metric"]
    without = _gravity(case, weak.frames, weak.fps, focal=None).measured["metric"]
    assert without["g_ratio"] == with_camera["g_ratio"] and "depth_m" not in without  # metres per pixel need no focal
    moving = _gravity(case, weak.frames, weak.fps, focal=None, moving=True).measured["metric"]
    assert "camera moves" in moving["skipped"]
