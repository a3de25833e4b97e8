"""Gravity: unsupported objects accelerate downward along smooth paths and never hover.

Measured on the subject (the case's ``role: subject`` object, else the object that moves
most): the mean downward acceleration of its flight segments (quadratic fit per segment,
split at bounces), the fit residual, frames spent at rest in mid-air (above the lowest level
the object reaches), and starts from rest that are not falls (a resting object that lifts off
or slides away by itself: the signature of time-reversed falls and slides; a start next to
another object is a push and is allowed).

The true acceleration in pixels depends on the camera, which a video alone does not give, so
without one any clearly downward acceleration passes; a video in which nothing falls fails (the
rule applies, so something should). The fit residual is allowed the segmentation's jitter.

**In metres (v5).** When the case declares the subject's physical size (``size_m``: a sphere's
diameter, a box's three edges, a cylinder's diameter and height) and no moving camera, the body's
metres per pixel follow from its silhouette: a convex body's projected area averaged over
orientations is a quarter of its surface (Cauchy), so ``m/px = sqrt(S / 4 / area_px)`` — exact for
a sphere, ~1.7x too large for a plate a quarter as thick as it is wide seen edge-on and ~0.9x for
one seen face-on. Free flights (no sideways acceleration: not a
slope, not a pivot; not under ``buoyancy``) then read in m/s² and are compared with g: a fall
under ``G_LOW`` g (a weaker gravity, or a world drawn smaller than the case says) or over
``G_HIGH`` g fails. With the case camera's focal length the evidence also gives the body's depth.
Without a size the part is skipped and ``measured["metric"]`` says why.

Score = soft_ratio(a / visible) · exp(-max(0, rms - tolerance) / 0.02) · (1 - hover share / 2)
· 0.3^(spontaneous starts) · g-factor (1 inside [G_LOW, G_HIGH] g, falling linearly to 0 at
G_ZERO_LOW / G_ZERO_HIGH).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tracks.physics.checks import CheckInput, CheckResult, path_series, position_tolerance, soft_ratio, subject
from tracks.physics.checks._kinematics import Flight, flights, hover_frames, mean_accel, spontaneous_starts
from tracks.physics.tracking import ObjectTrack

VERSION = "9"
NAME = "gravity"
#: a fall must cover this much (frame heights) under its fitted acceleration to count as one.
VISIBLE_FALL = 0.02
#: standard gravity, m/s².
G = 9.81
#: metric falls (a share of g) that pass; the g-factor is 0 at or beyond the outer bounds.
G_LOW, G_HIGH = 0.75, 2.5
G_ZERO_LOW, G_ZERO_HIGH = 0.25, 4.0
#: a flight whose sideways acceleration exceeds this share of its downward one is not a free fall.
SIDEWAYS = 0.3


def mean_projected_area(size_m: Any) -> float | None:
    """A convex body's silhouette area (m²) averaged over orientations: a quarter of its surface.

    ``size_m``: ``[d]`` a sphere's diameter, ``[d, h]`` a cylinder's diameter and height,
    ``[x, y, z]`` a box's edges. ``None`` for anything else."""
    try:
        dims = [float(v) for v in (size_m if isinstance(size_m, (list, tuple)) else [size_m])]
    except (TypeError, ValueError):
        return None
    if not dims or min(dims) <= 0:
        return None
    if len(dims) == 1:
        return float(np.pi * dims[0] ** 2 / 4)
    if len(dims) == 2:
        r, h = dims[0] / 2, dims[1]
        return float((2 * np.pi * r * r + 2 * np.pi * r * h) / 4)
    if len(dims) == 3:
        x, y, z = dims
        return float((x * y + y * z + z * x) / 2)
    return None


def free_flights(fl: list[Flight], x: np.ndarray, fps: float) -> list[Flight]:
    """Flights in free fall: no sideways acceleration beyond :data:`SIDEWAYS` of the downward one
    (a slide down a slope or a pivot about an edge accelerates sideways and falls slower than g)."""
    out = []
    for f in fl:
        t, xs = f.frames / fps, x[f.frames]
        ok = np.isfinite(xs)
        if f.accel <= 0 or ok.sum() < 4:
            continue
        ax = 2.0 * float(np.polyfit(t[ok], xs[ok], 2)[0])
        if abs(ax) <= SIDEWAYS * f.accel:
            out.append(f)
    return out


