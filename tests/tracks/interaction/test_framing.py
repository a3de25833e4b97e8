"""Interaction v25: a video that frames the case's scene differently is compared in its own framing
(tracks/interaction/framing.py).

The agent windows (Breakout's paddle rows, Freeway's chicken lane) and named objects' boxes are in the case's
pixels, and the reference is compared pixel for pixel. On smoke's exact references re-framed (bilinear,
``bench/records/user_framing_s65.md``) v24 scored Breakout 0.0 zoomed 0.8x (the paddle left its rows: a still agent)
and Freeway 0.178 moved 10 % of the width sideways (the chicken left its lane).
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from tracks.interaction.framing import reframe_appearance, register, warp_like


def _picture(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (12, 16, 3)).astype(np.uint8)
    return cv2.resize(small, (128, 96), interpolation=cv2.INTER_CUBIC)


def _move(f: np.ndarray, s: float, tx: float, ty: float) -> np.ndarray:
    H, W = f.shape[:2]
    m = cv2.getRotationMatrix2D((W / 2, H / 2), 0, s)
    m[0, 2] += tx * W
    m[1, 2] += ty * H
    return cv2.warpAffine(f, m, (W, H), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)


def test_the_same_picture_and_an_unrelated_one_keep_the_case_framing():
    f = _picture()
    assert register(f, f) is None
    noisy = np.clip(f.astype(int) + np.random.default_rng(1).integers(-6, 7, f.shape), 0, 255).astype(np.uint8)
    assert register(noisy, f) is None  # codec-like noise is no re-framing
    assert register(_picture(7), f) is None  # nothing matches: nothing to map


@pytest.mark.parametrize("s,tx,ty", [(1.0, 0.1, 0.0), (1.0, 0.0, -0.08), (0.8, 0.0, 0.0), (1.25, 0.03, 0.0)])
def test_a_moved_or_zoomed_picture_is_found(s, tx, ty):
    f = _picture()
    found = register(_move(f, s, tx, ty), f)
    assert found is not None and found["scale"] == s
    assert found["shift"] == pytest.approx([tx, ty], abs=0.015)


def test_windows_boxes_and_start_points_move_with_the_picture():
    app = {"color": [1, 2, 3], "window": {"rows": [56, 60], "cols": [2, 62]}, "box": [10, 20, 14, 24],
           "start": [32, 16], "resolution": [64, 64]}
    out = reframe_appearance(app, {"scale": 0.8, "shift": [0.1, 0.0]})
    assert out["window"] == {"rows": [50, 56], "cols": [13, 64]}  # 32 + 0.8 (56 - 32) = 51.2, a pixel of slack
    assert out["box"] == pytest.approx([20.8, 22.4, 24.0, 25.6])
    assert out["start"] == pytest.approx([38.4, 19.2])
    assert app["window"] == {"rows": [56, 60], "cols": [2, 62]}  # the case's appearance is left as it was
    moved = warp_like(_picture()[None], {"scale": 1.0, "shift": [0.1, 0.0]})[0]
    assert register(moved, _picture()) is not None


@pytest.mark.parametrize("case_id,how", [("smoke-gaming-breakout", (0.8, 0.0)), ("smoke-gaming-freeway", (1.0, 0.1))])
def test_a_reframed_reference_scores_about_what_the_framed_one_scores(case_id, how, tmp_path):
    from worldolympiad.evaluator import score_video
    from worldolympiad.models.reference import ReferenceModel
    from worldolympiad.suites import load_suite
    from worldolympiad.video.io import write_video

    case = next(c for c in load_suite("smoke").cases if c.id == case_id)
    ref = ReferenceModel().generate(case)
    s, tx = how
    write_video(tmp_path / "v.mp4", np.stack([_move(f, s, tx, 0.0) for f in ref.frames]), case.fps, lossless=True)
    r = score_video(tmp_path / "v.mp4", case, ["interaction"], work_dir=tmp_path / "w")[0]
    assert r.score is not None and r.score > 0.95, r.score
