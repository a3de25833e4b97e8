"""Realised motion per frame pair: camera ego-motion and agent displacement.

* **Camera ego-motion**: dense DIS optical flow sampled on a grid, a homography fitted with
  RANSAC (outliers = independently moving objects), then read off at the image centre:
  translation of the centre (content motion, fraction of the width per frame) and zoom
  (log of the mean radial scale of four points around the centre; > 0 = content expands).
* **Agent displacement**: the centroid of the agent's connected component (pixels of its colour
  within a tolerance, inside its search window) per frame; without a known colour, the
  foreground blobs against the temporal median background. The largest component starts the
  track, then the nearest one to the previous position is followed.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from tracks.interaction.flow import FlowEstimator, resize_rgb, to_gray


@dataclass
class MotionSeries:
    """Per frame pair ``t -> t+1`` (length ``T - 1``).

    Attributes:
        translation: ``[T-1, 2]`` image motion (x right, y down) in fractions of the image width
            per frame (content motion for the camera, displacement for the agent); NaN = unknown.
        zoom: ``[T-1]`` log scale change per frame (camera only; zeros for the agent).
        source: ``camera`` or ``agent``.
        positions: ``[T, 2]`` agent centroids in pixels (agent only).
        areas: ``[T]`` pixel count of the tracked component (0 = not found; agent only).
        colors: ``[T, 3]`` mean RGB of the tracked component (NaN = not found; agent only).
        tracking: how the agent was found (agent only): ``colour`` (:func:`agent_likelihood`),
            ``motion`` (the video has erased the agent's colour: :func:`_motion_fallback`) or ``blobs``
            (no colour known: :func:`_blob_centroids`).
        coverage: ``[T]`` the tracked component's summed likelihood (``colour`` tracking only, else
            ``None``): the pixels' worth of agent it holds. A codec or a resize spreads a small sprite's
            contrast over more pixels at a fraction each, so its pixel count grows (Freeway's 12 px chicken
            reads 18 px at crf 23) while its coverage stays about its own size (v17).
    """

    translation: np.ndarray
    zoom: np.ndarray
    source: str
    positions: np.ndarray | None = None
    areas: np.ndarray | None = None
    colors: np.ndarray | None = None
    tracking: str | None = None
    coverage: np.ndarray | None = None


def camera_motion(frames: np.ndarray, max_side: int = 128, grid_step: int = 4) -> MotionSeries:
    """Global ego-motion of ``frames`` (``uint8 [T, H, W, 3]``)."""
    import cv2

    gray = to_gray(frames, max_side)
    T, h, w = gray.shape
    flow = FlowEstimator()
    ys, xs = np.mgrid[grid_step // 2 : h : grid_step, grid_step // 2 : w : grid_step]
    src = np.stack([xs.ravel(), ys.ravel()], axis=1).astype(np.float32)  # [P, 2]
    c = np.array([(w - 1) / 2.0, (h - 1) / 2.0])
    r = 0.25 * min(h, w)
    probes = c + r * np.array([[1, 0], [-1, 0], [0, 1], [0, -1]], dtype=np.float64)
    trans = np.full((T - 1, 2), np.nan)
    zoom = np.full(T - 1, np.nan)
    for t in range(T - 1):
        f = flow(gray[t], gray[t + 1])  # gray[t][p] ~ gray[t+1][p + f(p)]
        dst = src + f[src[:, 1].astype(int), src[:, 0].astype(int)]
        H, _ = cv2.findHomography(src, dst, cv2.RANSAC, 1.0)
        if H is None or not np.isfinite(H).all():
            d = np.median(dst - src, axis=0)
            trans[t] = d / w
            zoom[t] = 0.0
            continue

        def apply(p: np.ndarray, H: np.ndarray = H) -> np.ndarray:
            q = np.c_[p, np.ones(len(p))] @ H.T
            return q[:, :2] / q[:, 2:3]

        cc = apply(c[None])[0]
        trans[t] = (cc - c) / w
        pp = apply(probes)
        zoom[t] = float(np.mean(np.log(np.linalg.norm(pp - cc, axis=1) / r)))
    return MotionSeries(trans, zoom, "camera")


def _track_components(masks: np.ndarray, min_area: int = 2,
                      static: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Centroid ``[T, 2]`` of one connected component per frame: the largest in the first frame
    where any exists, then the one nearest to the previous position (ties go to the larger).

    Components lying mostly on ``static`` (pixels that match in the temporal median frame:
    background of the agent's colour) are used only when nothing else matches.

    Returns:
        centroids ``[T, 2]`` (NaN when none), areas ``[T]`` and the chosen component's mask ``[T, h, w]``.
    """
    import cv2

    out = np.full((len(masks), 2), np.nan)
    areas = np.zeros(len(masks))
    chosen = np.zeros(masks.shape, dtype=bool)
    prev: np.ndarray | None = None
    for t, m in enumerate(masks):
        n, labels, stats, cents = cv2.connectedComponentsWithStats(m.astype(np.uint8))
        cand = [(int(stats[i, cv2.CC_STAT_AREA]), cents[i], i) for i in range(1, n) if stats[i, cv2.CC_STAT_AREA] >= min_area]
        if static is not None and len(cand) > 1:
            moving = [c for c in cand if static[labels == c[2]].mean() < 0.5]
            cand = moving or cand
        if not cand:
            continue
        if prev is None:
            best = max(cand, key=lambda a: a[0])
        else:
            best = min(cand, key=lambda a: float(np.linalg.norm(a[1] - prev)) - 0.01 * a[0])
        out[t], areas[t] = best[1], best[0]
        chosen[t] = labels == best[2]
        prev = out[t]
    return out, areas, chosen


#: BT.601 luma weights of R, G, B: a pixel's brightness, which 4:2:0 keeps per pixel (chroma: one sample per 2 x 2)
LUMA_WEIGHTS = (0.299, 0.587, 0.114)


def to_ycc(rgb: np.ndarray) -> np.ndarray:
    """RGB → ``float32 [..., 3]`` (Y, Cb, Cr), BT.601 full range: the space H.264 stores.

    Luma keeps the full resolution in a 4:2:0 video; chroma is stored at half resolution, so a
    1-2 px sprite keeps its brightness but loses most of its hue (it is averaged with the pixels
    around it). Matching an agent in this space lets the two be weighed apart.
    """
    x = np.asarray(rgb, dtype=np.float32)
    y = x @ np.array(LUMA_WEIGHTS, dtype=np.float32)
    return np.stack([y, 0.564 * (x[..., 2] - y), 0.713 * (x[..., 0] - y)], axis=-1)


