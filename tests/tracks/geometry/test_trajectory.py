"""ATE/RPE equal evo's, Umeyama recovers a known similarity, camera score ranks defects."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from tracks.geometry.trajectory import (
    TrajectoryError,
    camera_score,
    trajectory_errors,
    umeyama,
)


def _random_trajectory(rng: np.random.Generator, n: int = 40) -> np.ndarray:
    """A smooth wandering camera-to-world path with turning orientation."""
    t = np.linspace(0, 1, n)
    pos = np.stack([np.sin(2 * t) * 3, np.cos(3 * t) * 1.5, t * 4], 1) + rng.normal(0, 0.02, (n, 3))
    rots = Rotation.from_rotvec(np.stack([0.3 * t, 1.2 * t, -0.4 * t], 1)).as_matrix()
    poses = np.tile(np.eye(4), (n, 1, 1))
    poses[:, :3, :3] = rots
    poses[:, :3, 3] = pos
    return poses


def _sim3(poses: np.ndarray, R: np.ndarray, t: np.ndarray, s: float) -> np.ndarray:
    out = poses.copy()
    out[:, :3, :3] = R @ poses[:, :3, :3]
    out[:, :3, 3] = s * poses[:, :3, 3] @ R.T + t
    return out


def _noisy(rng: np.random.Generator, poses: np.ndarray, sig_t: float, sig_r: float) -> np.ndarray:
    out = poses.copy()
    out[:, :3, 3] += rng.normal(0, sig_t, (len(poses), 3))
    out[:, :3, :3] = Rotation.from_rotvec(rng.normal(0, sig_r, (len(poses), 3))).as_matrix() @ poses[:, :3, :3]
    return out


def test_umeyama_recovers_known_similarity():
    rng = np.random.default_rng(0)
    pts = rng.normal(size=(50, 3))
    R = Rotation.from_euler("xyz", [30, -50, 110], degrees=True).as_matrix()
    dst = 2.7 * pts @ R.T + np.array([1.0, -2.0, 0.5])
    sim = umeyama(pts, dst)
    np.testing.assert_allclose(sim.R, R, atol=1e-10)
    assert sim.scale == pytest.approx(2.7, abs=1e-10)
    np.testing.assert_allclose(sim.t, [1.0, -2.0, 0.5], atol=1e-10)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ate_rpe_equal_evo_with_scale_and_rotation(seed):
    from evo.core import metrics, sync  # noqa: F401 - evo is the reference implementation
    from evo.core.trajectory import PosePath3D

    rng = np.random.default_rng(seed)
    ref = _random_trajectory(rng)
    # Estimate in another frame: large rotation, offset, scale 0.37, plus pose noise.
    R = Rotation.from_euler("zyx", [75, -40, 160], degrees=True).as_matrix()
    est = _sim3(_noisy(rng, ref, 0.05, 0.02), R, np.array([5.0, -3.0, 2.0]), 0.37)
    ours = trajectory_errors(est, ref, with_scale=True, delta=1)

    traj_ref = PosePath3D(poses_se3=list(ref))
    traj_est = PosePath3D(poses_se3=list(est))
    traj_est.align(traj_ref, correct_scale=True)
    ape = metrics.APE(metrics.PoseRelation.translation_part)
    ape.process_data((traj_ref, traj_est))
    rpe_t = metrics.RPE(metrics.PoseRelation.translation_part, delta=1, delta_unit=metrics.Unit.frames)
    rpe_t.process_data((traj_ref, traj_est))
    rpe_r = metrics.RPE(metrics.PoseRelation.rotation_angle_deg, delta=1, delta_unit=metrics.Unit.frames)
    rpe_r.process_data((traj_ref, traj_est))

    assert ours.scale == pytest.approx(1 / 0.37, rel=0.05)  # recovered the planted scale
    assert ours.ate_rmse == pytest.approx(ape.get_statistic(metrics.StatisticsType.rmse), abs=1e-6)
    assert ours.ate_mean == pytest.approx(ape.get_statistic(metrics.StatisticsType.mean), abs=1e-6)
    assert ours.rpe_trans_rmse == pytest.approx(rpe_t.get_statistic(metrics.StatisticsType.rmse), abs=1e-6)
    assert ours.rpe_trans_mean == pytest.approx(rpe_t.get_statistic(metrics.StatisticsType.mean), abs=1e-6)
    assert ours.rpe_rot_deg_rmse == pytest.approx(rpe_r.get_statistic(metrics.StatisticsType.rmse), abs=1e-6)
    assert ours.rpe_rot_deg_mean == pytest.approx(rpe_r.get_statistic(metrics.StatisticsType.mean), abs=1e-6)
    assert ours.ate_rmse > 0.01  # the noise is visible, so the equality is not 0 == 0


def _kitti_rounded(poses: np.ndarray) -> np.ndarray:
    """Poses as a KITTI pose file stores them (``%.6e``): rotations slightly non-orthonormal."""
    out = poses.copy()
    out[:, :3, :] = np.vectorize(lambda x: float(f"{x:.6e}"))(poses[:, :3, :])
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rpe_rotation_equals_evo_on_rounded_non_orthonormal_poses(seed):
    """Rounded rotations (as in evo's KITTI test files): arccos((tr - 1) / 2) misses by up to
    ~0.006 degrees a pair; the rotation vector's norm (what evo uses) agrees to 1e-9."""
    from evo.core import metrics
    from evo.core.trajectory import PosePath3D

    from tracks.geometry.trajectory import align_trajectory, rpe

    rng = np.random.default_rng(seed)
    ref = _kitti_rounded(_random_trajectory(rng, 100))
    est = _kitti_rounded(_noisy(rng, ref, 0.01, 0.002))
    gram = np.einsum("tji,tjk->tik", est[:, :3, :3], est[:, :3, :3])
    assert 1e-8 < np.abs(gram - np.eye(3)).max() < 1e-6  # not orthonormal, yet a valid SO(3) for evo

    ours = trajectory_errors(est, ref, with_scale=False, delta=1)
    traj_ref, traj_est = PosePath3D(poses_se3=list(ref)), PosePath3D(poses_se3=list(est))
    traj_est.align(traj_ref, correct_scale=False)
    rpe_r = metrics.RPE(metrics.PoseRelation.rotation_angle_deg, delta=1, delta_unit=metrics.Unit.frames)
    rpe_r.process_data((traj_ref, traj_est))
    evo_pairs = np.asarray(rpe_r.error)

    aligned, _ = align_trajectory(est, ref, with_scale=False)
    _, our_pairs = rpe(aligned, ref, delta=1)
    np.testing.assert_allclose(our_pairs, evo_pairs, atol=1e-9)
    assert ours.rpe_rot_deg_mean == pytest.approx(rpe_r.get_statistic(metrics.StatisticsType.mean), abs=1e-9)
    assert ours.rpe_rot_deg_rmse == pytest.approx(rpe_r.get_statistic(metrics.StatisticsType.rmse), abs=1e-9)
    # the trace formula on the same relative rotations differs measurably
    inv = np.linalg.inv
    E = inv(inv(ref[:-1]) @ ref[1:]) @ (inv(aligned[:-1]) @ aligned[1:])
    trace_formula = np.degrees(np.arccos(np.clip((np.trace(E[:, :3, :3], axis1=1, axis2=2) - 1) / 2, -1, 1)))
    assert np.abs(trace_formula - evo_pairs).max() > 1e-3


def test_exact_similarity_copy_has_zero_error():
    ref = _random_trajectory(np.random.default_rng(3))
    R = Rotation.from_euler("xyz", [10, 80, -30], degrees=True).as_matrix()
    est = _sim3(ref, R, np.array([1.0, 2.0, 3.0]), 4.0)
    e = trajectory_errors(est, ref)
    assert e.ate_rmse < 1e-9 and e.rpe_rot_deg_mean < 1e-5 and e.rpe_trans_rmse < 1e-9


def test_degenerate_positions_are_a_clear_umeyama_error():
    pts = np.zeros((5, 3))
    with pytest.raises(TrajectoryError, match="degenerate"):
        umeyama(pts, pts)


def test_straight_line_reference_aligns_by_first_camera():
    """A corridor walk (collinear positions) leaves Umeyama's rotation undefined: align the first cameras."""
    ref = np.tile(np.eye(4), (10, 1, 1))
    ref[:, 2, 3] = np.linspace(0, 3, 10)  # straight ahead
    R = Rotation.from_euler("xyz", [20, -70, 45], degrees=True).as_matrix()
    est = _sim3(ref, R, np.array([1.0, 2.0, 3.0]), 0.3)
    e = trajectory_errors(est, ref)
    assert e.ate_rmse < 1e-9 and e.rpe_rot_deg_mean < 1e-5 and e.scale == pytest.approx(1 / 0.3)
    bad = est.copy()
    bad[5:, :3, 3] += 0.5  # a jump mid-corridor is measured, not a crash
    assert trajectory_errors(bad, ref).ate_rmse > 0.1


def test_camera_score_bounded_and_ranks_noise():
    rng = np.random.default_rng(4)
    ref = _random_trajectory(rng)
    R = Rotation.from_euler("xyz", [0, 90, 0], degrees=True).as_matrix()
    perfect = camera_score(_sim3(ref, R, np.zeros(3), 0.5), ref)
    slight = camera_score(_noisy(rng, ref, 0.05, 0.01), ref)
    bad = camera_score(_noisy(rng, ref, 1.0, 0.3), ref)
    assert perfect.score == pytest.approx(1.0, abs=1e-6)
    assert 1.0 > slight.score > bad.score >= 0.0
    assert perfect.mode == "moving"


def test_camera_score_static_reference_penalises_motion():
    ref = np.tile(np.eye(4), (10, 1, 1))
    still = camera_score(ref.copy(), ref)
    moving = ref.copy()
    moving[:, 0, 3] = np.linspace(0, 2, 10)
    assert still.mode == "static" and still.score == pytest.approx(1.0)
    assert camera_score(moving, ref).score == pytest.approx(np.exp(-2 / 3))
