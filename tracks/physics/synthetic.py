"""Tiny law-based renders with exact masks, for the physics track's tests and bench.

These are not benchmark scenarios (those live in ``scenarios/``): they are small,
deterministic 2-D scenes whose ground truth is known exactly, so tracker and checks can
be tested in milliseconds, plus video-level perturbations that break one law each.

Image coordinates: x right, y down (pixels); gravity is +y.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from tracks.physics.tracking import ObjectTrack

BACKGROUND = (200, 200, 205)
FLOOR = (90, 70, 50)
RED = (220, 40, 40)
BLUE = (40, 70, 220)
GREEN = (40, 170, 60)
ICE = (150, 220, 250)


@dataclass
class Scene:
    """A rendered scene: frames, per-pixel object ids and the objects' names/colours."""

    frames: np.ndarray  # uint8 [T, H, W, 3]
    masks: np.ndarray  # int32 [T, H, W], 0 = background
    objects: dict[str, dict[str, Any]]  # name -> {"id", "color"}
    fps: float = 24.0
    states: dict[str, Any] = field(default_factory=dict)

    def segmentation(self) -> Any:
        """The exact masks as a :class:`~tracks.physics.segmentation.Segmentation` (named labels)."""
        from tracks.physics.segmentation import Segmentation

        names = {o["id"]: n for n, o in self.objects.items()}
        per_frame = [{int(k): names[int(k)] for k in np.unique(m) if k} for m in self.masks]
        return Segmentation(self.masks.astype(np.int32), per_frame, "ground_truth")

    def object_hints(self) -> list[dict[str, Any]]:
        """``physics.objects`` entries (name, colour, first-frame box) as a case would declare them."""
        out = []
        for name, o in self.objects.items():
            ys, xs = np.nonzero(self.masks[0] == o["id"])
            hint: dict[str, Any] = {"name": name, "color": list(o["color"])}
            if len(xs):
                hint["box"] = [int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1]
            out.append(hint)
        return out


def track_from_path(tid: int, name: str, centroid: np.ndarray, area: np.ndarray | float,
                    frame_size: tuple[int, int], appeared: bool = False) -> ObjectTrack:
    """An :class:`~tracks.physics.tracking.ObjectTrack` seen where ``centroid`` (``[T, 2]``, x y) is
    finite, with ``area`` (per frame or one value) and a disc's box: what a tracker would hand the
    checks for a body on that path, for tests of the checks alone."""
    from tracks.physics.tracking import ABSENT, VISIBLE, ObjectTrack

    T = len(centroid)
    seen = np.isfinite(centroid[:, 0])
    area = np.broadcast_to(np.asarray(area, float), (T,))
    r = np.sqrt(np.nan_to_num(area, nan=1.0) / np.pi)[:, None]
    bbox = np.where(seen[:, None], np.concatenate([centroid - r, centroid + r], axis=1), np.nan)
    return ObjectTrack(tid, name, centroid, np.where(seen, area, np.nan), bbox, np.full((T, 3), 100.0),
                       [VISIBLE if v else ABSENT for v in seen], np.zeros(T, bool), appeared=appeared,
                       frame_size=frame_size, touching_mask=np.zeros(T, bool))


def _canvas(T: int, H: int, W: int, floor_h: int) -> np.ndarray:
    frames = np.empty((T, H, W, 3), np.uint8)
    frames[:] = BACKGROUND
    if floor_h:
        frames[:, H - floor_h :] = FLOOR
    return frames


def _disc(H: int, W: int, cx: float, cy: float, r: float) -> np.ndarray:
    yy, xx = np.mgrid[0:H, 0:W]
    return (xx + 0.5 - cx) ** 2 + (yy + 0.5 - cy) ** 2 <= r * r


def simulate_bounce(T: int, y0: float, floor_y: float, g: float, restitution: float, vy0: float = 0.0,
                    substeps: int = 20) -> np.ndarray:
    """Vertical position per frame of a ball dropped at ``y0`` onto a floor at ``floor_y`` (centre height)."""
    ys = np.empty(T)
    y, v = y0, vy0
    dt = 1.0 / substeps
    for t in range(T):
        ys[t] = y
        for _ in range(substeps):
            v += g * dt
            y += v * dt
            if y >= floor_y and v > 0:
                y = floor_y - (y - floor_y) * restitution
                v = -v * restitution
                if abs(v) < 2 * g * dt * substeps * 0.5:  # too slow to leave the floor: rest
                    v, y = 0.0, floor_y
    return ys


