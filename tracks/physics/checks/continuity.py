"""Continuity: objects move along continuous paths (no teleporting).

A teleport is a step that no motion explains. For every track of a followed object (named
objects; see :func:`~tracks.physics.checks.followed`) each step of its centroid between
successive sightings is compared with the steps either side of it: the residual
``|d_t - (d_{t-1} + d_{t+1}) / 2|`` (per axis) is what a smooth path cannot produce, and whatever
of it exceeds the largest step within two of it on that axis (a bounce reverses a step of the
body's speed around the contact, never more; v9 looks two steps either side, since a codec's trail
behind a fast body shortens the one step before its landing)
plus the segmentation's own jitter (:func:`~tracks.physics.checks.position_tolerance`) is a
jump — unless the body's area changes by more than half across it (a different segment, not
a moved body: a teleport moves a body without changing it). A jump of an object at rest, or one far larger than its speed, is a teleport; a fast
but smooth fall, a bounce or a landing is not.

A body the rule consumes (``shrinks: true``: burning fuel, melting ice) has one path, its main
track (the one seen longest, ties to the earliest); the pieces it sheds (charred fragments,
broken-off chunks) come and go as new tracks and may be linked to one another across the
frame, which is no teleport of the body. Rigid objects keep every track (two presses are two
paths); a declared rigid body's tracks of one name, merged, are one more path (v8: a body the
tracker lost and found again elsewhere moved between the two).

A body that reaches in from one side of the frame (a press hanging from the top: it touches that side in
every sighting) has no whole sighting, and its centroid moves with the cut across that side; the
coordinate *along* the side does not (v12, :func:`edge_path`): its sightings cut by that side alone make
paths in that coordinate as a whole body's do (those touching no other mask; all of them, with the touching
bound and slack: a press on the block it squeezes). Before v12 a hanging press's sideways jump passed.

Score = exp(-excess / 0.05) (excess in frame heights).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tracks.physics.checks import (
    CheckInput,
    CheckResult,
    followed,
    followed_key,
    not_applicable,
    partial_sightings,
    position_tolerance,
    rule_dimension,
    slivers,
)
from tracks.physics.tracking import ObjectTrack, attached_sides, frame_sides

VERSION = "12"
NAME = "continuity"
#: what it reads of the rule (:func:`tracks.physics.checks.rule_key`): which bodies it follows, and they are
#: the same thermal and material bodies its looser tolerance is for.
rule_key = followed_key
#: a body whose area changes by more than this factor between two sightings is not the same
#: segment (it split, merged or was cut): its centroid step says nothing about teleporting.
SAME_BODY = 1.5
#: the same for a body followed through frames where it touches another mask.
TOUCHING_SAME_BODY = 1.15
#: extra tolerance (frame heights) on that path: a touching neighbour shifts the centroid a little,
#: at most this much, and at most :data:`TOUCHING_SHARE` of the body's size.
TOUCHING_SLACK = 0.05
#: a touching body's slack as a share of its size (``sqrt(area)``): what gaining or losing 15 % of
#: its area along one edge moves its centroid, with room to spare.
TOUCHING_SHARE = 0.25
#: a sighting of a body of a declared shape under this share of its whole area (:func:`body_area`) is a piece of it,
#: left out of its paths (v11; :data:`~tracks.physics.checks.SLIVER_AREA` judges by the sightings
#: around it, which in a track of pieces are pieces too)
PIECE_AREA = 0.4
#: an excess this small (frame heights) lowers the score but does not fail the rule.
DEAD_ZONE = 0.02


def touching_slack(tr: ObjectTrack, sightings: np.ndarray, height: int) -> float:
    """Slack (frame heights) for a body's path through its touching frames: a share of its size,
    capped at :data:`TOUCHING_SLACK` (a 20 px crystal in its tinted water gets 5 px, not 8)."""
    area = tr.area[sightings]
    size = float(np.sqrt(np.nanmedian(area))) if len(area) else 0.0
    return min(TOUCHING_SLACK, TOUCHING_SHARE * size / max(height, 1))


def edge_path(tr: ObjectTrack) -> tuple[int, np.ndarray, np.ndarray, str] | None:
    """For a body reaching in from one side of the frame: ``(axis, alone, touching, side)``, the coordinate along
    that side (0 = x for the top or bottom, 1 = y for the left or right), its sightings cut by that side alone
    that touch no other mask and those that touch one, and the side; ``None`` for any other body.

    Attached: :func:`~tracks.physics.tracking.attached_sides` of all its sightings (the tracker's rule for not
    leaving through that side). A body attached to two sides of one axis (a pillar from the top to the bottom) is
    as free along it; one in a corner is cut in both coordinates and has no such path."""
    if tr.touching_mask is None:  # a track made without the flag: it cannot say what else the body touches
        return None
    H, W = tr.frame_size
    vis = np.flatnonzero(tr.visible)
    attached = attached_sides([tr.bbox[t] for t in vis], H, W)
    axes = {0 if side in ("top", "bottom") else 1 for side in attached}
    if len(axes) != 1:
        return None
    cut = np.zeros(len(tr.state), bool)
    for t in vis:
        cut[t] = frame_sides(tr.bbox[t], H, W) == attached
    near = np.asarray(tr.touching_mask, bool)
    return axes.pop(), cut & ~near, cut & near, "+".join(sorted(attached))


def steps(cen: np.ndarray) -> np.ndarray:
    """Per-frame |dx|, |dy| of the centroid between successive sightings ``[n, 2]`` (gaps divided out)."""
    idx = np.flatnonzero(~np.isnan(cen[:, 0]))
    if len(idx) < 2:
        return np.zeros((0, 2))
    return np.abs(np.diff(cen[idx], axis=0)) / np.diff(idx)[:, None]


def jump_excess(cen: np.ndarray, tol: float, area: np.ndarray | None = None,
                same_body: float = 1.5, rigid: bool = False) -> tuple[float, int | None]:
    """Largest unexplained step of a centroid path ``[T, 2]`` (same units as ``cen``) and its frame.

    Steps are per frame between successive sightings (a gap's step is divided by its length);
    a sighting whose area breaks from both neighbours is left out (:func:`partial_sightings`), and
    so is a sliver of the body (:func:`~tracks.physics.checks.slivers`, v8).
    A step across which the body's ``area`` changes by more than :data:`SAME_BODY` against its own
    trend (:func:`_other_segment`) is not a teleport but a change of what was segmented (a melting
    body splitting, steam merging). A ``rigid`` body's area has no trend.
    """
    idx = np.flatnonzero(~np.isnan(cen[:, 0]))
    if area is not None:
        idx = idx[~(partial_sightings(area[idx], same_body) | slivers(area[idx]))]
    if len(idx) < 2:
        return 0.0, None
    d = np.diff(cen[idx], axis=0) / np.diff(idx)[:, None]  # [n, 2]
    n = len(d)
    worst, where = 0.0, None
    for k in range(n):
        prev = d[k - 1] if k > 0 else None
        nxt = d[k + 1] if k + 1 < n else None
        around = [x for x in (prev, nxt) if x is not None]
        if not around:
            continue
        if area is not None and _other_segment(area[idx], k, same_body, rigid=rigid):
            continue
        # Per axis: a bounce reverses the step along one axis (a residual up to the body's speed
        # around the contact) and leaves the other alone; a sideways jump of a falling object
        # stands out. The speed is the largest step within two of this one (v9): a codec's trail
        # behind a fast body shortens the one step before its landing (a pentagon at crf 35).
        resid = np.abs(d[k] - np.mean(around, axis=0))
        near = [j for j in range(max(k - 2, 0), min(k + 3, n)) if j != k]
        neighbour = np.max(np.abs(d[near]), axis=0)
        excess = float(np.max(resid - neighbour)) - tol
        if excess > worst:
            worst, where = excess, int(idx[k + 1])
    return worst, where


def _other_segment(area: np.ndarray, k: int, same_body: float, window: int = 3, rigid: bool = False) -> bool:
    """Whether the area across step ``k`` (sighting ``k`` to ``k + 1`` of ``area``, the body's area at
    its successive sightings) changes by more than ``same_body`` against the body's own trend: the
    median ratio of up to ``window`` steps either side (1 without neighbours). A melting cube loses
    a tenth of its area each frame and keeps doing so across a teleport; a split or a merge breaks
    the trend (and, being one step, does not move the median of its neighbours').

    For a ``rigid`` body (a declared shape, ``rigid: true``; v8) the change must also last: its area
    over up to ``window`` sightings after the step stands apart from that over the ones up to it,
    by more than ``same_body``, and it has no trend (the codec's noise in a few areas near a
    landing made one). A small ball after a crf 35 resize, found 80 px large just before a
    teleport and 126 px just after, is back to its ~110 px on both sides, and its jump is a jump.
    Other bodies split and merge for a frame (burning wood sheds a piece): any break excuses."""
    a = np.maximum(np.asarray(area, float), 1.0)
    la = np.log(a)
    logs = np.diff(la)
    around = np.r_[logs[max(k - window, 0):k], logs[k + 1:k + 1 + window]]
    trend = float(np.median(around)) if len(around) and not rigid else 0.0
    if abs(logs[k] - trend) <= np.log(same_body):
        return False
    if not rigid:
        return True  # burning wood sheds a piece for a frame, steam merges: any break is another segment
    before, after = la[max(k - window + 1, 0):k + 1], la[k + 1:k + 1 + window]
    if len(before) < 2 or len(after) < 2:
        return True  # too few sightings to see whether it lasts: as before v8
    return bool(abs(float(np.median(after)) - float(np.median(before))) > np.log(same_body))


def body_area(mine: list[ObjectTrack]) -> float | None:
    """A body's area seen whole: the largest median area over its tracks of three whole sightings or
    more (``None`` without one). A codec may find the body whole in one track and only in pieces in
    others of its name; the pieces' median says nothing of its size."""
    meds = [float(np.median(tr.area[w])) for tr in mine
            for w in [tr.visible & ~tr.touching & ~tr.at_border] if int(w.sum()) >= 3]
    return max(meds) if meds else None


def _main_track(tracks: list, name: str) -> int | None:
    """Id of ``name``'s main track: seen in the most frames, ties to the earliest first sighting."""
    mine = [tr for tr in tracks if tr.name == name and tr.visible.any()]
    if not mine:
        return None
    return int(min(mine, key=lambda tr: (-int(tr.visible.sum()), tr.first, tr.id)).id)


def merged_path(mine: list[ObjectTrack]) -> tuple[np.ndarray, np.ndarray]:
    """One body's path over its tracks of one name: centroid ``[T, 2]`` and area ``[T]`` (nan unseen).

    A frame where the body has one mask gives that mask's whole sighting. Where two or more of
    its name are seen, one may be no body (a piece of scenery of its colour) and a step to it is
    no step of the body; but where exactly one of them is as large as the body (its area within
    :data:`SAME_BODY` of the body's median; every other under the median over :data:`SAME_BODY`),
    that one is the body and the rest are pieces (v10: a crescent that a crf 23 codec parted from
    one horn was followed only where it had one mask, so a teleport beside the two-mask frames was
    divided over three frames and passed)."""
    T = len(mine[0].state)
    cen = np.full((T, 2), np.nan)
    area = np.full(T, np.nan)
    count = np.zeros(T, int)
    for tr in mine:
        v = tr.visible & ~tr.touching
        cen[v], area[v] = tr.centroid[v], tr.area[v]
        count += tr.visible
    single = count == 1
    cen[~single], area[~single] = np.nan, np.nan
    if int(np.isfinite(area).sum()) < 3:
        return cen, area
    med = float(np.nanmedian(area))
    for t in np.flatnonzero(count >= 2):
        seen = [tr for tr in mine if tr.visible[t]]
        body = [tr for tr in seen if not tr.touching[t] and med / SAME_BODY <= tr.area[t] <= med * SAME_BODY]
        if len(body) == 1 and all(tr.area[t] < med / SAME_BODY for tr in seen if tr is not body[0]):
            cen[t], area[t] = body[0].centroid[t], body[0].area[t]
    return cen, area


def run(inp: CheckInput) -> CheckResult:
    names = followed(inp)
    if rule_dimension(inp.rule) in ("thermal", "material"):
        # Only coherent bodies have a path: a shrinking solid, a rigid object, the stage the change
        # happens on (``role: context``: a pool, a beaker). Droplets, frost and steam are many
        # pieces that come and go.
        coherent = {str(o["name"]) for o in inp.objects
                    if o.get("rigid") is True or o.get("shrinks") is True or o.get("role") == "context"}
        names = [n for n in names if n in coherent]
    if not names:
        return not_applicable(NAME, "no object was followed (no named object, no object seen in half the frames)")
    consumed = {str(o["name"]) for o in inp.objects if o.get("shrinks") is True}
    rigid = {str(o["name"]) for o in inp.objects
             if (o.get("shape") or o.get("rigid") is True) and not o.get("shrinks") and not o.get("grows")}
    stage = {str(o["name"]) for o in inp.objects if o.get("role") == "context"}
    main = {n: _main_track(inp.tracks, n) for n in consumed}
    by_name: dict[str, list[ObjectTrack]] = {}
    for tr in inp.tracks:
        by_name.setdefault(tr.name or f"#{tr.id}", []).append(tr)
    # a body of a declared shape (one body, not a name several rigid objects share: two presses) is
    # as large as its whole view (v11)
    size: dict[str, float] = {}
    for n in rigid & {str(o["name"]) for o in inp.objects if o.get("shape")}:
        whole_area = body_area(by_name.get(n, []))
        if whole_area:
            size[n] = whole_area
    worst = 0.0
    per: dict[str, dict[str, Any]] = {}
    # Per track, not per name: an object of two bodies (two presses, two dye drops) is two paths.
    for tr in inp.tracks:
        n = tr.name or f"#{tr.id}"
        if n not in names or (n in main and tr.id != main[n]):
            continue  # not followed, or a piece the consumed body shed, not the body
        # A partly hidden body's centroid is biased (behind an occluder, cut by the border):
        # only whole sightings make a path.
        whole = tr.visible & ~tr.touching
        paths = []  # (sightings, same-body bound, slack)
        inside = tr.visible & ~tr.at_border
        if n in size:
            # a piece of the body (a crf 35 codec breaks a crescent resting on the floor into
            # bits of a tenth of it, found in turn) has its centroid anywhere over the body: its
            # steps are no steps of the body's path
            body = np.nan_to_num(tr.area) >= PIECE_AREA * size[n]
            whole, inside = whole & body, inside & body
        if int(whole.sum()) >= 3:
            paths.append((whole, SAME_BODY, 0.0))
        if n not in stage and (int(whole.sum()) < 3 or (inside & ~whole).any()):
            # A body can touch another mask in a stretch of frames or in all of them (ice in its
            # melt water, a crystal in the water it tints, a box beside the ghost its own resting
            # place leaves in the background): its sightings inside the frame make a second path,
            # on which only steps across which its area holds count (a teleport moves a body
            # unchanged; an occluder eats a share of it). What it touches still biases its
            # centroid (steam over boiling water): slack, at most what a 15 % change of its area
            # at one edge can shift it.
            paths.append((inside, TOUCHING_SAME_BODY, touching_slack(tr, inside, inp.height)))
        elif n in stage and int(whole.sum()) < 3:
            # The stage the change happens on holds the changing body in every frame (the pool
            # the ice grows in): its sightings inside the frame make the path. It loses area to
            # the body as fast as the body grows, so the usual same-body bound on the area holds.
            paths.append((inside, SAME_BODY, TOUCHING_SLACK))
        edge = edge_path(tr) if int(whole.sum()) < 3 and int(inside.sum()) < 3 else None
        free_axis: int | None = None
        if edge is not None and int((edge[1] | edge[2]).sum()) >= 3:
            # reaching in from a side: only the coordinate along it is the body's (its centroid across the
            # side moves with the cut), judged on the sightings cut by that side alone, as a whole body's
            # sightings are: untouched ones, and all of them with the touching bound and slack
            free_axis, alone, near = edge[0], edge[1], edge[2]
            paths = [(alone, SAME_BODY, 0.0)]
            if near.any():
                paths.append((alone | near, TOUCHING_SAME_BODY, touching_slack(tr, alone | near, inp.height)))
        key = n if n not in per else f"{n}#{tr.id}"
        for sightings, same_body, slack in paths:
            if int(sightings.sum()) < 3:
                continue
            cen = np.where(sightings[:, None], tr.centroid, np.nan)
            if free_axis is not None:
                cen[:, 1 - free_axis] = np.where(sightings, 0.0, np.nan)
            area = np.where(sightings, tr.area, np.nan)
            tol = position_tolerance(inp, float(np.nanmedian(area))) + slack
            excess, at = jump_excess(cen / inp.height, tol, area, same_body, rigid=n in rigid)
            if key in per and float(per[key]["excess"]) >= excess:
                continue  # the track's other path found the larger jump
            per[key] = {"excess": excess, "frame": at, "tolerance": tol}
            if free_axis is not None and edge is not None:
                per[key]["along_edge"] = edge[3]
            worst = max(worst, excess)
    # A rigid body is one body: where the tracker lost it and started a second track of its name
    # elsewhere (a small ball after a crf 35 resize, teleported across the frame), the step from
    # the one track's last sighting to the other's first is a step of its path too (v8). Its
    # whole sightings in the frames where it has one mask, merged, make one more path.
    for n in names:
        mine = by_name.get(n, [])
        if n not in rigid or len(mine) < 2:
            continue
        cen, area = merged_path(mine)
        if n in size:
            piece = np.nan_to_num(area) < PIECE_AREA * size[n]
            cen[piece], area[piece] = np.nan, np.nan
        if int(np.isfinite(area).sum()) < 3:
            continue
        # where one track ends and another begins, either may hold only part of the body: the
        # hand-off is allowed a body's size besides the segmentation's jitter
        med = float(np.nanmedian(area))
        tol = position_tolerance(inp, med) + float(np.sqrt(med)) / inp.height
        excess, at = jump_excess(cen / inp.height, tol, area, SAME_BODY, rigid=True)
        key = f"{n}:merged"
        per[key] = {"excess": excess, "frame": at, "tolerance": tol}
        worst = max(worst, excess)
    if not per:
        return not_applicable(NAME, "no followed object was seen in three frames")
    score = float(np.exp(-worst / 0.05))
    ok = worst <= DEAD_ZONE
    return CheckResult(NAME, "pass" if ok else "fail", score, {"objects": per, "max_excess": worst},
                       "" if ok else f"an object jumps {worst:.3f} frame heights beyond plausible motion")
