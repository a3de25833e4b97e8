"""``heldout.shape_drop``: a flat shape falls from rest, bounces on a floor and falls back (closed form).

Held out from every physics tuning scene: the mechanics scenes are MuJoCo spheres and boxes in a
nine-colour palette over a tiled floor; here the object is a star, triangle, ring, cross or hexagon in
an RGB colour given by the case (teal, magenta, lime...), drawn over stripes, a checkerboard, value noise
or a gradient. The law is exact in image space: constant downward acceleration ``g`` (px/s²) from
rest at ``y0``, a floor contact at ``y_floor`` that reverses the vertical velocity times the restitution
``e``, a constant horizontal drift ``vx``. Ground truth: per-frame centre (pixels), masks, contact events.

Params: ``resolution`` [H, W], ``num_frames``, ``fps``, ``num_chunks``, ``shape``, ``color`` [r, g, b],
``texture`` (stripes | checker | noise | gradient), ``restitution`` (0.3-0.9), ``size`` (object radius as
a fraction of the shorter side, default 0.09), ``fall_fraction`` (share of the clip the first fall takes,
default 0.4).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from scenarios._params import choice_param, video_params
from worldolympiad.scenario import CaseGenerator, Rendered
from worldolympiad.types import Case, PhysicsSpec, Video, even_chunks

SHAPES: tuple[str, ...] = ("star", "triangle", "ring", "cross", "hexagon")
TEXTURES: tuple[str, ...] = ("stripes", "checker", "noise", "gradient")
SHIFT = 4  # cv2 sub-pixel bits: vertices at 1/16 px so slow motion is not quantised to whole pixels


def _outline(shape: str, cx: float, cy: float, r: float) -> list[np.ndarray]:
    """Polygons (outer first; a ring is an outer and an inner circle) of ``shape`` of radius ``r`` px."""
    if shape == "star":
        a = np.arange(10) * np.pi / 5 - np.pi / 2
        rad = np.where(np.arange(10) % 2 == 0, r, 0.45 * r)
        return [np.stack([cx + rad * np.cos(a), cy + rad * np.sin(a)], 1)]
    if shape == "triangle":
        a = np.arange(3) * 2 * np.pi / 3 - np.pi / 2
        return [np.stack([cx + r * np.cos(a), cy + r * np.sin(a)], 1)]
    if shape == "hexagon":
        a = np.arange(6) * np.pi / 3
        return [np.stack([cx + r * np.cos(a), cy + r * np.sin(a)], 1)]
    if shape == "cross":
        w = 0.36 * r
        pts = [(-w, -r), (w, -r), (w, -w), (r, -w), (r, w), (w, w), (w, r), (-w, r), (-w, w), (-r, w), (-r, -w), (-w, -w)]
        return [np.array([(cx + x, cy + y) for x, y in pts])]
    if shape == "ring":
        a = np.linspace(0, 2 * np.pi, 48, endpoint=False)
        return [np.stack([cx + r * np.cos(a), cy + r * np.sin(a)], 1),
                np.stack([cx + 0.55 * r * np.cos(a), cy + 0.55 * r * np.sin(a)], 1)]
    raise ValueError(f"shape must be one of {SHAPES}, got {shape!r}")


def _texture(kind: str, H: int, W: int, rng: np.random.Generator) -> np.ndarray:
    """A background ``uint8 [H, W, 3]`` with muted colours, so the object's colour stands out."""
    import cv2

    y, x = np.mgrid[0:H, 0:W].astype(np.float32)
    c0, c1 = rng.uniform(40, 110, 3), rng.uniform(120, 200, 3)
    if kind == "stripes":
        period = max(6.0, min(H, W) / rng.uniform(5, 9))
        t = 0.5 + 0.5 * np.sin(2 * np.pi * (x * 0.8 + y * 0.6) / period)
    elif kind == "checker":
        cell = max(4, int(min(H, W) / rng.uniform(6, 10)))
        t = ((x // cell + y // cell) % 2).astype(np.float32)
    elif kind == "noise":
        small = rng.uniform(0, 1, (max(2, H // 8), max(2, W // 8))).astype(np.float32)
        t = cv2.resize(small, (W, H), interpolation=cv2.INTER_CUBIC).clip(0, 1)
    elif kind == "gradient":
        t = (x / max(1, W - 1) * 0.7 + y / max(1, H - 1) * 0.3)
    else:
        raise ValueError(f"texture must be one of {TEXTURES}, got {kind!r}")
    img = c0[None, None] * (1 - t[..., None]) + c1[None, None] * t[..., None]
    return np.clip(img, 0, 255).astype(np.uint8)


def trajectory(times: np.ndarray, y0: float, y_floor: float, g: float, e: float) -> tuple[np.ndarray, np.ndarray, list[float]]:
    """Exact bouncing fall: centre height ``y(t)`` (px, down positive), velocity and contact times."""
    y = np.empty_like(times)
    v = np.empty_like(times)
    contacts: list[float] = []
    t_start, y_start, v_start = 0.0, y0, 0.0
    # successive flights: from (t_start, y_start, v_start) until the centre reaches the floor
    for _ in range(64):
        # y_start + v_start dt + g dt^2 / 2 = y_floor, the positive root
        disc = v_start * v_start + 2 * g * (y_floor - y_start)
        dt = (-v_start + math.sqrt(max(disc, 0.0))) / g
        t_hit = t_start + dt
        sel = (times >= t_start) & (times < t_hit)
        d = times[sel] - t_start
        y[sel] = y_start + v_start * d + 0.5 * g * d * d
        v[sel] = v_start + g * d
        if t_hit > times[-1] or dt < 1e-4:
            break
        contacts.append(t_hit)
        t_start, y_start, v_start = t_hit, y_floor, -e * (v_start + g * dt)
    late = times >= t_start
    if contacts and dt < 1e-4:  # came to rest
        y[late], v[late] = y_floor, 0.0
    return y, v, contacts


class ShapeDrop(CaseGenerator):
    """A flat coloured shape falls, bounces and falls back over a textured background."""

    name: ClassVar[str] = "heldout.shape_drop"
    version: ClassVar[str] = "1"
    tracks: ClassVar[tuple[str, ...]] = ("physics", "longvideo")

    def _setup(self, seed: int, params: dict[str, Any]) -> dict[str, Any]:
        res, T, fps, nc = video_params(params, min_side=32, default_fps=15.0)
        H, W = res
        rng = np.random.default_rng([seed, 91])
        shape = choice_param(params, "shape", SHAPES[int(rng.integers(len(SHAPES)))], SHAPES)
        color = [int(c) for c in params.get("color", rng.integers(0, 256, 3))]
        texture = str(params.get("texture", TEXTURES[int(rng.integers(len(TEXTURES)))]))
        e = float(params.get("restitution", rng.uniform(0.5, 0.8)))
        if not 0.0 < e < 1.0:
            raise ValueError(f"restitution must be in (0, 1), got {e}")
        r = float(params.get("size", 0.09)) * min(H, W)
        floor_y = 0.86 * H  # top of the floor band
        y0, y_floor = 0.12 * H + r, floor_y - r
        t_fall = float(params.get("fall_fraction", 0.4)) * (T - 1) / fps
        g = 2 * (y_floor - y0) / t_fall**2
        x0 = float(rng.uniform(0.3, 0.45)) * W
        vx = float(rng.uniform(0.05, 0.15)) * W / ((T - 1) / fps)
        times = np.arange(T) / fps
        y, vy, contacts = trajectory(times, y0, y_floor, g, e)
        x = x0 + vx * times
        return {"res": (H, W), "T": T, "fps": fps, "nc": nc, "shape": shape, "color": color, "texture": texture,
                "e": e, "r": r, "g": g, "floor_y": floor_y, "x": x, "y": y, "vx": vx, "vy": vy, "contacts": contacts,
                "rng_bg": [seed, 92]}

    def make_case(self, case_id: str, *, seed: int = 0, **params: Any) -> Case:
        s = self._setup(seed, params)
        T, nc = s["T"], s["nc"]
        name = f"{s['shape']}"
        bounds = even_chunks(T, nc)
        captions = []
        for c in bounds:
            t0, t1 = c.frame_start / s["fps"], c.frame_end / s["fps"]
            hits = [t for t in s["contacts"] if t0 <= t < t1]
            captions.append(f"the {name} {'falls and bounces off the floor' if hits else ('falls' if s['vy'][c.frame_start] >= 0 else 'flies up')}")
        x0, y0, r = s["x"][0], s["y"][0], s["r"]
        obj = {"name": name, "color": s["color"], "box": [round(x0 - r, 2), round(y0 - r, 2), round(x0 + r, 2), round(y0 + r, 2)],
               "shape": s["shape"]}
        gt = {"units": "pixels (x right, y down), seconds",
              "objects": {name: {"position_px": np.round(np.stack([s["x"], s["y"]], 1), 4).tolist(),
                                 "velocity_px": np.round(np.stack([np.full(T, s["vx"]), s["vy"]], 1), 4).tolist()}},
              "gravity_px_per_s2": round(s["g"], 4), "restitution": round(s["e"], 4),
              "events": [{"pair": ["floor", name], "t_start": round(t, 6)} for t in s["contacts"]]}
        rules = ("gravity", "impact") if s["contacts"] else ("gravity",)
        return Case(
            id=case_id, scenario="realworld", fps=s["fps"], num_frames=T, resolution=s["res"],
            prompt=(f"A flat {s['shape']} drops onto the floor in front of a {s['texture']} wall. "
                    + " ".join(("First, " if i == 0 else "Then, ") + c + "." for i, c in enumerate(captions))),
            chunks=even_chunks(T, nc, captions=captions, actions=[None] * nc),
            physics=PhysicsSpec(rules=rules, objects=(obj,), ground_truth=gt),
            tracks=self.tracks,
            metadata={"generator": self.name, "generator_version": self.version, "seed": seed, "params": dict(params),
                      "split": "heldout"},
        )

    def render(self, case: Case) -> Rendered:
        import cv2

        seed = int(case.metadata.get("seed", 0))
        s = self._setup(seed, dict(case.metadata.get("params") or {}))
        H, W = s["res"]
        bg = _texture(s["texture"], H, W, np.random.default_rng(s["rng_bg"]))
        floor = _texture("checker" if s["texture"] != "checker" else "stripes", H, W, np.random.default_rng([seed, 93]))
        fy = int(round(s["floor_y"]))
        bg[fy:] = (0.6 * floor[fy:]).astype(np.uint8)
        frames = np.empty((s["T"], H, W, 3), np.uint8)
        masks = np.zeros((s["T"], H, W), np.int32)
        col = tuple(int(c) for c in s["color"])
        for k in range(s["T"]):
            img, m = bg.copy(), np.zeros((H, W), np.uint8)
            polys = [np.round(p * (1 << SHIFT)).astype(np.int32) for p in _outline(s["shape"], s["x"][k], s["y"][k], s["r"])]
            cv2.fillPoly(img, polys[:1], col, cv2.LINE_AA, SHIFT)
            cv2.fillPoly(m, polys[:1], 1, cv2.LINE_8, SHIFT)
            if len(polys) > 1:  # the ring's hole shows the background
                hole = np.zeros((H, W), np.uint8)
                cv2.fillPoly(hole, polys[1:], 1, cv2.LINE_8, SHIFT)
                img[hole > 0] = bg[hole > 0]
                m[hole > 0] = 0
            frames[k], masks[k] = img, m
        states = {"objects": {s["shape"]: {"position_px": np.stack([s["x"], s["y"]], 1)}}, "contacts": s["contacts"],
                  "gravity_px_per_s2": s["g"]}
        return Rendered(video=Video(frames, s["fps"], chunks=case.chunks, metadata={"generator": self.name}),
                        masks=masks, object_ids={s["shape"]: 1}, states=states)


SHAPE_DROP = ShapeDrop()
