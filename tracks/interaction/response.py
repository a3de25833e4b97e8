"""World response: does the video move in each chunk where its reference moves, and the way it moves?

A world that ignores an action holds still for the chunk (Atari's ball stops too, even under a no-op, where
the agent's own motion says nothing), so version 9 asked only whether the video changes at least half as
much as the reference in each chunk. Any change passed: a random-weight model's noise-like churn responded
everywhere (smoke interaction 0.407 -> 0.595). Since version 12 the change must also agree with the
reference's motion (:func:`chunk_agreement`), chunk by chunk:

* where the reference's camera moves (its chunk-mean optical flow on a 4 x 4 grid is strong,
  :data:`CAMERA_FLOW`, and the picture changes all over, :data:`CAMERA_SPREAD`), the video's chunk-mean flow field projected on the reference's must carry at least
  :data:`AGREEMENT` of it: churn averages to no flow, a camera going elsewhere projects near zero;
* elsewhere (a sprite, a ball, a gripper, a talking face: the flow of a few moving pixels says little), the
  video's change must be where the reference's is: the cosine of the two 8 x 8 maps of mean frame change,
  each less its own floor (the :data:`FLOOR_QUANTILE` quantile of its cells: a codec's flicker, spread over
  the picture), must reach :data:`AGREEMENT`. Churn spread over the picture points nowhere in particular.

Everything is read at :data:`SIDE` pixels on the longer side, where codec noise averages out.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tracks.interaction.flow import FlowEstimator, to_gray
from tracks.interaction.motion import OFFSET_BLUR, stabilise
from worldolympiad.types import Chunk

#: analysis size (longer side, pixels), the size the response delay is timed at
SIDE = 64
#: a chunk whose reference changes less than this a frame (median, grey levels at :data:`SIDE`) shows nothing
#: moving (an Atari screen before the serve: 0-0.05); a moving one changes 0.1-0.4 (a ball), a scene 1-20
REFERENCE_MOVES = 0.08
#: the video responds in a chunk when its median frame change is at least this share of the reference's:
#: clean re-encodings (crf 35 after a 0.75x resize) keep 0.6 or more of it, a frozen chunk's codec
#: flicker under 0.4 (bench/suites/interaction_tune, issue 56)
RESPONSE_SHARE = 0.5
#: RMS over the 4 x 4 cells of the reference's chunk-mean flow (pixels a frame at :data:`SIDE`) from which its
#: motion is a camera's: smoke's fly-through 0.7-0.9, the maze 1.2-3.3; Atari sprites, robots filmed by a
#: still camera and a talking face 0.05-0.35 (flow made up on flat ground)
CAMERA_FLOW = 0.5
#: mean over max of the reference's 8 x 8 change map from which its change is spread like a camera's: the maze
#: 0.36-0.72, a street panned 0.25; Pong 0.15 or less (DIS drags its paddle's motion over the flat field, so its
#: flow alone looked like a camera's and a clean crf 35 chunk projected 0.39), robots and Breakout 0.16 or less
CAMERA_SPREAD = 0.2
#: agreement (flow projection or change-map cosine) at which the video's motion is the reference's: clean
#: crf 35 x0.75 re-encodings 0.67 or more on smoke and the tuning split, a random-weight model's churn
#: 0.2-0.3 (maps) and under 0.1 (flow)
AGREEMENT = 0.5
#: quantile of a change map's cells taken as its floor (codec flicker or sensor noise spread everywhere)
FLOOR_QUANTILE = 0.25
#: cells of the change map (per side) and of the flow field
MAP_CELLS = 8
FLOW_CELLS = 4


def _cells(a: np.ndarray, n: int) -> np.ndarray:
    """``a`` (``[h, w]`` or ``[h, w, 2]``) averaged over an ``n x n`` grid of cells."""
    import cv2

    return cv2.resize(np.ascontiguousarray(a, dtype=np.float32), (n, n), interpolation=cv2.INTER_AREA)


def _change_map(gray: np.ndarray) -> np.ndarray:
    """Mean absolute frame change per cell ``[MAP_CELLS, MAP_CELLS]`` (``gray``: ``float32 [n, h, w]``)."""
    return _cells(np.abs(np.diff(gray, axis=0)).mean(axis=0), MAP_CELLS)


def _above_floor(m: np.ndarray) -> np.ndarray:
    """A change map less its floor (:data:`FLOOR_QUANTILE`)."""
    return np.maximum(m - float(np.quantile(m, FLOOR_QUANTILE)), 0.0)


def _flow_field(gray: np.ndarray) -> np.ndarray:
    """Chunk-mean optical flow per cell ``[FLOW_CELLS, FLOW_CELLS, 2]`` (pixels a frame at :data:`SIDE`)."""
    est = FlowEstimator()
    u8 = np.clip(np.rint(gray), 0, 255).astype(np.uint8)
    mean = np.mean([est(u8[t], u8[t + 1]) for t in range(len(u8) - 1)], axis=0)
    return _cells(mean, FLOW_CELLS)


def _cosine(a: np.ndarray, b: np.ndarray) -> float | None:
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if nb == 0.0:
        return None
    return 0.0 if na == 0.0 else float(a.ravel() @ b.ravel()) / (na * nb)


def chunk_agreement(video: np.ndarray, ref: np.ndarray) -> dict[str, Any]:
    """How much the motion of one chunk of the video agrees with the reference's (module docstring).

    Args:
        video: grey frames of the chunk at :data:`SIDE`, ``float32 [n, h, w]``.
        ref: the reference's, of the same shape.

    Returns:
        ``{"test": "flow" | "location" | None, "agreement": float | None}``; ``None`` where the reference's
        change is spread evenly (no place to agree on) and its camera does not move.
    """
    m_ref = _change_map(ref)
    spread = float(m_ref.mean()) / max(float(m_ref.max()), 1e-9)
    f_ref = _flow_field(ref) if spread >= CAMERA_SPREAD else None
    if f_ref is not None and float(np.sqrt(np.mean(np.sum(f_ref**2, axis=-1)))) >= CAMERA_FLOW:
        f_gen = _flow_field(video)
        return {"test": "flow", "agreement": float(f_gen.ravel() @ f_ref.ravel()) / float(np.sum(f_ref**2))}
    cos = _cosine(_above_floor(_change_map(video)), _above_floor(m_ref))
    return {"test": "location" if cos is not None else None, "agreement": cos}


def picture_shift(video: np.ndarray, ref: np.ndarray) -> tuple[int, int]:
    """The whole-picture translation ``(dx, dy)`` (pixels at :data:`SIDE`) that takes the reference's chunk onto
    the video's, where one explains the difference of their temporal medians, blurred and less their median level
    (:func:`~tracks.interaction.transitions.whole_shift`), else ``(0, 0)``. ``video``, ``ref``: grey frames of one chunk, ``float32 [n, h, w]``."""
    import cv2

    from tracks.interaction.transitions import whole_shift

    # blurred (:data:`~tracks.interaction.motion.OFFSET_BLUR`): a shift of 2.5 px at this size leaves half of every
    # sharp edge unexplained at either integer shift; less its median: a codec moves a flat field's level by a grey
    # level or two everywhere (Pong at crf 23 against its lossless reference), which no shift explains
    a, b = (cv2.GaussianBlur(np.ascontiguousarray(np.median(x, axis=0), dtype=np.float32), (0, 0), OFFSET_BLUR)
            for x in (ref, video))
    d = whole_shift(a - float(np.median(a)), b - float(np.median(b)))
    return (0, 0) if d is None else (int(d[0]), int(d[1]))


def chunk_response(frames: np.ndarray, ref: np.ndarray, chunks: tuple[Chunk, ...] | list[Chunk]) -> dict[str, Any]:
    """Does the video move in each chunk where its reference moves, the way the reference moves?
    (``frames`` and ``ref``: ``uint8 [T, H, W, 3]`` of one shape.)

    Per chunk (the boundary step left out): the median whole-picture change between frames of the video and
    of the reference (mean absolute grey-level change at :data:`SIDE`); where the reference moves (:data:`REFERENCE_MOVES`), the video
    responds when it changes at least :data:`RESPONSE_SHARE` as much and its motion agrees with the
    reference's (:func:`chunk_agreement` at least :data:`AGREEMENT`), read after the video's chunk is moved back
    onto the reference's picture where the whole picture is shifted (:func:`picture_shift`, version 16): a
    chunk shifted sideways (a seam) moves the world where the reference does, in its own picture, and the
    seam is the transition metrics' to judge. Before, the change maps of Pong shifted 4-8 % of the width
    agreed 0.06-0.12 and those shifted 16 % (the paddle out of the picture) 0.58-0.65 (tuning split), so a stronger seam
    responded better.

    Returns:
        ``{"per_chunk": [{"index", "reference", "video", "test", "agreement", "moves", "responds"[, "shift"]}], "moving": n,
        "moved": m, "responded": k, "share": k / n or None}``: of the ``n`` chunks where the reference moves, the
        video changes enough in ``m`` (a still video: ``m = 0``) and moves the reference's way in ``k``;
        ``moves`` and ``responds`` are ``None`` where the reference does not move.
    """
    g_ref = to_gray(ref, SIDE).astype(np.float32)
    g_gen = to_gray(frames, SIDE).astype(np.float32)
    e_ref = np.abs(np.diff(g_ref, axis=0)).reshape(len(g_ref) - 1, -1).mean(axis=1)
    e_gen = np.abs(np.diff(g_gen, axis=0)).reshape(len(g_gen) - 1, -1).mean(axis=1)
    per = []
    for c in chunks:
        a, b = c.frame_start, min(c.frame_end, len(frames)) - 1  # pairs a..b-1 stay inside the chunk
        if b - a < 1:
            continue
        r, g = float(np.median(e_ref[a:b])), float(np.median(e_gen[a:b]))
        row: dict[str, Any] = {"index": c.index, "reference": round(r, 4), "video": round(g, 4),
                               "test": None, "agreement": None, "moves": None, "responds": None}
        if r >= REFERENCE_MOVES:
            row["moves"] = row["responds"] = bool(g >= RESPONSE_SHARE * r)
            if row["moves"]:
                shift = picture_shift(g_gen[a:b + 1], g_ref[a:b + 1])
                if shift != (0, 0):
                    row["shift"] = list(shift)
                agree = chunk_agreement(stabilise(g_gen[a:b + 1], np.tile(shift, (b + 1 - a, 1))), g_ref[a:b + 1])
                row["test"] = agree["test"]
                row["agreement"] = None if agree["agreement"] is None else round(agree["agreement"], 4)
                row["responds"] = agree["agreement"] is None or agree["agreement"] >= AGREEMENT
        per.append(row)
    judged = [p for p in per if p["responds"] is not None]
    return {"per_chunk": per, "moving": len(judged), "moved": sum(p["moves"] for p in judged),
            "responded": sum(p["responds"] for p in judged),
            "share": float(np.mean([p["responds"] for p in judged])) if judged else None}
