"""Support: a solid that shrinks where it rests stays on what it rests on.

A melting, subliming or dissolving body loses its substance where it stands: its top comes down
and its base stays on the plate, the floor or the bottom of its glass. Seen from the side its
lowest point does not move; seen from above the support it shrinks toward its middle, so its
lowest point in the picture rises by at most as much as its top comes down (a camera looking
straight down sees the symmetric case; a cube seen from 30-60 degrees above gives 0.18-0.32). A
base that rises more than the top comes down has left its support: the body lifts off as it
shrinks (a melting cube whose vertical motion is mirrored floats up off its plate and its own
puddle). The rule's own check (:mod:`~tracks.physics.checks.phase_change`) sees none of that:
the area still shrinks steadily.

Measured on the rule's changing body (:func:`~tracks.physics.checks.phase_change.changing_body`)
from its bounding box: the base's rise and the top's fall from the body's first frames (median of
:data:`EDGE_FRAMES` sightings) to its last ones while it is still a body (at least
:data:`BODY_SHARE` of its largest area: the last crumbs of a melt are under what segmentation
resolves). The lift share is ``rise / (rise + fall)`` (each at least 0).

Not applicable where it cannot be read or the law does not hold: the rule is not a solid's
shrinking phase change (melting, sublimation, solubility); the case's camera moves; the case
declares ``buoyancy``, or another object at least as large reaches below the body in its first
frame (it may float in a liquid, and a floating body's base rises as it melts); the body's height changes by
less than segmentation can tell (:data:`MIN_CHANGE_PX`, :data:`MIN_CHANGE`); the phase change
judges a body that does not shrink.

Score = 1 up to :data:`LIFT_SHARE`, then ``exp(-(share - LIFT_SHARE) / 0.15)``; the check fails
above :data:`LIFT_SHARE`. Physics v22.
"""

from __future__ import annotations

import numpy as np

from tracks.physics.checks import CheckInput, CheckResult, not_applicable, object_names, series
from tracks.physics.checks.phase_change import changing_body

VERSION = "1"
#: the result depends on the rule it is run for: the track runs it once per rule, not once per case
PER_RULE = True
NAME = "support"
#: shrinking phase changes of a solid that rests on something (vaporization is a liquid's: a
#: puddle that dries shrinks toward its middle from every side)
RULES = ("melting", "sublimation", "solubility")
#: the largest share of a shrinking body's height change that its base may take by rising (a
#: camera looking straight down at the support: the base rises as much as the top falls)
LIFT_SHARE = 0.5
#: sightings whose median is the body's first and last extent
EDGE_FRAMES = 3
#: sightings under this share of the body's largest area are crumbs, not the body
BODY_SHARE = 0.25
#: the least height change (pixels, and share of the body's first height) the share is read from
MIN_CHANGE_PX = 3.0
MIN_CHANGE = 0.1
#: another object whose mask reaches this far below the body (pixels, plus this share of the
#: body's height) in its first frames may hold it afloat
BELOW_PX = 2.0
BELOW_SHARE = 0.05


def _first_frames(seen: np.ndarray) -> np.ndarray:
    return np.flatnonzero(seen)[:EDGE_FRAMES]


def afloat_in(inp: CheckInput, name: str, area: np.ndarray, box: np.ndarray, seen: np.ndarray) -> str | None:
    """Another object, at least as large as ``name`` in the frame ``name`` is first seen, whose mask
    reaches below it where the two overlap sideways: a liquid it may float in (a glass of water is
    there from the start and larger than the ice in it; the puddle a melt leaves is not), or ``None``."""
    t = int(np.flatnonzero(seen)[0])
    margin = BELOW_PX + BELOW_SHARE * float(box[t, 3] - box[t, 1])
    for other in object_names(inp.tracks):
        if other == name:
            continue
        _, oarea, obox = series(inp.tracks, other, T=len(inp.frames))
        if not (np.isfinite(obox[t]).all() and oarea[t] >= area[t]):
            continue
        side = min(box[t, 2], obox[t, 2]) - max(box[t, 0], obox[t, 0])
        if side > 0 and obox[t, 3] > box[t, 3] + margin:
            return other
    return None


def run(inp: CheckInput) -> CheckResult:
    if inp.rule not in RULES:
        return not_applicable(NAME, f"rule {inp.rule!r} is not a solid shrinking where it rests ({', '.join(RULES)})")
    if inp.camera_moves:
        return not_applicable(NAME, "the case's camera moves: a body's edges in the picture mix in its motion")
    if "buoyancy" in inp.case_rules:
        return not_applicable(NAME, "the case declares buoyancy: a floating body's base rises as it shrinks")
    name, _ = changing_body(inp, -1)
    if name is None:
        return not_applicable(NAME, "no object was tracked (phase_change fails the rule)")
    _, area, box = series(inp.tracks, name, T=len(inp.frames))
    seen = np.isfinite(area) & np.isfinite(box).all(axis=1)
    if int(seen.sum()) < 2 * EDGE_FRAMES:
        return not_applicable(NAME, f"{name!r} is seen in {int(seen.sum())} frames; {2 * EDGE_FRAMES} are needed")
    floating = afloat_in(inp, name, area, box, seen)
    if floating is not None:
        return not_applicable(NAME, f"{floating!r} reaches below {name!r} at the start: it may float there",
                              object=name, below=floating)
    body = seen & (np.nan_to_num(area) >= BODY_SHARE * float(np.nanmax(area)))
    first, last = _first_frames(seen), np.flatnonzero(body)[-EDGE_FRAMES:]
    top0, bottom0 = float(np.median(box[first, 1])), float(np.median(box[first, 3]))
    top1, bottom1 = float(np.median(box[last, 1])), float(np.median(box[last, 3]))
    rise, fall = max(0.0, bottom0 - bottom1), max(0.0, top1 - top0)
    measured = {"object": name, "base_rise_px": round(rise, 2), "top_fall_px": round(fall, 2),
                "first_height_px": round(bottom0 - top0, 2), "frames": [int(first[0]), int(last[-1])]}
    if rise + fall < max(MIN_CHANGE_PX, MIN_CHANGE * (bottom0 - top0)):
        return not_applicable(NAME, f"{name!r} changes height by {rise + fall:.1f} px: too little to tell "
                              "where it shrinks from", **measured)
    share = rise / (rise + fall)
    measured["lift_share"] = round(share, 4)
    if share <= LIFT_SHARE + 1e-9:  # the symmetric shrink exactly, whatever the rounding
        return CheckResult(NAME, "pass", 1.0, measured)
    score = float(np.exp(-(share - LIFT_SHARE) / 0.15))
    return CheckResult(NAME, "fail", score, measured,
                       f"{name!r} lifts off its support as it shrinks: its base rises {rise:.0f} px while its top "
                       f"comes down {fall:.0f} px (base's share {share:.2f}; at most {LIFT_SHARE} for a body that "
                       "shrinks where it rests)")
