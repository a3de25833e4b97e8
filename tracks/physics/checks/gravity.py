"""Gravity: unsupported objects accelerate downward along smooth paths and never hover.

Measured on the subject (the case's ``role: subject`` object, else the object that moves
most): the mean downward acceleration of its flight segments (quadratic fit per segment,
split at bounces), the fit residual, frames spent at rest in mid-air (above the lowest level
the object reaches), and starts from rest that are not falls (a resting object that lifts off
or slides away by itself: the signature of time-reversed falls and slides; a start next to
another object is a push and is allowed).

The true acceleration in pixels depends on the camera, which a video alone does not give, so
any clearly downward acceleration passes; a video in which nothing falls fails (the rule
applies, so something should). The fit residual is allowed the segmentation's jitter.

Score = soft_ratio(a / visible) · exp(-max(0, rms - tolerance) / 0.02) · (1 - hover share / 2)
· 0.3^(spontaneous starts).
"""

from __future__ import annotations

import numpy as np

from tracks.physics.checks import CheckInput, CheckResult, position_tolerance, series, soft_ratio, subject
from tracks.physics.checks._kinematics import flights, hover_frames, mean_accel, spontaneous_starts
from tracks.physics.tracking import ObjectTrack

VERSION = "4"
NAME = "gravity"
#: a fall must cover this much (frame heights) under its fitted acceleration to count as one.
VISIBLE_FALL = 0.02


def pushed(tracks: list[ObjectTrack], name: str, t: int, gap: float = 2.0, window: int = 3) -> bool:
    """Whether another object is within ``gap`` pixels of ``name``'s box around frame ``t`` (a push)."""
    mine = [tr for tr in tracks if (tr.name or f"#{tr.id}") == name]
    others = [tr for tr in tracks if (tr.name or f"#{tr.id}") != name]
    T = len(tracks[0].state) if tracks else 0
    for u in range(max(0, t - 1), min(T, t + window + 1)):
        for a in mine:
            if not a.visible[u]:
                continue
            for b in others:
                if not b.visible[u]:
                    continue
                ax0, ay0, ax1, ay1 = a.bbox[u]
                bx0, by0, bx1, by1 = b.bbox[u]
                if ax0 - gap <= bx1 and bx0 - gap <= ax1 and ay0 - gap <= by1 and by0 - gap <= ay1:
                    return True
    return False


def run(inp: CheckInput) -> CheckResult:
    name = subject(inp, prefer="motion")
    if name is None:
        return CheckResult(NAME, "fail", 0.0, {}, "nothing falls: no object moves")
    H = inp.height
    cen, area, box = series(inp.tracks, name, clipped=False, T=len(inp.frames))
    cen = cen / H
    y = cen[:, 1]
    bottom = box[:, 3] / H
    fl = flights(y, inp.fps)
    a = mean_accel(fl)
    rms = max((f.rms for f in fl), default=0.0)
    measured: dict = {"object": name, "accel": a, "fit_rms": rms, "flights": len(fl)}
    if a is None:
        return CheckResult(NAME, "fail", 0.0, measured, f"nothing falls: {name!r} has no flight segment")
    dur = max(len(f.frames) for f in fl) / inp.fps
    ratio = 1.0 if 0.5 * a * dur**2 > VISIBLE_FALL else (a * dur**2 / (2 * VISIBLE_FALL))
    acc_ok = ratio >= 1.0
    rest_level = float(np.nanmax(bottom))
    seen = int((~np.isnan(y)).sum())
    hov = hover_frames(cen, bottom, inp.fps, rest_level) if seen else 0
    hover_share = hov / max(seen, 1)
    rises = [t for t in spontaneous_starts(cen, inp.fps) if not pushed(inp.tracks, name, t)]
    tol = 0.01 + position_tolerance(inp, float(np.nanmedian(area)))
    rms_excess = max(0.0, rms - tol)
    measured.update(ratio=ratio, hover_frames=hov, rest_level=rest_level, spontaneous_rises=rises, rms_tolerance=tol)
    score = soft_ratio(ratio) * float(np.exp(-rms_excess / 0.02)) * (1.0 - 0.5 * hover_share)
    score *= 0.3 ** len(rises)
    ok = acc_ok and rms_excess <= 0.0 and hov <= 2 and not rises
    reason = "" if ok else _why(acc_ok, rms_excess, hov, ratio, len(rises))
    return CheckResult(NAME, "pass" if ok else "fail", float(np.clip(score, 0, 1)), measured, reason)


def _why(acc_ok: bool, rms: float, hov: int, ratio: float, rises: int) -> str:
    out = []
    if rises:
        out.append(f"rises by itself from rest {rises} time(s)")
    if not acc_ok:
        out.append(f"downward acceleration is {ratio:.2f}x what a visible fall needs")
    if rms > 0:
        out.append(f"path is not parabolic (fit residual {rms:.3f} frame heights beyond segmentation jitter)")
    if hov > 2:
        out.append(f"hovers in mid-air for {hov} frames")
    return "; ".join(out)
