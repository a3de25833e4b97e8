"""Mechanics generators: exported ground truth agrees with the images and with closed forms."""

from __future__ import annotations

import numpy as np
import pytest

from scenarios._mujoco import project_points, sphere_image_centre
from scenarios.mechanics import instances as M
from scenarios.mechanics import scenes


def _render(gen, seed=0, **params):
    params = {"resolution": [96, 96], "num_frames": 24, "fps": 24, **params}
    case = gen.make_case(f"{gen.name}-{seed}", seed=seed, **params)
    return case, gen.render(case)


@pytest.fixture(scope="module")
def rendered():
    return {
        "free_fall": _render(M.FREE_FALL, 3),
        "projectile": _render(M.PROJECTILE, 4),
        "bounce": _render(M.BOUNCE, 5, restitution=0.7, num_frames=40),
        "collision": _render(M.COLLISION, 6, restitution=0.8),
    }


def _centroid(mask: np.ndarray) -> np.ndarray:
    ys, xs = np.nonzero(mask)
    return np.array([xs.mean(), ys.mean()])


@pytest.mark.parametrize("key", ["free_fall", "projectile", "bounce", "collision"])
def test_sphere_centres_project_onto_their_mask_centroids(rendered, key):
    case, r = rendered[key]
    K, poses = r.camera.K, r.camera.poses
    H, W = case.resolution
    checked = 0
    for name, oid in r.object_ids.items():
        pos = np.asarray(r.states["objects"][name]["position"])
        radius = r.states["objects"][name]["size"][0]
        for t in range(case.num_frames):
            m = r.masks[t] == oid
            ys, xs = np.nonzero(m)
            # whole sphere in view and not occluded by the other ball: compare
            if m.sum() < 12 or xs.min() == 0 or ys.min() == 0 or xs.max() == W - 1 or ys.max() == H - 1:
                continue
            expected = sphere_image_centre(K, poses[t], pos[t], radius)
            err = np.linalg.norm(_centroid(m) - expected)
            assert err < 0.5, f"{key} {name} frame {t}: centroid off by {err:.3f} px"
            checked += 1
    assert checked >= case.num_frames // 2


def test_projected_centre_differs_from_ellipse_centre_off_axis():
    # The perspective correction is real: off-axis spheres image with their centroid pushed outward.
    K = np.array([[100.0, 0, 50], [0, 100, 50], [0, 0, 1]])
    c2w = np.eye(4)
    centre = np.array([1.5, 0.0, 3.0])
    plain = project_points(K, c2w, centre)[0]
    ellipse = sphere_image_centre(K, c2w, centre, 0.5)
    assert ellipse[0] > plain[0] + 0.5 and abs(ellipse[1] - plain[1]) < 1e-9


def test_depth_is_metric_camera_z(rendered):
    case, r = rendered["free_fall"]
    name, oid = next(iter(r.object_ids.items()))
    t = 0
    c = np.round(_centroid(r.masks[t] == oid)).astype(int)
    w2c = np.linalg.inv(r.camera.poses[t])
    p = w2c[:3, :3] @ np.asarray(r.states["objects"][name]["position"][t]) + w2c[:3, 3]
    radius = r.states["objects"][name]["size"][0]
    # The sphere's nearest surface along the central ray is ~radius in front of its centre.
    assert abs(float(r.depth[t, c[1], c[0]]) - (p[2] - radius)) < 0.03
    assert np.isinf(r.depth[t][r.masks[t] == 0]).any()  # sky: nothing hit


@pytest.mark.parametrize("key", ["free_fall", "projectile"])
def test_ballistic_flight_matches_closed_form(rendered, key):
    case, r = rendered[key]
    name = next(iter(r.object_ids))
    cf = r.states["closed_form"][name]
    n = cf["valid_frames"]
    assert n >= 5, "the test needs several frames of flight before the first contact"
    sim = np.asarray(r.states["objects"][name]["position"])[:n]
    err = np.abs(sim - np.asarray(cf["position"])).max()
    assert err < 1e-6, f"RK4 free flight deviates from the closed form by {err:.2e} m"


def test_restitution_matches_setting(rendered):
    case, r = rendered["bounce"]
    setting = r.states["restitution_setting"]
    fast = [b for b in r.states["restitution_measured"] if b["impact_speed"] >= 0.5]
    assert len(fast) >= 2
    for b in fast:
        assert abs(b["restitution"] - setting) / setting < 0.02, b
    # apex heights agree: h_{n+1} / h_n = e^2 (coarsely, at frame rate)
    assert case.chunks[0].caption.startswith("the ") and "bounce" in case.chunks[0].caption


