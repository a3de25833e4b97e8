"""Panda arm scenarios: exported K/poses/depth agree with the TinyRenderer images; tasks do what they say."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pybullet")

from scipy import ndimage  # noqa: E402

from scenarios.robotics.arm import pick, place, project, push, stack  # noqa: E402


@pytest.fixture(scope="module")
def renders():
    out = {}
    for gen in (push, pick, place):
        case = gen.make_case(f"{gen.task}-t", seed=3, resolution=[96, 96])
        out[gen.task] = (case, gen.render(case))
    return out


def _clear_masks(r, t):
    """Object masks at frame t that are whole: not cut by the image border or another body."""
    out = {}
    for name, k in r.object_ids.items():
        if name in ("robot", "target_pad"):
            continue
        m = r.masks[t] == k
        if m.sum() < 6:
            continue
        ring = ndimage.binary_dilation(m, iterations=1) & ~m
        ys, xs = np.nonzero(m)
        border = xs.min() == 0 or ys.min() == 0 or xs.max() == m.shape[1] - 1 or ys.max() == m.shape[0] - 1
        occluded = np.isin(r.masks[t][ring], [r.object_ids["robot"]] + [v for v in r.object_ids.values() if v != k]).any()
        if not border and not occluded:
            out[name] = m
    return out


def test_projected_object_centres_land_on_mask_centroids(renders):
    """Cube centres projected with the exported K (TinyRenderer principal point) hit their mask centroid (< 0.5 px)."""
    checked = 0
    for task, (case, r) in renders.items():
        K, poses = case.camera.K, case.camera.poses
        for t in range(0, case.num_frames, 3):
            for name, m in _clear_masks(r, t).items():
                ys, xs = np.nonzero(m)
                centre = r.states["objects"][name]["position"][t]
                uv = project(K, poses[t], centre[None])[0]
                err = np.hypot(uv[0] - xs.mean(), uv[1] - ys.mean())
                assert err < 0.5, (task, t, name, uv, (xs.mean(), ys.mean()))
                checked += 1
    assert checked >= 10


def test_ideal_principal_point_would_be_off(renders):
    """The half-pixel TinyRenderer offset is real: the ideal (W-1)/2, (H-1)/2 centre fits worse."""
    case, r = renders["push"]
    K = case.camera.K.copy()
    K_ideal = K.copy()
    K_ideal[0, 2], K_ideal[1, 2] = (case.width - 1) / 2, (case.height - 1) / 2
    errs, errs_ideal = [], []
    for name, m in _clear_masks(r, 0).items():
        ys, xs = np.nonzero(m)
        c = r.states["objects"][name]["position"][0][None]
        errs.append(np.hypot(*(project(K, case.camera.poses[0], c)[0] - (xs.mean(), ys.mean()))))
        errs_ideal.append(np.hypot(*(project(K_ideal, case.camera.poses[0], c)[0] - (xs.mean(), ys.mean()))))
    assert np.mean(errs) < np.mean(errs_ideal)


def test_depth_unprojects_into_the_cubes(renders):
    """Metric depth + K + pose put each cube pixel's 3-D point on that cube (within its half-diagonal)."""
    case, r = renders["pick"]
    K, c2w = case.camera.K, case.camera.poses[0]
    half_diag = np.sqrt(3) * 0.025 + 0.004
    for name, m in _clear_masks(r, 0).items():
        v, u = np.nonzero(m)
        z = r.depth[0][v, u].astype(np.float64)
        pc = np.stack([(u - K[0, 2]) / K[0, 0] * z, (v - K[1, 2]) / K[1, 1] * z, z], -1)
        pw = pc @ c2w[:3, :3].T + c2w[:3, 3]
        d = np.linalg.norm(pw - r.states["objects"][name]["position"][0], axis=1)
        assert d.max() < half_diag, (name, d.max())


def test_end_effector_projects_onto_the_gripper(renders):
    """The exported end-effector point (between the closed fingertips) projects onto robot pixels."""
    case, r = renders["push"]
    robot = r.masks == r.object_ids["robot"]
    near = ndimage.binary_dilation(robot, iterations=1, structure=np.ones((1, 3, 3), bool))
    uv = np.round(project(case.camera.K, case.camera.poses[0], r.states["end_effector"]["position"])).astype(int)
    hits = [near[t, v, u] for t, (u, v) in enumerate(uv) if 0 <= u < case.width and 0 <= v < case.height]
    assert np.mean(hits) > 0.9


