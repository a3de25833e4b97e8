"""Camera recovery from video frames: pycolmap SfM, with an OpenCV essential-matrix chain as fallback.

pycolmap path (the default):
    SIFT on the sampled frames (dynamic regions masked out) → matching: exhaustive when few
    frames (it contains every loop closure), otherwise sequential with quadratic overlap
    (frames i±1, 2, 4, 8...) plus vocabulary-tree loop detection when a vocab tree file is
    given → incremental mapping. Known intrinsics (``case.camera``) are fixed (PINHOLE, no BA
    refinement); unknown ones are estimated (SIMPLE_RADIAL, COLMAP's 1.2·max(H, W) prior).

OpenCV fallback (pycolmap failed or registered too few frames):
    SIFT + ratio test between consecutive sampled frames → essential matrix (RANSAC) →
    ``recoverPose``; relative translations are unit length, re-scaled by the median depth ratio
    of points seen in the overlapping pair, so the chain keeps one scale.

The result reports registration rate, mean reprojection error (px) and mean track length.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)


@dataclass
class CameraRecovery:
    """Recovered cameras of the sampled frames.

    Attributes:
        frame_indices: video frame index of each sampled frame ``[S]``.
        registered: whether each sampled frame got a pose ``[S]`` (bool).
        poses: camera-to-world ``[S, 4, 4]`` (identity where not registered).
        K: intrinsics used/estimated ``[3, 3]`` (pinhole; radial distortion dropped).
        points: sparse 3-D points ``[M, 3]`` and their ``colors`` ``[M, 3]`` uint8.
        reprojection_error: mean reprojection error in pixels (``nan`` if none).
        track_length: mean number of frames observing a point.
        method: ``"pycolmap"`` or ``"opencv"``.
        failure: why recovery failed (``None`` when it worked).
    """

    frame_indices: np.ndarray
    registered: np.ndarray
    poses: np.ndarray
    K: np.ndarray
    points: np.ndarray
    colors: np.ndarray
    reprojection_error: float
    track_length: float
    method: str
    failure: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def registration_rate(self) -> float:
        return float(self.registered.mean()) if len(self.registered) else 0.0

    @property
    def ok(self) -> bool:
        return self.failure is None


def sample_frames(num_frames: int, max_frames: int) -> np.ndarray:
    """Evenly spaced frame indices (all frames when there are at most ``max_frames``)."""
    if num_frames <= max_frames:
        return np.arange(num_frames)
    return np.unique(np.round(np.linspace(0, num_frames - 1, max_frames)).astype(int))


def recover_cameras(
    frames: np.ndarray,  # uint8 [S, H, W, 3], already sampled
    frame_indices: np.ndarray,  # [S]
    work_dir: Path,
    *,
    K: np.ndarray | None = None,
    masks: np.ndarray | None = None,  # bool [S, H, W], True = dynamic (ignore)
    method: str = "auto",
    exhaustive_max: int = 40,
    vocab_tree: str | None = None,
    min_registration: float = 0.5,
    seed: int = 0,
) -> CameraRecovery:
    """Recover camera poses for ``frames``; never raises for a bad video (see ``failure``).

    Args:
        method: ``"auto"`` (pycolmap, then OpenCV if it registers < ``min_registration``),
            ``"pycolmap"`` or ``"opencv"``.
    """
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8:
        raise ValueError(f"frames must be uint8 [S, H, W, 3], got {frames.dtype} {frames.shape}")
    attempts: list[CameraRecovery] = []
    if method in ("auto", "pycolmap"):
        try:
            rec = _pycolmap_recover(frames, frame_indices, Path(work_dir) / "colmap", K=K, masks=masks,
                                    exhaustive_max=exhaustive_max, vocab_tree=vocab_tree, seed=seed)
        except ImportError as e:  # pragma: no cover - pycolmap is a declared dependency
            rec = _failed(frames, frame_indices, K, "pycolmap", f"pycolmap unavailable: {e}")
        attempts.append(rec)
        if method == "pycolmap" or (rec.ok and rec.registration_rate >= min_registration):
            return rec
    rec = _opencv_recover(frames, frame_indices, K=K, masks=masks)
    attempts.append(rec)
    best = max(attempts, key=lambda r: (r.ok, r.registration_rate))
    if len(attempts) > 1:
        best.details["fallback_from"] = attempts[0].failure or f"pycolmap registered {attempts[0].registration_rate:.2f}"
    return best


def default_K(height: int, width: int) -> np.ndarray:  # noqa: N802 - K is the intrinsics matrix
    """COLMAP's prior for unknown intrinsics: focal 1.2·max(H, W), centred principal point."""
    f = 1.2 * max(height, width)
    return np.array([[f, 0, width / 2], [0, f, height / 2], [0, 0, 1.0]])


