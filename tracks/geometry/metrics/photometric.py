"""Photometric consistency across views: the same 3-D point should keep its colour from frame to frame.

A consistent world seen by a camera with fixed exposure shows each surface point with one colour
in every frame; a generated video whose colours drift (a warming cast, fading, flicker) does not,
even when its geometry is perfect. Held-out views of a splat fit barely see this (the fit averages
the drift into its colours), so it is measured directly on the feature tracks of the model the
track follows the camera with (SfM's; the turn-in-place fit's when the reference camera turns in place):

* each observation of a 3-D point (frame ``t``, pixel ``x``) gives a colour ``c`` sampled from the
  frame after a small Gaussian blur (sub-pixel keypoints; robust to 4:2:0 chroma and codec noise);
  saturated or near-black samples are dropped (their ratios are clipped or noise);
* per channel, ``log c[p, t] = a[p] + g[t]``: a point's own colour times a per-frame gain, fitted by
  alternating medians (robust to mismatched or occluded observations);
* the drift is the largest change of a frame's *chromatic* gain (each channel's gain over the mean
  of the three) between any two frames, in log units (0.18 = a 20 % change of colour balance).

Brightness alone is left out: shading of a surface legitimately changes with the viewing angle (a
headlight, a specular sheen, auto-exposure) and measured 0.10 on clean textured-room fly-throughs,
while the chromatic drift of the same videos is 0.01-0.03 in lossless, crf 23 and crf 35 encodings
(colour drift at strength 0.5, a 20 % red/blue shift by the last frame, measures 0.15-0.2).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tracks.geometry import FAILURE_FLOOR
from tracks.geometry.sfm import CameraRecovery
from worldolympiad.trackspec import MetricSpec
from worldolympiad.types import MetricValue

#: frames need this many usable observations for their gain to be estimated
MIN_FRAME_OBSERVATIONS = 8


def frame_gains(frames: np.ndarray, observations: np.ndarray, *, iterations: int = 10,
                least_squares_start: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Per-frame log colour gains ``[S, 3]`` (``nan`` where a frame has too few observations) and the
    number of usable observations per frame ``[S]``.

    Args:
        frames: uint8 ``[S, H, W, 3]`` (the sampled frames the observations index).
        observations: ``[N, 4]`` rows ``(point, frame, x, y)``.
        least_squares_start: start the alternating medians from the least-squares fit of
            ``log c = a[p] + g[t]`` instead of zero gains. Needed when points are seen only in nearby frames
            (the turn-in-place fit's tracks span at most a few sampled frames): the gains are then tied
            to one another through a chain, along which each median sweep from zero moves a gain by only a
            few frames' worth (a colour drift of 0.21 chromatic log range read 0.08 after 10 sweeps).
    """
    import cv2

    S, H, W = frames.shape[:3]
    gains = np.full((S, 3), np.nan)
    counts = np.zeros(S, int)
    if len(observations) == 0:
        return gains, counts
    pt = observations[:, 0].astype(int)
    fr = observations[:, 1].astype(int)
    xy = observations[:, 2:4].astype(np.float32)
    cols = np.zeros((len(observations), 3), np.float64)
    for t in np.unique(fr):
        sel = fr == t
        blurred = cv2.GaussianBlur(frames[t].astype(np.float32), (0, 0), 1.0)
        m = xy[sel]
        cols[sel] = cv2.remap(blurred, m[:, 0].reshape(-1, 1), m[:, 1].reshape(-1, 1), cv2.INTER_LINEAR,
                              borderMode=cv2.BORDER_REPLICATE).reshape(-1, 3)
    ok = np.all((cols >= 8.0) & (cols <= 247.0), axis=1)
    # a point needs two usable observations to say anything about a gain change
    n_per_point = np.bincount(pt[ok], minlength=int(pt.max()) + 1)
    ok &= n_per_point[pt] >= 2
    pt, fr, L = pt[ok], fr[ok], np.log(cols[ok])
    if len(pt) == 0:
        return gains, counts
    counts = np.bincount(fr, minlength=S)
    g = _least_squares_gains(pt, fr, L, S) if least_squares_start else np.zeros((S, 3))
    a = np.zeros((int(pt.max()) + 1, 3))
    for _ in range(iterations):
        a = _group_median(pt, L - g[fr], len(a))
        g = _group_median(fr, L - a[pt], S)
    g[counts < MIN_FRAME_OBSERVATIONS] = np.nan
    return g, counts


def _least_squares_gains(pt: np.ndarray, fr: np.ndarray, L: np.ndarray, S: int) -> np.ndarray:  # noqa: N803
    """Frame gains ``[S, 3]`` of the least-squares fit ``L[n] = a[pt[n]] + g[fr[n]]`` (minimum norm: the split of a
    constant between ``a`` and ``g`` is arbitrary and every use of the gains takes differences)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.linalg import lsqr

    n, P = len(pt), int(pt.max()) + 1
    rows = np.r_[np.arange(n), np.arange(n)]
    A = csr_matrix((np.ones(2 * n), (rows, np.r_[pt, P + fr])), shape=(n, P + S))
    return np.stack([lsqr(A, L[:, c], atol=1e-10, btol=1e-10, iter_lim=10 * (P + S))[0][P:] for c in range(3)], 1)


def _group_median(keys: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Per-key median of ``values`` ``[M, 3]`` → ``[n, 3]`` (0 for keys without values)."""
    out = np.zeros((n, values.shape[1]))
    order = np.argsort(keys, kind="stable")
    k, v = keys[order], values[order]
    bounds = np.flatnonzero(np.diff(k)) + 1
    for group_keys, group in zip(np.split(k, bounds), np.split(v, bounds), strict=True):
        if len(group_keys):
            out[group_keys[0]] = np.median(group, axis=0)
    return out


def appearance_drift_metric(spec: MetricSpec, frames: np.ndarray, rec: CameraRecovery | None = None, *,
                            observations: np.ndarray | None = None, method: str | None = None,
                            least_squares_start: bool = False) -> MetricValue:
    """Largest chromatic-gain change across the video on the same 3-D points (module docstring).

    The points are SfM's (``rec.observations``), or, given ``observations`` (rows ``(point, frame, x, y)``)
    and ``method``, another model's tracks: the turn-in-place fit's feature tracks when the reference camera
    turns in place (``TurnFit.observations``; keypoints its rotations map onto one another), which span only
    nearby frames and need ``least_squares_start`` (:func:`frame_gains`).
    """
    if observations is None:
        if rec is None:
            raise ValueError("appearance_drift_metric needs an SfM model (rec) or observations")
        observations, method = rec.observations, rec.method
    gains, counts = frame_gains(frames, observations, least_squares_start=least_squares_start)
    good = ~np.isnan(gains[:, 0])
    if good.sum() < 2:
        return spec.failed(f"only {int(good.sum())} frames have >= {MIN_FRAME_OBSERVATIONS} usable observations of "
                           "tracked 3-D points; colour consistency cannot be measured", floor=FAILURE_FLOOR)
    g = gains[good] - gains[good].mean(1, keepdims=True)  # chromatic part: gain of a channel over the mean
    per_channel = g.max(0) - g.min(0)  # [3]
    details: dict[str, Any] = {
        "per_channel_log_range": [round(float(v), 4) for v in per_channel],
        "gain_first_to_last": [round(float(v), 4) for v in np.exp(g[-1] - g[0])],
        "frames_measured": int(good.sum()),
        "observations": int(counts.sum()),
        "method": method,
    }
    return spec.value(float(per_channel.max()), details)
