"""Phase change (melting, sublimation, vaporization, freezing, condensation, deposition;
the dissolving solute of solubility): the changing body's area moves monotonically in the
rule's direction, by about as much as in the reference.

Direction: shrink for melting / sublimation / vaporization / solubility, grow for freezing /
condensation / deposition. Area is 0 where the body is not seen (fully melted / not yet formed).

Monotone means at least 80 % of the area's total variation goes the rule's way (or, with a
reference, nearly as much as in the reference, whose own segmentation noise sets the bar).

Score = (monotone share / reference's)² · soft_ratio(net change / reference net change).
"""

from __future__ import annotations

import numpy as np

from tracks.physics.checks import (
    CheckInput,
    CheckResult,
    monotone_fraction,
    not_applicable,
    object_names,
    series,
    soft_ratio,
)

VERSION = "1"
NAME = "phase_change"
DIRECTION = {"melting": -1, "sublimation": -1, "vaporization": -1, "solubility": -1,
             "freezing": 1, "condensation": 1, "deposition": 1}


def area_curve(tracks, name: str, frames: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Area of ``name`` per frame as a share of the frame, 0 where unseen, median-smoothed over 3."""
    pixels = int(np.prod(frames.shape[1:3]))
    a = np.nan_to_num(series(tracks, name, T=len(frames))[1], nan=0.0) / pixels
    if len(a) >= 3:
        a = np.median(np.stack([np.r_[a[:1], a[:-1]], a, np.r_[a[1:], a[-1:]]]), axis=0)
    return a


def net_change(a: np.ndarray) -> float:
    if len(a) == 0:
        return 0.0
    k = max(1, min(3, len(a) // 4))
    a0, a1 = float(a[:k].mean()), float(a[-k:].mean())
    return (a1 - a0) / max(a0, a1, 1e-6)


def _changing_body(inp: CheckInput, direction: int) -> str | None:
    """The object whose area changes most in the rule's direction (in the reference if any):
    the melting ice, not the growing puddle."""
    tracks, frames = (inp.ref_tracks, inp.ref_frames) if inp.has_reference else (inp.tracks, inp.frames)
    assert tracks is not None and frames is not None
    changes = {n: net_change(area_curve(tracks, n, frames)) for n in object_names(tracks)}
    best = max(changes, key=lambda n: changes[n] * direction, default=None)
    if best is not None and changes[best] * direction > 0:
        return best
    # Nothing changes the right way. Without a reference the case still says the rule applies,
    # so judge the body that changes most (it will fail); with one, the rule has no subject.
    if inp.has_reference or not changes:
        return None
    return max(changes, key=lambda n: abs(changes[n]))


def run(inp: CheckInput) -> CheckResult:
    direction = DIRECTION.get(inp.rule)
    if direction is None:
        return not_applicable(NAME, f"rule {inp.rule!r} is not a phase change")
    name = _changing_body(inp, direction)
    if name is None:
        return not_applicable(NAME, f"no object that {'shrinks' if direction < 0 else 'grows'} was tracked")
    a = area_curve(inp.tracks, name, inp.frames)
    mono = monotone_fraction(a, direction)
    net = net_change(a) * direction
    measured: dict = {"object": name, "monotone": mono, "net_change": net}
    if inp.has_reference:
        assert inp.ref_tracks is not None and inp.ref_frames is not None
        ra = area_curve(inp.ref_tracks, name, inp.ref_frames)
        ref_net = net_change(ra) * direction
        ref_mono = monotone_fraction(ra, direction)
        measured.update(net_change_ref=ref_net, monotone_ref=ref_mono)
        if ref_net < 0.1:
            return not_applicable(NAME, f"the reference shows no {inp.rule} of {name!r}", **measured)
        ratio = net / ref_net
        # as monotone as the reference (segmentation noise in the reference sets the bar)
        need = min(0.8, ref_mono - 0.1)
        mono_score = min(1.0, mono / max(ref_mono, 1e-6))
    else:
        ratio = net / 0.2  # at least a 20 % change counts as the phenomenon happening
        need, mono_score = 0.8, mono
    score = mono_score**2 * soft_ratio(min(ratio, 1.0) if not inp.has_reference else ratio)
    ok = mono >= need and ratio >= 0.5
    reason = "" if ok else f"area change is {'non-monotone' if mono < need else 'too small'} (monotone {mono:.2f}, net/expected {ratio:.2f})"
    return CheckResult(NAME, "pass" if ok else "fail", float(np.clip(score, 0, 1)), measured, reason)
