"""Gravity: unsupported objects accelerate downward at the reference's rate and never hover.

Measured on the subject (the object that moves most): the mean downward acceleration of its
flight segments (quadratic fit per segment, split at bounces), the fit residual, and
frames spent at rest in mid-air (above the lowest level the object reaches in the reference).

Objects at rest never start moving by themselves other than by falling (a resting object
that lifts off or slides away is the signature of time-reversed falls and slides). Hovering
and spontaneous starts count beyond what the reference itself shows.

Score = soft_ratio(a / a_ref) · exp(-max(0, rms - rms_ref - 0.01) / 0.02) · (1 - hover share / 2)
· 0.3^(spontaneous rises).
Without a reference, a_ref is replaced by "any clearly downward acceleration".
"""

from __future__ import annotations

import numpy as np

from tracks.physics.checks import CheckInput, CheckResult, not_applicable, series, soft_ratio, subject
from tracks.physics.checks._kinematics import flights, hover_frames, mean_accel, spontaneous_starts

VERSION = "1"
NAME = "gravity"


def run(inp: CheckInput) -> CheckResult:
    name = subject(inp, prefer="motion")
    if name is None:
        return not_applicable(NAME, "no moving object was tracked")
    H = inp.height
    cen, _, box = series(inp.tracks, name, clipped=False, T=len(inp.frames))
    cen = cen / H
    y = cen[:, 1]
    bottom = box[:, 3] / H
    fl = flights(y, inp.fps)
    a = mean_accel(fl)
    rms = max((f.rms for f in fl), default=0.0)
    measured: dict = {"object": name, "accel": a, "fit_rms": rms, "flights": len(fl)}

    if inp.has_reference:
        assert inp.ref_tracks is not None and inp.ref_frames is not None
        rcen, _, rbox = series(inp.ref_tracks, name, clipped=False, T=len(inp.ref_frames))
        rh = inp.ref_frames.shape[1]
        rcen = rcen / rh
        ry = rcen[:, 1]
        a_ref = mean_accel(flights(ry, inp.ref_fps or inp.fps))
        if a_ref is None or a_ref <= 0:
            return not_applicable(NAME, f"the reference shows no falling motion of {name!r}", accel_ref=a_ref)
        rest_level = float(np.nanmax(rbox[:, 3] / rh))
        rfps = inp.ref_fps or inp.fps
        ref_fl = flights(ry, rfps)
        ref_rms = max((f.rms for f in ref_fl), default=0.0)
        ref_rises = len(spontaneous_starts(rcen, rfps))
        ref_hover = hover_frames(rcen, rbox[:, 3] / rh, rfps, rest_level)
        ratio = (a if a is not None else 0.0) / a_ref
        measured.update(accel_ref=a_ref, ratio=ratio)
        acc_ok = 0.6 <= ratio <= 1.6
    else:
        if a is None:
            return not_applicable(NAME, f"{name!r} has no flight segment to fit")
        rest_level = float(np.nanmax(bottom))
        ref_rises = ref_hover = 0
        ref_rms = 0.0
        dur = max(len(f.frames) for f in fl) / inp.fps
        ratio = 1.0 if 0.5 * a * dur**2 > 0.02 else (a * dur**2 / 0.04)
        acc_ok = ratio >= 1.0

    seen = int((~np.isnan(y)).sum())
    # Hovering and spontaneous starts count beyond what the reference itself shows (a floating
    # body rests above the floor; a collision launches a resting one).
    hov = max(0, hover_frames(cen, bottom, inp.fps, rest_level) - ref_hover) if seen else 0
    hover_share = hov / max(seen, 1)
    rises = spontaneous_starts(cen, inp.fps)
    # A push the reference also shows (a collision launching a resting body) is not spontaneous.
    extra_rises = max(0, len(rises) - ref_rises)
    measured.update(hover_frames=hov, rest_level=rest_level, spontaneous_rises=rises, rises_ref=ref_rises)
    # Fit residual beyond the reference's own (its renders are not perfect parabolas either).
    rms_excess = max(0.0, rms - ref_rms)
    score = soft_ratio(ratio) * float(np.exp(-max(0.0, rms_excess - 0.01) / 0.02)) * (1.0 - 0.5 * hover_share)
    score *= 0.3**extra_rises
    ok = acc_ok and rms_excess < 0.02 and hov <= 2 and not extra_rises
    reason = "" if ok else _why(acc_ok, rms_excess, hov, ratio, extra_rises)
    return CheckResult(NAME, "pass" if ok else "fail", float(np.clip(score, 0, 1)), measured, reason)


def _why(acc_ok: bool, rms: float, hov: int, ratio: float, rises: int) -> str:
    out = []
    if rises:
        out.append(f"rises by itself from rest {rises} time(s)")
    if not acc_ok:
        out.append(f"downward acceleration is {ratio:.2f}x the expected")
    if rms >= 0.02:
        out.append(f"path is not parabolic (fit residual {rms:.3f} frame heights beyond the reference's)")
    if hov > 2:
        out.append(f"hovers in mid-air for {hov} frames")
    return "; ".join(out)