def metric_fall(inp: CheckInput, name: str, fl: list[Flight], cen: np.ndarray, area: np.ndarray) -> dict[str, Any]:
    """The fall's acceleration as a share of g, from the body's declared size.

    ``cen`` is the centroid in frame heights. Returns ``{"g_ratio": r, "m_per_px": s, "g_factor": f}``
    (and ``depth_m`` when the case camera's focal length is known), or ``{"skipped": why}`` when the
    case gives no size for ``name``, its camera moves, a fluid acts on the body (``buoyancy``
    declared) or no flight is a free fall."""
    hint = next((o for o in inp.objects if o.get("name") == name), None)
    if hint is None or hint.get("size_m") is None:
        return {"skipped": f"the case declares no size_m for {name!r}"}
    if inp.camera_moves:
        return {"skipped": "the case's camera moves: a fall's pixels mix in its motion"}
    if "buoyancy" in inp.case_rules:
        return {"skipped": "the case declares buoyancy: a fluid slows the fall"}
    proj = mean_projected_area(hint["size_m"])
    seen = area[np.isfinite(area) & (area > 0)]
    if proj is None:
        return {"skipped": f"size_m of {name!r} is not [d], [d, h] or [x, y, z] metres: {hint['size_m']!r}"}
    if len(seen) == 0:
        return {"skipped": f"{name!r} has no unclipped silhouette"}
    free = free_flights(fl, cen[:, 0], inp.fps)
    accel = mean_accel(free)
    if accel is None:
        return {"skipped": f"no flight of {name!r} is a free fall (it accelerates sideways: a slope or a pivot)"}
    m_per_px = float(np.sqrt(proj / float(np.median(seen))))
    r = accel * inp.height * m_per_px / G
    if r < G_LOW:
        f = (r - G_ZERO_LOW) / (G_LOW - G_ZERO_LOW)
    elif r > G_HIGH:
        f = (G_ZERO_HIGH - r) / (G_ZERO_HIGH - G_HIGH)
    else:
        f = 1.0
    out = {"g_ratio": round(float(r), 4), "m_per_px": round(m_per_px, 6), "g_factor": float(np.clip(f, 0.0, 1.0))}
    if inp.focal is not None:
        out["depth_m"] = round(inp.focal * m_per_px, 4)
    return out


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
    cen, area, box = path_series(inp.tracks, name, len(inp.frames))
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
    hov = hover_frames(cen, bottom, inp.fps, rest_level, accel=a, pixel=1.0 / H) if seen else 0
    hover_share = hov / max(seen, 1)
    rises = [t for t in spontaneous_starts(cen, inp.fps) if not pushed(inp.tracks, name, t)]
    tol = 0.01 + position_tolerance(inp, float(np.nanmedian(area)))
    rms_excess = max(0.0, rms - tol)
    measured.update(ratio=ratio, hover_frames=hov, rest_level=rest_level, spontaneous_rises=rises, rms_tolerance=tol)
    score = soft_ratio(ratio) * float(np.exp(-rms_excess / 0.02)) * (1.0 - 0.5 * hover_share)
    score *= 0.3 ** len(rises)
    metric = metric_fall(inp, name, fl, cen, area)
    measured["metric"] = metric
    g_ok = "g_ratio" not in metric or G_LOW <= metric["g_ratio"] <= G_HIGH
    score *= metric.get("g_factor", 1.0)
    ok = acc_ok and rms_excess <= 0.0 and hov <= 2 and not rises and g_ok
    reason = "" if ok else _why(acc_ok, rms_excess, hov, ratio, len(rises), None if g_ok else metric)
    return CheckResult(NAME, "pass" if ok else "fail", float(np.clip(score, 0, 1)), measured, reason)


def _why(acc_ok: bool, rms: float, hov: int, ratio: float, rises: int, metric: dict[str, Any] | None = None) -> str:
    out = []
    if metric is not None:
        out.append(f"falls at {metric['g_ratio']:.2f} g for the size the case declares "
                   f"({metric['m_per_px'] * 100:.2f} cm per pixel at the body; {G_LOW}-{G_HIGH} g passes)")
    if rises:
        out.append(f"rises by itself from rest {rises} time(s)")
    if not acc_ok:
        out.append(f"downward acceleration is {ratio:.2f}x what a visible fall needs")
    if rms > 0:
        out.append(f"path is not parabolic (fit residual {rms:.3f} frame heights beyond segmentation jitter)")
    if hov > 2:
        out.append(f"hovers in mid-air for {hov} frames")
    return "; ".join(out)
