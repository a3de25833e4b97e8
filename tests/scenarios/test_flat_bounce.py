"""cartoon.flat_bounce: a tuning-split generator of flat shapes that fall and bounce in 2-D."""

from __future__ import annotations

import numpy as np
import pytest

from scenarios.cartoon.flat import MORE_SHAPES, MORE_WALLS, SHAPES, WALLS, centre_path


def test_the_centre_falls_at_g_and_rebounds_with_the_restitution():
    fps, g, e = 100.0, 400.0, 0.5
    t = np.arange(300) / fps  # bounces end after t1 (1 + 2e / (1 - e)) = 2.1 s
    y, contacts = centre_path(t, 10.0, 110.0, g, e)
    t1 = np.sqrt(2 * 100.0 / g)  # first contact: a 100 px fall
    assert contacts[0] == pytest.approx(t1)
    k = int(t1 * fps) - 1
    assert y[k] == pytest.approx(10.0 + 0.5 * g * t[k] ** 2)
    # the rebound rises to e² of the drop height
    after = y[int(t1 * fps) + 1:int(contacts[1] * fps)]
    assert 110.0 - after.min() == pytest.approx(e * e * 100.0, rel=0.02)
    assert y.max() <= 110.0 and y[-1] == 110.0  # it comes to rest on the floor


@pytest.mark.parametrize("shape", SHAPES + MORE_SHAPES)
def test_every_shape_renders_with_masks_and_declares_itself(shape):
    from worldolympiad.registries import GENERATORS

    gen = GENERATORS.get("cartoon.flat_bounce")
    case = gen.make_case("c", seed=1, resolution=(48, 64), num_frames=12, fps=12, num_chunks=2, shape=shape)
    r = gen.render(case)
    assert r.video.frames.shape == (12, 48, 64, 3) and r.masks.shape == (12, 48, 64)
    assert r.masks.any(axis=(1, 2)).all() and r.object_ids == {shape: 1}
    (obj,) = case.physics.objects
    assert obj["name"] == shape and obj["shape"] == shape and len(obj["box"]) == 4
    assert "gravity" in case.physics.rules


def test_bad_params_say_what_is_allowed():
    from worldolympiad.registries import GENERATORS

    gen = GENERATORS.get("cartoon.flat_bounce")
    with pytest.raises(ValueError, match="shape must be one of"):
        gen.make_case("c", shape="torus")
    with pytest.raises(ValueError, match="restitution"):
        gen.make_case("c", restitution=1.5)


@pytest.mark.parametrize("wall", WALLS + MORE_WALLS)
def test_every_wall_is_drawn_behind_the_body(wall):
    from worldolympiad.registries import GENERATORS

    gen = GENERATORS.get("cartoon.flat_bounce")
    case = gen.make_case("c", seed=2, resolution=(64, 48), num_frames=8, fps=10, num_chunks=2, wall=wall)
    r = gen.render(case)
    still = r.video.frames[0][~r.masks.any(axis=0)]  # wall and floor pixels no frame's body covers
    assert len(np.unique(still.reshape(-1, 3), axis=0)) > 2  # a wall with a pattern or gradient, and the floor


def test_shapes_and_walls_added_later_leave_seeded_draws_alone():
    """A case that names no shape or wall draws them from SHAPES and WALLS only, so adding a choice
    (session 53: pentagon, arrow, checker) never changes an earlier case's frames."""
    from worldolympiad.registries import GENERATORS

    gen = GENERATORS.get("cartoon.flat_bounce")
    drawn = {gen.make_case("c", seed=s).physics.objects[0]["shape"] for s in range(40)}
    assert drawn == set(SHAPES)
    with pytest.raises(ValueError, match="wall must be one of"):
        gen.make_case("c", wall="bricks")
