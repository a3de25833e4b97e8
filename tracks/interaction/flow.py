"""Dense optical flow and frame preprocessing shared by the interaction and long-video tracks.

OpenCV's DIS flow (Kroeger et al. 2016) is used rather than Farneback because it is ~10x
faster at 128 px on CPU with similar accuracy for the global motions we measure.
"""

from __future__ import annotations

import numpy as np

MAX_SIDE = 128  # analysis resolution: signals are computed on frames downscaled to this


def to_gray(frames: np.ndarray, max_side: int = MAX_SIDE) -> np.ndarray:
    """RGB ``uint8 [T, H, W, 3]`` → grayscale ``uint8 [T, h, w]`` with ``max(h, w) <= max_side``."""
    import cv2

    frames = np.asarray(frames)
    h, w = frames.shape[1:3]
    scale = min(1.0, max_side / max(h, w))
    size = (max(8, round(w * scale)), max(8, round(h * scale)))
    out = []
    for f in frames:
        g = cv2.cvtColor(np.ascontiguousarray(f), cv2.COLOR_RGB2GRAY)
        if scale < 1.0:
            g = cv2.resize(g, size, interpolation=cv2.INTER_AREA)
        out.append(g)
    return np.stack(out)  # [T, h, w]


def frame_change(frames: np.ndarray, max_side: int = MAX_SIDE) -> np.ndarray:
    """Mean absolute grey-level change of every consecutive frame pair ``float32 [T - 1]``, on frames
    shrunk by :func:`to_gray` (codec noise averages out; no tracking or flow needed)."""
    gray = to_gray(frames, max_side).astype(np.float32)  # [T, h, w]
    if len(gray) < 2:
        return np.zeros(0, np.float32)
    return np.abs(np.diff(gray, axis=0)).reshape(len(gray) - 1, -1).mean(axis=1)


def resize_rgb(frames: np.ndarray, max_side: int = MAX_SIDE) -> np.ndarray:
    """RGB frames downscaled (area interpolation) so that ``max(h, w) <= max_side``."""
    import cv2

    frames = np.asarray(frames)
    h, w = frames.shape[1:3]
    scale = min(1.0, max_side / max(h, w))
    if scale >= 1.0:
        return frames
    size = (max(8, round(w * scale)), max(8, round(h * scale)))
    return np.stack([cv2.resize(np.ascontiguousarray(f), size, interpolation=cv2.INTER_AREA) for f in frames])


class FlowEstimator:
    """DIS optical flow between grayscale frames (one OpenCV object reused across calls)."""

    def __init__(self) -> None:
        import cv2

        self._dis = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_FAST)  # type: ignore[attr-defined]  # missing from cv2 stubs

    def __call__(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Flow ``float32 [h, w, 2]`` (dx, dy in pixels) such that ``a[y, x] ≈ b[y + dy, x + dx]``."""
        return self._dis.calc(np.ascontiguousarray(a), np.ascontiguousarray(b), None)


def warp(image: np.ndarray, flow: np.ndarray) -> np.ndarray:
    """Backward-warp ``image`` by ``flow``: ``out[y, x] = image[y + dy, x + dx]`` (bilinear, edges replicated)."""
    import cv2

    h, w = flow.shape[:2]
    gx, gy = np.meshgrid(np.arange(w, dtype=np.float32), np.arange(h, dtype=np.float32))
    return cv2.remap(image, gx + flow[..., 0], gy + flow[..., 1], cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
