"""Interaction and long-video perturbations: actions not followed, seams at chunk
boundaries, identities that change, quality that drifts.

Chunk-based perturbations use the video's chunks (else the case's; else two halves).
"""

from __future__ import annotations

import math

import numpy as np

from scenarios.perturb._layers import object_layers
from scenarios.perturb.base import chunk_spans, perturbation
from worldolympiad.scenario import Rendered
from worldolympiad.types import Case, Video


def _chosen_chunks(spans: list[tuple[int, int]], s: float) -> list[int]:
    """The last ceil(s * (n - 1)) chunks after the first (the first chunk sets the scene)."""
    n = len(spans)
    k = min(n - 1, math.ceil(min(s, 1.0) * (n - 1)))
    return list(range(n - k, n))


@perturbation("action_ignored", "interaction",
              "s in [0, 1]: in the last ceil(s * (n_chunks - 1)) chunks nothing responds to the action: each such chunk "
              "holds its first frame")
def action_ignored(video: Video, case: Case, s: float, rng: np.random.Generator, rendered: Rendered | None):
    """Actions are ignored: the world does not move during the chosen chunks."""
    spans = chunk_spans(video, case)
    order = np.arange(video.num_frames)
    chosen = _chosen_chunks(spans, s)
    for i in chosen:
        a, b = spans[i]
        order[a:b] = a
    return video.frames[order], {"chunks": chosen, "order": order.tolist()}


@perturbation("action_inverted", "interaction",
              "s in [0, 1]: the last ceil(s * (n_chunks - 1)) chunks play backwards, so the realised motion runs opposite "
              "to the commanded action")
def action_inverted(video: Video, case: Case, s: float, rng: np.random.Generator, rendered: Rendered | None):
    """Actions are inverted: motion within the chosen chunks goes the opposite way."""
    spans = chunk_spans(video, case)
    order = np.arange(video.num_frames)
    chosen = _chosen_chunks(spans, s)
    for i in chosen:
        a, b = spans[i]
        order[a:b] = order[a:b][::-1]
    return video.frames[order], {"chunks": chosen, "order": order.tolist()}


@perturbation("delayed_response", "interaction",
              "s >= 0: the video lags by d = round(s * mean chunk length) frames (the first frame is held d frames)")
def delayed_response(video: Video, case: Case, s: float, rng: np.random.Generator, rendered: Rendered | None):
    """The world responds late to every action."""
    spans = chunk_spans(video, case)
    T = video.num_frames
    d = int(round(s * float(np.mean([b - a for a, b in spans]))))
    order = np.maximum(np.arange(T) - d, 0)
    return video.frames[order], {"delay_frames": d, "order": order.tolist()}


def _shift(frame: np.ndarray, dx: float) -> np.ndarray:
    import cv2

    H, W = frame.shape[:2]
    M = np.array([[1.0, 0.0, dx], [0.0, 1.0, 0.0]])
    return cv2.warpAffine(frame, M, (W, H), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)


@perturbation("seam_cut", "interaction",
              "s >= 0: every other chunk (2nd, 4th, ...) is shifted sideways by s * 8 % of the width, so the picture "
              "jumps at each chunk boundary while staying smooth inside chunks")
def seam_cut(video: Video, case: Case, s: float, rng: np.random.Generator, rendered: Rendered | None):
    """Visible seams: a spatial jump at every chunk boundary."""
    spans = chunk_spans(video, case)
    W = video.frames.shape[2]
    out = video.frames.copy()
    dx = s * 0.08 * W
    for i, (a, b) in enumerate(spans):
        if i % 2 == 1:
            for t in range(a, b):
                out[t] = _shift(video.frames[t], dx)
    return out, {"shift_px": dx, "boundaries": [a for a, _ in spans[1:]]}


@perturbation("color_jump", "interaction",
              "s >= 0: every other chunk gets a warm/cool tint, RGB gains (1 + 0.3 s, 1, 1 - 0.3 s) alternating sign, "
              "so colours jump at each chunk boundary")
