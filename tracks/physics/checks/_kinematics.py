"""Trajectory helpers shared by the mechanics checks (flight segments, bounces, rest)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: speeds below this (frame heights per second) count as "at rest".
REST_SPEED = 0.08
#: a flight segment must span at least this much vertically (frame heights).
MIN_FLIGHT_RANGE = 0.03


@dataclass
class Flight:
    """A run of frames between bounces with its quadratic fit ``y = a/2 t² + b t + c``."""

    frames: np.ndarray  # int [n]
    accel: float  # frame heights / s², + is downward
    rms: float  # fit residual, frame heights
    y_range: float


def runs(mask: np.ndarray) -> list[np.ndarray]:
    """Index arrays of consecutive True runs."""
    idx = np.flatnonzero(mask)
    if len(idx) == 0:
        return []
    cuts = np.flatnonzero(np.diff(idx) > 1) + 1
    return list(np.split(idx, cuts))


def _nanmin(a: np.ndarray) -> float:
    a = a[~np.isnan(a)]
    return float(a.min()) if len(a) else np.inf


def bounces(y: np.ndarray, fps: float, max_plateau: int = 2, direction: int = 1,
            min_speed_share: float = 0.0) -> list[tuple[int, int]]:
    """Bounces: frame ranges ``(first, last)`` (inclusive) at a *sharp* turn of vertical motion.

    ``direction=1``: down-then-up turns (off a floor); ``-1``: up-then-down (off a ceiling).
    The extreme samples may form a short plateau (the contact fell between two frames), so
    the turn is found across up to ``max_plateau`` frames without vertical motion. A turn is
    sharp (a contact) when the velocity jump across it exceeds 3x the median frame-to-frame
    velocity change: a smooth apex under constant acceleration changes velocity by one
    frame's worth of gravity only.

    ``min_speed_share`` > 0 also asks a contact's speed: the mean speed over the two steps into
    the turn and over the two out of it must both reach that share of the body's fast vertical
    speed (90th percentile over the steps it moves). A rebound is a turn at speed; an apex is a slow turn that pixel
    noise can make look sharp (a 30 fps throw against a busy wall).
    """
    y = y * direction
    v = np.diff(y) * fps  # v[t] = motion from frame t to t+1
    typical = typical_dv(v)
    moving = np.abs(v[np.isfinite(v)])
    moving = moving[moving > REST_SPEED]
    fast = float(np.percentile(moving, 90)) if len(moving) else 0.0
    out: list[tuple[int, int]] = []
    t = 1
    while t < len(y) - 1:
        if np.isnan(v[t - 1]) or v[t - 1] <= REST_SPEED:
            t += 1
            continue
        u = t
        while u < len(v) and u - t <= max_plateau and not np.isnan(v[u]) and abs(v[u]) <= REST_SPEED:
            u += 1
        if u >= len(v) or u - t > max_plateau or np.isnan(v[u]) or v[u] >= -REST_SPEED:
            t += 1
            continue
        # A real contact: a clear drop before, a clear rise after, and an abrupt velocity reversal.
        drop = y[t] - _nanmin(y[max(0, t - 3) : t])
        rise = y[u] - _nanmin(y[u + 1 : u + 4])
        # An up-then-down turn is what gravity does by itself at an apex: across a plateau of p frames it
        # changes the velocity by p + 1 frames' worth, so only a turn sharper than that is a rebound off
        # something above (physics v20). A down-then-up turn is never gravity's doing.
        steps = u - t + 1 if direction < 0 else 1
        sharp = v[t - 1] - v[u] > 3 * typical * steps
        if min_speed_share > 0:
            into, out_of = v[max(0, t - 2) : t], v[u : u + 2]
            sharp = sharp and bool(np.nanmean(np.abs(into)) >= min_speed_share * fast
                                   and np.nanmean(np.abs(out_of)) >= min_speed_share * fast)
        if drop >= MIN_FLIGHT_RANGE / 2 and rise >= MIN_FLIGHT_RANGE / 3 and sharp:
            out.append((t, u))
            t = u + 1
        else:
            t += 1
    return out


def typical_dv(v: np.ndarray) -> float:
    """Median frame-to-frame velocity change while moving (gravity's share per frame).
    ``v`` is ``[n]`` (one axis) or ``[n, 2]`` (changes and speeds are then vector norms)."""
    dv, sp = np.abs(np.diff(v, axis=0)), np.abs(v)
    if v.ndim == 2:
        dv, sp = np.linalg.norm(dv, axis=1), np.linalg.norm(sp, axis=1)
    moving = (sp[1:] > REST_SPEED) | (sp[:-1] > REST_SPEED)
    dv = dv[moving & np.isfinite(dv)]
    return float(np.median(dv)) if len(dv) else 0.0


def _trend_residual(v: np.ndarray) -> np.ndarray:
    """Per step ``t``, the velocity change ``v[t] - v[t-1]`` minus the change the motion around it
    has (the median change over steps ``t±2`` and ``t±3``, outside the contact's own two steps).

    In free flight every step changes velocity by the same gravity share, so the residual is
    pixel noise at any frame rate; a contact (landing, bounce, hit) stands out. A global median
    change (the old yardstick) is too small where most of a clip is a steady roll or rest, and at
    low frame rates every flight step then looked like a contact. ``v`` is ``[n]`` or ``[n, 2]``;
    the result has ``v``'s shape with row 0 nan."""
    vv = v.reshape(len(v), -1)
    acc = np.full_like(vv, np.nan)
    acc[1:] = vv[1:] - vv[:-1]
    seen = np.isfinite(acc).all(axis=1)
    # A step with no seen step around it (a short stretch of path between gaps: a body back in view
    # past the frame's edge) is compared with the path's median change: taken against no change, a
    # smooth apex's gravity step there read as a contact.
    overall = np.median(acc[seen], axis=0) if seen.any() else np.zeros(vv.shape[1])
    out = np.full_like(vv, np.nan)
    for t in range(1, len(vv)):
        ctx = [acc[k] for k in (t - 3, t - 2, t + 2, t + 3) if 1 <= k < len(vv) and np.all(np.isfinite(acc[k]))]
        trend = np.median(np.stack(ctx), axis=0) if ctx else overall
        out[t] = acc[t] - trend
    return out.reshape(v.shape)


def _noise_dv(res: np.ndarray, v: np.ndarray) -> float:
    """Median size of the trend residual while moving (pixel noise on the velocity change)."""
    r = np.abs(res) if res.ndim == 1 else np.linalg.norm(res, axis=1)
    sp = np.abs(v) if v.ndim == 1 else np.linalg.norm(v, axis=1)
    moving = np.zeros(len(v), bool)
    moving[1:] = (sp[1:] > REST_SPEED) | (sp[:-1] > REST_SPEED)
    r = r[moving & np.isfinite(r)]
    return float(np.median(r)) if len(r) else 0.0


def contacts(y: np.ndarray, fps: float) -> list[int]:
    """Frames where vertical velocity changes abruptly against the motion around it (> 3x the
    noise of that change, and more than half the speed before): landings, bounces, hits — where
    free flight ends. See :func:`_trend_residual`."""
    v = np.diff(y) * fps
    res = _trend_residual(v)
    noise = _noise_dv(res, v)
    out = []
    for t in range(1, len(v)):
        if np.isnan(v[t - 1]) or np.isnan(v[t]) or np.isnan(res[t]):
            continue
        jump = abs(res[t])
        fast = max(abs(v[t - 1]), abs(v[t]))
        if jump > 3 * noise and jump > 0.5 * fast and fast > REST_SPEED:
            out.append(t)
    return out


def fill_single_gaps(cen: np.ndarray) -> np.ndarray:
    """``cen`` ``[T, 2]`` with every one-frame gap between two sightings filled by their midpoint.
    A contact often costs a lossy video's small ball its one frame (it merges with the floor or
    its shadow); without the fill the velocity change that frame holds is never seen."""
    out = cen.copy()
    seen = np.isfinite(cen[:, 0])
    for t in range(1, len(cen) - 1):
        if not seen[t] and seen[t - 1] and seen[t + 1]:
            out[t] = (cen[t - 1] + cen[t + 1]) / 2
    return out


def collisions(cen: np.ndarray, fps: float) -> list[int]:
    """Frames where an object's 2-D velocity changes abruptly against the motion around it (the
    :func:`_trend_residual`, so a parabola at 8 fps is not a string of contacts): the change
    exceeds 3x its noise and half the speed on the faster side, which is above rest.
    The change may be spread over two frames (the contact fell between them).

    This sees collisions in any direction — a landing that stops a fall, a ball knocked from
    rest, a glancing hit — where :func:`bounces` sees only vertical rebounds. ``t`` is the
    frame of contact: the velocity into ``t`` differs from the velocity out of it. One-frame gaps
    are bridged (:func:`fill_single_gaps`).
    """
    full = fill_single_gaps(cen)
    filled = np.isnan(cen[:, 0]) & np.isfinite(full[:, 0])
    v = np.diff(full, axis=0) * fps  # v[t] = motion from frame t to t+1
    sp = np.linalg.norm(v, axis=1)
    res = _trend_residual(v)
    noise = _noise_dv(res, v)
    out: list[int] = []
    for t in range(1, len(v)):
        # A contact between two frames spreads the change over two steps: also compare across one
        # (fmax skips the side that is unseen).
        jump, fast = float(np.linalg.norm(res[t])), float(np.fmax(sp[t - 1], sp[t]))
        if t + 1 < len(v):
            jump = float(np.fmax(jump, np.linalg.norm(res[t] + res[t + 1])))
            fast = float(np.fmax(fast, sp[t + 1]))
        abrupt = np.isfinite(jump) and fast > REST_SPEED and jump > 3 * noise and jump > 0.5 * fast
        abrupt = abrupt and _persists(v, t)
        # One event per contact; a bridged gap spreads a contact's change over three steps.
        if abrupt and (not out or out[-1] < t - (2 if filled[max(0, t - 2) : t + 1].any() else 1)):
            out.append(t)
    return out


#: a contact changes the motion for good: the mean velocity over the two steps after it differs from
#: the two before it by more than this share of the faster of the two.
PERSIST_SHARE = 0.35


def _persists(v: np.ndarray, t: int) -> bool:
    """Whether the velocity change at frame ``t`` lasts (:data:`PERSIST_SHARE`): the two steps
    before the step into ``t`` against the two after the step out of it (those two are left out:
    a centroid that one frame lies off a smooth path — a 2 px ball whose blurred mask takes in
    some floor — bends exactly them, the opposite ways). A landing, a bounce, a hit from rest
    change the motion that follows. With no seen step on a side it cannot tell and says yes."""
    before, after = v[max(0, t - 3) : max(0, t - 1)], v[t + 1 : t + 3]
    before, after = before[np.isfinite(before).all(axis=1)], after[np.isfinite(after).all(axis=1)]
    if not len(before) or not len(after):
        return True
    vb, va = before.mean(0), after.mean(0)
    return bool(np.linalg.norm(va - vb) > PERSIST_SHARE * max(np.linalg.norm(va), np.linalg.norm(vb)))


def kinetic_gain(speeds2: list[np.ndarray], t: int, window: int = 3, margin: int = 0) -> float | None:
    """Sum over objects of mean squared 2-D speed in ``window`` frames after a contact at
    ``t``, over the same before it (equal masses assumed; a projected proxy of kinetic energy).
    ``speeds2[i][k]`` is object i's squared speed from frame k to k+1 (``speed2d(cen, fps)[1:] ** 2``).
    Objects unseen on either side are left out; ``None`` when nothing moved before. ``margin``: steps
    next to the contact left out on each side (its frame is known to that many frames; impact v11, at a
    landing: :func:`~tracks.physics.checks.impact.contact_events`)."""
    before = after = 0.0
    for sp2 in speeds2:
        b = sp2[max(0, t - margin - window) : max(0, t - margin)]
        a = sp2[t + margin : t + margin + window]
        b, a = b[np.isfinite(b)], a[np.isfinite(a)]
        if len(b) and len(a):
            before += float(b.mean())
            after += float(a.mean())
    return after / before if before > REST_SPEED**2 else None


def landings(y: np.ndarray, fps: float, window: int = 4) -> list[int]:
    """Frames where a fall ends and the body stays down: over the ``window`` steps before, it
    drops by at least :data:`MIN_FLIGHT_RANGE` and moves down at a median speed above
    :data:`REST_SPEED`; over the ``window`` steps after, its median vertical speed is under a
    quarter of that. ``y`` in frame heights (down is +), ``nan`` = unseen.

    The velocity-change test (:func:`collisions`) misses a landing where the centroid's frame to
    frame noise is as large as the fall's speed (a 2 px ball after a crf 35 resize); a fall that
    stops for good is a contact whatever the noise, and a smooth apex or a hover never looks
    like one (the body is not falling before it, or keeps moving after)."""
    vy = np.diff(y) * fps  # vy[t] = motion from frame t to t+1
    out: list[int] = []
    for t in range(window, len(vy) - window + 1):
        before, after = vy[t - window : t], vy[t : t + window]
        if not (np.isfinite(before).sum() >= window - 1 and np.isfinite(after).sum() >= window - 1):
            continue
        fall = float(np.nanmedian(before))
        drop = float(np.nanmax(y[t - window : t + 1]) - np.nanmin(y[t - window : t + 1]))
        stops = fall > REST_SPEED and drop >= MIN_FLIGHT_RANGE and float(np.nanmedian(np.abs(after))) < 0.25 * fall
        if stops and (not out or out[-1] < t - window):
            out.append(t)
    return out


def bounce_frames(y: np.ndarray, fps: float) -> list[int]:
    """The first lowest frame of every bounce."""
    return [b[0] for b in bounces(y, fps)]


def flights(y: np.ndarray, fps: float) -> list[Flight]:
    """Flight segments of a vertical trajectory ``y`` (frame heights, nan = unseen).

    Segments are split at bounces, other contacts (landings) and gaps; the samples at a contact
    belong to neither side (the contact happened somewhere around them); resting tails are
    trimmed.
    """
    ok = ~np.isnan(y)
    for b0, b1 in bounces(y, fps) + bounces(y, fps, direction=-1):  # contacts below and above
        ok[b0 : b1 + 1] = False
    for c in contacts(y, fps):  # landings without rebound
        ok[c] = False
    out = []
    for seg in runs(ok):
        # trim frames at rest at either end (resting on the floor or frozen)
        speed = np.abs(np.gradient(y[seg])) * fps if len(seg) > 1 else np.zeros(len(seg))
        moving = np.flatnonzero(speed > REST_SPEED)
        if len(moving) == 0:
            continue
        seg = seg[moving[0] : moving[-1] + 1]
        if len(seg) < 5:
            continue
        yr = float(np.ptp(y[seg]))
        if yr < MIN_FLIGHT_RANGE:
            continue
        t = seg / fps
        coef = np.polyfit(t, y[seg], 2)
        rms = float(np.sqrt(np.mean((np.polyval(coef, t) - y[seg]) ** 2)))
        out.append(Flight(seg, float(2 * coef[0]), rms, yr))
    return out


def mean_accel(fl: list[Flight]) -> float | None:
    if not fl:
        return None
    w = np.array([len(f.frames) for f in fl], float)
    return float(np.average([f.accel for f in fl], weights=w))


def speed2d(cen: np.ndarray, fps: float) -> np.ndarray:
    """Centroid speed per frame (``nan`` at frame 0 and around gaps), same units as ``cen`` per second."""
    sp = np.full(len(cen), np.nan)
    sp[1:] = np.linalg.norm(np.diff(cen, axis=0), axis=1) * fps
    return sp


#: still frames at the top of a flight that are its apex, not a hover (:func:`hover_frames`); a
#: codec's exact repeats are allowed besides (:func:`apex_steps`).
APEX_FRAMES = 3
#: the frame rate the apex's lingering test (:func:`hover_frames`) was tuned up to: a faster video's
#: apex is judged as this rate would show it.
PRIOR_FPS = 30.0
#: what a lossy encoder may leave unmoved (pixels): H.264 skip blocks repeat a body's pixels while
#: it moves less than about this much, so a still run is evidence of rest only past that.
CODEC_HOLD_PX = 1.0


def apex_steps(accel: float | None, fps: float, pixel: float) -> tuple[int, int]:
    """Still steps a ballistic body may show at the top of a flight, and at the start of a fall.

    Under a downward acceleration ``a`` (frame heights / s²) a body stays within ``q`` =
    :data:`CODEC_HOLD_PX` pixels (``pixel``: one pixel in frame heights) of its apex for
    ``sqrt(2 q / a)`` frame steps on each side: a lossy encoder may repeat it there (a cartoon ring
    held for 3 steps at 15 fps after a crf 35 resize). Returns ``(apex, start)``: the still steps
    allowed at an apex (both sides) and at the start of a fall from rest (one side), each rounded
    up (the step that leaves the hold is partly still) and never under the fixed allowance
    (:data:`APEX_FRAMES` - 1 and - 2)."""
    if accel is None or not np.isfinite(accel) or accel <= 0 or fps <= 0 or pixel <= 0:
        return APEX_FRAMES - 1, APEX_FRAMES - 2
    side = float(np.sqrt(2.0 * CODEC_HOLD_PX * pixel / (accel / fps**2)))
    return max(APEX_FRAMES - 1, int(np.ceil(2 * side))), max(APEX_FRAMES - 2, int(np.ceil(side)))


def ballistic_still_steps(cen: np.ndarray, first: int, last: int, accel: float, fps: float) -> float:
    """Frame steps a ballistic body under ``accel`` (frame heights / s², > 0) spends under
    :data:`REST_SPEED` about an apex at frames ``first..last``: ``2 v / (accel / fps)``, where
    ``v`` is the vertical speed left under the rest speed beside the body's sideways speed (a line
    fitted to its x over six frames either side); 0 when it drifts sideways at the rest speed or
    faster (the fitted body is never still there)."""
    lo, hi = max(0, first - 6), min(len(cen), last + 7)
    t = np.arange(lo, hi)
    x = cen[lo:hi, 0]
    ok = np.isfinite(x)
    vx = float(np.polyfit(t[ok], x[ok], 1)[0]) * fps if ok.sum() >= 2 else 0.0
    if abs(vx) >= REST_SPEED:
        return 0.0
    return 2.0 * float(np.sqrt(REST_SPEED**2 - vx**2)) / (accel / fps)


def _fits_flight(run: int, steps: float, fps: float, lingering: float, holds: int) -> bool:
    """Whether ``run`` still frames are what a fitted flight shows that spends ``steps`` under the rest
    speed there: the flight does not linger (``steps``, counted as :data:`PRIOR_FPS` would show them,
    up to ``lingering``) and the run is no longer than those steps rounded up plus the codec's
    ``holds`` (:func:`hover_frames`)."""
    return steps * min(1.0, PRIOR_FPS / fps) <= lingering and run <= np.ceil(steps) + holds


def hover_frames(cen: np.ndarray, bottom: np.ndarray, fps: float, rest_level: float, tol: float = 0.04,
                 accel: float | None = None, pixel: float = 0.0) -> int:
    """Frames an object spends at rest (≥ 3 in a row, 2-D speed) with its bottom above
    ``rest_level - tol``: an unsupported object that should be falling.

    Up to :data:`APEX_FRAMES` still frames at the top of a flight (rising before, falling after)
    are its apex, not a hover. A lossy encoder also repeats a slow body's pixels (H.264 skip
    blocks: the very same centroid in successive frames) at its apex and at the start of its fall;
    such exact repeats are allowed besides, as many as a body under the flight's acceleration
    ``accel`` (frame heights / s²) stays within a pixel (``pixel``, in frame heights) of its apex:
    :func:`apex_steps`. A body that moves slowly but not exactly still at its apex (a weaker
    gravity) is held to :data:`APEX_FRAMES`.

    v7 (physics v16): where the flight's acceleration is known, an apex is judged by the fitted
    flight rather than by its noisy frames (:func:`ballistic_still_steps`). A flight that itself
    stays under :data:`REST_SPEED` for more than :data:`APEX_FRAMES` - 0.5 steps lingers at its
    apex (a weaker gravity, as before, now also where sideways drift kept its frames moving);
    otherwise the apex may show that many still steps rounded up plus the codec's holds. A crf 35
    encoder lagged a cartoon ring at its apex by up to 3 px, moving it 0.1-0.2 px a frame for
    four frames where the fit has it still for under two.

    A body at rest in the first frames that then falls is one side of an apex, judged the same way
    (half the steps): a crf 35 codec held an 8 fps cartoon diamond for two frames before its fall,
    and v15 read a hover there.

    The lingering test is a prior per frame, tuned on 8-30 fps; above :data:`PRIOR_FPS` it counts
    the steps a :data:`PRIOR_FPS` video would show (a simulator's 3.5 frame heights / s² fall at
    60 fps is under the rest speed for 2.7 steps at its apex, 1.4 at 30 fps)."""
    apex_max, start_max = apex_steps(accel, fps, pixel)
    sp = speed2d(cen, fps)
    still = (sp < REST_SPEED) & (bottom < rest_level - tol)
    repeat = sp == 0.0  # the same centroid as the frame before: the codec repeated the body
    y = cen[:, 1]
    seen = np.flatnonzero(np.isfinite(y))
    first_seen = int(seen[0]) if len(seen) else 0
    acc = float("nan") if accel is None else float(accel)
    fitted = bool(np.isfinite(acc)) and acc > 0
    out = 0
    for r in runs(still):
        if len(r) < 2:
            continue
        first, last = int(r[0]) - 1, int(r[-1])  # the still frames (speed2d[t] is the step into t)
        before, after = y[max(0, first - 2) : first + 1], y[last : last + 3]
        before, after = before[np.isfinite(before)], after[np.isfinite(after)]
        falls_after = len(after) > 1 and after[-1] - after[0] > 0
        apex = len(before) > 1 and before[0] - before[-1] > 0 and falls_after
        n_rep = int(repeat[r].sum())
        slow = len(r) - n_rep
        if apex and fitted:
            steps = ballistic_still_steps(cen, first, last, acc, fps)
            if _fits_flight(len(r), steps, fps, APEX_FRAMES - 0.5, apex_max):
                continue
        elif apex and slow + 1 <= APEX_FRAMES and n_rep <= apex_max:
            continue
        released = first <= first_seen and falls_after  # at rest in the first frames, then falls
        if released and fitted:
            # one side of an apex: the fitted fall from rest, as at an apex (v16)
            steps = ballistic_still_steps(cen, first, last, acc, fps) / 2
            if _fits_flight(len(r), steps, fps, (APEX_FRAMES - 0.5) / 2, start_max):
                continue
        elif released and slow + 2 <= APEX_FRAMES and n_rep <= start_max:
            continue  # released at the start of the video: the codec held its first frames
        out += len(r) + 1
    return out


def _second_largest(v: np.ndarray) -> float:
    """The second-largest value (``-inf`` for fewer than two)."""
    return float(np.sort(v)[-2]) if len(v) >= 2 else -np.inf


def spontaneous_starts(cen: np.ndarray, fps: float, window: int = 8) -> list[int]:
    """Frames where an object at rest (≥ 3 frames) starts moving by itself other than by falling:
    within ``window`` frames it rises, or slides sideways, by at least :data:`MIN_FLIGHT_RANGE` in
    two frames or more. Nothing at rest lifts off or speeds up without a push (Newton's first law) — the signature
    of time-reversed falls, slides and reversed gravity. Falling from rest is allowed."""
    out = []
    for r in runs(speed2d(cen, fps) < REST_SPEED):
        if len(r) < 2:
            continue
        e = int(r[-1])
        ahead = cen[e + 1 : e + 1 + window]
        ahead = ahead[~np.isnan(ahead[:, 0])]
        if not len(ahead):
            continue
        # the second-largest departure: a start keeps going (nothing brings it back), a
        # mis-segmented frame of a small body in a lossy video does not (v13)
        rise = _second_largest(cen[e, 1] - ahead[:, 1])
        side = _second_largest(np.abs(ahead[:, 0] - cen[e, 0]))
        if rise >= MIN_FLIGHT_RANGE or side >= MIN_FLIGHT_RANGE:
            out.append(e)
    return out
