"""Buoyancy: an object in a fluid moves toward an equilibrium level and settles there.

Measured on the subject (``role: subject``, else the object that moves most): its net
vertical travel (first 5 sightings to last 5) and whether it has settled (speed over the
last 20 % below rest speed). Whether it should float or sink depends on densities the video
does not show, so either direction passes; a body that never moves toward a level (a still
video) or never settles fails.

Score = min(1, travel / 0.03) · (1 if settled else 0.6).
"""

from __future__ import annotations

import numpy as np

from tracks.physics.checks import CheckInput, CheckResult, not_applicable, series, subject
from tracks.physics.checks._kinematics import REST_SPEED

VERSION = "2"
NAME = "buoyancy"
#: net vertical travel (frame heights) that shows a body moving toward its level.
MIN_TRAVEL = 0.03


def _levels(y: np.ndarray, fps: float) -> tuple[float, float, bool]:
    v = y[~np.isnan(y)]
    k = max(2, len(v) // 5)
    start, end = float(v[:5].mean()), float(v[-5:].mean())
    settled = bool(np.all(np.abs(np.diff(v[-k:])) * fps < 2 * REST_SPEED))
    return start, end, settled


def run(inp: CheckInput) -> CheckResult:
    name = subject(inp, prefer="motion")
    if name is None:
        return CheckResult(NAME, "fail", 0.0, {}, "nothing moves in the fluid")
    y = series(inp.tracks, name, clipped=False, T=len(inp.frames))[0][:, 1] / inp.height
    if (~np.isnan(y)).sum() < 6:
        return not_applicable(NAME, f"{name!r} seen in fewer than 6 frames")
    s, e, settled = _levels(y, inp.fps)
    moved = abs(e - s) >= MIN_TRAVEL
    measured: dict = {"object": name, "start": s, "end": e, "settled": settled, "travel": abs(e - s)}
    score = (1.0 if moved else abs(e - s) / MIN_TRAVEL) * (1.0 if settled else 0.6)
    ok = moved and settled
    reason = "" if ok else ("does not move toward a level in the fluid" if not moved else "does not settle at a level")
    return CheckResult(NAME, "pass" if ok else "fail", float(np.clip(score, 0, 1)), measured, reason)
