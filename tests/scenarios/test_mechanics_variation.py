"""What users' footage has that the project's mechanics scenes lacked (issue 56, tuning split): a busy
wall behind the scene, other floors, boxes and flat plates instead of balls, colours near the
background. Each is an optional param; left out, a case renders exactly as before."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("MUJOCO_GL", "egl")

from worldolympiad.registries import GENERATORS  # noqa: E402

BASE = {"resolution": [48, 64], "num_frames": 6, "fps": 24, "num_chunks": 1, "color": "red"}


def _render(name: str, **params):
    g = GENERATORS.get(name)
    case = g.make_case("v", seed=3, **(BASE | params))
    return case, g.render(case)


def test_a_backdrop_and_a_floor_change_the_background_not_the_object():
    _, plain = _render("mechanics.free_fall")
    _, busy = _render("mechanics.free_fall", backdrop="bricks", floor="wood")
    assert np.array_equal(plain.masks, busy.masks)  # the wall is scenery: never in the object masks
    bg = plain.masks == 0
    diff = np.abs(plain.video.frames.astype(int) - busy.video.frames.astype(int)).sum(-1)
    assert (diff[bg] > 30).mean() > 0.5  # most of the background is another picture
    # a busy wall: its pixels vary far more than the plain sky's gradient
    top = busy.video.frames[0, :8].reshape(-1, 3).astype(float)
    assert top.std(0).mean() > 3 * plain.video.frames[0, :8].reshape(-1, 3).astype(float).std(0).mean()


@pytest.mark.parametrize("name", ["mechanics.free_fall", "mechanics.projectile", "mechanics.bounce"])
def test_a_thrown_or_dropped_body_can_be_a_box_or_a_plate(name):
    case, r = _render(name, shape="plate", color="silver")
    obj = case.physics.objects[0]
    assert obj["name"] == "silver_plate" and obj["shape"] == "box"
    assert "silver plate" in case.prompt and "ball" not in case.prompt
    size = r.states["objects"]["silver_plate"]["size"]
    assert size[0] > 3 * size[2]  # wide and low
    ys, xs = np.nonzero(r.masks[0] == 1)
    assert np.ptp(xs) > 2 * np.ptp(ys)  # the camera sees a slab, not a disc
    if name == "mechanics.projectile":
        return  # thrown from a fixed point
    # dropped: it starts as high above the floor as a ball of the same radius would (its bottom, not its centre)
    _, ball = _render(name, color="silver")
    zb = ball.states["objects"]["silver_ball"]["position"][0, 2] - 0.15
    zp = r.states["objects"]["silver_plate"]["position"][0, 2] - size[2]
    assert zb == pytest.approx(zp, abs=1e-9)


def test_unknown_variation_values_are_refused_by_name():
    with pytest.raises(ValueError, match="shape must be one of"):
        _render("mechanics.free_fall", shape="cone")
    with pytest.raises(ValueError, match="backdrop must be one of"):
        _render("mechanics.free_fall", backdrop="jungle")


@pytest.mark.parametrize("texture", ["checker", "patches"])
def test_a_textured_body_keeps_its_masks_and_declared_colour_but_not_one_colour(texture):
    case, plain = _render("mechanics.free_fall", shape="box", radius=0.2)
    tcase, tex = _render("mechanics.free_fall", shape="box", radius=0.2, texture=texture)
    assert np.array_equal(plain.masks, tex.masks)  # same body, same place
    assert tcase.physics.objects[0]["color"] == case.physics.objects[0]["color"]  # declared as one colour
    body = plain.masks[-1] == 1
    flat = plain.video.frames[-1][body].astype(float)
    painted = tex.video.frames[-1][body].astype(float)
    # the pattern's pale half: far more spread over the body than shading alone gives
    assert painted.std(0).mean() > 2 * flat.std(0).mean()
    assert (np.linalg.norm(painted - flat, axis=-1) > 40).mean() > 0.2


def test_an_unknown_texture_is_refused_by_name():
    with pytest.raises(ValueError, match="texture must be one of"):
        _render("mechanics.free_fall", texture="tartan")
