"""Flat cartoon shapes that fall, bounce and come to rest (a TUNING-split generator, session 51).

What 2-D games and cartoons show and the MuJoCo scenes do not: a flat, non-convex body (a ring
with a hole that shows the wall behind it, a cross, a crescent) or a convex one (a hexagon, a
diamond), optionally printed with a pattern, over a busy procedural wall, falling in pixel space.

Law: from rest (or with a small horizontal speed) the shape's centre falls with constant
acceleration ``g`` (pixels/s², chosen so the first fall lasts ``fall_share`` of the clip); at the
floor line its vertical speed reverses and is multiplied by the restitution ``e``; bounces whose
rebound speed would rise under one frame's worth of fall end the motion (it rests on the floor).
The exact centre path is exported as ground truth; the render draws the outline at that centre
with anti-aliasing (masks from the same polygon without it).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from scenarios._params import choice_param, video_params
from scenarios.procedural.common import smooth_noise
from worldolympiad.scenario import CaseGenerator, Rendered
from worldolympiad.types import Case, PhysicsSpec, Video, even_chunks

SHAPES: tuple[str, ...] = ("annulus", "cross", "crescent", "hexagon", "diamond")
#: shapes and walls a case may name but that are never drawn by seed (added in session 53; the seeded
#: draws over SHAPES and WALLS keep every earlier case's frames).
MORE_SHAPES: tuple[str, ...] = ("pentagon", "arrow")
WALLS: tuple[str, ...] = ("noise", "stripes", "dots", "gradient")
MORE_WALLS: tuple[str, ...] = ("checker",)
PATTERNS: tuple[str, ...] = ("none", "dots", "bands")
#: named colours a case may ask for (``color``); otherwise one is drawn.
COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (210, 40, 40), "green": (40, 170, 70), "blue": (40, 80, 210), "yellow": (230, 200, 40),
    "magenta": (200, 50, 170), "cyan": (40, 190, 200), "orange": (235, 130, 30), "white": (235, 235, 235),
}
SUBPIXEL = 4  # cv2 drawing shift: coordinates in 1/16 pixel


def centre_path(times: np.ndarray, y0: float, y_floor: float, g: float, e: float) -> tuple[np.ndarray, list[float]]:
    """Centre height (pixels, down +) at ``times`` and the contact times, for a drop from rest at ``y0``."""
    y = np.empty_like(times)
    contacts: list[float] = []
    t_c, v_c, y_c = 0.0, 0.0, y0  # state at the last contact (or release)
    resting = False
    frame_dt = float(times[1] - times[0]) if len(times) > 1 else 1.0
    for i, t in enumerate(times):
        while not resting:
            # time to reach the floor from (y_c, v_c): y_c + v_c s + g s²/2 = y_floor
            disc = v_c * v_c + 2 * g * (y_floor - y_c)
            s = (-v_c + math.sqrt(max(disc, 0.0))) / g
            if t_c + s > t:
                break
            t_c += s
            contacts.append(t_c)
            v_hit = v_c + g * s
            v_c, y_c = -e * v_hit, y_floor
            if -v_c < g * frame_dt:
                resting = True
        if resting and t >= t_c:
            y[i] = y_floor
        else:
            s = t - t_c
            y[i] = min(y_c + v_c * s + 0.5 * g * s * s, y_floor)
    return y, contacts


def outline(shape: str, cx: float, cy: float, r: float, angle: float = 0.0) -> list[np.ndarray]:
    """Polygons (float ``[n, 2]``) of ``shape`` centred at (cx, cy) with radius ``r``; a second polygon is a hole."""
    def ring(radius: float, n: int, phase: float = 0.0) -> np.ndarray:
        a = np.linspace(0, 2 * math.pi, n, endpoint=False) + phase + angle
        return np.stack([cx + radius * np.cos(a), cy + radius * np.sin(a)], 1)

    if shape == "annulus":
        return [ring(r, 48), ring(0.55 * r, 48)]
    if shape == "hexagon":
        return [ring(r, 6, math.pi / 6)]
    if shape == "diamond":
        return [ring(r, 4, math.pi / 2)]
    if shape == "pentagon":
        return [ring(r, 5, -math.pi / 2)]
    if shape == "arrow":  # pointing down: a non-convex body whose centroid is off its box centre
        w = 0.3 * r
        pts = [(-w, -r), (w, -r), (w, 0.1 * r), (0.75 * r, 0.1 * r), (0.0, r), (-0.75 * r, 0.1 * r), (-w, 0.1 * r)]
        c, s = math.cos(angle), math.sin(angle)
        return [np.array([(cx + x * c - y * s, cy + x * s + y * c) for x, y in pts])]
    if shape == "cross":
        w = 0.34 * r
        pts = [(-w, -r), (w, -r), (w, -w), (r, -w), (r, w), (w, w), (w, r), (-w, r), (-w, w), (-r, w), (-r, -w), (-w, -w)]
        c, s = math.cos(angle), math.sin(angle)
        return [np.array([(cx + x * c - y * s, cy + x * s + y * c) for x, y in pts])]
    if shape == "crescent":
        a = np.linspace(-0.8 * math.pi, 0.8 * math.pi, 40) + angle
        outer = np.stack([cx + r * np.cos(a), cy + r * np.sin(a)], 1)
        inner = np.stack([cx + 0.35 * r + 0.75 * r * np.cos(a[::-1]), cy + 0.75 * r * np.sin(a[::-1])], 1)
        return [np.concatenate([outer, inner])]
    raise ValueError(f"shape must be one of {SHAPES + MORE_SHAPES}, got {shape!r}")


def _wall(kind: str, rng: np.random.Generator, H: int, W: int) -> np.ndarray:
    base = rng.integers(60, 200, 3).astype(np.float32)
    other = rng.integers(60, 200, 3).astype(np.float32)
    yy, xx = np.mgrid[0:H, 0:W].astype(np.float32)
    if kind == "noise":
        n = smooth_noise(rng, H, W, cells=10)[..., None]
        img = base * (1 - n) + other * n
    elif kind == "stripes":
        period = max(4.0, min(H, W) / 6)
        m = ((xx + 0.6 * yy) // period % 2)[..., None]
        img = base * (1 - m) + other * m
    elif kind == "dots":
        period = max(5, min(H, W) // 8)
        m = (((xx % period) - period / 2) ** 2 + ((yy % period) - period / 2) ** 2 < (period / 4) ** 2)[..., None]
        img = base * (1 - m) + other * m
    elif kind == "checker":
        period = max(4.0, min(H, W) / 8)
        m = ((xx // period + yy // period) % 2)[..., None]
        img = base * (1 - m) + other * m
    elif kind == "gradient":
        u = (xx / max(W - 1, 1))[..., None]
        img = base * (1 - u) + other * u
    else:
        raise ValueError(f"wall must be one of {WALLS + MORE_WALLS}, got {kind!r}")
    return np.clip(img, 0, 255).astype(np.uint8)


class FlatBounce(CaseGenerator):
    """A flat shape drops onto the floor of a 2-D scene, bounces and rests (see the module docstring)."""

    name: ClassVar[str] = "cartoon.flat_bounce"
    version: ClassVar[str] = "1"
    tracks: ClassVar[tuple[str, ...]] = ("physics", "longvideo")

    def _setup(self, seed: int, params: dict[str, Any]) -> dict[str, Any]:
        res, T, fps, nc = video_params(params, min_side=32, default_fps=15.0)
        H, W = res
        rng = np.random.default_rng([seed, 51])
        shape = choice_param(params, "shape", SHAPES[int(rng.integers(len(SHAPES)))], SHAPES + MORE_SHAPES)
        cname = params.get("color")
        if cname is not None and cname not in COLOURS:
            raise ValueError(f"color must be one of {sorted(COLOURS)}, got {cname!r}")
        colour = COLOURS[str(cname)] if cname is not None else tuple(int(c) for c in rng.integers(30, 230, 3))
        wall = choice_param(params, "wall", WALLS[int(rng.integers(len(WALLS)))], WALLS + MORE_WALLS)
        pattern = choice_param(params, "pattern", "none", PATTERNS)
        e = float(params.get("restitution", rng.uniform(0.45, 0.75)))
        if not 0.0 <= e < 1.0:
            raise ValueError(f"restitution must be in [0, 1), got {e}")
        r = float(params.get("radius", 0.1)) * min(H, W)
        floor_top = 0.82 * H
        y0 = 0.1 * H + r
        y_floor = floor_top - r
        share = float(params.get("fall_share", 0.35))
        t_fall = share * (T - 1) / fps
        g = 2 * (y_floor - y0) / t_fall**2
        times = np.arange(T) / fps
        y, contacts = centre_path(times, y0, y_floor, g, e)
        x0 = float(rng.uniform(0.25, 0.6)) * W
        vx = float(params.get("drift", rng.uniform(-0.1, 0.1))) * W / ((T - 1) / fps)
        x = np.clip(x0 + vx * times, r + 1, W - r - 1)
        return {"res": res, "T": T, "fps": fps, "nc": nc, "shape": shape, "colour": colour, "wall": wall,
                "pattern": pattern, "e": e, "r": r, "g": g, "floor_top": floor_top, "x": x, "y": y,
                "contacts": contacts, "seed": seed}

    def make_case(self, case_id: str, *, seed: int = 0, **params: Any) -> Case:
        s = self._setup(seed, params)
        T, nc, fps = s["T"], s["nc"], s["fps"]
        captions = []
        for c in even_chunks(T, nc):
            t0, t1 = c.frame_start / fps, c.frame_end / fps
            hit = any(t0 <= t < t1 for t in s["contacts"])
            moving = float(np.ptp(s["y"][c.frame_start:c.frame_end])) > 0.5
            captions.append(f"the {s['shape']} " + ("falls and bounces off the floor" if hit else
                                                    "falls" if moving else "rests on the floor"))
        r, x0, y0 = s["r"], s["x"][0], s["y"][0]
        obj = {"name": s["shape"], "color": list(s["colour"]), "shape": s["shape"],
               "box": [round(x0 - r, 2), round(y0 - r, 2), round(x0 + r, 2), round(y0 + r, 2)]}
        gt = {"units": "pixels (x right, y down), seconds", "gravity_px_per_s2": round(s["g"], 4),
              "restitution": round(s["e"], 4), "contacts": [round(t, 6) for t in s["contacts"]],
              "objects": {s["shape"]: {"position_px": np.round(np.stack([s["x"], s["y"]], 1), 4).tolist()}}}
        rules = ("gravity", "impact") if s["contacts"] else ("gravity",)
        story = " ".join(("First, " if i == 0 else "Then, ") + c + "." for i, c in enumerate(captions))
        return Case(
            id=case_id, scenario="realworld", fps=fps, num_frames=T, resolution=s["res"],
            prompt=f"A cartoon: a flat {s['shape']} drops onto the floor in front of a patterned wall. {story}",
            chunks=even_chunks(T, nc, captions=captions, actions=[None] * nc),
            physics=PhysicsSpec(rules=rules, objects=(obj,), ground_truth=gt),
            tracks=self.tracks,
            metadata={"generator": self.name, "generator_version": self.version, "seed": seed, "params": dict(params)},
        )

    def render(self, case: Case) -> Rendered:
        import cv2

        s = self._setup(int(case.metadata.get("seed", 0)), dict(case.metadata.get("params") or {}))
        H, W = s["res"]
        rng = np.random.default_rng([s["seed"], 52])
        bg = _wall(s["wall"], rng, H, W)
        ft = int(round(s["floor_top"]))
        grain = rng.integers(-12, 13, (H - ft, W, 1))
        bg[ft:] = np.clip(np.array([95, 85, 75]) + grain, 0, 255).astype(np.uint8)
        frames = np.empty((s["T"], H, W, 3), np.uint8)
        masks = np.zeros((s["T"], H, W), np.int32)
        colour = np.array(s["colour"], np.float32)
        light = (colour + 255) / 2
        yy, xx = np.mgrid[0:H, 0:W]
        scale = 1 << SUBPIXEL
        for k in range(s["T"]):
            polys = outline(s["shape"], float(s["x"][k]), float(s["y"][k]), s["r"])
            body = np.zeros((H, W), np.uint8)
            cv2.fillPoly(body, [np.round(polys[0] * scale).astype(np.int32)], 255, cv2.LINE_AA, SUBPIXEL)
            hard = np.zeros((H, W), np.uint8)
            cv2.fillPoly(hard, [np.round(polys[0] * scale).astype(np.int32)], 1, cv2.LINE_8, SUBPIXEL)
            for hole in polys[1:]:
                cv2.fillPoly(body, [np.round(hole * scale).astype(np.int32)], 0, cv2.LINE_AA, SUBPIXEL)
                cv2.fillPoly(hard, [np.round(hole * scale).astype(np.int32)], 0, cv2.LINE_8, SUBPIXEL)
            tint = np.broadcast_to(colour, (H, W, 3)).copy()
            if s["pattern"] != "none":
                u, v = xx - s["x"][k], yy - s["y"][k]  # the pattern moves with the body
                period = max(3.0, s["r"] / 2)
                marks = ((u % period) ** 2 + (v % period) ** 2 < (period / 3) ** 2) if s["pattern"] == "dots" \
                    else ((v // (period / 2)) % 2 == 1)
                tint[marks] = light
            a = body[..., None].astype(np.float32) / 255
            frames[k] = np.clip(bg * (1 - a) + tint * a, 0, 255).astype(np.uint8)
            masks[k] = hard
        states = {"objects": {s["shape"]: {"position_px": np.stack([s["x"], s["y"]], 1)}}, "contacts": s["contacts"],
                  "gravity_px_per_s2": s["g"]}
        return Rendered(video=Video(frames, s["fps"], chunks=case.chunks, metadata={"generator": self.name}),
                        masks=masks, object_ids={s["shape"]: 1}, states=states)


FLAT_BOUNCE = FlatBounce()
