"""Continuity: objects move along continuous paths (no teleporting).

The largest per-frame step of every object's centroid along x and along y (steps across a
gap divided by the gap) is compared with the reference's largest step on that axis; the
excess beyond 1.25x the reference plus 2 % of the frame height is a jump. Without a
reference the yardstick is 4x the median step (at least 8 % of the frame height).

Score = exp(-excess / 0.05) (excess in frame heights).
"""

from __future__ import annotations

import numpy as np

from tracks.physics.checks import CheckInput, CheckResult, not_applicable, object_names, series

VERSION = "1"
NAME = "continuity"


def steps(cen: np.ndarray) -> np.ndarray:
    """Per-frame |dx|, |dy| of the centroid between successive sightings ``[n, 2]`` (gaps divided out)."""
    idx = np.flatnonzero(~np.isnan(cen[:, 0]))
    if len(idx) < 2:
        return np.zeros((0, 2))
    return np.abs(np.diff(cen[idx], axis=0)) / np.diff(idx)[:, None]


def run(inp: CheckInput) -> CheckResult:
    ref = inp.ref_tracks if inp.has_reference else None
    names = object_names(ref) if ref else object_names(inp.tracks)
    if not names:
        return not_applicable(NAME, "no object was tracked")
    worst, per = 0.0, {}
    for n in names:
        st = steps(series(inp.tracks, n, T=len(inp.frames))[0]) / inp.height
        if len(st) == 0:
            continue
        # Per axis: a sideways jump of a falling object is a jump even if it falls fast.
        if ref:
            assert inp.ref_frames is not None
            rst = steps(series(ref, n)[0]) / inp.ref_frames.shape[1]
            allowed = 1.25 * (rst.max(axis=0) if len(rst) else np.zeros(2)) + 0.02
        else:
            allowed = np.maximum(4 * np.median(st, axis=0), 0.08)
        excess = float(np.max(np.maximum(0.0, st.max(axis=0) - allowed)))
        per[n] = {"max_step": st.max(axis=0).tolist(), "allowed": allowed.tolist(), "excess": excess}
        worst = max(worst, excess)
    if not per:
        return not_applicable(NAME, "no object was seen in two frames")
    score = float(np.exp(-worst / 0.05))
    ok = worst <= 0.0
    return CheckResult(NAME, "pass" if ok else "fail", score, {"objects": per, "max_excess": worst},
                       "" if ok else f"an object jumps {worst:.3f} frame heights beyond plausible motion")
