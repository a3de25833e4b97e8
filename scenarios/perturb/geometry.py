"""Geometry perturbations: the frames stop being views of one consistent 3-D world.

All warps use OpenCV with reflected borders so no black edges give the defect away.
"""

from __future__ import annotations

import numpy as np

from scenarios.perturb.base import perturbation
from worldolympiad.scenario import Rendered
from worldolympiad.types import Case, Video


def _warp_h(frame: np.ndarray, Hm: np.ndarray) -> np.ndarray:
    import cv2

    h, w = frame.shape[:2]
    return cv2.warpPerspective(frame, Hm, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)


@perturbation("homography_jitter", "geometry",
              "s >= 0: each frame is warped by a random homography whose four image corners move by Gaussian offsets "
              "of standard deviation s * 3 % of the shorter image side")
def homography_jitter(video: Video, case: Case, s: float, rng: np.random.Generator, rendered: Rendered | None):
    """Per-frame random homographies: the camera shakes in ways no rigid motion explains."""
    import cv2

    T, H, W = video.frames.shape[:3]
    sigma = s * 0.03 * min(H, W)
    src = np.array([[0, 0], [W - 1, 0], [W - 1, H - 1], [0, H - 1]], np.float32)
    out = np.empty_like(video.frames)
    mats = []
    for t in range(T):
        dst = (src + rng.normal(0.0, sigma, size=(4, 2))).astype(np.float32)
        Hm = cv2.getPerspectiveTransform(src, dst)
        mats.append(Hm.round(6).tolist())
        out[t] = _warp_h(video.frames[t], Hm)
    return out, {"homographies": mats, "corner_sigma_px": sigma}


def _smooth_field(rng: np.random.Generator, H: int, W: int, n_waves: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """A smooth random displacement field with unit peak magnitude (sum of low-frequency waves)."""
    yy, xx = np.mgrid[0:H, 0:W].astype(np.float32)
    fx = np.zeros((H, W), np.float32)
    fy = np.zeros((H, W), np.float32)
    for _ in range(n_waves):
        kx, ky = rng.uniform(0.5, 2.0, size=2) * 2 * np.pi / np.array([W, H])
        ph = rng.uniform(0, 2 * np.pi, size=2)
        fx += np.sin(kx * xx + ky * yy + ph[0]).astype(np.float32)
        fy += np.cos(ky * yy - kx * xx + ph[1]).astype(np.float32)
    peak = max(float(np.abs(fx).max()), float(np.abs(fy).max()), 1e-6)
    return fx / peak, fy / peak


@perturbation("content_drift", "geometry",
              "s >= 0: a smooth random displacement field grows linearly in time to a peak of s * 5 % of the image "
              "width at the last frame, so static content slowly melts and slides")
def content_drift(video: Video, case: Case, s: float, rng: np.random.Generator, rendered: Rendered | None):
    """Static scene content drifts non-rigidly over time."""
    import cv2

    T, H, W = video.frames.shape[:3]
    fx, fy = _smooth_field(rng, H, W)
    yy, xx = np.mgrid[0:H, 0:W].astype(np.float32)
    amp = s * 0.05 * W
    out = np.empty_like(video.frames)
    for t in range(T):
        a = amp * t / max(T - 1, 1)
        out[t] = cv2.remap(video.frames[t], xx + a * fx, yy + a * fy, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
    return out, {"peak_displacement_px": amp}


@perturbation("frame_shuffle", "geometry",
              "s in [0, 1]: round(s * T) randomly chosen frames are randomly permuted among their own positions "
              "(s = 1: the whole video shuffled)")
def frame_shuffle(video: Video, case: Case, s: float, rng: np.random.Generator, rendered: Rendered | None):
    """Temporal order broken: frames are shuffled."""
    T = video.num_frames
    n = max(2, int(round(min(s, 1.0) * T)))
    idx = np.sort(rng.choice(T, size=min(n, T), replace=False))
    perm = idx.copy()
    while np.array_equal(perm, idx):  # a permutation that actually moves something
        perm = rng.permutation(idx)
    order = np.arange(T)
    order[idx] = perm
    return video.frames[order], {"order": order.tolist()}


@perturbation("scale_pumping", "geometry",
              "s >= 0: the image zooms in and out about its centre, zoom(t) = 1 + s * 0.25 * (1 - cos(2 pi t / P)) / 2 with "
              "period P = max(4, T / 3) frames")
def scale_pumping(video: Video, case: Case, s: float, rng: np.random.Generator, rendered: Rendered | None):
    """The world breathes: apparent scale oscillates with no camera motion to explain it."""
    import cv2

    T, H, W = video.frames.shape[:3]
    period = max(4.0, T / 3.0)
    zooms = 1.0 + s * 0.25 * (1.0 - np.cos(2 * np.pi * np.arange(T) / period)) / 2.0
    out = np.empty_like(video.frames)
    cx, cy = (W - 1) / 2.0, (H - 1) / 2.0
    for t, z in enumerate(zooms):
        M = np.array([[z, 0.0, cx - z * cx], [0.0, z, cy - z * cy]])
        out[t] = cv2.warpAffine(video.frames[t], M, (W, H), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
    return out, {"zoom": zooms.round(6).tolist()}
