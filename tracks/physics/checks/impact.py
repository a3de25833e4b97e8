"""Impact: a collision never adds energy, and nothing rebounds off thin air.

At every bounce of the subject (a sharp turn of vertical motion from down to up) the rebound
height is compared with the drop height: ``h_after / h_before = e²`` must not exceed 1 (energy
cannot grow at a contact; 5 % slack for pixel noise). Sharp up-to-down turns are rebounds off
nothing above (a mirrored, gravity-reversed fall). A rise that stops and stays up
(:func:`ceiling_stops`) stopped against nothing above (a mirrored landing): it is no collision,
and it costs what a rebound off nothing costs (v9).

Collisions that are not vertical rebounds — a landing that stops a fall, a ball knocked from
rest, a hit from the side — are abrupt 2-D velocity changes of any named object
(:func:`~tracks.physics.checks._kinematics.collisions`). Where nothing bounces, the summed
squared speed of the objects (a projected kinetic-energy proxy, equal masses) must not grow
across a contact by more than :data:`KINETIC_SLACK` (projection and pixel noise); at a landing the step next
to the contact on each side is left out (v11; v10 was a tried version that did not land).

The rule applies, so a video without any bounce or collision fails it (a still video has
no impact, nor has one whose only contacts are stops in mid-air).

Score = exp(-max(0, gain - 1.05) / 0.3) · min(1, allowed / kinetic gain) · 0.3^(ceiling rebounds + stops).
"""

from __future__ import annotations

import numpy as np

from tracks.physics.checks import CheckInput, CheckResult, object_names, path_series, series, subject
from tracks.physics.checks._kinematics import (
    MIN_FLIGHT_RANGE,
    REST_SPEED,
    bounce_frames,
    bounces,
    collisions,
    fill_single_gaps,
    kinetic_gain,
    landings,
    speed2d,
)
from tracks.physics.tracking import ObjectTrack

VERSION = "11"
#: slack on the kinetic gain across a contact (projection, pixel noise in a few-frame window).
KINETIC_SLACK = 1.6
#: largest rebound/drop height ratio that is not an energy gain (pixel noise).
ALLOWED_GAIN = 1.05
NAME = "impact"
#: a rebound off nothing above turns at speed: both sides' speed at least this share of the body's
#: fast vertical speed (an apex turns slowly; pixel noise can make it look sharp).
CEILING_SPEED = 0.4
#: a rise that stops and stays up for at least this many frames has stopped for good (v9).
STUCK_FRAMES = 8


def height_ratios(y: np.ndarray, bounces: list[int]) -> list[float]:
    """``h_after / h_before`` at each bounce (heights measured up from the bounce's lowest sample)."""
    out = []
    edges = [0, *bounces, len(y) - 1]
    for k, b in enumerate(bounces):
        before = y[edges[k] : b + 1]
        after = y[b : edges[k + 2] + 1]
        h0 = y[b] - np.nanmin(before)
        h1 = y[b] - np.nanmin(after)
        if h0 > 0.01:
            out.append(float(h1 / h0))
    return out


#: a mask under this share of the object's typical area is partly hidden: its centroid is biased.
WHOLE_AREA = 0.75
#: a mask under this share of it is a fragment even where nothing touches it (the few pixels of a
#: small ball a lossy frame left the object's colour); codec noise moves a small body's area by a
#: third, not this much.
FRAGMENT_AREA = 0.4


def whole_centroids(tracks: list[ObjectTrack], name: str, T: int) -> np.ndarray:
    """Centroids ``[T, 2]`` (pixels) where ``name`` is seen whole: not cut by the border and not
    partly hidden (touching another mask with an area under :data:`WHOLE_AREA` of its median),
    else nan. A ball sliding behind another drags its centroid along the occluder's edge: that is
    not a velocity change. A small body alone in a lossy video shrinks and grows by a third from
    frame to frame; that is codec noise, not a hidden share, and is kept; a mask under
    :data:`FRAGMENT_AREA` of the typical area is a sliver of it and is not."""
    cen, area, _ = series(tracks, name, clipped=False, T=T)
    touching = np.zeros(T, bool)
    for tr in tracks:
        if (tr.name or f"#{tr.id}") == name:
            touching |= tr.visible & tr.touching
    ok = np.isfinite(area)
    if ok.any():
        med = float(np.nanmedian(area))
        cen[ok & touching & (area < WHOLE_AREA * med)] = np.nan
        cen[ok & (area < FRAGMENT_AREA * med)] = np.nan  # a sliver of the body: its centroid is off
    return cen