def bouncing_ball(T: int = 48, H: int = 64, W: int = 64, *, radius: float | None = None, g: float | None = None,
                  restitution: float = 0.6, x0: float | None = None, vx: float = 0.0, seed: int = 0) -> Scene:
    """A red ball dropped from rest near the top, bouncing on a floor until it settles."""
    rng = np.random.default_rng(seed)
    floor_h = max(2, H // 8)
    r = radius if radius is not None else max(3.0, H / 12)
    floor_y = H - floor_h - r
    y0 = r + 2 + rng.uniform(0, 0.1 * H)
    # g chosen so the first impact happens ~30 % into the video at any resolution/length.
    g = g if g is not None else 2 * (floor_y - y0) / (0.3 * T) ** 2
    ys = simulate_bounce(T, y0, floor_y, g, restitution)
    xs = (x0 if x0 is not None else W / 2 + rng.uniform(-0.1, 0.1) * W) + vx * np.arange(T)
    frames = _canvas(T, H, W, floor_h)
    masks = np.zeros((T, H, W), np.int32)
    for t in range(T):
        m = _disc(H, W, xs[t], ys[t], r)
        frames[t][m] = RED
        masks[t][m] = 1
    return Scene(frames, masks, {"ball": {"id": 1, "color": RED}},
                 states={"x": xs, "y": ys, "g": g, "radius": r, "floor_y": floor_y, "restitution": restitution})


def crossing_balls(T: int = 32, H: int = 48, W: int = 64, *, occluder: bool = False) -> Scene:
    """Two balls crossing horizontally (red in front of blue); optionally a green pillar in front of both."""
    frames = _canvas(T, H, W, 0)
    masks = np.zeros((T, H, W), np.int32)
    r = H / 8
    xr = np.linspace(r + 1, W - r - 1, T)
    xb = xr[::-1]
    yr = np.full(T, H * 0.5)
    yb = H * 0.5 + np.linspace(-r * 0.6, r * 0.6, T)
    objs = {"red": {"id": 1, "color": RED}, "blue": {"id": 2, "color": BLUE}}
    pillar = None
    if occluder:
        objs["pillar"] = {"id": 3, "color": GREEN}
        pillar = (int(W * 0.3), int(W * 0.3 + 2.6 * r))
    for t in range(T):
        for name, xs, ys, col in (("blue", xb, yb, BLUE), ("red", xr, yr, RED)):  # red drawn last: in front
            m = _disc(H, W, xs[t], ys[t], r)
            frames[t][m] = col
            masks[t][m] = objs[name]["id"]
        if pillar:
            frames[t][:, pillar[0] : pillar[1]] = GREEN
            masks[t][:, pillar[0] : pillar[1]] = 3
    return Scene(frames, masks, objs, states={"red_x": xr, "blue_x": xb})


def melting_block(T: int = 32, H: int = 48, W: int = 48, *, freeze: bool = False) -> Scene:
    """An ice block shrinking (melting) on a table; ``freeze=True`` plays it growing."""
    floor_h = H // 6
    frames = _canvas(T, H, W, floor_h)
    masks = np.zeros((T, H, W), np.int32)
    side0 = 0.5 * W
    fr = np.linspace(1.0, 0.35, T)
    if freeze:
        fr = fr[::-1]
    for t in range(T):
        s = side0 * np.sqrt(fr[t])
        x0, x1 = int(W / 2 - s / 2), int(W / 2 + s / 2)
        y1 = H - floor_h
        y0 = int(y1 - s * 0.8)
        frames[t, y0:y1, x0:x1] = ICE
        masks[t, y0:y1, x0:x1] = 1
    return Scene(frames, masks, {"ice": {"id": 1, "color": ICE}}, states={"area_fraction": fr})


# ------------------------------------------------------------------ perturbations

def _bg(scene: Scene, t: int) -> np.ndarray:
    """Frame ``t`` with every object painted over by what lies behind it (known: flat colours)."""
    f = np.empty_like(scene.frames[t])
    f[:] = BACKGROUND
    floor_rows = np.all(scene.frames[t][:, 0] == FLOOR, axis=-1)
    f[floor_rows] = FLOOR
    return f


def _warp_object(scene: Scene, t: int, frame: np.ndarray, mask: np.ndarray, M: np.ndarray, oid: int = 1) -> None:
    """Erase object ``oid`` in frame ``t`` and paint it back warped by the 2x3 affine ``M``."""
    import cv2

    H, W = mask.shape
    m = scene.masks[t] == oid
    if not m.any():
        return
    col = scene.frames[t][m][0]
    frame[m] = _bg(scene, t)[m]
    mask[m] = 0
    nm = cv2.warpAffine(m.astype(np.uint8), M.astype(np.float32), (W, H), flags=cv2.INTER_NEAREST).astype(bool)
    frame[nm] = col
    mask[nm] = oid


def _centroid(m: np.ndarray) -> tuple[float, float] | None:
    ys, xs = np.nonzero(m)
    return (float(xs.mean()), float(ys.mean())) if len(xs) else None


def perturb(scene: Scene, name: str, strength: float, seed: int = 0) -> Scene:
    """A copy of ``scene`` with one law broken; ``strength`` 0 returns it unchanged.

    Same definitions as the scenario library's physics perturbations (``scenarios/perturb``),
    applied to the exact masks of these tiny scenes:
    ``gravity_reversed`` (vertical displacement from frame 0 scaled by ``1 - 2s``),
    ``teleport`` (from the middle frame the ball is shifted ``s·W/4`` sideways),
    ``vanish`` (erased over the last ``s·T/2`` frames), ``shape_morph`` (stretched by
    ``1 + s·t/(T-1)`` horizontally, squeezed by its inverse vertically), ``time_reversal``
    (the last ``s·T`` frames play backwards), ``frozen`` (motion stops after frame
    ``T - 1 - s·(T - 1)``).
    """
    if strength <= 0:
        return scene
    s = float(strength)
    sc = min(s, 1.0)
    T, H, W, _ = scene.frames.shape
    frames, masks = scene.frames.copy(), scene.masks.copy()
    oid = 1
    c0 = _centroid(scene.masks[0] == oid)
    if name == "gravity_reversed":
        for t in range(T):
            c = _centroid(scene.masks[t] == oid)
            if c is None or c0 is None:
                continue
            dy = (1 - 2 * sc - 1.0) * (c[1] - c0[1])
            _warp_object(scene, t, frames[t], masks[t], np.array([[1, 0, 0], [0, 1, dy]], float))
    elif name == "teleport":
        x_mid = float(np.mean([c[0] for t in range(T) if (c := _centroid(scene.masks[t] == oid))]))
        dx = s * W / 4 * (-1.0 if x_mid > W / 2 else 1.0)
        for t in range(T // 2, T):
            _warp_object(scene, t, frames[t], masks[t], np.array([[1, 0, dx], [0, 1, 0]], float))
    elif name == "vanish":
        for t in range(T - int(round(sc * T / 2)), T):
            m = scene.masks[t] == oid
            frames[t][m] = _bg(scene, t)[m]
            masks[t][m] = 0
    elif name == "shape_morph":
        for t in range(T):
            c = _centroid(scene.masks[t] == oid)
            if c is None:
                continue
            k = 1 + s * t / max(1, T - 1)
            M = np.array([[k, 0, c[0] * (1 - k)], [0, 1 / k, c[1] * (1 - 1 / k)]], float)
            _warp_object(scene, t, frames[t], masks[t], M)
    elif name == "time_reversal":
        n = int(round(sc * T))
        order = np.arange(T)
        if n >= 2:
            order[T - n :] = order[T - n :][::-1]
        frames, masks = scene.frames[order].copy(), scene.masks[order].copy()
    elif name == "frozen":
        last = T - 1 - int(round(sc * (T - 1)))
        order = np.minimum(np.arange(T), last)
        frames, masks = scene.frames[order].copy(), scene.masks[order].copy()
    else:
        raise ValueError(f"unknown synthetic perturbation {name!r}; use one of {PERTURBATIONS}")
    return Scene(frames, masks, scene.objects, scene.fps, dict(scene.states))


PERTURBATIONS = ("gravity_reversed", "teleport", "vanish", "shape_morph", "time_reversal", "frozen")