def luma_noise(y: np.ndarray) -> float:
    """Robust standard deviation of the luma noise of ``y`` (``float [T, h, w]``), in grey levels.

    Measured on temporal differences of pixels that barely change (the static background
    carries the coding noise and nothing else): ``1.4826 * MAD / sqrt(2)``. Never below 1.
    """
    if len(y) < 2:
        return 1.0
    d = np.abs(np.diff(y, axis=0)).ravel()
    d = d[d < np.percentile(d, 90) + 1e-6]  # moving edges are not noise
    return max(1.0, float(1.4826 * np.median(d) / np.sqrt(2.0)) if d.size else 1.0)


def _local_background(ycc: np.ndarray, k: int) -> np.ndarray:
    """Per-frame spatial median of each YCbCr channel over ``k x k`` pixels (``k`` odd): the colour
    *around* each pixel, with sprites smaller than half the kernel removed."""
    import cv2

    out = np.empty_like(ycc)
    off = np.array([0.0, 128.0, 128.0], dtype=np.float32)
    for t in range(len(ycc)):
        for ch in range(3):
            u8 = np.clip(ycc[t, ..., ch] + off[ch], 0, 255).astype(np.uint8)
            out[t, ..., ch] = cv2.medianBlur(u8, k).astype(np.float32) - off[ch]
    return out


# A pixel is "agent" when it holds at least this fraction of the agent's contrast against its
# surroundings. Below half a pixel of coverage a sprite blurred by a resize or smeared by the codec
# is still brighter (or darker) than its background by this much; background noise is not.
MIN_AGENT_FRACTION = 0.3
# Colour past the agent's own by more than this fraction of the contrast is something else
# (a brighter wall behind a dim sprite).
MAX_AGENT_FRACTION = 1.35
# Chroma may fade (4:2:0 averages a small sprite's hue with its neighbours) but not turn: the
# pixel's chroma change against its surroundings must not point away from the agent's, and its
# component across the agent's direction stays within this fraction of the agent's chroma contrast.
MAX_CROSS_CHROMA = 0.6
# A faded hue keeps its direction: the pixel's chroma change across the agent's may reach this fraction of
# its change along it (tan of the turn: ~27 degrees), plus the chroma noise.
MAX_HUE_TURN = 0.5
# Share of the agent's chroma contrast a pixel keeps when the agent covers its whole neighbourhood
# after 4:2:0 subsampling and coding (half: the codec's chroma quantiser is coarser than luma's).
CHROMA_KEPT = 0.5


def _box3(a: np.ndarray, median: bool = False) -> np.ndarray:
    """3 x 3 mean (or median) over the last two axes of ``[T, h, w]`` (edges replicated)."""
    import cv2

    if median:
        return np.stack([cv2.medianBlur(np.ascontiguousarray(f, dtype=np.float32), 3) for f in a])
    return np.stack([cv2.blur(np.ascontiguousarray(f, dtype=np.float32), (3, 3), borderType=cv2.BORDER_REPLICATE)
                     for f in a])