def _failed(frames: np.ndarray, idx: np.ndarray, K: np.ndarray | None, method: str, reason: str) -> CameraRecovery:
    S, H, W = frames.shape[:3]
    return CameraRecovery(
        frame_indices=np.asarray(idx), registered=np.zeros(S, bool), poses=np.tile(np.eye(4), (S, 1, 1)),
        K=K if K is not None else default_K(H, W), points=np.zeros((0, 3)), colors=np.zeros((0, 3), np.uint8),
        reprojection_error=float("nan"), track_length=0.0, method=method, failure=reason,
    )


# ------------------------------------------------------------------------- pycolmap


def _pycolmap_recover(
    frames: np.ndarray, idx: np.ndarray, root: Path, *, K: np.ndarray | None, masks: np.ndarray | None,
    exhaustive_max: int, vocab_tree: str | None, seed: int,
) -> CameraRecovery:
    import cv2
    import pycolmap

    S, H, W = frames.shape[:3]
    if root.exists():
        shutil.rmtree(root)
    img_dir, mask_dir, out_dir = root / "images", root / "masks", root / "sparse"
    for d in (img_dir, mask_dir, out_dir):
        d.mkdir(parents=True)
    names = [f"{i:05d}.png" for i in range(S)]
    for i, name in enumerate(names):
        cv2.imwrite(str(img_dir / name), cv2.cvtColor(frames[i], cv2.COLOR_RGB2BGR))
        if masks is not None:
            # COLMAP masks: zero pixels are ignored during feature extraction.
            cv2.imwrite(str(mask_dir / f"{name}.png"), np.where(masks[i], 0, 255).astype(np.uint8))

    reader = pycolmap.ImageReaderOptions()
    if K is not None:
        reader.camera_model = "PINHOLE"
        reader.camera_params = ",".join(str(float(v)) for v in (K[0, 0], K[1, 1], K[0, 2], K[1, 2]))
    else:
        reader.camera_model = "SIMPLE_RADIAL"
    if masks is not None:
        reader.mask_path = str(mask_dir)
    extraction = pycolmap.FeatureExtractionOptions()
    extraction.num_threads = 1
    # Small frames have few corners: keep weak peaks (the default threshold is tuned for megapixels).
    extraction.sift.peak_threshold = 0.004 if max(H, W) <= 160 else 0.0066
    db = root / "database.db"
    pycolmap.extract_features(db, img_dir, image_names=names, camera_mode=pycolmap.CameraMode.SINGLE,
                              reader_options=reader, extraction_options=extraction, device=pycolmap.Device.cpu)

    matching = pycolmap.FeatureMatchingOptions()
    matching.num_threads = 1
    verification = pycolmap.TwoViewGeometryOptions()
    verification.min_num_inliers = 12
    if exhaustive_max >= S:
        pycolmap.match_exhaustive(db, matching_options=matching, verification_options=verification,
                                  device=pycolmap.Device.cpu)
        matcher = "exhaustive"
    else:
        pairing = pycolmap.SequentialPairingOptions()
        pairing.overlap = 8
        pairing.quadratic_overlap = True
        if vocab_tree:
            pairing.loop_detection = True
            pairing.vocab_tree_path = vocab_tree
        pycolmap.match_sequential(db, matching_options=matching, pairing_options=pairing,
                                  verification_options=verification, device=pycolmap.Device.cpu)
        matcher = "sequential+loop" if vocab_tree else "sequential(quadratic)"

    opts = pycolmap.IncrementalPipelineOptions()
    opts.num_threads = 1
    opts.random_seed = seed
    opts.min_model_size = 3
    opts.min_num_matches = 12
    opts.extract_colors = True
    opts.mapper.init_min_num_inliers = 30
    opts.mapper.init_min_tri_angle = 4.0
    opts.mapper.abs_pose_min_num_inliers = 12
    opts.mapper.random_seed = seed
    opts.triangulation.random_seed = seed
    if K is not None:
        opts.ba_refine_focal_length = False
        opts.ba_refine_principal_point = False
        opts.ba_refine_extra_params = False
    recs = pycolmap.incremental_mapping(db, img_dir, out_dir, options=opts)
    if not recs:
        return _failed(frames, idx, K, "pycolmap", "pycolmap could not initialise a reconstruction "
                       "(too few matched features between frames: textureless, too small, or no camera motion)")
    rec = max(recs.values(), key=lambda r: r.num_reg_images())

    registered = np.zeros(S, bool)
    poses = np.tile(np.eye(4), (S, 1, 1))
    name_to_i = {n: i for i, n in enumerate(names)}
    for image in rec.images.values():
        if not image.has_pose:
            continue
        i = name_to_i[image.name]
        w2c = np.eye(4)
        w2c[:3] = image.cam_from_world().matrix()
        poses[i] = np.linalg.inv(w2c)
        registered[i] = True
    cam = next(iter(rec.cameras.values()))
    K_est = np.asarray(cam.calibration_matrix(), dtype=np.float64)
    pts = np.array([p.xyz for p in rec.points3D.values()]).reshape(-1, 3)
    cols = np.array([p.color for p in rec.points3D.values()], dtype=np.uint8).reshape(-1, 3)
    return CameraRecovery(
        frame_indices=np.asarray(idx), registered=registered, poses=poses, K=K_est, points=pts, colors=cols,
        reprojection_error=float(rec.compute_mean_reprojection_error()),
        track_length=float(rec.compute_mean_track_length()), method="pycolmap",
        details={"matcher": matcher, "num_models": len(recs), "camera_model": cam.model.name,
                 "num_points": int(len(pts))},
    )


