"""Object permanence: objects do not vanish or pop into existence without a cause.

Per followed object (named objects; see :func:`~tracks.physics.checks.followed`), frames
after its first sighting in which it is neither visible, nor occluded by something in front
of it, nor out of view (tracker states) are *missing*; named tracks that start mid-video away
from the border and from occluders *appeared*.

Bodies that a phase change or a fire consumes, or that condense or grow from nothing, do
vanish and appear — gradually. A disappearance is explained when the body had already
shrunk to a small size (:data:`SMALL_PX` pixels or a quarter of its largest area) just
before; an appearance is explained when it starts small, or where another track of its name was
heading (:func:`handed_off`). Abrupt ones are violations. A body the
rule consumes (``shrinks: true``: melting ice, burning fuel) is not counted missing at all —
it chars, hides under its flame or melts away; ``phase_change`` judges whether it went
gradually. A one-frame gap at the frame a body turns at the floor is that contact, not a
vanishing (:func:`contact_gaps`: a floor of nearly its colour swallows its mask there).

Score = exp(-(missing frames beyond 2 / T) / 0.1) · 0.7^(appearances).
"""

from __future__ import annotations

import numpy as np

from tracks.physics.checks import CheckInput, CheckResult, followed, followed_key, not_applicable, series
from tracks.physics.checks._kinematics import bounce_frames, fill_single_gaps, landings
from tracks.physics.tracking import EXITED, OCCLUDED, VISIBLE, ObjectTrack

VERSION = "5"
NAME = "permanence"
#: what it reads of the rule (:func:`tracks.physics.checks.rule_key`): which bodies it follows.
rule_key = followed_key
#: a body this small (pixels) may vanish or appear between two frames: it was melting, burning
#: or condensing away, or is below what the segmenter can hold on to.
SMALL_PX = 12.0
#: missing frames forgiven in a video (a segmenter may lose a small object for a frame or two).
ALLOWED_MISSING = 2


def _mine(tracks: list[ObjectTrack], name: str) -> list[ObjectTrack]:
    return [tr for tr in tracks if (tr.name or f"#{tr.id}") == name]


def _area(mine: list[ObjectTrack], T: int) -> np.ndarray:
    a = np.full(T, np.nan)
    for tr in mine:
        v = tr.visible
        a[v] = np.fmax(a[v], tr.area[v])
    return a


def _small(area: float, largest: float) -> bool:
    return area <= max(SMALL_PX, 0.25 * largest)


def contact_gaps(tracks: list[ObjectTrack], name: str, T: int, fps: float, height: int) -> set[int]:
    """One-frame gaps of ``name`` at a contact: the frame a falling body turns at the floor, when
    it touches the floor and a floor of nearly its colour swallows its mask (a silver plate on
    grey tiles, a small ball in a lossy video). A body cannot vanish and come back in the very
    frame it bounces; a flicker anywhere else still counts."""
    cen = series(tracks, name, clipped=False, T=T)[0]
    gaps = {t for t in range(1, T - 1)
            if np.isnan(cen[t, 0]) and np.isfinite(cen[t - 1, 0]) and np.isfinite(cen[t + 1, 0])}
    if not gaps:
        return set()
    y = fill_single_gaps(cen)[:, 1] / max(height, 1)
    turns = set(bounce_frames(y, fps)) | set(landings(y, fps))
    return {t for t in gaps if any(abs(t - u) <= 1 for u in turns)}


def missing_frames(tracks: list[ObjectTrack], name: str, T: int, forgiven: set[int] | None = None) -> int:
    """Frames after ``name`` was first seen where no track of it is visible, occluded or exited,
    and it had not shrunk away just before (see the module docstring); ``forgiven`` frames (one-frame
    gaps at a contact, :func:`contact_gaps`) are not counted."""
    forgiven = forgiven or set()
    mine = _mine(tracks, name)
    if not mine:
        return T
    area = _area(mine, T)
    largest = float(np.nanmax(area)) if np.isfinite(area).any() else 0.0
    first = min(tr.first for tr in mine)
    n = 0
    last_seen = float("nan")
    gone_small = False
    for t in range(first, T):
        if any(tr.state[t] in (VISIBLE, OCCLUDED, EXITED) for tr in mine):
            if np.isfinite(area[t]):
                last_seen = float(area[t])
            gone_small = False
            continue
        if not gone_small and np.isfinite(last_seen) and _small(last_seen, largest):
            gone_small = True  # consumed: it shrank away before it went
        if not gone_small and t not in forgiven:
            n += 1
    return n


def appearances(tracks: list[ObjectTrack], names: list[str], min_len: int = 3) -> int:
    """Named tracks that pop into view mid-video at a size that is not small (see module docstring)."""
    out = 0
    for n in names:
        mine = _mine(tracks, n)
        if not mine:
            continue
        largest = float(max(np.nanmax(tr.area) for tr in mine if tr.visible.any()))
        for tr in mine:
            if (tr.appeared and int(tr.visible.sum()) >= min_len and not _small(float(tr.area[tr.first]), largest)
                    and not handed_off(tr, mine, largest)):
                out += 1
    return out


def handed_off(tr: ObjectTrack, mine: list[ObjectTrack], largest: float) -> bool:
    """Whether a track that starts mid-video takes its body over from another track of its name:
    one seen in the two frames before, whose step carried on lands within a body's width (plus a
    pixel) of this track's first sighting (v5). After crf 35 a blue ball found as a 17 px sliver
    as it reaches the floor is found whole in a second track from that frame on, 5 px from where
    its fall was heading; the ball did not appear. A body that was lost (a vanish) is seen in
    neither frame before; one that jumps lands away from its path."""
    t = tr.first
    if t < 2:
        return False
    reach = 2.0 * float(np.sqrt(largest / np.pi)) + 1.0
    for o in mine:
        if o is tr or not (o.visible[t - 1] and o.visible[t - 2]):
            continue
        heading = 2 * o.centroid[t - 1] - o.centroid[t - 2]
        if float(np.linalg.norm(tr.centroid[t] - heading)) <= reach:
            return True
    return False


def run(inp: CheckInput) -> CheckResult:
    names = followed(inp)
    if not names:
        return not_applicable(NAME, "no object was followed (no named object, no object seen in half the frames)")
    T = len(inp.frames)
    per = {}
    missing = 0
    consumed = {str(o["name"]) for o in inp.objects if o.get("shrinks") is True}
    for n in names:
        # A body the rule consumes (melting ice, burning fuel) may go; phase_change judges how.
        m = 0 if n in consumed else missing_frames(inp.tracks, n, T, contact_gaps(inp.tracks, n, T, inp.fps, inp.height))
        per[n] = {"missing": m, "consumed": n in consumed}
        missing += m
    app = appearances(inp.tracks, names)
    # Two frames of slack: a segmenter may lose a small object for a frame or two.
    share = max(0, missing - ALLOWED_MISSING) / max(T * len(names), 1)
    score = float(np.exp(-share / 0.1) * 0.7**app)
    problems = []
    if missing > ALLOWED_MISSING:
        problems.append(f"objects vanish without occlusion for {missing} frames")
    if app:
        problems.append(f"{app} object(s) appear from nowhere")
    return CheckResult(NAME, "fail" if problems else "pass", score,
                       {"objects": per, "missing": missing, "appearances": app}, "; ".join(problems))
