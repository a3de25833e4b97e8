"""Buoyancy: an object in a fluid moves toward the reference's equilibrium level and settles.

Measured on the subject: direction of its net vertical displacement (must match the
reference's: float vs sink), its final level (mean of the last 5 sightings) against the
reference's, and whether it has settled (speed over the last 20 % below rest speed).

Score = [same direction] · exp(-|final level error| / 0.1) · (1 if settled else 0.6).
"""

from __future__ import annotations

import numpy as np

from tracks.physics.checks import CheckInput, CheckResult, not_applicable, series, subject
from tracks.physics.checks._kinematics import REST_SPEED

VERSION = "1"
NAME = "buoyancy"


def _levels(y: np.ndarray, fps: float) -> tuple[float, float, bool]:
    v = y[~np.isnan(y)]
    k = max(2, len(v) // 5)
    start, end = float(v[:5].mean()), float(v[-5:].mean())
    settled = bool(np.all(np.abs(np.diff(v[-k:])) * fps < 2 * REST_SPEED))
    return start, end, settled


def run(inp: CheckInput) -> CheckResult:
    name = subject(inp, prefer="motion")
    if name is None:
        return not_applicable(NAME, "no moving object was tracked")
    y = series(inp.tracks, name, clipped=False, T=len(inp.frames))[0][:, 1] / inp.height
    if (~np.isnan(y)).sum() < 6:
        return not_applicable(NAME, f"{name!r} seen in fewer than 6 frames")
    s, e, settled = _levels(y, inp.fps)
    measured: dict = {"object": name, "start": s, "end": e, "settled": settled}
    if inp.has_reference:
        assert inp.ref_tracks is not None and inp.ref_frames is not None
        ry = series(inp.ref_tracks, name, clipped=False, T=len(inp.ref_frames))[0][:, 1] / inp.ref_frames.shape[1]
        if (~np.isnan(ry)).sum() < 6:
            return not_applicable(NAME, f"{name!r} is barely visible in the reference")
        rs, re_, ref_settled = _levels(ry, inp.ref_fps or inp.fps)
        settled = settled or not ref_settled  # only required when the reference settles
        same_dir = np.sign(e - s) == np.sign(re_ - rs) or abs(re_ - rs) < 0.02
        err = abs(e - re_)
        measured.update(end_ref=re_, direction_matches=bool(same_dir), level_error=err)
    else:
        same_dir, err = True, 0.0
    score = float(same_dir) * float(np.exp(-err / 0.1)) * (1.0 if settled else 0.6)
    ok = bool(same_dir) and err < 0.1 and settled
    return CheckResult(NAME, "pass" if ok else "fail", float(np.clip(score, 0, 1)), measured,
                       "" if ok else "does not float/sink to the expected level and settle")
