"""Shared machinery of the procedural (law-based) thermal and material generators.

A :class:`ProceduralGenerator` computes, per frame, the quantities its physical law
governs (:meth:`~ProceduralGenerator.quantities`, plain numpy), then draws each frame and
its object mask from those quantities with OpenCV (:meth:`~ProceduralGenerator.draw`).
Everything is deterministic: random draws come from ``np.random.default_rng(seed)`` and
OpenCV's anti-aliased rasteriser is exact integer arithmetic.

The videos are time-lapses: the process runs over the clip's duration; the law's time
constant is chosen from the seed so the process completes within about 60-100 % of it.
Drawing uses normalised coordinates (x, y in [0, 1] of the width/height) so any
resolution works.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from scenarios._params import video_params
from worldolympiad.scenario import CaseGenerator, Rendered
from worldolympiad.types import Case, PhysicsSpec, Video, even_chunks

SHIFT = 4  # OpenCV sub-pixel bits: coordinates are drawn at 1/16 px precision
_ONE = 1 << SHIFT


def common_params(params: dict[str, Any]) -> tuple[tuple[int, int], int, float, int]:
    """``(resolution (H, W), num_frames, fps, num_chunks)`` (>= 16 px, 12 fps default)."""
    return video_params(params, min_side=16, default_fps=12.0)


class Canvas:
    """A frame and its object-id mask drawn together in normalised coordinates."""

    def __init__(self, background: np.ndarray) -> None:
        self.img = background.copy()
        self.H, self.W = background.shape[:2]
        self.mask = np.zeros((self.H, self.W), np.int32)

    def _p(self, x: float, y: float) -> tuple[int, int]:
        return int(round(x * self.W * _ONE)), int(round(y * self.H * _ONE))

    def _mask_layer(self) -> np.ndarray:
        return np.zeros((self.H, self.W), np.uint8)

    def _commit(self, layer: np.ndarray, oid: int) -> None:
        if oid:
            self.mask[layer > 0] = oid

    def ellipse(self, cx: float, cy: float, rx: float, ry: float, color: tuple[int, ...], oid: int = 0,
                angle: float = 0.0, alpha: float = 1.0) -> None:
        """Filled ellipse; radii in fractions of W (rx) and H (ry)."""
        import cv2

        if rx <= 0 or ry <= 0:
            return
        c = self._p(cx, cy)
        axes = (max(1, int(round(rx * self.W * _ONE))), max(1, int(round(ry * self.H * _ONE))))
        self._draw(lambda im, col, aa: cv2.ellipse(im, c, axes, angle, 0, 360, col, -1, aa, SHIFT), color, oid, alpha)

    def rect(self, x0: float, y0: float, x1: float, y1: float, color: tuple[int, ...], oid: int = 0, alpha: float = 1.0) -> None:
        self.poly([(x0, y0), (x1, y0), (x1, y1), (x0, y1)], color, oid, alpha)

    def poly(self, pts: list[tuple[float, float]], color: tuple[int, ...], oid: int = 0, alpha: float = 1.0) -> None:
        import cv2

        arr = np.array([self._p(x, y) for x, y in pts], np.int32)
        self._draw(lambda im, col, aa: cv2.fillPoly(im, [arr], col, aa, SHIFT), color, oid, alpha)

    def _draw(self, fn: Any, color: tuple[int, ...], oid: int, alpha: float) -> None:
        import cv2

        if alpha >= 1.0:
            fn(self.img, tuple(int(c) for c in color), cv2.LINE_AA)
        else:
            over = self.img.copy()
            fn(over, tuple(int(c) for c in color), cv2.LINE_AA)
            self.img = (self.img.astype(np.float32) * (1 - alpha) + over.astype(np.float32) * alpha).round().astype(np.uint8)
        layer = self._mask_layer()
        fn(layer, 255, cv2.LINE_8)  # masks: hard edges, no anti-aliasing
        self._commit(layer, oid)

    def texture(self, region: np.ndarray, tex: np.ndarray, strength: float) -> None:
        """Modulate pixels in ``region`` (bool [H, W]) by a zero-mean texture ``[H, W]``."""
        f = self.img.astype(np.float32)
        f[region] = f[region] * (1.0 + strength * tex[region][:, None])
        self.img = np.clip(f, 0, 255).round().astype(np.uint8)


def smooth_noise(rng: np.random.Generator, H: int, W: int, cells: int = 8) -> np.ndarray:
    """Zero-mean, unit-peak smooth noise ``float32 [H, W]`` (bicubic-upsampled random grid)."""
    import cv2

    grid = rng.standard_normal((cells, cells)).astype(np.float32)
    up = cv2.resize(grid, (W, H), interpolation=cv2.INTER_CUBIC)
    up -= up.mean()
    return up / max(float(np.abs(up).max()), 1e-6)


def table_background(rng: np.random.Generator, H: int, W: int, base: tuple[int, int, int] = (150, 120, 90),
                     wall: tuple[int, int, int] = (205, 205, 200), horizon: float = 0.45) -> np.ndarray:
    """A wall above a wooden table top (grain texture), ``uint8 [H, W, 3]``."""
    img = np.zeros((H, W, 3), np.float32)
    top = (np.arange(H) + 0.5) / H < horizon  # rows of wall
    img[top] = wall
    img[~top] = base
    grain = smooth_noise(rng, H, W, cells=6) * 0.6 + 0.4 * np.sin(np.linspace(0, 18 * np.pi, H))[:, None]
    shade = smooth_noise(rng, H, W, cells=3)
    gain = np.where(top[:, None], 1.0 + 0.05 * shade, 1.0 + 0.12 * grain)  # [H, W]
    img *= gain[..., None]
    return np.clip(img, 0, 255).round().astype(np.uint8)


class ProceduralGenerator(CaseGenerator):
    """Base of the thermal/material generators; see the module docstring."""

    version: ClassVar[str] = "2"  # 2: physics.objects carry role, rigid and first-frame box
    rules: ClassVar[tuple[str, ...]] = ()
    objects: ClassVar[tuple[tuple[str, tuple[int, int, int]], ...]] = ()  # (name, rgb) → ids 1..n
    #: what each object is to the rule (``physics.objects[].role``): ``subject`` is the body the
    #: rule's check follows (the ice that melts), ``product`` what the process makes (a mixture);
    #: the others are ``context``.
    roles: ClassVar[dict[str, str]] = {}
    #: objects whose rigidity the case states (``physics.objects[].rigid``).
    rigid: ClassVar[dict[str, bool]] = {}
    tracks: ClassVar[tuple[str, ...]] = ("physics", "longvideo")
    prompt_text: ClassVar[str] = ""
    law: ClassVar[str] = ""

    # ----------------------------------------------------------- subclass hooks
    def quantities(self, rng: np.random.Generator, params: dict[str, Any], t: np.ndarray) -> dict[str, Any]:
        """Law-governed quantities per frame (arrays ``[T]``) plus scalar settings."""
        raise NotImplementedError

    def draw(self, q: dict[str, Any], k: int, canvas: Canvas, rng: np.random.Generator) -> None:
        """Draw frame ``k`` on ``canvas`` (frame + mask); ``rng`` is seeded per frame."""
        raise NotImplementedError

    def caption(self, q: dict[str, Any], start: int, end: int) -> str:
        raise NotImplementedError

    def background(self, rng: np.random.Generator, H: int, W: int) -> np.ndarray:
        return table_background(rng, H, W)

    # ---------------------------------------------------------------- contract
    def _quantities(self, seed: int, params: dict[str, Any]) -> dict[str, Any]:
        _, T, fps, _ = common_params(params)
        t = np.arange(T) / fps
        q = self.quantities(np.random.default_rng([seed, 0]), dict(params), t / t[-1])
        q["times"] = t
        return q

    def make_case(self, case_id: str, *, seed: int = 0, **params: Any) -> Case:
        res, T, fps, nc = common_params(params)
        q = self._quantities(seed, params)
        bounds = even_chunks(T, nc)
        captions = [self.caption(q, c.frame_start, c.frame_end) for c in bounds]
        objects = tuple(self._describe(n, c, q, params, seed) for n, c in self.objects)
        gt = {"law": self.law, "quantities": {k: _jsonable(v) for k, v in q.items()}}
        return Case(
            id=case_id,
            scenario="realworld",
            fps=fps,
            num_frames=T,
            resolution=res,
            prompt=f"Time-lapse: {self.prompt_text} " + story(captions),
            chunks=even_chunks(T, nc, captions=captions, actions=[None] * nc),
            physics=PhysicsSpec(rules=self.rules, objects=objects, ground_truth=gt),
            tracks=self.tracks,
            metadata={"generator": self.name, "generator_version": self.version, "seed": seed, "params": dict(params)},
        )

    def _describe(self, name: str, color: tuple[int, int, int], q: dict[str, Any], params: dict[str, Any],
                  seed: int) -> dict[str, Any]:
        """One ``physics.objects`` entry: name, colour, role, rigidity and its first-frame box (pixels)."""
        out: dict[str, Any] = {"name": name, "color": list(color), "role": self.roles.get(name, "context")}
        if name in self.rigid:
            out["rigid"] = self.rigid[name]
        (H, W), _, _, _ = common_params(params)
        canvas = Canvas(self.background(np.random.default_rng([seed, 1]), H, W))
        self.draw(q, 0, canvas, np.random.default_rng([seed, 2, 0]))
        ys, xs = np.nonzero(canvas.mask == 1 + [n for n, _ in self.objects].index(name))
        if len(xs):
            out["box"] = [int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1]
        return out

    def render(self, case: Case) -> Rendered:
        seed = int(case.metadata.get("seed", 0))
        params = dict(case.metadata.get("params") or {})
        (H, W), T, fps, _ = common_params(params)
        q = self._quantities(seed, params)
        bg = self.background(np.random.default_rng([seed, 1]), H, W)
        frames = np.zeros((T, H, W, 3), np.uint8)
        masks = np.zeros((T, H, W), np.int32)
        for k in range(T):
            canvas = Canvas(bg)
            self.draw(q, k, canvas, np.random.default_rng([seed, 2, k]))
            frames[k], masks[k] = canvas.img, canvas.mask
        ids = {n: i + 1 for i, (n, _) in enumerate(self.objects)}
        areas = {n: (masks == i).reshape(T, -1).sum(axis=1) for n, i in ids.items()}
        states = {"law": self.law, **q, "mask_area_px": areas}
        return Rendered(video=Video(frames, fps, chunks=case.chunks, metadata={"generator": self.name}),
                        masks=masks, object_ids=ids, states=states)


def _jsonable(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return np.round(v.astype(np.float64), 6).tolist() if v.dtype.kind == "f" else v.tolist()
    if isinstance(v, (np.floating, float)):
        return round(float(v), 6)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return v


def story(captions: list[str]) -> str:
    """Chunk captions as sentences: "First, a. Then, b. Then, c." (repeats collapsed)."""
    out: list[str] = []
    for c in captions:
        if c and (not out or not out[-1].endswith(c + ".")):
            out.append(("First, " if not out else "Then, ") + c + ".")
    return " ".join(out)


def pct(x: float) -> str:
    return f"{int(round(100 * x))}%"