def contact_events(tracks: list[ObjectTrack], names: list[str], T: int, H: int, fps: float,
                   stuck: list[int] | None = None) -> tuple[int, float]:
    """(number of collision frames over the named objects, max kinetic gain across them). A contact
    within two frames of a ``stuck`` frame (the subject's rise stopping for good in mid-air) is that
    stop, which :func:`run` judges on its own, and is not counted."""
    cens = [whole_centroids(tracks, n, T) / H for n in names]
    speeds2 = [speed2d(c, fps)[1:] ** 2 for c in cens]
    # A fall that stops for good is a contact even where the centroid's noise hides the velocity
    # change (a small body in a lossy video). A velocity change within two frames of a landing is
    # that landing, placed by the noise: the landing's frame is where the energy is compared (a
    # sliver of the body seen a frame early makes the last step of the fall look like a kick).
    hits: set[int] = set()
    lands: list[int] = []
    for c in cens:
        land = landings(c[:, 1], fps)
        for t in collisions(c, fps):
            near = [u for u in land if abs(u - t) <= 2]
            hits.add(near[0] if near else t)
        lands.extend(land)
    frames = sorted(hits | {u for u in lands if all(abs(u - t) > 2 for t in hits)})
    frames = [t for t in frames if all(abs(t - u) > 2 for u in stuck or ())]
    # At a landing the step next to the contact is left out on each side (v11): H.264 holds a small body's
    # pixels for a frame and then shows it where it has got to, so a 12 px ball's fall read a held step and a
    # catch-up of 0.15 frame heights into its rest, the first step after the landing's frame: "a collision added
    # energy" (2.70) on a clean render (bench/suites/physics_tune pt-free-fall-20fps-tiny at crf 35). A landing
    # stops the body, so its own speed after it is small by definition; other contacts keep their steps (a
    # striker's last fast step before it knocks a ball from rest is what the energy is compared with).
    landed = set(lands)
    gains = [g for t in frames if (g := kinetic_gain(speeds2, t, margin=1 if t in landed else 0)) is not None]
    return len(frames), max(gains, default=0.0)


def ceiling_stops(y: np.ndarray, fps: float) -> list[int]:
    """Frames where the body's rise stops for good (``y`` in frame heights, down +): a landing of the
    path turned upside down (:func:`landings`) after which the body never comes down again by a
    flight's range (:data:`MIN_FLIGHT_RANGE`), rests there (median vertical speed under
    :data:`REST_SPEED`) and is seen there for :data:`STUCK_FRAMES` frames. A slow apex looks like such a
    stop over a few frames, and the fall that follows it tells them apart, however short (a small last
    bounce's apex near the clip's end); a stop seen for fewer frames at the clip's end is too little
    evidence (a still patch of floor taken for the body in its last frames)."""
    out = []
    for t in landings(-y, fps):
        after = y[t:]
        after = after[np.isfinite(after)]
        if len(after) < STUCK_FRAMES or float(after.max() - after[0]) >= MIN_FLIGHT_RANGE:
            continue
        vy = np.diff(y[t:]) * fps
        vy = vy[np.isfinite(vy)]
        if len(vy) and float(np.median(np.abs(vy))) < REST_SPEED:
            out.append(t)
    return out


def run(inp: CheckInput) -> CheckResult:
    name = subject(inp, prefer="motion")
    if name is None:
        return CheckResult(NAME, "fail", 0.0, {}, "no collision: no object moves")
    # A contact often costs the body its one frame (a grey plate on a grey floor, a small ball in
    # a lossy video): the turn is read across it (:func:`fill_single_gaps`).
    y = fill_single_gaps(path_series(inp.tracks, name, len(inp.frames))[0])[:, 1] / inp.height
    b = bounce_frames(y, inp.fps)
    ratios = height_ratios(y, b)
    gain = max(ratios, default=0.0)
    up = len(bounces(y, inp.fps, direction=-1, min_speed_share=CEILING_SPEED))  # rebounds off nothing above
    # A rise that stops for good: the body stays up against nothing above (a mirrored landing). It is
    # no collision, and a video whose only contacts are such stops shows none.
    stuck = ceiling_stops(y, inp.fps)
    named = object_names(inp.tracks, named=True) or [name]
    hits, kgain = contact_events(inp.tracks, named, len(inp.frames), inp.height, inp.fps, stuck)
    measured: dict = {"object": name, "bounces": len(b), "height_ratios": ratios, "max_gain": gain,
                      "ceiling_bounces": up, "ceiling_stops": len(stuck), "collisions": hits, "kinetic_gain": kgain}
    if not b and not up and not hits:
        # The rule applies (declared, judged or detected), so something should collide.
        why = f" (it stops {len(stuck)} time(s) in mid-air against nothing above)" if stuck else ""
        return CheckResult(NAME, "fail", 0.0, measured, f"no collision: {name!r} never bounces or hits anything{why}")
    problems = []
    score = float(np.exp(-max(0.0, gain - ALLOWED_GAIN) / 0.3))
    if gain > ALLOWED_GAIN + 0.05:
        problems.append(f"a bounce gained energy (rebound/drop height {gain:.2f})")
    # Vertical rebounds are measured by their heights above; the speed proxy judges the other
    # collisions (a ball knocked from rest, a hit from the side).
    k_allowed = ALLOWED_GAIN * KINETIC_SLACK
    measured["allowed_kinetic_gain"] = k_allowed
    if not b and kgain > k_allowed:
        score *= k_allowed / kgain
        problems.append(f"a collision added energy (speed² after/before {kgain:.2f})")
    if up:
        score *= 0.3**up
        problems.append(f"rebounds downward off nothing {up} time(s)")
    if stuck:
        score *= 0.3 ** len(stuck)
        problems.append(f"stops rising in mid-air against nothing above {len(stuck)} time(s)")
    return CheckResult(NAME, "fail" if problems else "pass", float(np.clip(score, 0, 1)), measured, "; ".join(problems))
