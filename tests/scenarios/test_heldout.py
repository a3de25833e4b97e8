"""The held-out split (``scenarios/heldout``): kept apart from the tuning split, and its generators exact."""

from __future__ import annotations

import os

import numpy as np
import pytest

from scenarios.heldout import splits


def test_no_heldout_setting_is_in_the_tuning_split():
    assert splits.overlap() == []
    assert len(splits.split_entries("heldout")) >= 15


def test_overlap_catches_a_heldout_setting_copied_into_a_tuning_suite(tmp_path, monkeypatch):
    """The guard itself: copy one held-out entry into a (temporary) tuning suite and it must be reported."""
    import yaml

    entry = splits.split_entries("heldout")[0]
    fake = tmp_path / "tuning_copy"
    fake.mkdir()
    (fake / "x.yaml").write_text(yaml.safe_dump({"cases": [{"id": "copied", "generator": entry.generator,
                                                            "seed": entry.seed + 100, "params": entry.params}]}))
    monkeypatch.setitem(splits.SPLITS, "tuning", (*splits.SPLITS["tuning"], fake))
    problems = splits.overlap()
    assert any("held-out setting also in the tuning split" in p and entry.source in p for p in problems)


def test_a_tuning_suite_may_not_use_a_heldout_generator(tmp_path, monkeypatch):
    fake = tmp_path / "t"
    fake.mkdir()
    (fake / "x.yaml").write_text("cases:\n- {id: a, generator: heldout.photo_camera, seed: 0, params: {}}\n")
    monkeypatch.setitem(splits.SPLITS, "tuning", (fake,))
    assert any("uses held-out generator heldout.photo_camera" in p for p in splits.overlap())


def test_tuning_split_names_the_shipped_suites():
    names = {p.name for p in splits.SPLITS["tuning"]}
    assert {"smoke", "standard", "gaming_tune"} <= names
    assert os.path.commonpath([str(p) for p in splits.SPLITS["heldout"]]).endswith("heldout")


def test_shape_drop_follows_its_law():
    from scenarios.heldout.shapes import SHAPE_DROP

    case = SHAPE_DROP.make_case("s", seed=0, resolution=[96, 128], num_frames=40, fps=20, shape="cross",
                                color=[0, 160, 150], texture="checker", restitution=0.6)
    r = SHAPE_DROP.render(case)
    assert r.video.frames.shape == (40, 96, 128, 3) and r.masks.shape == (40, 96, 128)
    y = np.array(case.physics.ground_truth["objects"]["cross"]["position_px"])[:, 1]
    g = case.physics.ground_truth["gravity_px_per_s2"]
    # before the first contact the centre falls with constant acceleration g
    t = np.arange(8) / 20.0
    assert np.allclose(y[:8], y[0] + 0.5 * g * t**2, atol=1e-3)
    # the mask's centroid follows the ground truth to a pixel
    cy = np.array([np.nonzero(m)[0].mean() for m in r.masks])
    assert np.abs(cy - y).max() < 1.0
    # object colour as declared, and contacts where the rules say
    assert tuple(r.video.frames[0][r.masks[0] > 0].mean(0).round()) == pytest.approx((0, 160, 150), abs=3)
    assert case.physics.rules == ("gravity", "impact")


def test_photo_camera_turning_left_moves_the_picture_right_and_forward_enlarges_it():
    from scenarios.heldout.photo import PHOTO_CAMERA
    from tracks.interaction.flow import FlowEstimator, to_gray

    case = PHOTO_CAMERA.make_case("p", seed=0, resolution=[64, 96], num_frames=20, fps=10, num_chunks=2,
                                  photo="chelsea", motions=["yaw_left", "forward"], yaw_deg=20, forward_m=0.3)
    assert case.chunks[0].action["yaw_deg"] > 0 and case.chunks[1].action["translation"][2] > 0
    frames = PHOTO_CAMERA.render(case).video.frames
    g = to_gray(frames)
    flow = FlowEstimator()
    assert flow(g[2], g[3])[..., 0].mean() > 0.5  # a[y, x] ~ b[y + dy, x + dx]: the content moved right
    f = flow(g[14], g[15])
    # forward: the picture expands from the centre, so flow points outward (left half left, right half right)
    W = g.shape[2]
    assert f[:, : W // 3, 0].mean() < -0.1 and f[:, -W // 3:, 0].mean() > 0.1
