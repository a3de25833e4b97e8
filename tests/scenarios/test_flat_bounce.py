"""cartoon.flat_bounce: a tuning-split generator of flat shapes that fall and bounce in 2-D."""

from __future__ import annotations

import numpy as np
import pytest

from scenarios.cartoon.flat import SHAPES, centre_path


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


@pytest.mark.parametrize("shape", SHAPES)
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
