"""Model-free quality signals measured per chunk for Video Drift Error.

LV-Bench computes VDE over six VBench signals that all need network weights (MUSIQ, AMT,
LAION-aesthetic on CLIP ViT-L/14, CLIP, DINO, RAFT). These are their model-free
complements, each measuring the same property with classical image analysis so the track
runs anywhere; :mod:`tracks.longvideo.learned` swaps in the learned signals when local
weights are given.

=============  ==========================================================================
signal         model-free definition (per chunk, frames at <= 128 px)
=============  ==========================================================================
clarity        mean variance of the Laplacian (focus / sharpness) of luma resampled to a fixed
               grid whose longer side is ``CLARITY_SIDE`` = 48 px (v8)
motion         1 - mean |I_t - interp(I_{t-1}, I_{t+1})| / 255, the middle frame rebuilt
               by warping its neighbours half-way along DIS optical flow (VBench's
               "re-interpolate dropped frames" idea without AMT)
aesthetic      0.5 * colourfulness (Hasler & Suesstrunk 2003) / 100 + 0.5 * RMS contrast / 128; its drift is
               the mean of its three parts' (colour spread, colour cast, contrast; v9, :func:`aesthetic_parts`)
background     mean over frames of the HSV colour-histogram intersection with the chunk's
               first frame and with the previous frame (averaged); grey and dark pixels,
               whose hue is codec noise, are binned by brightness alone (v5)
subject        the same with SSIM of the grey frames (structure rather than colour)
dynamic        mean over frame pairs of the mean of the top-5 % optical-flow magnitudes
               (pixels per frame) on luma resampled to a fixed grid whose longer side is
               ``DYNAMIC_SIDE`` = 32 px (v6), whatever size the video was written at; flow
               counts only where the two grid frames differ by more than ``dynamic_evidence``
               = 3 grey levels (v7)
=============  ==========================================================================

Why the dynamic signal has its own grid (v6): at the 128 px analysis size, a small video (the 64 px smoke
renders, or its 0.75x re-encode at 48 px) is analysed at its coded resolution, where H.264's artefacts
live: blocks, a first intra frame that redraws thin structures differently from the frames after it, and
chroma-driven luma flicker. DIS reads them as motion of a few pixels, and with one or two frame pairs per
chunk the top 5 % of flow moved by 0.1-0.4 in normalised VDE between copies of one clip (lossless, crf 23,
crf 35 x0.75, or the same clip with a colour drift), more than a colour drift moves any other signal.
Area-averaging luma onto one coarse grid keeps what the codec preserves (the low frequencies) and puts a
resized copy on the same pixels as the original, so DIS sees the same problem in every encoding. Tuning
split (smoke, 18 series x 3 encodings): the mean |change| of the dynamic signal's normalised VDE between
copies of one clip fell from 0.071 to 0.039; grids of 24 and 40 px gave 0.042 and 0.043.

Flow evidence (option ``dynamic_evidence``; session 51, the default from v7): a brightness change on a smooth
gradient is, to optical flow, motion (the aperture problem: a change dI over a gradient g reads as a move of
dI / g), and on the uint8 grid a smooth gradient is a staircase of flat terraces whose edges shift when the
brightness creeps by a grey level. On the long-video tuning suite (``bench/suites/longvideo_tune``, 70-100
frames), a colour drift (a gain growing by 0.5 % a frame) over a MuJoCo render's shaded floor and sky read as
0.3-1.7 px/frame of motion in chunks where the clean render reads 0.001-0.15 (the ball at rest), so the
dynamic signal's drift *fell* under the defect and the drifted videos outscored the clean one. With k = 3 a
pixel whose two grid frames differ by no more than 3 grey levels counts 0 in the top 5 %. Measured (pair
accuracy lossless / crf 23 / crf 35 x0.75): longvideo_tune 0.933 / 0.928 / 0.872 -> 0.989 / 0.983 / 0.928
(Spearman 0.880 / 0.860 / 0.767 -> 0.980 / 0.980 / 0.860), but smoke 1.000 / 0.972 / 0.954 -> 1.000 / 0.972 /
0.944 and smoke's largest clean encoding gap 0.013 -> 0.041 (Freeway at 48 px crf 35: with object interiors
counted 0, a few codec-artefact pixels weigh more in the top 5 %); the lead made it the default as v7.

Why clarity has its own grid too (v8, session 52): x264 spends its bits unevenly in time. The first (intra) frame
is coded sharper than the predicted frames after it, and static areas keep that detail for a while before it
fades; B frames are softer than the P frames around them, so a chunk's mean sharpness depends on how many of each
it holds; and the 0.75x copy is analysed at its coded size. All of it lives in the finest octave of the coded
resolution, which is where the variance of the Laplacian at the 128 px analysis size looks, so a clean clip's
clarity drifted by itself once encoded. On luma area-averaged onto a fixed grid whose longer side is 48 px
(``longvideo.clarity_side``; 0 = the analysis size, v7) every copy of a clip lands on the same pixels below that
octave, while a blur drift still removes what the grid keeps. Tuning split (``bench/suites/longvideo_tune``, the
40 clean and colour-drifted videos): mean |change| of the clarity signal's normalised VDE between the lossless
video and its crf 23 / crf 35 x0.75 copies 0.010 / 0.027 -> 0.004 / 0.013; grids of 32-96 px: 0.003-0.009 /
0.011-0.022, with the signal's response to the weakest blur drift shrinking as the grid does (at crf 35 x0.75,
mean 0.065 at 32 px, 0.145 at 48, 0.264 at 128). Tried and dropped: the Laplacian's variance divided by the
frame's grey variance (contrast-normalised, so a colour cast's brightness change does not move it), at 128 px
or on a grid: ``longvideo_tune`` gained as much, but ``smoke`` lost pairs (crf 23 / crf 35 x0.75 pair accuracy
0.972 / 0.944 -> 0.963 / 0.926).

Why the aesthetic signal drifts by its parts (v9, session 57): the proxy is a weighted sum, and the relative change
of a sum is diluted by the parts that do not change. A colour cast growing over a video (the colour drift long
autoregressive rollouts show) moves only the colour-cast term, ``0.3 * hypot(mean rg, mean yb)``, while the contrast
term, which it leaves alone, is as large; on ``bench/suites/longvideo_tune`` a warm cast ending at gains
(1.2, 1, 0.8) moved Breakout's aesthetic normalised VDE by 0.028, less than the crf 35 noise of the dynamic signal
moved the track score, and drifted videos outscored their clean one. From v9 each part's normalised VDE is measured
on its own and the signal's share of ``nvde`` is their mean (``vde_aesthetic``, the published formula, stays that
of the sum; option ``longvideo.aesthetic_parts=false`` restores v8). Tuning split, pair accuracy lossless / crf 23 /
crf 35 x0.75: longvideo_tune 0.994 / 0.989 / 0.939 -> 1.000 / 1.000 / 0.967; smoke (24-frame clips, two frames a
chunk) 1.000 / 0.972 / 0.944 -> 0.991 / 0.963 / 0.944 (the maze's turning walls change the picture's cast by
themselves, and the weakest cast partly undoes that). Tried on the same rows: the cast part alone, or the largest
of the three parts' drifts (longvideo_tune 1.000 / 1.000 / 0.972, but its clean gap 0.039 -> 0.046); the cast
as a 2-D chroma vector whose relative change is |c_i - c_1| / (|c_i| + |c_1|) (smoke back to 1.000 / 0.972 but
crf 35 0.935 and a clean gap of 0.063; longvideo_tune 0.994 / 0.994 / 0.961).

All signals are positive for natural video, so the VDE ratio ``|m_i - m_1| / m_1`` is
meaningful; a frozen video has ``dynamic = 0`` in its first chunk and VDE is then ``inf``
as the published formula says.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from tracks.interaction.flow import FlowEstimator, resize_rgb, to_gray, warp

SIGNALS: tuple[str, ...] = ("clarity", "motion", "aesthetic", "background", "subject", "dynamic")


#: longer side (px) of the fixed luma grid the ``dynamic`` signal's flow is measured on (v6; 0 = the analysis size)
DYNAMIC_SIDE = 32
#: longer side (px) of the fixed luma grid the ``clarity`` signal is measured on (v8; 0 = the analysis size, v7):
#: below the finest octave of the coded resolution, where an encoder's uneven sharpness over time lives
CLARITY_SIDE = 48
#: grey levels two frames of the dynamic grid must differ by at a pixel for its flow to count (v7; 0 = every
#: pixel, v6): brightness creep over smooth shading reads as motion where nothing moved
DYNAMIC_EVIDENCE = 3
#: the model-free aesthetic signal's parts, whose drifts are averaged into its normalised VDE (v9; see the module
#: docstring): a drift of one part is no longer diluted by the others in their weighted sum
AESTHETIC_PARTS: tuple[str, ...] = ("colour_spread", "colour_cast", "contrast")


def luma_grid(frames: np.ndarray, side: int) -> np.ndarray:
    """Luma (BT.601 grey) ``uint8 [T, h, w]`` resampled so that ``max(h, w) == side`` exactly (area averaging
    when shrinking, bilinear when enlarging; the shorter side at least 8 px), whatever the input size."""
    import cv2

    if side < 8:
        raise ValueError(f"the dynamic signal's grid needs a longer side of at least 8 px, got {side}")
    frames = np.asarray(frames)
    h, w = frames.shape[1:3]
    scale = side / max(h, w)
    size = (max(8, round(w * scale)), max(8, round(h * scale)))
    interp = cv2.INTER_AREA if scale < 1.0 else cv2.INTER_LINEAR
    return np.stack([cv2.resize(cv2.cvtColor(np.ascontiguousarray(f), cv2.COLOR_RGB2GRAY), size, interpolation=interp)
                     for f in frames])


@dataclass
class ChunkView:
    """One chunk prepared for analysis: RGB ``[T, h, w, 3]`` and grey ``[T, h, w]`` at <= 128 px, the luma on the
    ``dynamic`` signal's fixed grid and on the ``clarity`` signal's (``None``: that signal reads ``gray``);
    ``dynamic_evidence``: the grey levels a pixel must change by between two frames for its flow to count
    (:data:`DYNAMIC_EVIDENCE`)."""

    rgb: np.ndarray
    gray: np.ndarray
    flow_gray: np.ndarray | None = None
    dynamic_evidence: int = DYNAMIC_EVIDENCE
    clarity_gray: np.ndarray | None = None

    @classmethod
    def from_frames(cls, frames: np.ndarray, max_side: int = 128, dynamic_side: int = DYNAMIC_SIDE,
                    dynamic_evidence: int = DYNAMIC_EVIDENCE, clarity_side: int = CLARITY_SIDE) -> ChunkView:
        """``dynamic_side``: the dynamic signal's grid (:data:`DYNAMIC_SIDE`); 0 measures it at ``max_side``.
        ``dynamic_evidence``: :data:`DYNAMIC_EVIDENCE`; 0 counts every pixel's flow (v6).
        ``clarity_side``: the clarity signal's grid (:data:`CLARITY_SIDE`); 0 measures it at ``max_side`` (v7)."""
        if dynamic_evidence < 0:
            raise ValueError(f"dynamic_evidence is a number of grey levels >= 0, got {dynamic_evidence}")
        rgb = resize_rgb(frames, max_side)
        grid = luma_grid(frames, dynamic_side) if dynamic_side else None
        sharp = luma_grid(frames, clarity_side) if clarity_side else None
        return cls(rgb=rgb, gray=to_gray(rgb, max_side), flow_gray=grid, dynamic_evidence=int(dynamic_evidence),
                   clarity_gray=sharp)

    @cached_property
    def aesthetic_frames(self) -> list[tuple[float, float, float, float]]:
        """Per frame ``(colourfulness, colour spread, colour cast, RMS contrast)``, computed once for the aesthetic
        proxy and its parts (:func:`aesthetic_proxy`, :func:`aesthetic_parts`)."""
        out = []
        for f, g in zip(self.rgb, self.gray, strict=True):
            spread, cast = _opponent_stats(f)
            out.append((float(spread + 0.3 * cast), float(spread), float(cast), float(g.std())))
        return out


