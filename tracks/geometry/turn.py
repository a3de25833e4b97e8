"""The turn-in-place fit: a video's camera orientations when the reference camera turns without moving.

Why not the SfM model: a camera that only turns gives SfM no baseline. Incremental and global mappers
then invent one, a translation of a few per cent of the scene depth that trades off against the
rotation (the rotation-translation ambiguity of a narrow field of view), so the recovered yaw of a
clean, lossless maze sweep ran 1-4 % ahead of the true yaw: 1-3.5 degrees of mean orientation error
and 0.5-1.9 degrees of RPE rotation per step (session 48, ``bench/suites/geometry_tune/maze_yaw.yaml``),
and which estimators agreed with which was a coin toss. A turn in place is a homography between any two
frames, ``x_j ~ K R_ji K^-1 x_i``: with the intrinsics known the bearings of matched features are related by
a rotation alone, which two correspondences fix. On the same videos the rotation-only fit below recovered
the orientations to 0.1-1.0 degrees (0.1-0.2 degrees per step); a camera that also travels (turning
about a pivot 0.3 m behind it), homography jitter or shuffled frames are not explained by one rotation
per frame, and their fitted orientations leave the reference's by degrees.

Method: SIFT features (dynamic regions masked), ratio-test matches between every pair of sampled frames
up to ``max_gap`` apart; per pair a 2-point RANSAC rotation on unit bearings (Kabsch on the inliers,
threshold in pixels at the focal length); orientations initialised along a spanning tree of the pair graph
and refined by chordal rotation averaging weighted by inlier counts (frame 0 of the component fixed).
Frames outside the largest connected component are not registered.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class TurnFit:
    """Orientations of the sampled frames under the turn-in-place model.

    Attributes:
        registered: frames the pair graph connects ``[S]`` (bool).
        rotations: camera-to-world rotations ``[S, 3, 3]`` (OpenCV camera axes; identity where not
            registered), in the frame of the component's first camera.
        details: pairs used, their mean inlier fraction, the median inlier residual (px).
    """

    registered: np.ndarray
    rotations: np.ndarray
    details: dict[str, Any] = field(default_factory=dict)
    #: pixel positions of each sampled frame's SIFT keypoints ``[S][n_s, 2]``
    keypoints: list[np.ndarray] = field(default_factory=list)
    #: rotation inliers of each matched pair: ``(i, j) -> (keypoint indices in i, keypoint indices in j)``
    matches: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    def poses(self) -> np.ndarray:
        """Camera-to-world ``[S, 4, 4]`` with these rotations, every camera at the origin."""
        out = np.tile(np.eye(4), (len(self.rotations), 1, 1))
        out[:, :3, :3] = self.rotations
        return out

    def observations(self) -> np.ndarray:
        """Feature tracks through the pairs' rotation inliers: rows ``(track, frame, x, y)`` ``[N, 4]``.

        Keypoints joined by an inlier match of any pair are one track (one scene direction); only the
        registered frames' keypoints count, a track needs two frames, and a track that holds two keypoints
        of one frame (a chain of matches that contradicts itself) is left out. Track ids are ``0..T-1``.
        """
        from scipy.sparse import coo_matrix
        from scipy.sparse.csgraph import connected_components

        offsets = np.cumsum([0] + [len(k) for k in self.keypoints])
        edges = [(offsets[i] + qi, offsets[j] + ti) for (i, j), (qi, ti) in self.matches.items()
                 if self.registered[i] and self.registered[j] and len(qi)]
        if not edges:
            return np.zeros((0, 4))
        a = np.concatenate([e[0] for e in edges])
        b = np.concatenate([e[1] for e in edges])
        n = int(offsets[-1])
        _, label = connected_components(coo_matrix((np.ones(len(a)), (a, b)), shape=(n, n)), directed=False)
        nodes = np.unique(np.r_[a, b])
        frame = np.searchsorted(offsets, nodes, side="right") - 1
        track = label[nodes]
        size = np.bincount(track, minlength=n)
        frames_seen = np.bincount(np.unique(track * len(self.keypoints) + frame) // len(self.keypoints), minlength=n)
        keep = (size[track] >= 2) & (frames_seen[track] == size[track])
        nodes, frame, track = nodes[keep], frame[keep], track[keep]
        _, track = np.unique(track, return_inverse=True)
        xy = np.concatenate(self.keypoints)[nodes]
        return np.c_[track, frame, xy].astype(np.float64)

    def reprojection_errors(self, K: np.ndarray,  # noqa: N803 - intrinsics
                            observations: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Per observation of :meth:`observations` (returned too; pass them when already built), the
        reprojection error in pixels.

        The turn-in-place counterpart of SfM's reprojection error: a pure rotation has no depth, so a
        track's "3-D point" is a direction, the normalised mean of its bearings rotated into the world by
        the fitted (globally averaged) orientations; the error is the pixel distance between the
        keypoint and that direction projected into the frame by ``K`` and the frame's orientation.
        """
        obs = self.observations() if observations is None else observations
        if len(obs) == 0:
            return np.zeros(0), obs
        track, frame = obs[:, 0].astype(int), obs[:, 1].astype(int)
        b = _bearings(obs[:, 2:4], np.linalg.inv(K))
        world = np.einsum("nij,nj->ni", self.rotations[frame], b)
        d = np.zeros((int(track.max()) + 1, 3))
        np.add.at(d, track, world)
        d /= np.linalg.norm(d, axis=1, keepdims=True)
        cam = np.einsum("nji,nj->ni", self.rotations[frame], d[track])  # R_f^T d
        px = cam @ K.T
        return np.linalg.norm(px[:, :2] / px[:, 2:3] - obs[:, 2:4], axis=1), obs