def test_collision_conserves_momentum_with_restitution(rendered):
    case, r = rendered["collision"]
    (a, ia), (b, ib) = r.object_ids.items()
    cf = r.states["closed_form"]
    ma, mb = r.states["objects"][a]["mass"], r.states["objects"][b]["mass"]
    v = {n: np.asarray(r.states["objects"][n]["velocity"])[-1, 0] for n in (a, b)}
    v0 = np.asarray(r.states["objects"][a]["velocity"])[0, 0]
    assert abs(ma * v[a] + mb * v[b] - ma * v0) / (ma * v0) < 0.01
    assert abs(v[b] - cf[b]["velocity_after"]) < 0.02 * v0
    assert abs(cf["restitution"] - 0.8) / 0.8 < 0.02  # ball-ball impact honours the setting too


def test_stack_topples_only_past_the_centre_of_mass_limit():
    g = M.STACKING
    tilts = {}
    for topple in (False, True):
        spec, sim = g._simulate(0, {"num_frames": 30, "fps": 20, "topple": topple})
        tilts[topple] = scenes._tilt_deg(sim.quats[-1])[-1]
    assert tilts[False] < 2.0 and tilts[True] > 45.0


def test_light_ball_floats_and_heavy_ball_sinks():
    g = M.BUOYANCY
    spec, sim = g._simulate(0, {"num_frames": 48, "fps": 16, "light_density": 500.0, "heavy_density": 2500.0})
    ex = g.extra_states(spec, sim)
    frac_light = ex["submerged_fraction"]["wooden_ball"][-1]
    assert abs(frac_light - 0.5) < 0.1  # Archimedes: submerged fraction = rho / rho_w
    heavy_z = sim.positions[-1, 1, 2]
    assert heavy_z < spec.bodies[1].size[0] + 0.01  # resting on the tank floor


@pytest.mark.parametrize("name", ["FREE_FALL", "PROJECTILE", "BOUNCE", "COLLISION", "SLIDING", "BUOYANCY", "STACKING"])
def test_render_is_deterministic_by_seed(name):
    gen = getattr(M, name)
    params = {"resolution": [32, 32], "num_frames": 6, "fps": 24}
    case = gen.make_case("det", seed=11, **params)
    a = gen.render(case)
    scenes._SIM_CACHE.clear()  # force a fresh simulation, not a cached replay
    b = gen.render(gen.make_case("det", seed=11, **params))
    assert a.video.frames.tobytes() == b.video.frames.tobytes()
    assert a.masks.tobytes() == b.masks.tobytes()
    assert np.array_equal(a.depth, b.depth)
    if name in ("BOUNCE", "BUOYANCY"):
        other = gen.render(gen.make_case("det", seed=12, **params))
        assert other.video.frames.tobytes() != a.video.frames.tobytes()


def test_case_carries_metadata_rules_and_camera():
    case = M.PROJECTILE.make_case("p", seed=2, resolution=[32, 48], num_frames=12, fps=12, num_chunks=3)
    assert case.metadata["generator"] == "mechanics.projectile" and case.metadata["seed"] == 2
    assert case.metadata["params"]["resolution"] == [32, 48]
    assert case.scenario == "realworld" and "gravity" in case.physics.rules
    assert len(case.chunks) == 3 and all(c.caption for c in case.chunks)
    assert case.camera.poses.shape == (12, 4, 4) and case.camera.K[0, 2] == pytest.approx(23.5)
    from worldolympiad.types import Case

    assert Case.from_dict(case.to_dict()).id == "p"  # JSON round trip passes validation


def test_bad_params_raise_clear_errors():
    with pytest.raises(ValueError, match="resolution"):
        M.FREE_FALL.make_case("x", resolution=[4, 4])
    with pytest.raises(ValueError, match="restitution"):
        M.BOUNCE.make_case("x", restitution=1.5)


def test_sliding_box_stops_where_coulomb_friction_says():
    spec, sim = M.SLIDING._simulate(0, {"num_frames": 40, "fps": 20, "friction": 0.4, "speed": 2.5})
    cf = M.SLIDING.closed_form(spec, sim)[spec.bodies[0].name]
    x = sim.positions[:, 0, 0]
    assert abs((x[-1] - x[0]) - cf["stop_distance"]) < 0.005  # v0^2 / (2 mu g)
    assert np.abs(x - cf["x"]).max() < 0.005


@pytest.mark.parametrize("setting", [0.6, 0.85])
def test_restitution_holds_across_settings_and_impact_speeds(setting):
    spec, sim = M.BOUNCE._simulate(1, {"restitution": setting, "num_frames": 40, "fps": 20})
    fast = [ev for ev in sim.events if -ev["v_in"] >= 0.5]
    assert len(fast) >= 3
    for ev in fast:
        assert abs(ev["restitution"] - setting) / setting < 0.02, ev


def test_gl_backend_choice_respects_the_user_and_probes_backends(monkeypatch):
    from scenarios import _mujoco

    monkeypatch.setenv("MUJOCO_GL", "osmesa")
    monkeypatch.delenv("PYOPENGL_PLATFORM", raising=False)
    assert _mujoco.choose_gl_backend() == "osmesa"
    import os

    assert os.environ["PYOPENGL_PLATFORM"] == "osmesa"  # PyOpenGL must agree with MuJoCo
    assert _mujoco._backend_works("no-such-backend") is False
