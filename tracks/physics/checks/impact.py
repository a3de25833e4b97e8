"""Impact: a collision never adds energy, and a bouncing object settles like the reference.

At every bounce of the subject (a sharp turn of vertical motion from down to up) the rebound height
is compared with the drop height: ``h_after / h_before = e²`` must not exceed 1 (energy
cannot grow at a contact; 10 % slack for pixel noise). If the reference bounces, the video
must bounce too, and if the reference comes to rest, so must the video. Sharp up-to-down
turns the reference does not have are rebounds off nothing (a mirrored, gravity-reversed fall).

Collisions that are not vertical rebounds — a landing that stops a fall, a ball knocked from
rest, a hit from the side — are abrupt 2-D velocity changes of any named object
(:func:`~tracks.physics.checks._kinematics.collisions`). A reference with such a collision
makes the rule checkable even without a bounce: the video must collide too, and — where the
reference does not bounce — the summed squared speed of the objects (a projected
kinetic-energy proxy, equal masses) must not grow across a contact by more than the
reference's own gain (projection makes it differ from 1) with 25 % slack.

Score = exp(-max(0, gain - 1.05) / 0.3) · (0.3 if no bounce where the reference has one, or no
collision at all where it has one) · min(1, allowed / kinetic gain)
· (0.6 if it does not come to rest where the reference does) · 0.3^(extra ceiling rebounds).
"""

from __future__ import annotations

import numpy as np

from tracks.physics.checks import CheckInput, CheckResult, not_applicable, object_names, series, subject
from tracks.physics.checks._kinematics import REST_SPEED, bounce_frames, bounces, collisions, kinetic_gain, speed2d
from tracks.physics.tracking import ObjectTrack

VERSION = "2"
#: slack on the reference's kinetic gain across a contact (pixel noise in a few-frame window).
KINETIC_SLACK = 1.25
NAME = "impact"


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


def at_rest_at_end(y: np.ndarray, fps: float, frames: int = 3) -> bool:
    tail = y[~np.isnan(y)][-(frames + 1) :]
    return len(tail) > frames and bool(np.all(np.abs(np.diff(tail)) * fps < REST_SPEED))


def contact_events(tracks: list[ObjectTrack], names: list[str], T: int, H: int, fps: float) -> tuple[int, float]:
    """(number of collision frames over the named objects, max kinetic gain across them)."""
    cens = [series(tracks, n, clipped=False, T=T)[0] / H for n in names]
    speeds2 = [speed2d(c, fps)[1:] ** 2 for c in cens]
    frames = sorted({t for c in cens for t in collisions(c, fps)})
    gains = [g for t in frames if (g := kinetic_gain(speeds2, t)) is not None]
    return len(frames), max(gains, default=0.0)


def run(inp: CheckInput) -> CheckResult:
    name = subject(inp, prefer="motion")
    if name is None:
        return not_applicable(NAME, "no moving object was tracked")
    y = series(inp.tracks, name, clipped=False, T=len(inp.frames))[0][:, 1] / inp.height
    b = bounce_frames(y, inp.fps)
    ratios = height_ratios(y, b)
    gain = max(ratios, default=0.0)
    rests = at_rest_at_end(y, inp.fps)
    up = len(bounces(y, inp.fps, direction=-1))  # rebounds off nothing above
    named = object_names(inp.ref_tracks if inp.has_reference and inp.ref_tracks else inp.tracks, named=True) or [name]
    hits, kgain = contact_events(inp.tracks, named, len(inp.frames), inp.height, inp.fps)
    measured: dict = {"object": name, "bounces": len(b), "height_ratios": ratios, "max_gain": gain, "comes_to_rest": rests,
                      "ceiling_bounces": up, "collisions": hits, "kinetic_gain": kgain}
    ref_bounces, ref_rests, ref_up, ref_gain, ref_hits, ref_kgain = None, None, 0, 0.0, 0, 0.0
    if inp.has_reference:
        assert inp.ref_tracks is not None and inp.ref_frames is not None
        ry = series(inp.ref_tracks, name, clipped=False, T=len(inp.ref_frames))[0][:, 1] / inp.ref_frames.shape[1]
        ref_bounces = len(bounce_frames(ry, inp.ref_fps or inp.fps))
        ref_rests = at_rest_at_end(ry, inp.ref_fps or inp.fps)
        ref_up = len(bounces(ry, inp.ref_fps or inp.fps, direction=-1))
        ref_gain = max(height_ratios(ry, bounce_frames(ry, inp.ref_fps or inp.fps)), default=0.0)
        ref_hits, ref_kgain = contact_events(inp.ref_tracks, named, len(inp.ref_frames), inp.ref_frames.shape[1],
                                             inp.ref_fps or inp.fps)
        measured.update(ref_bounces=ref_bounces, ref_comes_to_rest=ref_rests, ref_ceiling_bounces=ref_up,
                        ref_collisions=ref_hits, ref_kinetic_gain=ref_kgain)
        if ref_bounces == 0 and ref_hits == 0:
            return not_applicable(NAME, f"the reference shows no collision of {', '.join(map(repr, named))}", **measured)
    elif not b and not up and not hits:
        return not_applicable(NAME, f"no bounce or collision of {name!r} to check")

    # Rebounds higher than the drop count beyond what the reference shows (a push adds energy).
    allowed = max(1.05, ref_gain)
    measured["allowed_gain"] = allowed
    score = float(np.exp(-max(0.0, gain - allowed) / 0.3))
    problems = []
    if gain > allowed + 0.05:
        problems.append(f"a bounce gained energy (rebound/drop height {gain:.2f})")
    if ref_bounces and not b:
        score *= 0.3
        problems.append("no bounce where the reference bounces")
    elif ref_hits and not (b or hits):
        score *= 0.3
        problems.append("no collision where the reference has one")
    # Vertical rebounds are measured by their heights above; the speed proxy judges the other
    # collisions (where neither the reference nor, without one, the video bounces).
    k_allowed = max(1.05, ref_kgain) * KINETIC_SLACK
    measured["allowed_kinetic_gain"] = k_allowed
    if not (ref_bounces if inp.has_reference else b) and kgain > k_allowed:
        score *= k_allowed / kgain
        problems.append(f"a collision added energy (speed² after/before {kgain:.2f})")
    extra_up = max(0, up - ref_up)
    if extra_up:
        score *= 0.3**extra_up
        problems.append(f"rebounds downward off nothing {extra_up} time(s)")
    if ref_rests and not rests:
        score *= 0.6
        problems.append("does not come to rest")
    return CheckResult(NAME, "fail" if problems else "pass", float(np.clip(score, 0, 1)), measured, "; ".join(problems))