def test_push_moves_the_cube_along_the_push(renders):
    case, r = renders["push"]
    tgt = case.metadata["layout"]["target"]
    delta = np.asarray(case.chunks[1].action["delta"][:2])
    moved = r.states["objects"][tgt]["position"][-1][:2] - r.states["objects"][tgt]["position"][0][:2]
    assert moved @ delta / np.linalg.norm(delta) > 0.05
    assert np.abs(np.cross(np.append(moved, 0), np.append(delta / np.linalg.norm(delta), 0)))[2] < 0.03


def test_pick_lifts_and_holds_the_cube(renders):
    case, r = renders["pick"]
    tgt = case.metadata["layout"]["target"]
    p = r.states["objects"][tgt]["position"]
    assert p[-1][2] - p[0][2] > 0.08
    ee = r.states["end_effector"]["position"]
    assert np.linalg.norm(ee[-1] - p[-1]) < 0.02
    assert r.states["end_effector"]["held_object_id"][-1] == r.object_ids[tgt]


def test_place_puts_the_cube_on_the_pad(renders):
    case, r = renders["place"]
    tgt = case.metadata["layout"]["target"]
    p = r.states["objects"][tgt]["position"][-1]
    assert np.linalg.norm(p[:2] - np.asarray(case.metadata["layout"]["pad"])) < 0.03
    assert abs(p[2] - 0.025) < 0.01  # resting on the floor again
    assert r.states["end_effector"]["held_object_id"][-1] == 0


def test_end_effector_tracks_the_commanded_motion(renders):
    """Per-chunk EE displacement matches move_ee deltas (direction and magnitude, 1 cm)."""
    case, r = renders["push"]
    ee = r.states["end_effector"]["position"]
    for ch in case.chunks:
        a = max(ch.frame_start - 1, 0)
        np.testing.assert_allclose(ee[ch.frame_end - 1] - ee[a], ch.action["delta"], atol=0.01)


def test_same_seed_same_bytes(renders):
    case, r = renders["push"]
    r2 = push.render(push.make_case("push-t", seed=3, resolution=[96, 96]))
    assert r.video.frames.tobytes() == r2.video.frames.tobytes()
    assert r.masks.tobytes() == r2.masks.tobytes()
    assert r.depth.tobytes() == r2.depth.tobytes()


def test_same_bytes_in_a_fresh_process():
    """Determinism does not depend on process state (a fresh pybullet client in a new interpreter)."""
    import hashlib
    import subprocess
    import sys

    code = ("import hashlib; from scenarios.robotics.arm import pick; "
            "c = pick.make_case('p', seed=2, resolution=[32, 32], num_frames=9); "
            "print(hashlib.sha256(pick.render(c).video.frames.tobytes()).hexdigest())")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()[-1]
    here = pick.render(pick.make_case("p", seed=2, resolution=[32, 32], num_frames=9))
    assert out == hashlib.sha256(here.video.frames.tobytes()).hexdigest()


def test_orbiting_camera_poses_match_the_images():
    """With camera_orbit_deg the per-frame exported poses still put cube centres on their masks,
    and the case opts into the geometry track."""
    case = push.make_case("orbit", seed=5, resolution=[96, 96], num_frames=12, camera_orbit_deg=40.0)
    assert "geometry" in case.tracks
    poses = case.camera.poses
    assert not np.allclose(poses[0], poses[-1])
    r = push.render(case)
    checked = 0
    for t in (0, 6, 11):
        for name, m in _clear_masks(r, t).items():
            ys, xs = np.nonzero(m)
            uv = project(case.camera.K, poses[t], r.states["objects"][name]["position"][t][None])[0]
            assert np.hypot(uv[0] - xs.mean(), uv[1] - ys.mean()) < 0.5, (t, name)
            checked += 1
    assert checked >= 2


def test_stack_puts_the_cube_on_the_other_cube():
    case = stack.make_case("stack-t", seed=1, resolution=[48, 48], num_frames=36)
    r = stack.render(case)
    top = r.states["objects"][case.metadata["layout"]["target"]]["position"][-1]
    base = r.states["objects"][case.metadata["layout"]["base"]]["position"][-1]
    assert np.linalg.norm(top[:2] - base[:2]) < 0.01
    assert abs((top[2] - base[2]) - 0.05) < 0.005  # resting on the base's top face
    with pytest.raises(ValueError, match="distractors >= 1"):
        stack.make_case("s", distractors=0)


def test_the_prompt_describes_the_floor_that_is_rendered(renders):
    """Generator v3: the prompt named v1's blue-and-white checker after v2 textured the floor grey."""
    case, r = renders["push"]
    assert "grey concrete floor" in case.prompt and "checker" not in case.prompt
    floor = r.video.frames[0][-12:].reshape(-1, 3).astype(int)  # the bottom rows show floor only
    assert (floor.max(1) - floor.min(1)).mean() < 30  # grey: no channel far from the others
