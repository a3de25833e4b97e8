"""Video Drift Error (LV-Bench / BlockVid), exactly as REFERENCE.md §B.

A video is split into ``N`` equal chunks (the remainder frames are dropped), a quality
signal ``m_i`` is measured on each chunk, and drift is the weighted relative deviation of
every later chunk from the first one::

    VDE = sum_{i=2..N} w_i * |m_i - m_1| / m_1
    w_i = N - i + 1          (linear)
    w_i = ln(N - i + 1)      (log)

``VDE`` is ``inf`` when ``m_1 = 0`` and ``0`` when ``N < 2``; lower is better and the scale
depends on ``N`` (it is not normalised). Note that with log weights the last chunk has
``w_N = ln 1 = 0`` and does not count — that is the published formula, kept as is.

:func:`normalized_vde` is our bounded companion in ``[0, 1]``: the same weights, the
symmetric relative difference ``|m_i - m_1| / (|m_i| + |m_1|)`` (in ``[0, 1]``) and division by
the weight sum, so it does not grow with ``N``. Where the published VDE is infinite (``m_1 = 0``:
a signal absent from the first chunk, such as the dynamic degree of a still video) it is at its
maximum, 1, so the two agree at that edge (for weights that are not all zero: with log weights and
``N = 2`` the only weight is ``ln 1 = 0`` and both formulas give 0 there, unless ``m_1 = 0``, where VDE
is still ``inf``). Until track version 2 it gave
a signal that stays at zero no drift, and a still image scored a perfect long-video score, above
the simulator's own videos.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np

Weighting = Literal["linear", "log"]
DEFAULT_NUM_CHUNKS = 10


def vde_weights(n: int, weighting: Weighting = "linear") -> np.ndarray:
    """Weights ``w_i`` for ``i = 2..n`` (array of length ``n - 1``; empty when ``n < 2``)."""
    if weighting not in ("linear", "log"):
        raise ValueError(f"weighting must be 'linear' or 'log', got {weighting!r}")
    i = np.arange(2, n + 1, dtype=np.float64)
    w = n - i + 1.0
    return np.log(w) if weighting == "log" else w


def video_drift_error(values: Sequence[float], weighting: Weighting = "linear") -> float:
    """VDE of per-chunk metric values ``m_1..m_N`` (REFERENCE.md §B).

    Args:
        values: the metric of each chunk, in time order.
        weighting: ``"linear"`` (``w_i = N - i + 1``) or ``"log"`` (``w_i = ln(N - i + 1)``).

    Returns:
        ``0.0`` if fewer than two chunks, ``inf`` if ``m_1 == 0``, else the weighted sum.

    Raises:
        ValueError: a value is NaN (the signal failed on a chunk; report that instead).
    """
    m = np.asarray(values, dtype=np.float64)
    if np.isnan(m).any():
        raise ValueError(f"VDE needs finite chunk values, got NaN at chunks {np.flatnonzero(np.isnan(m)).tolist()}")
    n = len(m)
    if n < 2:
        return 0.0
    if m[0] == 0:
        return math.inf
    w = vde_weights(n, weighting)
    return float(np.sum(w * np.abs(m[1:] - m[0]) / abs(m[0])))


def normalized_vde(values: Sequence[float], weighting: Weighting = "linear") -> float:
    """Bounded drift in ``[0, 1]`` (0 = no drift): weighted mean symmetric relative deviation.

    ``sum_i w_i * |m_i - m_1| / (|m_i| + |m_1|) / sum_i w_i``. ``0.0`` when fewer than two chunks or
    when all weights are zero (checked first); otherwise ``1.0`` when ``m_1 == 0``, where
    :func:`video_drift_error` is infinite (a still video's dynamic degree is 0 in every chunk).
    """
    m = np.asarray(values, dtype=np.float64)
    if np.isnan(m).any():
        raise ValueError("normalized VDE needs finite chunk values, got NaN")
    n = len(m)
    if n < 2:
        return 0.0
    w = vde_weights(n, weighting)
    if w.sum() <= 0:
        return 0.0
    if m[0] == 0:
        return 1.0
    rel = np.abs(m[1:] - m[0]) / (np.abs(m[1:]) + abs(m[0]))
    return float(np.sum(w * rel) / np.sum(w))


def chunk_bounds(num_frames: int, n: int = DEFAULT_NUM_CHUNKS) -> list[tuple[int, int]]:
    """``n`` equal ``[start, end)`` frame ranges; the ``num_frames % n`` tail is dropped.

    Raises:
        ValueError: fewer frames than chunks (each chunk needs at least one frame).
    """
    if n < 1:
        raise ValueError(f"number of chunks must be >= 1, got {n}")
    size = num_frames // n
    if size < 1:
        raise ValueError(f"VDE splits the video into {n} chunks but it has only {num_frames} frames; "
                         f"use a longer video or fewer chunks (longvideo.num_chunks)")
    return [(i * size, (i + 1) * size) for i in range(n)]
