"""Physics perturbations: the objects stop obeying mechanics.

Each uses the reference's object masks (``rendered.masks``) to erase the main object
(the one that moves most) over a clean background plate and paste it somewhere else; see
:mod:`scenarios.perturb._layers` for the masks/plate and the degraded mode without a
reference (motion-estimated single object, static camera assumed). Displacements are in
image space (pixels), which is what a video model's output can be judged on.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from scenarios.perturb._layers import move_object, object_layers, scale_about, translation
from scenarios.perturb.base import perturbation
from worldolympiad.scenario import Rendered
from worldolympiad.types import Case, Video


def _vertical_rescale(video: Video, rendered: Rendered | None, factor: float) -> tuple[np.ndarray, dict[str, Any]]:
    """Scale the main object's vertical displacement from frame 0 by ``factor``."""
    lay = object_layers(video, rendered)
    oid = lay.main_object()
    c = lay.centroids(oid)
    ok = ~np.isnan(c[:, 1])
    y0 = c[ok][0, 1]
    out = video.frames.copy()
    shifts = np.zeros(len(c))
    for t in np.nonzero(ok)[0]:
        dy = (factor - 1.0) * (c[t, 1] - y0)
        shifts[t] = dy
        if abs(dy) > 1e-6:
            out[t] = move_object(video.frames[t], lay.masks[t] == oid, lay.plate, translation(0.0, dy))
    return out, {"object_id": int(oid), "vertical_shift_px": shifts.round(3).tolist(), "exact_masks": lay.exact}


@perturbation("gravity_reversed", "physics",
              "s in [0, 1] (larger clipped): the main object's vertical displacement from frame 0 is scaled by "
              "(1 - 2 s); s = 1 mirrors it, so falling objects accelerate upward")
def gravity_reversed(video: Video, case: Case, s: float, rng: np.random.Generator, rendered: Rendered | None):
    """Objects fall up: the main object's vertical motion is mirrored about its start."""
    return _vertical_rescale(video, rendered, 1.0 - 2.0 * min(s, 1.0))


@perturbation("gravity_scaled", "physics",
              "s >= 0: the main object's vertical displacement (hence its apparent gravity) is multiplied by (1 + s)")
def gravity_scaled(video: Video, case: Case, s: float, rng: np.random.Generator, rendered: Rendered | None):
    """Gravity is too strong: vertical displacement grows by a factor ``1 + s``."""
    return _vertical_rescale(video, rendered, 1.0 + s)


def _toward_free_side(lay: Any, oid: int, width: int) -> float:
    """-1 or +1: the horizontal direction with more room, from the object's mean x position."""
    c = lay.centroids(oid)
    x_mid = np.nanmean(c[:, 0]) if not np.isnan(c[:, 0]).all() else width / 2
    return -1.0 if x_mid > width / 2 else 1.0


@perturbation("teleport", "physics",
              "s >= 0: from the middle frame on, the main object is displaced by s * W / 4 pixels to the side")
def teleport(video: Video, case: Case, s: float, rng: np.random.Generator, rendered: Rendered | None):
    """The main object jumps sideways at the middle frame and stays displaced."""
    lay = object_layers(video, rendered)
    T, H, W = video.frames.shape[:3]
    t0 = T // 2
    oid = lay.main_object(t0)
    dx = s * W / 4 * _toward_free_side(lay, oid, W)
    out = video.frames.copy()
    for t in range(t0, T):
        out[t] = move_object(video.frames[t], lay.masks[t] == oid, lay.plate, translation(dx, 0.0))
    return out, {"object_id": int(oid), "frame": t0, "shift_px": [dx, 0.0]}


@perturbation("vanish", "physics",
              "s in [0, 1]: the main object is erased from frame T - round(s * T / 2) on (s = 1: the last half)")
def vanish(video: Video, case: Case, s: float, rng: np.random.Generator, rendered: Rendered | None):
    """Object permanence broken: the main object disappears."""
    lay = object_layers(video, rendered)
    T = video.num_frames
    t0 = T - int(round(min(s, 1.0) * T / 2))
    oid = lay.main_object(min(t0, T - 1))
    out = video.frames.copy()
    for t in range(t0, T):
        m = lay.masks[t] == oid
        out[t][m] = lay.plate[m]
    return out, {"object_id": int(oid), "from_frame": t0}