def _project_so3(M: np.ndarray) -> np.ndarray:
    """Nearest rotation(s) to ``M`` ``[..., 3, 3]`` in the Frobenius norm."""
    U, _, Vt = np.linalg.svd(M)
    d = np.sign(np.linalg.det(U @ Vt))
    U = U.copy()
    U[..., :, 2] *= d[..., None]
    return U @ Vt


def rotation_between(b0: np.ndarray, b1: np.ndarray, focal: float, *, threshold_px: float = 1.5,
                     iterations: int = 200, rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Robust rotation ``R`` with ``b1 ~ R b0`` for unit bearings ``[N, 3]``: ``(R, inlier mask)``.

    2-point RANSAC (Kabsch on each sample, all hypotheses at once), then Kabsch on the inliers, three
    times. A bearing pair is an inlier when ``|R b0 x b1|`` (the angle between them) is within
    ``threshold_px`` pixels at ``focal``.
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    n = len(b0)
    if n < 2 or b1.shape != b0.shape:
        raise ValueError(f"rotation_between needs two [N >= 2, 3] bearing arrays of one shape, got {b0.shape} and {b1.shape}")
    thr = threshold_px / focal
    a = rng.integers(0, n, size=iterations)
    b = (a + rng.integers(1, n, size=iterations)) % n  # a different second point
    samples = np.stack([a, b], 1)  # [I, 2]
    Hs = np.einsum("isj,isk->ijk", b1[samples], b0[samples])  # sum_s b1 b0^T  [I, 3, 3]
    Rs = _project_so3(Hs)
    res = np.linalg.norm(np.cross(np.einsum("ijk,nk->inj", Rs, b0), b1[None]), axis=-1)  # [I, N]
    best = int(np.argmax((res < thr).sum(1)))
    R, inl = Rs[best], res[best] < thr
    for _ in range(3):
        if inl.sum() < 2:
            break
        R = _project_so3(b1[inl].T @ b0[inl])
        inl = np.linalg.norm(np.cross(b0 @ R.T, b1), axis=1) < thr
    return R, inl


def fit_turn(frames: np.ndarray, K: np.ndarray, masks: np.ndarray | None = None, *, max_gap: int = 4,
             threshold_px: float = 1.5, min_inliers: int = 12, seed: int = 0) -> TurnFit:
    """Fit one rotation per frame (the camera centre fixed) to ``frames`` ``uint8 [S, H, W, 3]``.

    Args:
        K: intrinsics of the frames (the case's when known, else the SfM estimate).
        masks: ``bool [S, H, W]``, True = independently moving (no features there).
        max_gap: pairs of sampled frames up to this many apart are matched.
        threshold_px: RANSAC inlier threshold.
        min_inliers: a pair with fewer rotation inliers is left out of the graph.
    """
    import cv2

    from tracks.geometry.sfm import match_indices as _match_indices

    S = len(frames)
    rng = np.random.default_rng(seed)
    sift = cv2.SIFT_create(contrastThreshold=0.01)  # type: ignore[attr-defined]  # missing from cv2 stubs
    Kinv = np.linalg.inv(K)
    feats = []
    for i in range(S):
        gray = cv2.cvtColor(np.ascontiguousarray(frames[i]), cv2.COLOR_RGB2GRAY)
        m = None if masks is None else np.where(masks[i], 0, 255).astype(np.uint8)
        kp, de = sift.detectAndCompute(gray, m)
        feats.append((np.array([k.pt for k in kp], np.float64).reshape(-1, 2), de))
    matcher = cv2.BFMatcher(cv2.NORM_L2)
    rel: dict[tuple[int, int], tuple[np.ndarray, int]] = {}  # (i, j) -> (R_ji: b_j ~ R b_i, inliers)
    inlier_matches: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
    fractions, residuals = [], []
    for i in range(S):
        for j in range(i + 1, min(S, i + 1 + max_gap)):
            found = _match_indices(matcher, feats[i][0], feats[i][1], feats[j][0], feats[j][1])
            if found is None:
                continue
            qi, ti = found
            pts = feats[i][0][qi], feats[j][0][ti]
            b0 = _bearings(pts[0], Kinv)
            b1 = _bearings(pts[1], Kinv)
            R, inl = rotation_between(b0, b1, float(K[0, 0]), threshold_px=threshold_px, rng=rng)
            if int(inl.sum()) < min_inliers:
                continue
            rel[(i, j)] = (R, int(inl.sum()))
            inlier_matches[(i, j)] = (qi[inl], ti[inl])
            fractions.append(float(inl.mean()))
            residuals.append(float(np.median(np.linalg.norm(np.cross(b0[inl] @ R.T, b1[inl]), axis=1)) * K[0, 0]))
    registered, rotations = _average(S, rel)
    return TurnFit(registered, rotations, {
        "model": "rotation only (turn in place)", "pairs": len(rel), "max_gap": max_gap, "threshold_px": threshold_px,
        "mean_inlier_fraction": float(np.mean(fractions)) if fractions else 0.0,
        "median_residual_px": float(np.median(residuals)) if residuals else None,
    }, keypoints=[f[0] for f in feats], matches=inlier_matches)


def _bearings(xy: np.ndarray, Kinv: np.ndarray) -> np.ndarray:
    b = np.c_[xy, np.ones(len(xy))] @ Kinv.T
    return b / np.linalg.norm(b, axis=1, keepdims=True)


def _average(S: int, rel: dict[tuple[int, int], tuple[np.ndarray, int]], sweeps: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """Camera-to-world rotations from relative ones: spanning-tree start, chordal averaging (Gauss-Seidel)."""
    rotations = np.tile(np.eye(3), (S, 1, 1))
    registered = np.zeros(S, bool)
    if not rel:
        return registered, rotations
    nbrs: dict[int, list[tuple[int, np.ndarray, int]]] = {i: [] for i in range(S)}
    for (i, j), (R, w) in rel.items():  # c2w_j = c2w_i R^T ; c2w_i = c2w_j R
        nbrs[i].append((j, R.T, w))
        nbrs[j].append((i, R, w))
    # the largest connected component, its lowest frame as the anchor
    seen: set[int] = set()
    best: list[int] = []
    for start in range(S):
        if start in seen or not nbrs[start]:
            continue
        comp, stack = [start], [start]
        seen.add(start)
        while stack:
            k = stack.pop()
            for m, _, _ in nbrs[k]:
                if m not in seen:
                    seen.add(m)
                    comp.append(m)
                    stack.append(m)
        if len(comp) > len(best):
            best = comp
    anchor = min(best)
    registered[anchor] = True
    frontier = [anchor]
    while frontier:  # breadth-first spanning tree, strongest edges first
        nxt = []
        for k in frontier:
            for m, R_km, _ in sorted(nbrs[k], key=lambda e: -e[2]):
                if not registered[m]:
                    rotations[m] = rotations[k] @ R_km
                    registered[m] = True
                    nxt.append(m)
        frontier = nxt
    order = sorted(best)
    for _ in range(sweeps):
        for m in order:
            if m == anchor:
                continue
            acc = sum(w * (rotations[k] @ R_km.T) for k, R_km, w in nbrs[m] if registered[k])
            rotations[m] = _project_so3(np.asarray(acc))
    return registered, rotations
