"""Rigidity / compression / hardness: rigid objects keep their shape; soft ones deform under load.

Which objects are soft: the case's ``rigid: false`` objects, else those whose name says a soft
material (:data:`SOFT_WORDS`); every other followed object is rigid.

Per object, over the frames where it is in view (not cut by the image border): the drift (median
of the last third minus the first third) and spread (standard deviation) of its bounding box's log
aspect ratio and, separately, of its stretch (the log ratio of the mask's principal axes, which a
body keeps however it tumbles while its box's aspect swings), and its area's coefficient of
variation. A rigid object must keep one of the two within its segmentation jitter
(:func:`~tracks.physics.checks.area_tolerance`, about a pixel on each side, so small objects get
more slack; a change some rotation explains is no deformation); perspective changes its area but
not its shape, so area counts with twice the slack. A soft object under a compression or hardness
rule must deform, in either, by more than that jitter.

For ``compression`` and ``hardness`` the load must happen: when no followed object moves or
deforms, nothing was pressed, and the rule fails (a still video shows no hardness); and when the
case declares a soft object, it must be seen (a video where it never appears shows no hardness).

Score = exp(-(rigid excess + soft deficit) / 0.1).
"""

from __future__ import annotations

import numpy as np

from tracks.physics.checks import (
    CheckInput,
    CheckResult,
    area_tolerance,
    followed,
    followed_key,
    not_applicable,
    pieces,
)
from tracks.physics.tracking import ObjectTrack

VERSION = "6"
NAME = "rigidity"
#: name fragments that mark a soft, deformable object when the case does not say ``rigid``.
SOFT_WORDS = ("clay", "dough", "sponge", "jelly", "foam", "putty", "cushion", "pillow", "marshmallow", "soft")
#: rules about loading, which need a load (motion or deformation) to happen.
LOAD_RULES = ("compression", "hardness")


def rule_key(rule: str) -> str:
    """What this check reads of the rule (:func:`tracks.physics.checks.rule_key`): the bodies it follows
    (:func:`~tracks.physics.checks.followed_key`) and, for a loading rule, which one (its load demand)."""
    return followed_key(rule) + (f"|{rule}" if rule in LOAD_RULES else "")


