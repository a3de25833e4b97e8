"""First-person maze: exported K and poses agree with the pixels; actions move the camera as declared."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scenarios.gaming.maze import CLEARANCE, clearance_ok, maze, project


@pytest.fixture(scope="module")
def case_and_render():
    case = maze.make_case("maze-t", seed=4, resolution=[64, 80], num_frames=24, num_chunks=3)
    return case, maze.render(case)


def _visible_landmarks(case, r):
    """(frame, name, centre) where a landmark's mask is whole (not at the image border, not occluded much)."""
    out = []
    for t in range(case.num_frames):
        for name, k in r.object_ids.items():
            m = r.masks[t] == k
            if m.sum() < 12:
                continue
            ys, xs = np.nonzero(m)
            if xs.min() == 0 or ys.min() == 0 or xs.max() == m.shape[1] - 1 or ys.max() == m.shape[0] - 1:
                continue
            out.append((t, name, np.array([xs.mean(), ys.mean()])))
    return out


def test_projected_landmark_lands_on_its_mask_centroid():
    """Projecting each sphere centre with the exported K and pose hits its mask centroid (< 0.5 px)."""
    checked = 0
    for seed in range(8):
        case = maze.make_case("maze-p", seed=seed, resolution=[64, 64], num_frames=16, num_chunks=2)
        r = maze.render(case)
        K, poses = case.camera.K, case.camera.poses
        for t, name, centroid in _visible_landmarks(case, r):
            centre = np.asarray(case.metadata["landmarks"][name]["position"])
            uv = project(K, poses[t], centre[None])[0]
            assert np.linalg.norm(uv - centroid) < 0.5, (seed, t, name, uv, centroid)
            u, v = np.round(uv).astype(int)
            assert r.masks[t, v, u] == r.object_ids[name]
            checked += 1
        if checked >= 6:
            break
    assert checked >= 3


def test_depth_unprojects_onto_walls_and_floor(case_and_render):
    """Back-projecting depth with K and the pose lands wall pixels on block faces and floor pixels at z=0."""
    case, r = case_and_render
    K, poses = case.camera.K, case.camera.poses
    grid = r.states["maze_grid"]
    h, w = case.resolution
    t = case.num_frames // 2
    v, u = np.mgrid[0:h, 0:w]
    z = r.depth[t].astype(np.float64)
    pts_c = np.stack([(u - K[0, 2]) / K[0, 0] * z, (v - K[1, 2]) / K[1, 1] * z, z], -1)
    pts = pts_c @ poses[t][:3, :3].T + poses[t][:3, 3]
    bg = r.masks[t] == 0
    floor = bg & (np.abs(pts[..., 2]) < 1e-3)
    assert floor.sum() > 0.1 * h * w
    wall = bg & (pts[..., 2] > 1e-3) & (pts[..., 2] < 1.0 - 1e-3)
    assert wall.sum() > 0.1 * h * w
    # every wall point lies on a block face: one of x, y is (almost) an integer next to a wall cell
    P = pts[wall][:, :2]
    on_face = np.minimum(np.abs(P[:, 0] - np.round(P[:, 0])), np.abs(P[:, 1] - np.round(P[:, 1]))) < 1e-3
    assert on_face.all()
    nudged = P + 1e-2 * (P - poses[t][:2, 3]) / np.linalg.norm(P - poses[t][:2, 3], axis=1, keepdims=True)
    cells = np.floor(nudged).astype(int)
    assert (grid[cells[:, 1], cells[:, 0]] > 0).mean() > 0.99


def test_poses_follow_the_declared_action_motion(case_and_render):
    """Each frame-to-frame camera motion equals the chunk's action from games.yaml."""
    case, _ = case_and_render
    poses = case.camera.poses
    space = case.metadata["action_space"]["actions"]
    for t in range(1, case.num_frames):
        a = space[case.chunk_at(t).action]
        rel = np.linalg.inv(poses[t - 1]) @ poses[t]  # motion in the camera frame of t-1
        np.testing.assert_allclose(rel[:3, 3], a["translation"], atol=1e-9)
        yaw = math.degrees(math.atan2(rel[0, 2], rel[2, 2]))  # rotation about the camera's y (down) axis
        np.testing.assert_allclose(-yaw, a["yaw_deg"], atol=1e-9)


def test_pose_convention_is_opencv_level_camera(case_and_render):
    case, _ = case_and_render
    for T in case.camera.poses:
        R = T[:3, :3]
        np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-12)
        assert np.isclose(np.linalg.det(R), 1.0)
        np.testing.assert_allclose(R[:, 1], [0, 0, -1])  # image y points down in the world


def test_planned_walk_never_enters_a_wall():
    for seed in range(10):
        case = maze.make_case("m", seed=seed, num_frames=48, num_chunks=6)
        grid = maze._world(seed, case.metadata["params"]["maze_size"])[0]
        for T in case.camera.poses:
            assert clearance_ok(grid, T[0, 3], T[1, 3], CLEARANCE - 1e-9)


def test_same_seed_same_bytes(case_and_render):
    case, r = case_and_render
    r2 = maze.render(maze.make_case("maze-t", seed=4, resolution=[64, 80], num_frames=24, num_chunks=3))
    assert r.video.frames.tobytes() == r2.video.frames.tobytes()
    assert r.depth.tobytes() == r2.depth.tobytes()
    other = maze.make_case("maze-t", seed=5, resolution=[64, 80], num_frames=24, num_chunks=3)
    assert other.camera.poses.tobytes() != case.camera.poses.tobytes()


def test_action_semantics_in_the_image():
    """turn_left moves the scene right in the image; forward makes a point ahead grow closer to the edge."""
    K = np.array([[32.0, 0, 31.5], [0, 32.0, 31.5], [0, 0, 1]])
    from scenarios.gaming.maze import EYE_HEIGHT, Pose2D, camera_to_world, step_pose
    from scenarios.gaming.vocab import maze_spec

    vocab = maze_spec()["actions"]
    p0 = Pose2D(1.5, 1.5, 0.0)
    point = np.array([[4.0, 1.7, EYE_HEIGHT + 0.3]])  # ahead (+x), slightly left (+y) and up
    def uv(p):
        return project(K, camera_to_world(p.x, p.y, p.yaw), point)[0]

    u0, v0 = uv(p0)
    assert u0 < 31.5 and v0 < 31.5  # left of and above the image centre
    assert uv(step_pose(p0, vocab["turn_left"]))[0] > u0
    assert uv(step_pose(p0, vocab["turn_right"]))[0] < u0
    assert uv(step_pose(p0, vocab["strafe_left"]))[0] > u0
    fwd = uv(step_pose(p0, vocab["forward"]))
    assert fwd[0] < u0 and fwd[1] < v0  # moves outward from the centre as it approaches


def test_given_actions_that_hit_a_wall_are_refused():
    with pytest.raises(ValueError, match="walks into a wall"):
        maze.make_case("m", seed=0, num_frames=64, num_chunks=2, actions=["strafe_left", "strafe_left"])
