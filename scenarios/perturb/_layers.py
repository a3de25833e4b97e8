"""Object layers for the physics perturbations: masks, a clean background plate, and
compositing of moved/warped objects.

With a reference rendering (``rendered.masks``) the object masks are exact. Without one
(``rendered=None``) they are estimated from motion: pixels that differ from the temporal
median frame by more than :data:`MOTION_THRESHOLD` form one object (id 1). That degraded
mode assumes a static camera and a single moving object; it is logged.

The clean plate is the per-pixel temporal median over frames where the pixel is not
covered by any object (the object is elsewhere then); pixels covered in every frame are
filled with OpenCV's Telea inpainting.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from worldolympiad.scenario import Rendered
from worldolympiad.types import Video

logger = logging.getLogger(__name__)

MOTION_THRESHOLD = 25  # uint8 levels (max over channels) from the median frame


@dataclass
class Layers:
    """Masks ``int32 [T, H, W]``, ``object_ids`` (name → id), clean plate ``uint8 [H, W, 3]``."""

    masks: np.ndarray
    object_ids: dict[str, int]
    plate: np.ndarray
    exact: bool

    def centroids(self, oid: int) -> np.ndarray:
        """Per-frame mask centroid ``[T, 2]`` (x, y); NaN where the object is absent."""
        out = np.full((self.masks.shape[0], 2), np.nan)
        for t, m in enumerate(self.masks == oid):
            ys, xs = np.nonzero(m)
            if len(xs):
                out[t] = (xs.mean(), ys.mean())
        return out

    def main_object(self, start: int = 0) -> int:
        """The object that moves most (centroid path length), ties broken by area.

        Only objects visible in frames ``start:`` compete, so a perturbation that acts
        from ``start`` on picks an object it can act on.
        """
        best, best_key = 0, (-1.0, -1)
        for oid in sorted(set(self.object_ids.values())):
            if not (self.masks[start:] == oid).any():
                continue
            c = self.centroids(oid)
            ok = ~np.isnan(c[:, 0])
            path = float(np.nansum(np.linalg.norm(np.diff(c[ok], axis=0), axis=1))) if ok.sum() > 1 else 0.0
            key = (round(path, 3), int((self.masks == oid).sum()))
            if key > best_key:
                best, best_key = oid, key
        if best == 0:
            raise ValueError(f"no object pixels found in the masks from frame {start} on; "
                             "this perturbation needs a visible object (use a case with objects)")
        return best


def object_layers(video: Video, rendered: Rendered | None) -> Layers:
    """Masks and clean plate for ``video`` (see module docstring for the degraded mode)."""
    import cv2

    frames = video.frames
    if rendered is not None and rendered.masks is not None and rendered.masks.shape == frames.shape[:3]:
        masks = rendered.masks.astype(np.int32)
        ids = dict(rendered.object_ids) or {f"object_{i}": int(i) for i in np.unique(masks) if i}
        exact = True
    else:
        logger.info("no reference masks: estimating one moving object from motion (static camera assumed)")
        med = np.median(frames, axis=0)
        diff = np.abs(frames.astype(np.int16) - med.astype(np.int16)).max(axis=-1)
        masks = (diff > MOTION_THRESHOLD).astype(np.int32)
        ids = {"object": 1}
        exact = False
    covered = masks > 0
    f = frames.astype(np.float32)
    f[covered] = np.nan
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            median = np.nanmedian(f, axis=0)  # [H, W, 3], NaN where always covered
    holes = np.isnan(median).any(axis=-1)
    plate: np.ndarray = np.nan_to_num(median, nan=0.0).round().astype(np.uint8)
    if holes.any():
        hole_mask = np.asarray(holes, dtype=np.uint8)
        plate = np.asarray(cv2.inpaint(plate, hole_mask, 3, cv2.INPAINT_TELEA))
    return Layers(masks=masks, object_ids=ids, plate=plate, exact=exact)


def move_object(frame: np.ndarray, obj: np.ndarray, plate: np.ndarray, M: np.ndarray, *, keep_original: bool = False,
                alpha: float = 1.0) -> np.ndarray:
    """Erase the object ``obj`` (bool [H, W]) from ``frame`` and paste it transformed by ``M``.

    Args:
        frame: ``uint8 [H, W, 3]``.
        obj: object mask in ``frame``.
        plate: clean background ``uint8 [H, W, 3]`` used where the object was.
        M: 2x3 affine map (source pixel → destination pixel), OpenCV convention.
        keep_original: leave the original object in place (the copy is added).
        alpha: opacity of the pasted copy.
    """
    import cv2

    H, W = frame.shape[:2]
    base = frame.copy() if keep_original else np.where(obj[..., None], plate, frame)
    a = cv2.warpAffine(obj.astype(np.float32), M, (W, H), flags=cv2.INTER_LINEAR, borderValue=0.0)
    rgb = cv2.warpAffine(frame, M, (W, H), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    a = np.clip(a * alpha, 0.0, 1.0)[..., None]
    return (base * (1.0 - a) + rgb * a).round().astype(np.uint8)


def translation(dx: float, dy: float) -> np.ndarray:
    return np.array([[1.0, 0.0, dx], [0.0, 1.0, dy]])


def scale_about(cx: float, cy: float, sx: float, sy: float) -> np.ndarray:
    return np.array([[sx, 0.0, cx - sx * cx], [0.0, sy, cy - sy * cy]])
