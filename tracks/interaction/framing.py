"""The video's framing against the reference's: where the case's agent windows and boxes lie in this video.

An agent's search window (an Atari playfield's paddle rows, the chicken's lane; ``agent_appearance``) and a named
object's first-frame box are in the pixels of the case's own render. A model that frames the scene a little
differently (a zoom, a pan; an image-to-video pipeline that crops the case's first frame to its own aspect ratio)
moves the agent out of its window, and the track reads a still agent: on ``smoke``'s exact references re-framed
(``bench/records/user_framing_s65.md``) Breakout's interaction fell 1.0 -> 0.0 zoomed 0.8x or 1.25x and Freeway's
1.0 -> 0.18 moved 10 % of the width sideways.

:func:`register` finds the one scale (about the frame's centre) and translation that put the reference's first frame
on the video's (phase correlation, ``cv2.phaseCorrelate``, at each of :data:`SCALES`; the strongest peak wins) and
:func:`reframe_appearance` maps a window and a box by it. Where the video keeps the case's framing (every render
and every defect of the validity harness, whose first chunk is the clean one's) the registration is the identity
and nothing changes; with no reference there is nothing to register against.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

#: scales tried (the video's picture against the reference's, about the centre)
SCALES = (0.7, 0.8, 0.9, 1.0, 1.11, 1.25, 1.43)
#: side of the grey frames the registration compares
SIDE = 128
#: a peak this strong at least is a match (unrelated pictures peak at about 0.1)
MIN_RESPONSE = 0.3
#: the best framing must peak this much above the identity's to replace it
MARGIN = 0.1
#: translations under this (pixels at :data:`SIDE`) are the identity
STILL_PX = 0.75


def _grey(frame: np.ndarray) -> np.ndarray:
    import cv2

    h, w = frame.shape[:2]
    k = SIDE / max(h, w)
    g = cv2.cvtColor(np.ascontiguousarray(frame), cv2.COLOR_RGB2GRAY).astype(np.float32)
    return cv2.resize(g, (max(8, round(w * k)), max(8, round(h * k))), interpolation=cv2.INTER_AREA)


def register(frame: np.ndarray, reference: np.ndarray) -> dict[str, Any] | None:
    """The similarity taking ``reference``'s picture to ``frame``'s (both ``uint8 [H, W, 3]``, the same size):
    ``{"scale": s, "shift": [tx, ty] (shares of the width and height), "response": r}``, or ``None`` where the
    identity explains the pair as well (or nothing matches)."""
    import cv2

    a, b = _grey(reference), _grey(frame)
    h, w = a.shape
    hann = cv2.createHanningWindow((w, h), cv2.CV_32F)
    best: tuple[float, float, float, float] | None = None
    identity = 0.0
    for s in SCALES:
        m = cv2.getRotationMatrix2D((w / 2, h / 2), 0, s)
        warped = cv2.warpAffine(a, m, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        (dx, dy), resp = cv2.phaseCorrelate(warped, b, hann)
        if s == 1.0:
            identity = resp if math.hypot(dx, dy) < STILL_PX else 0.0
        if best is None or resp > best[0]:
            best = (float(resp), s, float(dx), float(dy))
    assert best is not None
    resp, s, dx, dy = best
    if resp < MIN_RESPONSE or resp < identity + MARGIN or (s == 1.0 and math.hypot(dx, dy) < STILL_PX):
        return None
    return {"scale": s, "shift": [dx / w, dy / h], "response": round(resp, 4)}


def reframe_appearance(appearance: dict[str, Any], framing: dict[str, Any]) -> dict[str, Any]:
    """``appearance`` (``agent_appearance``'s or ``agent_start``'s: ``window`` rows / cols, ``box`` and ``start`` in
    ``resolution`` pixels) with them moved as :func:`register` says the picture moved; the window keeps a pixel of
    slack."""
    out = dict(appearance)
    res = appearance.get("resolution")
    if res is None:
        return out
    H, W = float(res[0]), float(res[1])
    s, (tx, ty) = float(framing["scale"]), framing["shift"]

    def row(v: float) -> float:
        return H / 2 + s * (v - H / 2) + ty * H

    def col(v: float) -> float:
        return W / 2 + s * (v - W / 2) + tx * W

    win = appearance.get("window")
    if win is not None:
        r0, r1 = win.get("rows", [0, H])
        c0, c1 = win.get("cols", [0, W])
        out["window"] = {"rows": [max(0, math.floor(row(r0)) - 1), min(int(H), math.ceil(row(r1)) + 1)],
                         "cols": [max(0, math.floor(col(c0)) - 1), min(int(W), math.ceil(col(c1)) + 1)]}
    start = appearance.get("start")
    if start is not None:
        out["start"] = [col(float(start[0])), row(float(start[1]))]
    box = appearance.get("box")
    if box is not None:
        x0, y0, x1, y1 = (float(v) for v in box)
        out["box"] = [col(x0), row(y0), col(x1), row(y1)]
    out["framing"] = framing
    return out


def warp_like(frames: np.ndarray, framing: dict[str, Any]) -> np.ndarray:
    """``frames`` (``uint8 [T, H, W, 3]``, the reference) moved as :func:`register` says the video's picture moved
    from them, so every comparison with the reference (its pictures, its agent's speed) is made in the video's
    framing (bilinear, the border repeated)."""
    import cv2

    H, W = frames.shape[1:3]
    s, (tx, ty) = float(framing["scale"]), framing["shift"]
    m = cv2.getRotationMatrix2D((W / 2, H / 2), 0, s)
    m[0, 2] += tx * W
    m[1, 2] += ty * H
    return np.stack([cv2.warpAffine(f, m, (W, H), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
                     for f in frames])