@perturbation("appear", "physics",
              "s in [0, 1]: opacity of a duplicate of the main object that pops into view at the middle frame, "
              "W / 3 pixels to the side")
def appear(video: Video, case: Case, s: float, rng: np.random.Generator, rendered: Rendered | None):
    """An object appears from nowhere: a copy of the main object materialises mid-video."""
    lay = object_layers(video, rendered)
    T, H, W = video.frames.shape[:3]
    t0 = T // 2
    oid = lay.main_object(t0)
    dx = W / 3 * _toward_free_side(lay, oid, W)
    out = video.frames.copy()
    for t in range(t0, T):
        out[t] = move_object(video.frames[t], lay.masks[t] == oid, lay.plate, translation(dx, 0.0),
                             keep_original=True, alpha=min(s, 1.0))
    return out, {"object_id": int(oid), "from_frame": t0, "offset_px": [dx, 0.0]}


@perturbation("shape_morph", "physics",
              "s >= 0: the main object is stretched about its centroid by 1 + s * t / (T - 1) horizontally and squeezed "
              "by the inverse vertically (area kept, aspect ratio drifts to (1 + s)^2)")
def shape_morph(video: Video, case: Case, s: float, rng: np.random.Generator, rendered: Rendered | None):
    """A rigid object changes shape over time."""
    lay = object_layers(video, rendered)
    oid = lay.main_object()
    T = video.num_frames
    c = lay.centroids(oid)
    out = video.frames.copy()
    for t in range(T):
        if np.isnan(c[t, 0]):
            continue
        k = 1.0 + s * t / max(T - 1, 1)
        out[t] = move_object(video.frames[t], lay.masks[t] == oid, lay.plate, scale_about(c[t, 0], c[t, 1], k, 1.0 / k))
    return out, {"object_id": int(oid), "final_stretch": 1.0 + s}


@perturbation("time_reversal", "physics",
              "s in [0, 1]: the last round(s * T) frames play backwards (s = 1: the whole video reversed)")
def time_reversal(video: Video, case: Case, s: float, rng: np.random.Generator, rendered: Rendered | None):
    """Time runs backwards: falling objects rise, effects precede causes."""
    T = video.num_frames
    n = int(round(min(s, 1.0) * T))
    order = np.arange(T)
    if n >= 2:
        order[T - n :] = order[T - n :][::-1]
    return video.frames[order], {"order": order.tolist()}


@perturbation("frozen", "physics",
              "s in [0, 1]: motion stops after frame T - 1 - round(s * (T - 1)); later frames repeat it (s = 1: a still)")
def frozen(video: Video, case: Case, s: float, rng: np.random.Generator, rendered: Rendered | None):
    """Frozen motion: the world stops moving part-way through."""
    T = video.num_frames
    last = T - 1 - int(round(min(s, 1.0) * (T - 1)))
    order = np.minimum(np.arange(T), last)
    return video.frames[order], {"frozen_from": int(last + 1), "order": order.tolist()}


@perturbation("interpenetration", "physics",
              "s in [0, 1]: the main object is moved toward the nearest other object by s times their centroid distance "
              "(or, alone, down by s times its own height into the surface below) and drawn overlapping it")
def interpenetration(video: Video, case: Case, s: float, rng: np.random.Generator, rendered: Rendered | None):
    """Solid objects pass into each other (or into the floor)."""
    lay = object_layers(video, rendered)
    oid = lay.main_object()
    others = [o for o in sorted(set(lay.object_ids.values())) if o != oid and (lay.masks == o).any()]
    T = video.num_frames
    ca = lay.centroids(oid)
    out = video.frames.copy()
    shifts = []
    for t in range(T):
        m = lay.masks[t] == oid
        if not m.any():
            shifts.append([0.0, 0.0])
            continue
        if others:
            cands = [(np.linalg.norm(lay.centroids(o)[t] - ca[t]), o) for o in others if (lay.masks[t] == o).any()]
            if cands:
                _, o = min(cands)
                d = (lay.centroids(o)[t] - ca[t]) * min(s, 1.0)
            else:
                d = np.zeros(2)
        else:
            ys = np.nonzero(m)[0]
            d = np.array([0.0, min(s, 1.0) * (ys.max() - ys.min() + 1)])
        shifts.append(d.round(3).tolist())
        out[t] = move_object(video.frames[t], m, lay.plate, translation(float(d[0]), float(d[1])))
    return out, {"object_id": int(oid), "shift_px": shifts}