# --------------------------------------------------------------------------- OpenCV


def _opencv_recover(frames: np.ndarray, idx: np.ndarray, *, K: np.ndarray | None, masks: np.ndarray | None) -> CameraRecovery:
    import cv2

    S, H, W = frames.shape[:3]
    K = K if K is not None else default_K(H, W)
    sift = cv2.SIFT_create(contrastThreshold=0.01)  # type: ignore[attr-defined]  # missing from cv2 stubs
    kps, descs = [], []
    for i in range(S):
        gray = cv2.cvtColor(frames[i], cv2.COLOR_RGB2GRAY)
        m = None if masks is None else np.where(masks[i], 0, 255).astype(np.uint8)
        kp, de = sift.detectAndCompute(gray, m)
        kps.append(np.array([k.pt for k in kp], np.float64).reshape(-1, 2))
        descs.append(de)
    matcher = cv2.BFMatcher(cv2.NORM_L2)
    poses = np.tile(np.eye(4), (S, 1, 1))
    registered = np.zeros(S, bool)
    registered[0] = True
    all_pts, all_cols, errs = [], [], []
    prev_depth: float | None = None
    scale = 1.0
    for i in range(1, S):
        pts = _match_pair(matcher, kps[i - 1], descs[i - 1], kps[i], descs[i])
        if pts is None or not registered[i - 1]:
            break  # the chain is broken: later frames cannot be placed in the same frame
        p0, p1 = pts
        E, inl = cv2.findEssentialMat(p0, p1, K, method=cv2.USAC_MAGSAC, prob=0.999, threshold=1.0)
        if E is None or E.shape[0] < 3:
            break
        # Consecutive video frames have small baselines: accept far points in the cheirality test
        # (OpenCV's default drops points beyond 50 baselines, i.e. most of the scene).
        n_inl, R, t, inl2, _ = cv2.recoverPose(E[:3], p0, p1, K, distanceThresh=1e4, mask=inl.copy())
        good = inl2.ravel() > 0
        if n_inl < 8:
            break
        # Triangulate in the frame of camera i-1 (unit baseline) to fix the relative scale.
        P0 = K @ np.hstack([np.eye(3), np.zeros((3, 1))])
        P1 = K @ np.hstack([R, t])
        X = cv2.triangulatePoints(P0, P1, p0[good].T, p1[good].T)
        X = (X[:3] / X[3]).T
        front = X[:, 2] > 0
        if front.sum() < 5:
            break
        depth = float(np.median(X[front, 2]))
        if prev_depth is not None:
            # Keep the scene depth seen from the shared camera i-1 constant across pairs.
            scale = scale * prev_depth / depth if depth > 0 else scale
        rel = np.eye(4)  # cam_i from cam_{i-1}
        rel[:3, :3], rel[:3, 3] = R, t.ravel() * scale
        poses[i] = poses[i - 1] @ np.linalg.inv(rel)
        registered[i] = True
        # depth of the same points seen from camera i (for the next pair's scale)
        Xi = X[front] @ R.T + t.ravel()
        prev_depth = float(np.median(Xi[:, 2]))
        proj = (P1 @ np.hstack([X[front], np.ones((front.sum(), 1))]).T).T
        err = np.linalg.norm(proj[:, :2] / proj[:, 2:3] - p1[good][front], axis=1)
        errs.append(err)
        Xw = (poses[i - 1] @ np.hstack([X[front] * scale, np.ones((front.sum(), 1))]).T).T[:, :3]
        all_pts.append(Xw)
        uv = np.clip(np.round(p0[good][front]).astype(int), 0, [W - 1, H - 1])
        all_cols.append(frames[i - 1][uv[:, 1], uv[:, 0]])
    if registered.sum() < 2:
        return _failed(frames, idx, K, "opencv", "OpenCV essential-matrix chain failed at the first pair "
                       "(too few SIFT matches or no camera translation)")
    return CameraRecovery(
        frame_indices=np.asarray(idx), registered=registered, poses=poses, K=K,
        points=np.concatenate(all_pts) if all_pts else np.zeros((0, 3)),
        colors=np.concatenate(all_cols).astype(np.uint8) if all_cols else np.zeros((0, 3), np.uint8),
        reprojection_error=float(np.concatenate(errs).mean()) if errs else float("nan"),
        track_length=2.0, method="opencv", details={"chain_length": int(registered.sum())},
    )