def color_jump(video: Video, case: Case, s: float, rng: np.random.Generator, rendered: Rendered | None):
    """Colour seams: a global colour change at every chunk boundary."""
    spans = chunk_spans(video, case)
    out = video.frames.copy()
    for i, (a, b) in enumerate(spans):
        if i % 2 == 1:
            sign = 1.0 if (i // 2) % 2 == 0 else -1.0
            gain = np.array([1 + 0.3 * s * sign, 1.0, 1 - 0.3 * s * sign], np.float32)
            out[a:b] = np.clip(video.frames[a:b].astype(np.float32) * gain, 0, 255).round().astype(np.uint8)
    return out, {"boundaries": [a for a, _ in spans[1:]]}


@perturbation("identity_swap", "interaction",
              "s in [0, 1]: from the middle frame on, object colours change identity: with two or more objects the two "
              "largest exchange mean colours (blend weight s); with one, its hue rotates by s * 180 degrees")
def identity_swap(video: Video, case: Case, s: float, rng: np.random.Generator, rendered: Rendered | None):
    """Identities swap mid-video: objects take each other's appearance."""
    import cv2

    lay = object_layers(video, rendered)
    T = video.num_frames
    t0 = T // 2
    ids = sorted({o for o in lay.object_ids.values() if (lay.masks == o).any()}, key=lambda o: -(lay.masks == o).sum())
    if not ids:
        raise ValueError("identity_swap needs at least one visible object; none found in the masks")
    w = min(s, 1.0)
    out = video.frames.copy()
    f = video.frames.astype(np.float32)
    if len(ids) >= 2:
        a, b = ids[:2]
        mean = {o: f[lay.masks == o].mean(axis=0) for o in (a, b)}
        for t in range(t0, T):
            for src, dst in ((a, b), (b, a)):
                m = lay.masks[t] == src
                ratio = (1 - w) + w * mean[dst] / np.maximum(mean[src], 1.0)
                out[t][m] = np.clip(f[t][m] * ratio, 0, 255).round().astype(np.uint8)
        return out, {"swapped": [int(a), int(b)], "from_frame": t0}
    oid = ids[0]
    for t in range(t0, T):
        m = lay.masks[t] == oid
        hsv = cv2.cvtColor(video.frames[t], cv2.COLOR_RGB2HSV)
        hsv[..., 0] = np.where(m, (hsv[..., 0].astype(np.int32) + int(round(90 * w))) % 180, hsv[..., 0]).astype(np.uint8)
        out[t] = cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB)
        out[t][~m] = video.frames[t][~m]
    return out, {"recoloured": int(oid), "hue_shift_deg": 180 * w, "from_frame": t0}


@perturbation("blur_drift", "interaction",
              "s >= 0: Gaussian blur whose sigma grows linearly from 0 to s * min(H, W) / 24 pixels at the last frame")
def blur_drift(video: Video, case: Case, s: float, rng: np.random.Generator, rendered: Rendered | None):
    """Quality drift: the video gets progressively blurrier (an LV-Bench drift control)."""
    import cv2

    T, H, W = video.frames.shape[:3]
    smax = s * min(H, W) / 24.0
    out = video.frames.copy()
    sig = []
    for t in range(T):
        sigma = smax * t / max(T - 1, 1)
        sig.append(round(sigma, 4))
        if sigma > 1e-3:
            out[t] = cv2.GaussianBlur(video.frames[t], (0, 0), sigmaX=sigma, borderType=cv2.BORDER_REFLECT)
    return out, {"sigma_px": sig}


@perturbation("color_drift", "interaction",
              "s >= 0: RGB gains drift linearly to (1 + 0.4 s, 1, 1 - 0.4 s) at the last frame (a warming cast)")
def color_drift(video: Video, case: Case, s: float, rng: np.random.Generator, rendered: Rendered | None):
    """Colour drift over time (an LV-Bench drift control)."""
    T = video.num_frames
    tau = (np.arange(T, dtype=np.float32) / max(T - 1, 1))[:, None, None]  # [T, 1, 1]
    gain = np.stack([1 + 0.4 * s * tau, np.ones_like(tau), 1 - 0.4 * s * tau], axis=-1)  # [T, 1, 1, 3]
    out = np.clip(video.frames.astype(np.float32) * gain, 0, 255).round().astype(np.uint8)
    return out, {"final_gain": [1 + 0.4 * s, 1.0, 1 - 0.4 * s]}
