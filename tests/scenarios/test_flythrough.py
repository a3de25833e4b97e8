"""Room fly-throughs: exported K, poses and depth are mutually consistent with the images."""

from __future__ import annotations

import numpy as np
import pytest

from scenarios.flythrough.room import ROOM_FLYTHROUGH as G


@pytest.fixture(scope="module")
def fly():
    case = G.make_case("fly", seed=4, resolution=[48, 64], num_frames=10, fps=10, num_chunks=2)
    return case, G.render(case)


def test_case_poses_equal_rendered_poses(fly):
    case, r = fly
    assert np.abs(case.camera.poses - r.camera.poses).max() < 1e-9
    assert np.allclose(case.camera.K, r.camera.K)
    R = r.camera.poses[:, :3, :3]
    assert np.allclose(R @ R.transpose(0, 2, 1), np.eye(3), atol=1e-9)  # proper rotations
    assert np.allclose(np.linalg.det(R), 1.0)


def test_depth_reprojects_between_frames(fly):
    """Lift frame 0 with its depth, move it with the poses, and land on frame 5's depth and colours."""
    case, r = fly
    K, P = r.camera.K, r.camera.poses
    H, W = case.resolution
    a, b = 0, 5
    ys, xs = np.mgrid[0:H, 0:W]
    z = r.depth[a]
    ok = np.isfinite(z)
    pix = np.stack([xs[ok], ys[ok], np.ones(ok.sum())])
    cam = np.linalg.inv(K) @ pix * z[ok]  # OpenCV camera frame, z forward
    world = P[a][:3, :3] @ cam + P[a][:3, 3:4]
    w2c = np.linalg.inv(P[b])
    cb = w2c[:3, :3] @ world + w2c[:3, 3:4]
    uv = K @ cb
    u, v = uv[0] / uv[2], uv[1] / uv[2]
    inside = (cb[2] > 0.1) & (u > 1) & (u < W - 2) & (v > 1) & (v < H - 2)
    ui, vi = np.round(u[inside]).astype(int), np.round(v[inside]).astype(int)
    zb = r.depth[b][vi, ui]
    rel = np.abs(zb - cb[2][inside]) / cb[2][inside]
    assert inside.sum() > 0.3 * ok.sum()
    assert np.median(rel) < 0.02  # most points land on the same surface (occlusion/edges aside)
    col_a = r.video.frames[a][ok][inside].astype(float)
    col_b = r.video.frames[b][vi, ui].astype(float)
    good = rel < 0.02
    assert np.median(np.abs(col_a[good] - col_b[good]).mean(axis=1)) < 25


def test_actions_and_captions_describe_the_camera_motion(fly):
    case, r = fly
    for c in case.chunks:
        act = c.action
        assert act["name"] == "camera" and len(act["translation"]) == 3
        rel = np.linalg.inv(r.camera.poses[c.frame_start]) @ r.camera.poses[c.frame_end - 1]
        assert np.allclose(rel[:3, 3], act["translation"], atol=1e-3)
        assert c.caption.startswith("the camera ")
    assert case.metadata["path_length_m"] > 0.5
    assert set(case.tracks) >= {"geometry", "longvideo"}


def test_frames_are_feature_rich(fly):
    import cv2

    case, r = fly
    orb = cv2.ORB_create(nfeatures=500, edgeThreshold=5, patchSize=9)
    counts = [len(orb.detect(cv2.cvtColor(f, cv2.COLOR_RGB2GRAY), None)) for f in r.video.frames]
    assert min(counts) >= 40


def test_render_is_deterministic_by_seed():
    p = {"resolution": [24, 32], "num_frames": 4, "fps": 8}
    a = G.render(G.make_case("a", seed=1, **p))
    b = G.render(G.make_case("a", seed=1, **p))
    c = G.render(G.make_case("a", seed=2, **p))
    assert a.video.frames.tobytes() == b.video.frames.tobytes() and a.masks.tobytes() == b.masks.tobytes()
    assert a.video.frames.tobytes() != c.video.frames.tobytes()


def test_bad_path_length_is_rejected():
    with pytest.raises(ValueError, match="path_length"):
        G.make_case("x", path_length=10)


@pytest.mark.slow
def test_sfm_recovers_the_trajectory_within_two_percent_of_path_length(tmp_path):
    """pycolmap on a 20-frame fly-through: ATE after Sim(3) alignment < 2 % of the path."""
    import cv2
    import pycolmap

    case = G.make_case("sfm", seed=0, resolution=[128, 128], num_frames=20, fps=10)
    r = G.render(case)
    img = tmp_path / "img"
    img.mkdir()
    for i, f in enumerate(r.video.frames):
        cv2.imwrite(str(img / f"{i:04d}.png"), cv2.cvtColor(f, cv2.COLOR_RGB2BGR))
    db = tmp_path / "db.db"
    pycolmap.extract_features(db, img, camera_mode=pycolmap.CameraMode.SINGLE)
    pycolmap.match_exhaustive(db)
    recs = pycolmap.incremental_mapping(db, img, tmp_path / "sparse")
    rec = max(recs.values(), key=lambda x: x.num_reg_images())
    assert rec.num_reg_images() == 20
    est = {}
    for im in rec.images.values():
        M = im.cam_from_world().matrix() if callable(im.cam_from_world) else im.cam_from_world.matrix()
        est[int(im.name[:4])] = -M[:3, :3].T @ M[:3, 3]
    idx = sorted(est)
    A, B = np.array([est[i] for i in idx]), r.camera.poses[idx, :3, 3]
    from tracks.geometry.trajectory import umeyama

    sim = umeyama(A, B)  # the geometry track's Sim(3) alignment (checked against evo there)
    aligned = sim.scale * A @ sim.R.T + sim.t
    ate = float(np.sqrt(((aligned - B) ** 2).sum(1).mean()))
    assert ate / case.metadata["path_length_m"] < 0.02