def clarity(view: ChunkView) -> float:
    """Mean variance of the Laplacian (higher = sharper) of the view's clarity grid (``view.clarity_gray``; of
    ``view.gray`` when it has none)."""
    import cv2

    gray = view.clarity_gray if view.clarity_gray is not None else view.gray
    return float(np.mean([cv2.Laplacian(g.astype(np.float32), cv2.CV_32F).var() for g in gray]))


def motion_smoothness(view: ChunkView, flow: FlowEstimator | None = None) -> float:
    """How well each middle frame is predicted from its neighbours by half-way flow warping.

    Returns a value in ``[0, 1]`` (1 = perfectly smooth). Chunks shorter than 3 frames give 1.
    """
    g = view.gray.astype(np.float32)
    if len(g) < 3:
        return 1.0
    flow = flow or FlowEstimator()
    errs = []
    for t in range(1, len(g) - 1, 2):
        f = flow(view.gray[t - 1], view.gray[t + 1])  # [h, w, 2] from t-1 to t+1
        pred = 0.5 * (warp(g[t - 1], -0.5 * f) + warp(g[t + 1], 0.5 * f))
        errs.append(float(np.mean(np.abs(pred - g[t]))) / 255.0)
    return 1.0 - float(np.mean(errs))


def dynamic_degree(view: ChunkView, flow: FlowEstimator | None = None) -> float:
    """Mean of the top-5 % flow magnitudes per frame pair, averaged over pairs (pixels/frame on the view's
    dynamic grid, ``view.flow_gray``; on ``view.gray`` when it has none). A pixel whose two frames differ by
    no more than ``view.dynamic_evidence`` grey levels (when > 0) counts 0: no evidence of motion there."""
    gray = view.flow_gray if view.flow_gray is not None else view.gray
    if len(gray) < 2:
        return 0.0
    flow = flow or FlowEstimator()
    vals = []
    for t in range(len(gray) - 1):
        f = flow(gray[t], gray[t + 1])
        mag = np.sqrt((f**2).sum(-1))
        if view.dynamic_evidence > 0:
            changed = np.abs(gray[t].astype(np.int16) - gray[t + 1].astype(np.int16)) > view.dynamic_evidence
            mag = np.where(changed, mag, 0.0)
        mag = mag.ravel()
        k = max(1, int(0.05 * mag.size))
        vals.append(float(np.partition(mag, -k)[-k:].mean()))
    return float(np.mean(vals))