def _match_pair(matcher: Any, k0: np.ndarray, d0: Any, k1: np.ndarray, d1: Any) -> tuple[np.ndarray, np.ndarray] | None:
    if d0 is None or d1 is None or len(k0) < 8 or len(k1) < 8:
        return None
    good = [m for m, n in (p for p in matcher.knnMatch(d0, d1, k=2) if len(p) == 2) if m.distance < 0.8 * n.distance]
    if len(good) < 8:
        return None
    return k0[[m.queryIdx for m in good]], k1[[m.trainIdx for m in good]]


# ----------------------------------------------------------------------- motion masks


def motion_masks(frames: np.ndarray, *, threshold: float = 1.0 / 128, max_area: float = 0.3,
                 samples: int = 4000) -> np.ndarray:
    """Masks of independently moving regions ``bool [S, H, W]`` (True = dynamic, ignore).

    Each frame's dense optical flow (OpenCV DIS) to each neighbour is compared with the
    dominant (camera) motion, a homography fitted by RANSAC to the flow itself; pixels whose
    flow departs from it by more than ``threshold`` x the longer image side (1 px at 128 px)
    against *both* neighbours are dynamic. Parallax of a static scene also departs from a
    homography, so a frame whose mask covers more than ``max_area`` of the image is left
    unmasked: better keep features than mask the scene.

    Flow rather than the grey-level residual of the warped neighbour: a moving robot arm is
    large and plain, so only its edges change brightness and the old residual masked 0-5 % of it
    (orbiting-camera robotics references then had ATE of 4-20 % of the path; with flow 0.4-0.9 %).
    """
    import cv2

    S, H, W = frames.shape[:3]
    gray = [cv2.cvtColor(np.ascontiguousarray(f), cv2.COLOR_RGB2GRAY) for f in frames]
    dis = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM)  # type: ignore[attr-defined]  # missing from cv2 stubs
    yy, xx = np.mgrid[0:H, 0:W].astype(np.float32)
    grid = np.stack([xx.ravel(), yy.ravel()], 1)
    pick = np.random.default_rng(0).choice(len(grid), min(samples, len(grid)), replace=False)
    tol = threshold * max(H, W)

    def departure(i: int, j: int) -> np.ndarray | None:
        flow = dis.calc(gray[i], gray[j], None).reshape(-1, 2)
        target = grid + flow
        hm, _ = cv2.findHomography(grid[pick], target[pick], cv2.RANSAC, tol)
        if hm is None:
            return None
        camera = cv2.perspectiveTransform(grid[None], hm)[0]
        return np.linalg.norm(target - camera, axis=1).reshape(H, W)

    out = np.zeros((S, H, W), bool)
    kernel = np.ones((5, 5), np.uint8)
    for i in range(S):
        res = [r for r in (departure(i, i - 1) if i > 0 else None, departure(i, i + 1) if i < S - 1 else None) if r is not None]
        if not res:
            continue
        dyn = np.minimum.reduce(res) > tol
        dyn = cv2.dilate(cv2.morphologyEx(dyn.astype(np.uint8), cv2.MORPH_OPEN, np.ones((3, 3), np.uint8)), kernel) > 0
        if dyn.mean() <= max_area:
            out[i] = dyn
    return out
