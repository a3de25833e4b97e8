"""Object permanence: objects do not vanish or pop into existence without a cause.

Per object, frames after its first sighting in which it is neither visible, nor occluded
by something in front of it, nor out of view (tracker states) are *missing*; tracks that
start mid-video away from the border and from occluders *appeared*. Both are compared with
the reference (which may legitimately have some, e.g. behind unsegmented scenery); objects
of the reference never seen in the video count as missing throughout.

Score = exp(-(extra missing frames / T) / 0.1) · 0.7^(extra appearances).
"""

from __future__ import annotations

import numpy as np

from tracks.physics.checks import CheckInput, CheckResult, not_applicable, object_names
from tracks.physics.tracking import EXITED, OCCLUDED, VISIBLE, ObjectTrack

VERSION = "1"
NAME = "permanence"


def missing_frames(tracks: list[ObjectTrack], name: str, T: int) -> int:
    """Frames after ``name`` was first seen where no track of it is visible, occluded or exited."""
    mine = [tr for tr in tracks if (tr.name or f"#{tr.id}") == name]
    if not mine:
        return T
    first = min(tr.first for tr in mine)
    n = 0
    for t in range(first, T):
        if not any(tr.state[t] in (VISIBLE, OCCLUDED, EXITED) for tr in mine):
            n += 1
    return n


def appearances(tracks: list[ObjectTrack], min_len: int = 3) -> int:
    return sum(1 for tr in tracks if tr.appeared and int(tr.visible.sum()) >= min_len)


def run(inp: CheckInput) -> CheckResult:
    ref = inp.ref_tracks if inp.has_reference else None
    names = object_names(ref) if ref else object_names(inp.tracks)
    if not names:
        return not_applicable(NAME, "no object was tracked")
    T = len(inp.frames)
    per = {}
    extra_missing = 0
    for n in names:
        m = missing_frames(inp.tracks, n, T)
        mr = missing_frames(ref, n, len(ref[0].state)) if ref else 0
        per[n] = {"missing": m, "missing_ref": mr}
        extra_missing += max(0, m - mr)
    app = appearances(inp.tracks)
    app_ref = appearances(ref) if ref else 0
    extra_app = max(0, app - app_ref)
    share = extra_missing / max(T * len(names), 1)
    score = float(np.exp(-share / 0.1) * 0.7**extra_app)
    problems = []
    if extra_missing > 2:
        problems.append(f"objects vanish without occlusion for {extra_missing} frames")
    if extra_app:
        problems.append(f"{extra_app} object(s) appear from nowhere")
    return CheckResult(NAME, "fail" if problems else "pass", score,
                       {"objects": per, "extra_missing": extra_missing, "appearances": app, "appearances_ref": app_ref},
                       "; ".join(problems))
