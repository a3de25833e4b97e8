"""Realised motion per frame pair: camera ego-motion and agent displacement.

* **Camera ego-motion**: dense DIS optical flow sampled on a grid, a homography fitted with
  RANSAC (outliers = independently moving objects), then read off at the image centre:
  translation of the centre (content motion, fraction of the width per frame) and zoom
  (log of the mean radial scale of four points around the centre; > 0 = content expands).
* **Agent displacement**: the centroid of the agent's connected component (pixels of its colour
  within a tolerance, inside its search window) per frame; without a known colour, the
  foreground blobs against the temporal median background. The largest component starts the
  track, then the nearest one to the previous position is followed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracks.interaction.flow import FlowEstimator, resize_rgb, to_gray


@dataclass
class MotionSeries:
    """Per frame pair ``t -> t+1`` (length ``T - 1``).

    Attributes:
        translation: ``[T-1, 2]`` image motion (x right, y down) in fractions of the image width
            per frame (content motion for the camera, displacement for the agent); NaN = unknown.
        zoom: ``[T-1]`` log scale change per frame (camera only; zeros for the agent).
        source: ``camera`` or ``agent``.
        positions: ``[T, 2]`` agent centroids in pixels (agent only).
        areas: ``[T]`` pixel count of the tracked component (0 = not found; agent only).
        colors: ``[T, 3]`` mean RGB of the tracked component (NaN = not found; agent only).
    """

    translation: np.ndarray
    zoom: np.ndarray
    source: str
    positions: np.ndarray | None = None
    areas: np.ndarray | None = None
    colors: np.ndarray | None = None


def camera_motion(frames: np.ndarray, max_side: int = 128, grid_step: int = 4) -> MotionSeries:
    """Global ego-motion of ``frames`` (``uint8 [T, H, W, 3]``)."""
    import cv2

    gray = to_gray(frames, max_side)
    T, h, w = gray.shape
    flow = FlowEstimator()
    ys, xs = np.mgrid[grid_step // 2 : h : grid_step, grid_step // 2 : w : grid_step]
    src = np.stack([xs.ravel(), ys.ravel()], axis=1).astype(np.float32)  # [P, 2]
    c = np.array([(w - 1) / 2.0, (h - 1) / 2.0])
    r = 0.25 * min(h, w)
    probes = c + r * np.array([[1, 0], [-1, 0], [0, 1], [0, -1]], dtype=np.float64)
    trans = np.full((T - 1, 2), np.nan)
    zoom = np.full(T - 1, np.nan)
    for t in range(T - 1):
        f = flow(gray[t], gray[t + 1])  # gray[t][p] ~ gray[t+1][p + f(p)]
        dst = src + f[src[:, 1].astype(int), src[:, 0].astype(int)]
        H, _ = cv2.findHomography(src, dst, cv2.RANSAC, 1.0)
        if H is None or not np.isfinite(H).all():
            d = np.median(dst - src, axis=0)
            trans[t] = d / w
            zoom[t] = 0.0
            continue

        def apply(p: np.ndarray, H: np.ndarray = H) -> np.ndarray:
            q = np.c_[p, np.ones(len(p))] @ H.T
            return q[:, :2] / q[:, 2:3]

        cc = apply(c[None])[0]
        trans[t] = (cc - c) / w
        pp = apply(probes)
        zoom[t] = float(np.mean(np.log(np.linalg.norm(pp - cc, axis=1) / r)))
    return MotionSeries(trans, zoom, "camera")


def _track_components(masks: np.ndarray, min_area: int = 2,
                      static: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Centroid ``[T, 2]`` of one connected component per frame: the largest in the first frame
    where any exists, then the one nearest to the previous position (ties go to the larger).

    Components lying mostly on ``static`` (pixels that match in the temporal median frame:
    background of the agent's colour) are used only when nothing else matches.

    Returns:
        centroids ``[T, 2]`` (NaN when none), areas ``[T]`` and the chosen component's mask ``[T, h, w]``.
    """
    import cv2

    out = np.full((len(masks), 2), np.nan)
    areas = np.zeros(len(masks))
    chosen = np.zeros(masks.shape, dtype=bool)
    prev: np.ndarray | None = None
    for t, m in enumerate(masks):
        n, labels, stats, cents = cv2.connectedComponentsWithStats(m.astype(np.uint8))
        cand = [(int(stats[i, cv2.CC_STAT_AREA]), cents[i], i) for i in range(1, n) if stats[i, cv2.CC_STAT_AREA] >= min_area]
        if static is not None and len(cand) > 1:
            moving = [c for c in cand if static[labels == c[2]].mean() < 0.5]
            cand = moving or cand
        if not cand:
            continue
        if prev is None:
            best = max(cand, key=lambda a: a[0])
        else:
            best = min(cand, key=lambda a: float(np.linalg.norm(a[1] - prev)) - 0.01 * a[0])
        out[t], areas[t] = best[1], best[0]
        chosen[t] = labels == best[2]
        prev = out[t]
    return out, areas, chosen


def _color_centroids(rgb: np.ndarray, color: np.ndarray, window: dict | None,
                     tol: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    T, h, w = rgb.shape[:3]
    r0, r1 = (window or {}).get("rows", [0, h])
    c0, c1 = (window or {}).get("cols", [0, w])
    r0, r1, c0, c1 = max(0, int(r0)), min(h, int(r1)), max(0, int(c0)), min(w, int(c1))
    sub = rgb[:, r0:r1, c0:c1].astype(np.float32)
    masks = np.linalg.norm(sub - color[None, None, None, :], axis=-1) <= tol  # [T, h', w']
    static = np.linalg.norm(np.median(sub, axis=0) - color, axis=-1) <= tol
    # one pixel is enough: colour + window are specific, and small renders shrink sprites to a pixel
    cents, areas, chosen = _track_components(masks, min_area=1, static=static)
    full = np.zeros((T, h, w), dtype=bool)
    full[:, r0:r1, c0:c1] = chosen
    return cents + np.array([c0, r0], dtype=np.float64), areas, full


def _blob_centroids(gray: np.ndarray, thresh: float = 25.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    bg = np.median(gray, axis=0).astype(np.float32)
    masks = np.abs(gray.astype(np.float32) - bg[None]) > thresh
    return _track_components(masks, min_area=4)


def agent_motion(frames: np.ndarray, appearance: dict | None = None, tol: float = 60.0) -> MotionSeries:
    """Displacement of the agent sprite between frames (full resolution: sprites are small)."""
    frames = np.asarray(frames)
    w = frames.shape[2]
    if appearance and appearance.get("color") is not None:
        pos, areas, chosen = _color_centroids(frames, np.asarray(appearance["color"], dtype=np.float32),
                                              appearance.get("window"), tol)
        src = frames
    else:
        src = resize_rgb(frames, 256)
        scale = frames.shape[2] / src.shape[2]
        pos, areas, chosen = _blob_centroids(to_gray(src, 256))
        pos = pos * scale
        areas = areas * scale**2
    colors = np.full((len(frames), 3), np.nan)
    for t in range(len(frames)):
        if chosen[t].any():
            colors[t] = src[t][chosen[t]].mean(axis=0)
    trans = np.diff(pos, axis=0) / w
    return MotionSeries(trans, np.zeros(len(trans)), "agent", pos, areas, colors)
