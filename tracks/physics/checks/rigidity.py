"""Rigidity / compression: objects change area and shape only as much as the reference does.

For each object, over frames where it is fully in view (not touching the border or another
mask): coefficient of variation of its area and standard deviation of its log aspect
ratio. Compared with the reference (both ways: a rigid object must not morph, a squeezed one
must deform); without a reference the object is taken as rigid.

An object that the reference shows in contact with another mask — a block under a press,
the lower box of a stack — deforms exactly while in contact, so leaving those frames out would
hide the deformation (or leave nothing to measure). For such an object both videos are
measured over the frames where it does not touch the image border, contact included (the
same kind of frames on both sides).

Score = exp(-(excess + deficit) / 0.1), where excess/deficit beyond a 0.05 tolerance.
"""

from __future__ import annotations

import numpy as np

from tracks.physics.checks import CheckInput, CheckResult, not_applicable, object_names
from tracks.physics.tracking import ObjectTrack

VERSION = "2"
NAME = "rigidity"


def shape_stats(tracks: list[ObjectTrack], name: str, *, contact: bool = False) -> tuple[float, float] | None:
    """(area CV, std of log aspect) over clean frames of ``name``; ``None`` with < 3 such frames.

    Clean frames touch neither the border nor another mask; with ``contact=True`` only the border.
    """
    areas, aspects = [], []
    for tr in tracks:
        if (tr.name or f"#{tr.id}") != name:
            continue
        ok = tr.visible & ~(tr.at_border if contact else tr.touching)
        areas.extend(tr.area[ok])
        w = tr.bbox[ok, 2] - tr.bbox[ok, 0]
        h = tr.bbox[ok, 3] - tr.bbox[ok, 1]
        aspects.extend(np.log(w / np.maximum(h, 1)))
    if len(areas) < 3:
        return None
    a = np.asarray(areas)
    return float(a.std() / max(a.mean(), 1e-6)), float(np.std(aspects))


def in_contact(tracks: list[ObjectTrack], name: str) -> bool:
    """Whether ``name`` touches another mask (not the border) in any frame where it is seen."""
    return any(bool((tr.visible & tr.touching & ~tr.at_border).any()) for tr in tracks if (tr.name or f"#{tr.id}") == name)


def run(inp: CheckInput) -> CheckResult:
    ref = inp.ref_tracks if inp.has_reference else None
    names = object_names(ref) if ref else object_names(inp.tracks)
    per, total = {}, 0.0
    for n in names:
        contact = ref is not None and in_contact(ref, n)
        g = shape_stats(inp.tracks, n, contact=contact)
        r = shape_stats(ref, n, contact=contact) if ref else (0.0, 0.0)
        if g is None or r is None:
            continue
        dev = sum(max(0.0, abs(gi - ri) - 0.05) for gi, ri in zip(g, r, strict=True))
        per[n] = {"area_cv": g[0], "aspect_std": g[1], "area_cv_ref": r[0], "aspect_std_ref": r[1], "deviation": dev,
                  "frames": "with_contact" if contact else "clean"}
        total = max(total, dev)
    if not per:
        return not_applicable(NAME, "no object was in view (inside the frame) for 3 frames")
    score = float(np.exp(-total / 0.1))
    ok = total < 0.05
    return CheckResult(NAME, "pass" if ok else "fail", score, {"objects": per, "deviation": total},
                       "" if ok else f"shape/area change differs from the expected by {total:.2f}")
