"""Object permanence: objects do not vanish or pop into existence without a cause.

Per followed object (named objects; see :func:`~tracks.physics.checks.followed`), frames
after its first sighting in which it is neither visible, nor occluded by something in front
of it, nor out of view (tracker states) are *missing*; named tracks that start mid-video away
from the border and from occluders *appeared*. Where the case's first-frame box for a name holds
several bodies apart (two presses declared as one ``press``), each counts: one lost while another
is seen is missing too (:func:`lost_instances`).

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

from collections.abc import Sequence

import numpy as np

from tracks.physics.checks import CheckInput, CheckResult, followed, followed_key, not_applicable, series
from tracks.physics.checks._kinematics import bounce_frames, fill_single_gaps, landings
from tracks.physics.tracking import EXITED, MISSING, OCCLUDED, VISIBLE, ObjectTrack

VERSION = "5"
NAME = "permanence"
#: what it reads of the rule (:func:`tracks.physics.checks.rule_key`): which bodies it follows.
rule_key = followed_key
#: a body this small (pixels) may vanish or appear between two frames: it was melting, burning
#: or condensing away, or is below what the segmenter can hold on to.
SMALL_PX = 12.0
#: missing frames forgiven in a video (a segmenter may lose a small object for a frame or two).
ALLOWED_MISSING = 2
#: sightings a body needs before losing it while another body of its name is seen counts (:func:`lost_instances`).
INSTANCE_SIGHTINGS = 3
#: pixels of background two bodies declared under one name have between them at the start (:func:`_apart`).
APART_PX = 2.0


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


def missing_frames(tracks: list[ObjectTrack], name: str, T: int, forgiven: set[int] | None = None,
                   box: Sequence[float] | None = None) -> int:
    """Frames after ``name`` was first seen where no track of it is visible, occluded or exited,
    and it had not shrunk away just before (see the module docstring); ``forgiven`` frames (one-frame
    gaps at a contact, :func:`contact_gaps`) are not counted. Plus, where the case's first-frame ``box``
    for the name holds several bodies, the frames each of them is lost while another is seen
    (:func:`lost_instances`)."""
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
    return n + lost_instances(mine, T, largest, forgiven, box)


def lost_instances(mine: list[ObjectTrack], T: int, largest: float, forgiven: set[int] | None = None,
                   box: Sequence[float] | None = None) -> int:
    """Frames (one per body) where one of several bodies the case declares under one name is missing while
    another is seen (two presses declared as one ``press`` whose first-frame ``box`` holds both; v24).

    The bodies are the tracks of the name seen in the first two frames with their centre inside the declared
    ``box`` (2 px of slack): a namesake elsewhere (a patch of the stone's colour beside a fire, a still ball of
    the colour of the one that falls into the water) is not one the case declared, and tracks that start
    touching or nearly (:func:`_apart`) are pieces of one body. One of them that was seen
    in :data:`INSTANCE_SIGHTINGS` frames and was not small at its last sighting is lost where it is missing
    and fewer of those bodies (or tracks of the name that start later: a body the tracker split into two
    tracks one after the other keeps the count) are seen, or explained (occluded, out of view), than when it
    was last seen. A case without a box for the name declares no count of bodies: nothing is counted; nor for a
    name with a declared ``shape``, which is one body (:func:`run` passes no box; v25: a crf 35 crescent cut into
    its two horns counted as two bodies)."""
    if box is None:
        return 0
    forgiven = forgiven or set()
    x0, y0, x1, y1 = (float(v) for v in box)

    def declared_here(tr: ObjectTrack) -> bool:
        if tr.first > 1:
            return False
        cx, cy = tr.centroid[tr.first]
        return x0 - 2 <= cx <= x1 + 2 and y0 - 2 <= cy <= y1 + 2

    bodies = [tr for tr in mine if declared_here(tr)]
    if len(bodies) < 2 or not all(_apart(a, b) for i, a in enumerate(bodies) for b in bodies[i + 1 :]):
        return 0  # one body (or pieces of one: a ball's lit top and shaded bottom)
    # seen are those bodies and any track of the name that starts later (where the tracker picked a body up
    # again), not the namesakes elsewhere at the start
    counted = [tr for tr in mine if tr.first > 1 or declared_here(tr)]
    explained = np.array([sum(tr.state[t] in (VISIBLE, OCCLUDED, EXITED) for tr in counted) for t in range(T)])
    out = 0
    for t in range(T):
        if explained[t] == 0 or t in forgiven:
            continue  # none of them is seen: missing_frames counts the frame if no namesake is either
        lost = 0
        for tr in bodies:
            if tr.state[t] != MISSING or int(tr.visible[:t].sum()) < INSTANCE_SIGHTINGS:
                continue
            last = int(np.flatnonzero(tr.visible[:t])[-1])
            if _small(float(tr.area[last]), largest):
                continue  # it shrank away (or was a piece) before it went
            lost = max(lost, int(explained[last]) - int(explained[t]))
        out += max(0, lost)
    return out


def _apart(a: ObjectTrack, b: ObjectTrack) -> bool:
    """Whether two tracks start as two bodies: their first boxes lie apart, along the axis they are apart on,
    by at least :data:`APART_PX` and a quarter of the narrower one's extent there (the smoke hardness case's
    presses: 19 px wide, 9 px apart). Pieces of one body touch or overlap (a ball's lit top and shaded
    bottom, boxes 2 px into each other)."""
    ba, bb = a.bbox[a.first], b.bbox[b.first]
    gap_x = max(bb[0] - ba[2], ba[0] - bb[2])
    gap_y = max(bb[1] - ba[3], ba[1] - bb[3])
    if gap_x >= gap_y:
        return bool(gap_x >= max(APART_PX, 0.25 * min(ba[2] - ba[0], bb[2] - bb[0])))
    return bool(gap_y >= max(APART_PX, 0.25 * min(ba[3] - ba[1], bb[3] - bb[1])))


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
        m = 0
        if n not in consumed:
            obj = next((o for o in inp.objects if str(o.get("name")) == n), {})
            # a name with a declared shape is one body (the segmenter joins its pieces): no count of bodies
            box = None if obj.get("shape") else obj.get("box")
            m = missing_frames(inp.tracks, n, T, contact_gaps(inp.tracks, n, T, inp.fps, inp.height), box)
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