def shape_series(tracks: list[ObjectTrack], name: str, *, turning: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Per-frame area and log aspect ratio of ``name`` over frames where it is not cut by the border.

    ``turning=True``: the stretch instead of the bounding box's aspect — the log ratio of the mask's
    principal axes (``ObjectTrack.elongation``), which a body keeps however it turns."""
    T = len(tracks[0].state) if tracks else 0
    area = np.full(T, np.nan)
    aspect = np.full(T, np.nan)
    for tr in tracks:
        if (tr.name or f"#{tr.id}") != name:
            continue
        ok = tr.visible & ~tr.at_border & ~(tr.area <= np.nan_to_num(area, nan=-1.0))
        w = tr.bbox[:, 2] - tr.bbox[:, 0]
        h = tr.bbox[:, 3] - tr.bbox[:, 1]
        area[ok] = tr.area[ok]
        if turning and tr.elongation is not None:
            aspect[ok] = tr.elongation[ok]
        else:
            aspect[ok] = np.log(np.maximum(w[ok], 1) / np.maximum(h[ok], 1))
    # a body found only in part in a frame (a lossy frame's piece of it) is no change of shape (v6)
    drop = pieces(area)
    area[drop], aspect[drop] = np.nan, np.nan
    return area, aspect


def shape_change(tracks: list[ObjectTrack], name: str, *, turning: bool = False) -> dict[str, float] | None:
    """How much ``name``'s shape changes, and how much segmentation alone would change it; ``None``
    with fewer than 3 frames in view. ``turning``: see :func:`shape_series`."""
    area, aspect = shape_series(tracks, name, turning=turning)
    ok = ~np.isnan(area)
    if ok.sum() < 3:
        return None
    a, r = area[ok], aspect[ok]
    k = max(1, len(r) // 3)
    med = float(np.median(a))
    tol = area_tolerance(med)
    return {
        "area_cv": float(a.std() / max(a.mean(), 1e-6)),
        "aspect_drift": float(abs(np.median(r[-k:]) - np.median(r[:k]))),
        "aspect_std": float(np.std(r)),
        "tolerance": tol,
        "area": med,
    }


def is_soft(inp: CheckInput, name: str) -> bool:
    for o in inp.objects:
        if o.get("name") == name and o.get("rigid") is not None:
            return not bool(o["rigid"])
    return any(w in name.lower() for w in SOFT_WORDS)


def _excess(c: dict[str, float]) -> float:
    """How far a shape change goes beyond segmentation jitter (0 = within it)."""
    tol = c["tolerance"]
    return (max(0.0, c["aspect_drift"] - 2 * tol) + max(0.0, c["aspect_std"] - 1.5 * tol)
            + max(0.0, c["area_cv"] - 2 * tol))


def _moves(tracks: list[ObjectTrack], name: str, H: int) -> float:
    return max((tr.displacement for tr in tracks if (tr.name or f"#{tr.id}") == name), default=0.0) / H


def run(inp: CheckInput) -> CheckResult:
    names = followed(inp)
    declared_soft = [str(o["name"]) for o in inp.objects if o.get("name") and is_soft(inp, str(o["name"]))]
    per, excess, deficit = {}, 0.0, 0.0
    load = False
    for n in names:
        c = shape_change(inp.tracks, n)
        turned = shape_change(inp.tracks, n, turning=True)
        moved = _moves(inp.tracks, n, inp.height)
        load |= moved > 0.05
        if c is None:
            continue
        soft = is_soft(inp, n)
        # A change some rotation explains is no deformation: a rigid body must keep its bounding
        # box's aspect (sliding, falling) or its stretch (tumbling); a soft one deforms if either moves.
        e = min(_excess(c), _excess(turned)) if turned is not None and not soft else _excess(c)
        if soft and turned is not None:
            e = max(e, _excess(turned))
        load |= e > 0
        if soft and inp.rule in LOAD_RULES:
            # a soft body under load deforms: at least its jitter's worth beyond it
            d = max(0.0, c["tolerance"] - e) if e < c["tolerance"] else 0.0
            deficit = max(deficit, d)
            per[n] = {**c, "soft": True, "deformation": e, "deficit": d, "moved": moved}
        else:
            excess = max(excess, e)
            per[n] = {**c, "soft": soft, "excess": e, "moved": moved}
    if not per:
        return not_applicable(NAME, "no followed object was in view (inside the frame) for 3 frames")
    problems = []
    seen_soft = [n for n in declared_soft if sum(int(tr.visible.sum()) for tr in inp.tracks if tr.name == n) >= 3]
    if inp.rule in LOAD_RULES and declared_soft and not seen_soft:
        # the phenomenon is the soft body giving way: a video in which it is never seen shows no
        # hardness, however still its rigid objects keep (a random-weight video passed on that)
        return CheckResult(NAME, "fail", 0.0, {"objects": per},
                           f"the soft object ({', '.join(declared_soft)}) is never seen, so nothing shows "
                           f"how it gives way under load")
    if inp.rule in LOAD_RULES and not load:
        return CheckResult(NAME, "fail", 0.0, {"objects": per},
                           f"nothing is loaded: no object moves or deforms, so the video shows no {inp.rule}")
    score = float(np.exp(-(excess + deficit) / 0.1))
    if excess > 0:
        problems.append(f"a rigid object changes shape by {excess:.2f} beyond segmentation jitter")
    if deficit > 0:
        problems.append("a soft object keeps its shape under load")
    return CheckResult(NAME, "fail" if problems else "pass", score,
                       {"objects": per, "deviation": excess + deficit}, "; ".join(problems))