def background_kernel(shape: tuple[int, ...]) -> int:
    """Side (odd) of the window the surroundings are taken over: a sixth of the frame's smaller side."""
    return max(5, min(int(shape[0]), int(shape[1])) // 6) | 1


def _local_texture(dy: np.ndarray, k: int) -> np.ndarray:
    """Robust spread (1.4826 x median absolute luma deviation) of each pixel's surroundings, ``[T, h, w]``."""
    import cv2

    return np.stack([1.4826 * cv2.medianBlur(np.clip(np.abs(f), 0, 255).astype(np.uint8), k).astype(np.float32)
                     for f in dy])


def agent_likelihood(rgb: np.ndarray, color: np.ndarray, background: np.ndarray | None = None,
                     sigma: float | None = None, texture: np.ndarray | None = None) -> np.ndarray:
    """Fraction of each pixel's colour explained by the agent: ``float [T, h, w]``, 0 where it is not agent-like.

    Model: ``pixel = beta * agent + (1 - beta) * surroundings`` (a sprite partly covering a pixel,
    blurred by a resize, or smeared by the codec). ``beta`` is read from luma, which H.264 keeps
    at full resolution; where the agent has no luma contrast with its surroundings, from chroma.
    Chroma only vetoes: the pixel's hue change may be weaker than the agent's (4:2:0 averages it)
    but must point the same way. Pixels that simply have the agent's colour (large objects, whose
    surroundings are themselves) score 1.

    Args:
        rgb: ``uint8 [T, h, w, 3]`` frames (or a window of them).
        color: the agent's RGB colour.
        background: ``float [T, h, w, 3]`` YCbCr surroundings (default: a per-frame spatial median
            over a sixth of the smaller side).
        sigma: luma noise in grey levels (default: measured with :func:`luma_noise`).
        texture: ``float [T, h, w]`` robust luma spread of the surroundings (default: computed
            over the same window as the background).
    """
    x = to_ycc(rgb)
    a = to_ycc(np.asarray(color, dtype=np.float32))
    if background is None:
        background = _local_background(x, background_kernel(rgb.shape[1:3]))
    s = luma_noise(x[..., 0]) if sigma is None else sigma
    d = x - background  # [T, h, w, 3] change against the surroundings
    # the surroundings' own texture: a pixel must stand out of it, not just differ from its median
    if texture is None:
        texture = _local_texture(d[..., 0], background_kernel(rgb.shape[1:3]))
    D = a - background  # what a pixel fully covered by the agent would show
    dy, Dy = d[..., 0], D[..., 0]
    dc, Dc = d[..., 1:], D[..., 1:]
    Dc2 = (Dc**2).sum(-1)
    luma_ok = np.abs(Dy) >= 4.0 * s + 8.0  # the agent stands out in brightness here
    chroma_ok = Dc2 >= (4.0 * s + 8.0) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        beta_y = np.where(luma_ok, dy / Dy, 0.0)
        gamma = np.where(chroma_ok, (dc * Dc).sum(-1) / Dc2, 0.0)
        cross = np.where(chroma_ok, np.linalg.norm(dc - gamma[..., None] * Dc, axis=-1) / np.sqrt(Dc2), 0.0)
    beta = np.where(luma_ok, beta_y, gamma)
    # a luma change within the texture of the surroundings is texture, not a sprite
    beta = np.where(luma_ok & (np.abs(dy) < 3.0 * texture + 3.0 * s), 0.0, beta)
    # Chroma is expected in proportion to how much of the pixel's neighbourhood the agent covers:
    # 4:2:0 stores one chroma sample per 2 x 2 pixels, so a 1-2 px sprite keeps little of its hue,
    # but a pixel inside a larger agent-bright region (a shadow, a grey wall) must show the hue too.
    cover = _box3(np.clip(np.where(luma_ok, beta_y, 0.0), 0.0, 1.0))
    # and a hue that faded (4:2:0 averaged it with the surroundings) keeps its direction: across the agent's
    # hue it moved at most MAX_HUE_TURN of what it moved along it, give or take the chroma noise (v15: the
    # blend of Pong's grey wall into the brown field at crf 35 is as bright as the green paddle, and its hue
    # turned 45 degrees from the paddle's, a faded paddle's by under 5)
    turned = cross * np.sqrt(Dc2) > MAX_HUE_TURN * np.maximum(gamma, 0.0) * np.sqrt(Dc2) + 2.0 * s + 4.0
    hue_ok = ~chroma_ok | ((gamma >= CHROMA_KEPT * cover - 0.15) & (cross <= MAX_CROSS_CHROMA) & ~turned)
    # the agent's own colour, matched directly (a large object is its own surroundings): luma within
    # the noise, chroma at least half the agent's and pointing its way
    direct = np.abs(x[..., 0] - a[0]) <= 3.0 * s + 10.0
    a_c2 = float(a[1:] @ a[1:])
    if a_c2 > (4.0 * s + 8.0) ** 2:
        direct &= (x[..., 1:] @ a[1:]) / a_c2 >= 0.5
    lik = np.where((beta >= MIN_AGENT_FRACTION) & (beta <= MAX_AGENT_FRACTION) & hue_ok, np.minimum(beta, 1.0), 0.0)
    return np.where(direct, 1.0, lik).astype(np.float32)


def scale_window(window: dict | None, resolution: tuple[int, int] | None, shape: tuple[int, int]) -> dict | None:
    """A search window given in ``resolution`` (the case's ``[H, W]``) pixels mapped onto frames of ``shape``.

    Videos come at any size: a window kept in case pixels would cut a resized video's agent out.
    """
    if window is None or resolution is None or tuple(resolution) == tuple(shape):
        return window
    sy, sx = shape[0] / resolution[0], shape[1] / resolution[1]
    r0, r1 = window.get("rows", [0, resolution[0]])
    c0, c1 = window.get("cols", [0, resolution[1]])
    # widen by a pixel: the resize blurs the sprite's edge across the window's border
    return {"rows": [max(0, int(np.floor(r0 * sy)) - 1), int(np.ceil(r1 * sy)) + 1],
            "cols": [max(0, int(np.floor(c0 * sx)) - 1), int(np.ceil(c1 * sx)) + 1]}


# Tracking a likelihood map (:func:`_track_likelihood`): a frame's candidate components are those
# holding at least half of the frame's peak likelihood ("full width at half maximum": a faint,
# blurred sprite keeps its shape, a faint background speckle beside a strong sprite drops out).
HALF_MAXIMUM = 0.5
MAX_CANDIDATES = 6
STATIC_WEIGHT = 0.25  # evidence of a component lying on static agent-coloured structure
JUMP_COST = 2.0  # path cost of a jump across the whole window diagonal, in units of one frame's best evidence
START_COST = 4.0  # cost of starting a diagonal away from the given start position


def _track_likelihood(lik: np.ndarray, static: np.ndarray | None = None, start: tuple[float, float] | None = None
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The most likely path of one agent through the components of ``lik`` (``float [T, h, w]``).

    Each frame offers up to ``MAX_CANDIDATES`` components (connected pixels at or above half the
    frame's peak) or "not seen". A path earns each chosen component's evidence (its peak
    likelihood relative to the frame's best, down-weighted on static structure) and pays for every jump
    in proportion to its length; dynamic programming (Viterbi) picks the best path, so one frame's
    distractor (a ball of the paddle's colour, a passing car, a codec speckle) cannot pull the
    track away, and a start position (an object's box) anchors the first frame.

    Returns:
        centroids ``[T, 2]`` (x, y; NaN when not seen), areas ``[T]`` and the chosen masks ``[T, h, w]``.
    """
    import cv2

    T, h, w = lik.shape
    diag = float(np.hypot(h, w))
    cands: list[list[tuple[float, np.ndarray, int, np.ndarray]]] = []
    for t in range(T):
        # the peak of what moves: a bright static wall of the agent's colour must not push a faint
        # moving sprite below half maximum
        moving = lik[t][~static] if static is not None and static.any() else lik[t]
        peak = float(moving.max()) if moving.size and moving.max() > 0 else float(lik[t].max())
        out: list[tuple[float, np.ndarray, int, np.ndarray]] = []
        found: list[tuple[float, np.ndarray, int, np.ndarray, float]] = []
        if peak > 0:
            m = (lik[t] >= HALF_MAXIMUM * peak).astype(np.uint8)
            n, labels, stats, cents = cv2.connectedComponentsWithStats(m)
            for i in range(1, n):
                comp = labels == i
                # the most agent-like thing, not the largest: a long static band of half the agent's
                # contrast must not outweigh a small sprite of its full colour
                mass = float(lik[t][comp].max())
                if static is not None and static[comp].mean() >= 0.5:
                    mass *= STATIC_WEIGHT
                # equal peaks (every pixel fully explained scores 1) are told apart by the likelihood the
                # component holds in all: a 3 x 3 px cube, not the first six 1 px specks of a gravel floor
                # that passed as its dark colour in label order (issue 56: robotics place, the cube was cut)
                support = float(lik[t][comp].sum())
                found.append((mass, cents[i], int(stats[i, cv2.CC_STAT_AREA]), comp, support))
            found.sort(key=lambda c: (-c[0], -c[4]))
            out = [(m_, c, a, comp) for m_, c, a, comp, _ in found[:MAX_CANDIDATES]]
            best = out[0][0] if out else 1.0
            out = [(m_ / best, c, a, comp) for m_, c, a, comp in out]
        cands.append(out)
    # Viterbi over states: j < len(cands[t]) = that component; then "lost" (seen before, not now:
    # no evidence, and the next sighting may be anywhere) and "not yet seen" (the first sighting pays
    # for its distance from ``start``)
    def start_cost(c: np.ndarray) -> float:
        return 0.0 if start is None else START_COST * float(np.linalg.norm(c - np.asarray(start))) / diag

    score: list[np.ndarray] = []
    back: list[np.ndarray] = []
    for t in range(T):
        n = len(cands[t])
        ev = np.array([c[0] for c in cands[t]] + [0.0, 0.0])
        first = np.array([start_cost(c[1]) for c in cands[t]])
        if t == 0:
            score.append(np.r_[ev[:n] - first, -np.inf, 0.0])
            back.append(np.full(n + 2, -1))
            continue
        prev = cands[t - 1]
        m = len(prev)
        cost = np.full((m + 2, n + 2), np.inf)
        for i, pa in enumerate(prev):
            for j, pb in enumerate(cands[t]):
                cost[i, j] = JUMP_COST * float(np.linalg.norm(pa[1] - pb[1])) / diag
            cost[i, n] = 0.0  # a component -> lost
        cost[m, :n] = 0.0  # lost -> a component
        cost[m, n] = 0.0  # lost -> lost
        cost[m + 1, :n] = first  # not yet seen -> first sighting
        cost[m + 1, n + 1] = 0.0  # not yet seen -> not yet seen
        tot = score[-1][:, None] - cost  # [prev, cur]
        arg = tot.argmax(axis=0)
        score.append(tot[arg, np.arange(n + 2)] + ev)
        back.append(arg)
    centroids = np.full((T, 2), np.nan)
    areas = np.zeros(T)
    chosen = np.zeros(lik.shape, dtype=bool)
    peaks = np.zeros(T)
    j = int(np.argmax(score[-1]))
    for t in range(T - 1, -1, -1):
        if j < len(cands[t]):
            _, c, a, comp = cands[t][j]
            centroids[t], areas[t], chosen[t] = c, a, comp
            peaks[t] = float(lik[t][comp].max())
        j = int(back[t][j]) if t > 0 else j
    # half maximum along time too: a sighting far fainter than the path's typical one is a speckle
    # the path settled for while the agent was gone, not the agent
    seen = areas > 0
    if seen.any():
        faint = seen & (peaks < HALF_MAXIMUM * float(np.median(peaks[seen])))
        centroids[faint], areas[faint], chosen[faint] = np.nan, 0.0, False
    return centroids, areas, chosen


def _color_centroids(rgb: np.ndarray, color: np.ndarray, window: dict | None,
                     tol: float | None = None, start: tuple[float, float] | None = None,
                     shown: np.ndarray | None = None,
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, str, np.ndarray | None]:
    """Centroids of the agent's component per frame, from :func:`agent_likelihood` inside ``window``.

    ``tol`` is accepted for compatibility and ignored: the tolerance comes from the measured noise.
    ``start``: where the agent is in the first frame (x, y pixels), when known (an object's box).
    ``shown`` (``bool [T, h, w]``): the pixels each frame really shows where the frames were moved back onto frame
    0's picture (:func:`undo_jumps`); the repeated edge elsewhere is not the agent.
    Where the video has erased the agent's colour (:func:`colour_erased`) and no start is given, the
    agent is followed by its motion instead (:func:`_motion_fallback`, v14).

    Returns:
        centroids ``[T, 2]``, areas ``[T]``, the chosen masks ``[T, h, w]``, how the agent was
        tracked (``colour`` or ``motion``) and the component's coverage ``[T]`` (the sum of its
        likelihood: the agent's pixels a blur or a codec spread over more pixels; colour only).
    """
    T, h, w = rgb.shape[:3]
    r0, r1 = (window or {}).get("rows", [0, h])
    c0, c1 = (window or {}).get("cols", [0, w])
    r0, r1, c0, c1 = max(0, int(r0)), min(h, int(r1)), max(0, int(c0)), min(w, int(c1))
    if r1 <= r0 or c1 <= c0:
        return np.full((T, 2), np.nan), np.zeros(T), np.zeros((T, h, w), dtype=bool), "colour", np.zeros(T)
    x = to_ycc(rgb)
    k = background_kernel((h, w))
    bg_full = _local_background(x, k)
    tex = _local_texture(x[..., 0] - bg_full[..., 0], k)[:, r0:r1, c0:c1]
    bg = bg_full[:, r0:r1, c0:c1]
    sub = rgb[:, r0:r1, c0:c1]
    sigma = luma_noise(x[:, r0:r1, c0:c1, 0])
    lik = agent_likelihood(sub, color, bg, sigma, tex)
    if shown is not None:
        lik = np.where(shown[:, r0:r1, c0:c1], lik, 0.0).astype(np.float32)
    if start is None and colour_erased(lik):
        cents, areas, chosen = _motion_fallback(x[:, r0:r1, c0:c1, 0], float(to_ycc(color)[0]), sigma)
        full = np.zeros((T, h, w), dtype=bool)
        full[:, r0:r1, c0:c1] = chosen
        return cents + np.array([c0, r0], dtype=np.float64), areas, full, "motion", None
    # static structure of the agent's colour (a wall, a lane line): agent-like in the temporal median
    med = np.median(sub.astype(np.float32), axis=0)[None]
    static = agent_likelihood(med, color, np.median(bg, axis=0)[None], sigma, np.median(tex, axis=0)[None])[0] > 0
    if start is not None:
        start = (float(start[0]) - c0, float(start[1]) - r0)
    # one pixel is enough: colour + window are specific, and small renders shrink sprites to a pixel
    # with a start position (an object's box) the object itself may well be static: no demotion
    cents, areas, chosen = _track_likelihood(lik, static if start is None else None, start)
    coverage = np.array([float(lik[t][chosen[t]].sum()) for t in range(T)])
    full = np.zeros((T, h, w), dtype=bool)
    full[:, r0:r1, c0:c1] = chosen
    return cents + np.array([c0, r0], dtype=np.float64), areas, full, "colour", coverage


def colour_erased(lik: np.ndarray) -> bool:
    """Has the video erased the agent's colour? ``lik`` (``[T, h, w]``, :func:`agent_likelihood` over the
    agent's window): in nine frames of ten no pixel holds even half of the agent's contrast (the 90th
    percentile over frames of the frame's peak below :data:`HALF_MAXIMUM`).

    Every clean tuning video keeps a peak of 1.00 in every frame and encoding but two at crf 35 x0.75,
    where the codec took the sprite's chroma and most of its luma in every frame: Freeway's chicken
    (0.49: its 91 grey levels over the road kept as 15-35) and the 84 px Pong paddle (0.45); the colour
    tracker then followed the centre line and the kerb (issue 56). Throughout, not in most frames: a
    video whose agent keeps its colour in the first chunk and loses it later (a model that recolours
    it) has not been erased by a codec, and its colour tracker and identity judge the change.
    """
    peaks = lik.reshape(len(lik), -1).max(axis=1) if lik.size else np.zeros(len(lik))
    return bool(len(peaks)) and float(np.percentile(peaks, 90)) < HALF_MAXIMUM


# The motion fallback (:func:`_motion_fallback`): a pixel is the moving agent when its luma moved from
# the pixel's temporal median towards the agent's by at least this fraction of the agent's contrast
# there (the codec keeps 15-35 % of a moving 2-3 px sprite's contrast at crf 35 x0.75) and by more
# than the noise; a component needs this many pixels (codec flicker on a static line of the agent's
# colour comes in specks of 1-2 pixels, a moving sprite in 3 or more).
FALLBACK_MIN_FRACTION = 0.15
FALLBACK_MIN_AREA = 3


def _motion_fallback(y: np.ndarray, agent_luma: float, sigma: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The agent followed by its motion where the video erased its colour: ``y`` (``float [T, h, w]``, the
    window's luma), ``agent_luma`` (the agent's luma), ``sigma`` (luma noise).

    What moves is what differs from the pixel's temporal median (the still scene: road, lane lines,
    walls), and the agent is what differs from it *towards the agent's brightness*: a fraction ``beta``
    of the agent's contrast against the median, as in :func:`agent_likelihood`, with a lower floor
    (:data:`FALLBACK_MIN_FRACTION`) and components of at least :data:`FALLBACK_MIN_AREA` pixels, then
    the same Viterbi path (:func:`_track_likelihood`, no static demotion: the median has none of it).
    An agent at rest for most of the video is part of the median and unseen: between sightings the
    path is bridged later (:func:`_bridge_gaps`); before the first and after the last sighting the
    agent is held where it was first / last seen, as nothing in the window moved it (an agent does
    not move without changing pixels).

    Returns:
        centroids ``[T, 2]`` (x, y in window pixels), areas ``[T]`` (0 where held or not seen) and
        the chosen masks ``[T, h, w]``.
    """
    import cv2

    T = len(y)
    med = np.median(y, axis=0)[None]
    d = y - med
    D = agent_luma - med  # [1, h, w]: a pixel fully covered by the agent, against the still scene
    ok = (np.abs(D) >= 4.0 * sigma + 8.0) & (np.abs(d) >= 3.0 * sigma + 6.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        beta = np.where(ok, d / np.where(ok, D, 1.0), 0.0)
    lik = np.where((beta >= FALLBACK_MIN_FRACTION) & (beta <= MAX_AGENT_FRACTION), np.minimum(beta, 1.0), 0.0)
    lik = lik.astype(np.float32)
    for t in range(T):
        n, labels, stats, _ = cv2.connectedComponentsWithStats((lik[t] > 0).astype(np.uint8))
        specks = [i for i in range(1, n) if stats[i, cv2.CC_STAT_AREA] < FALLBACK_MIN_AREA]
        if specks:
            lik[t][np.isin(labels, specks)] = 0.0
    cents, areas, chosen = _track_likelihood(lik)
    seen = np.flatnonzero(areas > 0)
    if len(seen):
        cents[: seen[0]] = cents[seen[0]]
        cents[seen[-1] + 1 :] = cents[seen[-1]]
    return cents, areas, chosen


# A view is still when at least this share of its pixels stays within STILL_GREY grey levels of
# their temporal median in every frame (a still robot scene ~0.75-0.85 after any encoding, the
# orbiting camera ~0.15); otherwise the camera's motion is compensated before the median (v13).
STILL_SHARE = 0.5
STILL_GREY = 8.0


def still_view(gray: np.ndarray) -> bool:
    """Is the view of ``gray`` (``float [T, h, w]``, NaN = not shown) still: at least :data:`STILL_SHARE` of its
    pixels within :data:`STILL_GREY` grey levels of their temporal median in every frame that shows them?"""
    g = np.asarray(gray, dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # pixels no frame shows: an all-NaN median
        bg = np.nanmedian(g, axis=0)
    close = (np.abs(g - bg[None]) <= STILL_GREY) | np.isnan(g)
    return float(close.all(axis=0).mean()) >= STILL_SHARE


def camera_to_first(gray: np.ndarray, grid_step: int = 4) -> np.ndarray:
    """Homographies ``[T, 3, 3]`` taking frame 0's pixel coordinates to frame ``t``'s: the per-pair
    global motion (dense DIS flow on a grid, RANSAC homography; outliers = moving objects) chained."""
    import cv2

    T, h, w = gray.shape
    flow = FlowEstimator()
    ys, xs = np.mgrid[grid_step // 2 : h : grid_step, grid_step // 2 : w : grid_step]
    src = np.stack([xs.ravel(), ys.ravel()], axis=1).astype(np.float32)
    out = np.tile(np.eye(3), (T, 1, 1))
    for t in range(T - 1):
        f = flow(gray[t], gray[t + 1])
        dst = src + f[src[:, 1].astype(int), src[:, 0].astype(int)]
        H, _ = cv2.findHomography(src, dst, cv2.RANSAC, 1.0)
        if H is None or not np.isfinite(H).all():
            H = np.eye(3)
            H[:2, 2] = np.median(dst - src, axis=0)
        out[t + 1] = H @ out[t]
    return out


def _blob_centroids(gray: np.ndarray, thresh: float = 25.0, shown: np.ndarray | None = None,
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Foreground blobs against the temporal median background, tracked by :func:`_track_components`.

    ``shown`` (``bool [T, h, w]``): the pixels each frame really shows, where the frames were moved back onto
    frame 0's picture (:func:`undo_jumps`): the rest repeats the frame's edge and is neither background nor blob.

    A moving camera has no still background: its frames are first warped onto frame 0 by the
    chained global motion (v13), so the median is the scene and the blobs (and the returned
    centroids and masks) are in frame 0's coordinates: the object's motion in the scene. Before
    v13 the median of an orbiting view was a smear, and which blob was largest changed with the
    codec (the clean push at crf 23 followed a piece of the table).
    """
    import cv2

    g = gray.astype(np.float32)
    T, h, w = g.shape
    if shown is not None:
        g = np.where(shown, g, np.nan)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # pixels no frame shows: an all-NaN median
            bg = np.nanmedian(g, axis=0)
        return _track_components(np.isfinite(bg)[None] & (np.abs(np.nan_to_num(g - bg[None])) > thresh), min_area=4)
    bg = np.median(g, axis=0)
    if T < 2 or still_view(g):
        return _track_components(np.abs(g - bg[None]) > thresh, min_area=4)
    A = camera_to_first(gray)
    flags = cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP
    stab = np.stack([cv2.warpPerspective(g[t], A[t], (w, h), flags=flags, borderValue=np.nan) for t in range(T)])
    valid = np.isfinite(stab)
    # erode the seen area by a pixel: interpolation at the border of the view blends in the NaN fill
    valid = np.stack([cv2.erode(v.astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool) for v in valid])
    stab = np.where(valid, stab, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # pixels never in view: an all-NaN median
        bg = np.nanmedian(stab, axis=0)
    masks = valid & np.isfinite(bg)[None] & (np.abs(np.nan_to_num(stab - bg[None])) > thresh)
    return _track_components(masks, min_area=4)


#: analysis size (longer side) at which :func:`picture_offsets` looks for a whole-picture jump, refined at full size
OFFSET_SIDE = 128
#: blur (Gaussian sigma, pixels) before a jump is looked for: a jump of a fraction of a pixel more or less than
#: the integer shift tried leaves half of every sharp edge's contrast unexplained (crf 35 x0.75 Pong: a 2.5 px
#: seam)
OFFSET_BLUR = 1.0


def picture_offsets(frames: np.ndarray, explains: float | None = None) -> np.ndarray:
    """Where frame 0's picture lies in each frame: ``int [T, 2]`` (x, y) pixel offsets; all zeros where nothing
    shifts the whole picture (a fixed screen, sprites moving over it).

    A frame pair jumps where a whole-picture translation explains it
    (:func:`~tracks.interaction.transitions.whole_shift` on grey frames at :data:`OFFSET_SIDE` pixels blurred
    by :data:`OFFSET_BLUR`, less their median level: it leaves at most ``explains`` of the pair's change, default the transition
    signal's :data:`~tracks.interaction.transitions.SHIFT_EXPLAINS`, and removes at least
    :data:`~tracks.interaction.transitions.SHIFT_MIN_GAIN`). The new offset is then measured at full size
    against frame 0's picture itself, within a few pixels of the jump found, not added to the last one: a
    jump of 2.5 px read as +2 and back as -3 would leave the picture a pixel off for the rest of the video.
    """
    import cv2

    from tracks.interaction.transitions import SHIFT_EXPLAINS, whole_shift

    explains = SHIFT_EXPLAINS if explains is None else explains
    frames = np.asarray(frames)
    T, H, W = frames.shape[:3]
    out = np.zeros((T, 2), dtype=np.int64)
    if T < 2:
        return out

    def blur(g: np.ndarray) -> np.ndarray:
        """Each frame blurred and less its median level (a codec's pulse moves a flat field's level everywhere:
        Pong at crf 35 x0.75 every 7-17 frames by about 2 grey levels, which no shift explains)."""
        out = np.stack([cv2.GaussianBlur(f, (0, 0), OFFSET_BLUR) for f in g])
        return out - np.median(out.reshape(len(out), -1), axis=1)[:, None, None]

    g = blur(to_gray(frames, OFFSET_SIDE).astype(np.float32))
    scale = W / g.shape[2]
    full = blur(to_gray(frames, max(H, W)).astype(np.float32))

    def residual(t: int, ox: int, oy: int) -> float:
        """Mean grey difference of frame ``t`` at ``p`` and frame 0 at ``p - (ox, oy)`` over their overlap."""
        a = full[0][max(0, -oy): H - max(0, oy), max(0, -ox): W - max(0, ox)]
        b = full[t][max(0, oy): H - max(0, -oy), max(0, ox): W - max(0, -ox)]
        return float(np.abs(b - a).mean())

    for t in range(T - 1):
        d = whole_shift(g[t], g[t + 1], explains)
        out[t + 1] = out[t]
        if d is None:
            # no jump seen; a picture carried off frame 0's that matches it again unshifted came back
            # (a jump back the codec blurred past SHIFT_EXPLAINS)
            if out[t].any() and residual(t + 1, 0, 0) < residual(t + 1, int(out[t, 0]), int(out[t, 1])):
                out[t + 1] = 0
            continue
        guess = out[t] + np.rint(np.asarray(d, dtype=np.float64) * scale).astype(np.int64)
        r = int(np.ceil(scale)) + 1
        cands = [(ox, oy) for ox in range(int(guess[0]) - r, int(guess[0]) + r + 1)
                 for oy in range(int(guess[1]) - r, int(guess[1]) + r + 1) if abs(ox) < W // 2 and abs(oy) < H // 2]
        if cands:
            out[t + 1] = min(cands, key=lambda o: residual(t + 1, *o))
    return out


def stabilise(frames: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``frames`` (``[T, H, W]`` or ``[T, H, W, C]``) moved back by ``offsets`` (``int [T, 2]``:
    :func:`picture_offsets`, or one chunk's :func:`~tracks.interaction.response.picture_shift` for every frame) onto
    frame 0's picture; what a shifted frame does not show repeats its edge (walls and field run on; a constant fill drew
    corners into the walls that the likelihood read as agent-coloured blends)."""
    out = np.asarray(frames).copy()
    H, W = out.shape[1:3]
    for t in np.flatnonzero(np.any(offsets != 0, axis=1)):
        dx, dy = (int(v) for v in offsets[t])
        # stab[y, x] = frame[y + dy, x + dx], the frame's edge where that is outside it
        ys = np.clip(np.arange(H) + dy, 0, H - 1)
        xs = np.clip(np.arange(W) + dx, 0, W - 1)
        out[t] = frames[t][ys][:, xs]
    return out


def shown_area(offsets: np.ndarray, shape: tuple[int, int], size: tuple[int, int] | None = None) -> np.ndarray:
    """``bool [T, h, w]``: the pixels of frames moved back by ``offsets`` (:func:`stabilise`; ``[T, 2]`` pixels of
    frames of ``shape`` ``(H, W)``) that the frame really shows, at ``size`` ``(h, w)`` (default ``shape``); a pixel
    whose resize reaches past what is shown is left out."""
    H, W = shape
    h, w = size or shape
    sy, sx = h / H, w / W
    out = np.zeros((len(offsets), h, w), dtype=bool)
    for t, (dx, dy) in enumerate(np.asarray(offsets, dtype=np.int64)):
        # stab[y, x] = frame[y + dy, x + dx] is shown where 0 <= x + dx < W and 0 <= y + dy < H
        x0, x1 = int(np.ceil(max(0, -dx) * sx)), int(np.floor((W - max(0, dx)) * sx))
        y0, y1 = int(np.ceil(max(0, -dy) * sy)), int(np.floor((H - max(0, dy)) * sy))
        out[t, y0:y1, x0:x1] = True
    return out


#: :func:`undo_jumps` takes :func:`picture_offsets` for jumps of the picture only where every jump changes at least
#: this share of the picture (at :data:`OFFSET_SIDE`) by more than :data:`JUMP_GREY` grey levels: a seam on the
#: tuning split's robot floors changes 21-28 %, a 3 px sprite moving over a flat road 1 % (whose whole-picture shift
#: explains the pair: the sprite maps onto itself, the road onto road)
JUMP_SHARE = 0.05
JUMP_GREY = 8.0


def undo_jumps(frames: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """``frames`` moved back onto frame 0's picture where the whole picture jumps (:func:`picture_offsets`,
    :func:`stabilise`) and the view is still once the jumps are undone (a fixed camera whose chunks were shifted
    sideways: a seam), with the offsets undone (``int [T, 2]``; :func:`shown_area` says what each frame really
    shows); else ``frames`` and ``None``
    (nothing jumps, the picture's structure does not move with the jump, or the camera moves: :func:`_blob_centroids`
    follows a moving camera by its global motion).

    Version 18: a jump of the whole picture is no motion of the agent or of an object in it. Before, only an agent
    with a search window (an Atari playfield, v16) was tracked on the stabilised picture; the blob tracker of a robot
    arm took the shifted chunks' median for the background and the jump for the arm's motion (issue 56:
    bench/suites/interaction_tune's robot pick, ``seam_cut`` 0.5 below 1).
    """
    offsets = picture_offsets(frames)
    if not offsets.any():
        return frames, None
    # a jump of the picture moves its structure everywhere; a translation that explains a pair where only a few pixels
    # change is a sprite moving over a flat field, which the whole picture's shift maps onto itself
    g = to_gray(frames, OFFSET_SIDE).astype(np.float32)
    jumps = np.flatnonzero(np.any(np.diff(offsets, axis=0) != 0, axis=1)) + 1
    if min(float((np.abs(g[t] - g[t - 1]) > JUMP_GREY).mean()) for t in jumps) < JUMP_SHARE:
        return frames, None
    stab = stabilise(frames, offsets)
    gray = to_gray(stab, OFFSET_SIDE).astype(np.float32)
    if not still_view(np.where(shown_area(offsets, frames.shape[1:3], gray.shape[1:3]), gray, np.nan)):
        return frames, None
    return stab, offsets


def agent_motion(frames: np.ndarray, appearance: dict | None = None, tol: float | None = None) -> MotionSeries:
    """Displacement of the agent sprite between frames (full resolution: sprites are small).

    ``appearance``: ``{"color": RGB, "window": {"rows", "cols"} | None, "resolution": [H, W] | None}``
    (:func:`tracks.interaction.actions.agent_appearance`); the window is in ``resolution`` pixels
    and is mapped onto the video's size.

    A window is where the agent can be on a fixed screen (an Atari playfield): where the whole picture
    jumps (a seam that shifts a chunk sideways), the window goes with the picture (v16): the frames are
    moved back onto frame 0's picture (:func:`picture_offsets`, :func:`stabilise`) before tracking, and
    positions, masks and colours are read there (a whole-picture jump is not the agent's motion). Before,
    a Pong paddle shifted 8 % of the width left its 8 px column window and the track held a sliver of it or
    a speck of the field; an agent the shift pushes out of the picture is not seen. Without a window (the blob
    tracker, an object tracked by its colour) the frames are moved back likewise where that leaves a still view
    (:func:`undo_jumps`, v18), and what a moved frame does not show is neither background nor agent.
    """
    frames = np.asarray(frames)
    w = frames.shape[2]
    if appearance and appearance.get("color") is not None:
        res = appearance.get("resolution")
        window = scale_window(appearance.get("window"), res, frames.shape[1:3])
        shown = None
        if window is not None:
            offsets = picture_offsets(frames)
            if offsets.any():
                frames = stabilise(frames, offsets)
        else:
            frames, undone = undo_jumps(frames)
            shown = None if undone is None else shown_area(undone, frames.shape[1:3])
        start = None
        if appearance.get("box") is not None:  # [x0, y0, x1, y1] in the first frame, case pixels
            x0, y0, x1, y1 = (float(v) for v in appearance["box"])
            sx, sy = (frames.shape[2] / res[1], frames.shape[1] / res[0]) if res else (1.0, 1.0)
            start = ((x0 + x1) / 2 * sx, (y0 + y1) / 2 * sy)
        pos, areas, chosen, tracking, coverage = _color_centroids(frames, np.asarray(appearance["color"], dtype=np.float32),
                                                                  window, tol, start, shown)
        src = frames
    elif appearance and appearance.get("start") is not None:
        frames, _ = undo_jumps(frames)
        res = appearance.get("resolution")
        sx, sy = (frames.shape[2] / res[1], frames.shape[1] / res[0]) if res else (1.0, 1.0)
        x0, y0 = (float(v) for v in appearance["start"])
        pos, areas = point_track(frames, (x0 * sx, y0 * sy))
        trans = np.diff(_bridge_gaps(pos), axis=0) / w
        return MotionSeries(trans, np.zeros(len(trans)), "agent", pos, areas, np.full((len(frames), 3), np.nan), "points")
    else:
        frames, undone = undo_jumps(frames)
        src = resize_rgb(frames, 256)
        scale = frames.shape[2] / src.shape[2]
        gray = to_gray(src, 256)
        pos, areas, chosen = _blob_centroids(gray, shown=None if undone is None else
                                             shown_area(undone, frames.shape[1:3], gray.shape[1:3]))
        pos = pos * scale
        areas = areas * scale**2
        tracking = "blobs"
        coverage = None
    colors = np.full((len(frames), 3), np.nan)
    for t in range(len(frames)):
        if chosen[t].any():
            colors[t] = src[t][chosen[t]].mean(axis=0)
    trans = np.diff(_bridge_gaps(pos), axis=0) / w
    return MotionSeries(trans, np.zeros(len(trans)), "agent", pos, areas, colors, tracking, coverage)


#: :func:`point_track`: the window around the agent, as a share of the analysed frame's width
POINT_RADIUS = 0.08
#: a point moving less than this (pixels a frame at the analysis size) holds still
POINT_STILL_PX = 0.15
#: the agent moves where at least this share of its window's tracked points (and 3) move
POINT_MOVING_SHARE = 0.3


def point_track(frames: np.ndarray, start: tuple[float, float], max_side: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """Follow an agent with no known colour from its first-frame position ``start`` (pixels of ``frames``) by its
    own texture: each frame, corners (``cv2.goodFeaturesToTrack``) within :data:`POINT_RADIUS` of the width around
    its position are followed into the next frame (pyramidal Lucas-Kanade), and the agent moves by the median step
    of the points that move, where they are at least :data:`POINT_MOVING_SHARE` of those followed (the rest of the
    window is the still scene around it); else it holds still.

    Why (interaction v21): a robot's end effector found as a blob against the temporal median background jumped
    between pieces of the arm (0.1-7 % of the frame from one frame to the next), differently in every encoding: the
    tuning pick's lift read 0.0081 of the width a frame lossless and 0.0013 at crf 35. Points on the gripper read
    the same motion in every encoding.

    Returns:
        positions ``[T, 2]`` (pixels of ``frames``; NaN where no point could be followed) and the number of points
        followed from each frame (0 = lost).
    """
    import cv2

    g = to_gray(frames, max_side)
    scale = frames.shape[2] / g.shape[2]
    T, h, w = g.shape
    radius = max(3, int(round(POINT_RADIUS * w)))
    criteria = (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, 20, 0.03)
    pos = np.full((T, 2), np.nan)
    count = np.zeros(T)
    p = np.array(start, float) / scale
    pos[0] = p
    for t in range(T - 1):
        window = np.zeros((h, w), np.uint8)
        cv2.circle(window, (int(round(p[0])), int(round(p[1]))), radius, 255, -1)
        p0 = cv2.goodFeaturesToTrack(g[t], maxCorners=40, qualityLevel=0.01, minDistance=2, mask=window)
        if p0 is not None:
            p1, status, _ = cv2.calcOpticalFlowPyrLK(g[t], g[t + 1], p0, None, winSize=(9, 9), maxLevel=2,
                                                     criteria=criteria)
            ok = status.ravel() == 1
            count[t] = int(ok.sum())
            if ok.sum() >= 3:
                d = (p1 - p0).reshape(-1, 2)[ok]
                moving = np.linalg.norm(d, axis=1) > POINT_STILL_PX
                if moving.sum() >= max(3, POINT_MOVING_SHARE * len(d)):
                    p = np.clip(p + np.median(d[moving], axis=0), 0, [w - 1, h - 1])
        pos[t + 1] = p
    return pos * scale, count


# Gaps of up to this many frames between two sightings are bridged by linear interpolation (a codec that
# skips a moving sprite's block for a frame or two); a longer gap is the agent held where it was last seen
# and moved at its next sighting (v15, :func:`_bridge_gaps`).
MAX_INTERPOLATED_GAP = 3


def _bridge_gaps(pos: np.ndarray) -> np.ndarray:
    """Positions ``[T, 2]`` with frames where the agent was not seen *between* two sightings filled
    (before the first and after the last sighting stay NaN).

    A heavily compressed video drops a small sprite in some frames (the codec skips the block);
    the agent did not stop there, and a chunk's motion is still read from its sightings: gaps of up to
    :data:`MAX_INTERPOLATED_GAP` frames are filled by linear interpolation. A longer gap is the codec's
    other signature: a sprite that came to rest where the coarse quantiser had smeared it into its
    background stays erased for as long as nothing there changes (the block is skipped), so the agent is
    held at its last sighting and makes the move at its next one (an agent followed by its motion, unseen
    while it rests, starts its walk there). Interpolating it (version 14) spread the move over the rest,
    and a no-op chunk inside the gap read as motion (the Pong paddle erased against the bottom wall at
    crf 35 x0.75 for 16 frames). Crediting no chunk with the move instead scored the same pairs on the
    tuning split but took clean Freeway at crf 35 x0.75 (motion-tracked) from 0.966 to 0.900.
    """
    out = pos.copy()
    seen = np.isfinite(pos).all(axis=1)
    if seen.sum() < 2:
        return out
    idx = np.flatnonzero(seen)
    inner = np.arange(idx[0], idx[-1] + 1)
    for k in range(2):
        out[inner, k] = np.interp(inner, idx, pos[idx, k])
    for a, b in _long_gaps(pos):
        out[a + 1 : b] = pos[a]
    return out


def _long_gaps(pos: np.ndarray) -> list[tuple[int, int]]:
    """``(a, b)`` for each pair of consecutive sightings in ``pos`` (``[T, 2]``, NaN = not seen) more than
    :data:`MAX_INTERPOLATED_GAP` frames apart."""
    idx = np.flatnonzero(np.isfinite(pos).all(axis=1))
    return [(int(a), int(b)) for a, b in zip(idx[:-1], idx[1:], strict=True) if b - a - 1 > MAX_INTERPOLATED_GAP]