def _opponent_stats(rgb: np.ndarray) -> tuple[np.floating, np.floating]:
    """Hasler & Suesstrunk's opponent channels of one ``uint8 [H, W, 3]`` frame: (spread, cast) =
    (hypot(std rg, std yb), hypot(mean rg, mean yb))."""
    x = rgb.astype(np.float32)
    rg = x[..., 0] - x[..., 1]
    yb = 0.5 * (x[..., 0] + x[..., 1]) - x[..., 2]
    return np.hypot(rg.std(), yb.std()), np.hypot(rg.mean(), yb.mean())


def colourfulness(rgb: np.ndarray) -> float:
    """Hasler & Suesstrunk (2003) colourfulness of one ``uint8 [H, W, 3]`` frame: spread + 0.3 cast."""
    spread, cast = _opponent_stats(rgb)
    return float(spread + 0.3 * cast)


def aesthetic_proxy(view: ChunkView) -> float:
    """Colourfulness and contrast (both raise rated aesthetics in photo-quality studies)."""
    return float(np.mean([0.5 * c / 100.0 + 0.5 * k / 128.0 for c, _, _, k in view.aesthetic_frames]))


def aesthetic_parts(view: ChunkView) -> dict[str, float]:
    """The model-free aesthetic signal's three parts, each a chunk mean over frames (v9, :data:`AESTHETIC_PARTS`):
    ``colour_spread`` (Hasler & Suesstrunk's spread of the opponent channels, hypot(std rg, std yb)),
    ``colour_cast`` (their mean, hypot(mean rg, mean yb): how far the picture as a whole leans to one hue) and
    ``contrast`` (RMS contrast of the grey frame). :func:`aesthetic_proxy` is ``0.5 (spread + 0.3 cast) / 100 +
    0.5 contrast / 128``."""
    _, spread, cast, contrast = zip(*view.aesthetic_frames, strict=True)
    return {"colour_spread": float(np.mean(spread)), "colour_cast": float(np.mean(cast)),
            "contrast": float(np.mean(contrast))}


#: saturation / value (0-255) ramps over which a pixel's hue becomes trustworthy: below the ramp it is grey or dark
#: (4:2:0 chroma and the codec's noise spin its hue from frame to frame) and counts by brightness alone; inside the
#: ramp it counts partly as each, so a colour cast that slowly tints a grey wall moves the histogram smoothly (v5)
ACHROMATIC_RAMP = (24.0, 56.0)


def _soft_bins(x: np.ndarray, n: int, span: float, circular: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Linear (tent) assignment of values in ``[0, span)`` to ``n`` bins centred at ``(k + 0.5) * span / n``:
    ``(lower bin, upper bin, upper weight)``. A value moving across a bin edge moves its mass gradually."""
    f = x / (span / n) - 0.5
    lo = np.floor(f).astype(np.int64)
    w = f - lo
    hi = lo + 1
    if circular:
        lo, hi = lo % n, hi % n
    else:
        lo, hi = np.clip(lo, 0, n - 1), np.clip(hi, 0, n - 1)
    return lo, hi, w


def _hsv_hist(rgb: np.ndarray) -> np.ndarray:
    """Soft HSV histogram (8 hues x 4 saturations x 4 values) of the coloured pixels and 4 brightness bins of the
    grey or dark ones, each pixel split between the two by how trustworthy its hue is, and between neighbouring
    bins by where it falls (v5: a slow colour change moves the histogram smoothly, not in jumps at bin edges);
    normalised to sum 1."""
    import cv2

    hsv = cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2HSV).reshape(-1, 3).astype(np.float64)
    h, sat, val = hsv[:, 0], hsv[:, 1], hsv[:, 2]
    lo, hi = ACHROMATIC_RAMP
    chroma = np.clip((np.minimum(sat, val) - lo) / (hi - lo), 0.0, 1.0)
    hb, sb, vb = _soft_bins(h, 8, 180.0, circular=True), _soft_bins(sat, 4, 256.0), _soft_bins(val, 4, 256.0)
    hist = np.zeros(128)
    for hi_h in (0, 1):
        for hi_s in (0, 1):
            for hi_v in (0, 1):
                idx = hb[hi_h] * 16 + sb[hi_s] * 4 + vb[hi_v]
                wt = (hb[2] if hi_h else 1 - hb[2]) * (sb[2] if hi_s else 1 - sb[2]) * (vb[2] if hi_v else 1 - vb[2])
                hist += np.bincount(idx, weights=chroma * wt, minlength=128)
    grey = np.zeros(4)
    for hi_v in (0, 1):
        grey += np.bincount(vb[hi_v], weights=(1.0 - chroma) * (vb[2] if hi_v else 1 - vb[2]), minlength=4)
    out = np.concatenate([hist, grey])
    return out / max(out.sum(), 1.0)


def _first_prev_consistency(items: list, sim: Callable[[Any, Any], float]) -> float:
    """VBench-style consistency: mean over t >= 1 of (sim(x_t, x_0) + sim(x_t, x_{t-1})) / 2."""
    if len(items) < 2:
        return 1.0
    return float(np.mean([0.5 * (sim(items[t], items[0]) + sim(items[t], items[t - 1])) for t in range(1, len(items))]))


def background_consistency(view: ChunkView) -> float:
    """Colour-histogram intersection with the first and the previous frame (in ``[0, 1]``)."""
    hists = [_hsv_hist(f) for f in view.rgb]
    return _first_prev_consistency(hists, lambda a, b: float(np.minimum(a, b).sum()))


def subject_consistency(view: ChunkView) -> float:
    """SSIM of grey frames with the first and the previous frame."""
    from skimage.metrics import structural_similarity

    grays = list(view.gray)
    return _first_prev_consistency(grays, lambda a, b: float(structural_similarity(a, b, data_range=255)))


def chunk_signals(view: ChunkView, names: tuple[str, ...] = SIGNALS, flow: FlowEstimator | None = None) -> dict[str, float]:
    """Every requested model-free signal of one chunk."""
    flow = flow or FlowEstimator()
    fns: dict[str, Callable[[], float]] = {
        "clarity": lambda: clarity(view),
        "motion": lambda: motion_smoothness(view, flow),
        "aesthetic": lambda: aesthetic_proxy(view),
        "background": lambda: background_consistency(view),
        "subject": lambda: subject_consistency(view),
        "dynamic": lambda: dynamic_degree(view, flow),
    }
    unknown = [n for n in names if n not in fns]
    if unknown:
        raise ValueError(f"unknown VDE signal(s) {unknown}; known: {list(fns)}")
    return {n: fns[n]() for n in names}
