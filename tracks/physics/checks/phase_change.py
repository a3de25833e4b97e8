"""Phase change (melting, sublimation, vaporization, freezing, condensation, deposition;
the dissolving solute of solubility): the changing body's area moves monotonically in the
rule's direction, by a visible amount (at least :data:`EXPECTED_CHANGE` of its size).

Direction: shrink for melting / sublimation / vaporization / solubility, grow for freezing /
condensation / deposition. Area is 0 where the body is not seen (fully melted / not yet formed).

Monotone means at least 70 % of the area's total variation goes the rule's way; a shrinking body
must also go gradually: no single frame changes it by more than :data:`MAX_STEP` of its size
then (:func:`largest_jump`). The body is
the one the case names for the rule (:func:`changing_body`), so a phase change played
backwards (a cube that regrows while its puddle shrinks) fails. A body that does not change
(a still video) fails: the rule applies, so the change should happen.

Score = monotone share² · soft_ratio(net change / expected change) · exp(-excess step / 0.2).
"""

from __future__ import annotations

import numpy as np

from tracks.physics.checks import (
    CheckInput,
    CheckResult,
    declared,
    monotone_fraction,
    not_applicable,
    object_names,
    series,
    soft_ratio,
)

VERSION = "3"
#: the result depends on the rule it is run for: the track runs it once per rule, not once per case
PER_RULE = True
NAME = "phase_change"
#: the smallest net area change (relative to the body's size) that shows the phenomenon.
EXPECTED_CHANGE = 0.2
#: share of the area's total variation that must go the rule's way.
MONOTONE = 0.7
#: the largest one-frame area change, relative to the body's area then, that is not a jump
#: (a body that vanishes or pops up at once has not melted or frozen).
MAX_STEP = 0.6
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


#: words in an object's name that mark the body a phase-change rule is about (when the case
#: declares no ``role: subject``): the solid that melts, the frost that deposits...
SUBJECT_WORDS: dict[str, tuple[str, ...]] = {
    "melting": ("ice", "snow", "wax", "butter", "chocolate", "candle", "cheese", "solid"),
    "sublimation": ("dry_ice", "dry ice", "ice", "iodine", "naphthalene", "camphor", "solid"),
    "vaporization": ("water", "liquid", "alcohol", "puddle", "broth", "soup"),
    "solubility": ("crystal", "sugar", "salt", "tablet", "cube", "solute", "powder"),
    "freezing": ("ice", "frozen", "solid"),
    "condensation": ("droplet", "drop", "dew", "condensate", "mist"),
    "deposition": ("frost", "rime", "ice", "crystal", "snow"),
}


#: a shrinking body may leave the picture at once only below this share of its largest area
#: (the last crumbs of a melt are under what segmentation resolves; a fifth of the ice is not).
VANISH_BELOW = 0.1


def largest_jump(a: np.ndarray) -> float:
    """Largest one-frame change of an area curve relative to the larger side, over steps where the
    body is not small (:data:`VANISH_BELOW` of its largest area or more)."""
    if len(a) < 2 or a.max() <= 0:
        return 0.0
    hi = np.maximum(a[:-1], a[1:])
    big = hi >= VANISH_BELOW * a.max()
    if not big.any():
        return 0.0
    return float((np.abs(np.diff(a))[big] / hi[big]).max())


def changing_body(inp: CheckInput, direction: int) -> tuple[str | None, str]:
    """The body the rule is about, and how it was chosen.

    The case says which it is (``role: subject``, else a name with one of the rule's
    :data:`SUBJECT_WORDS`); only when it says neither is it the object whose area changes most
    in the rule's direction — which a video played backwards can fool (its melting puddle
    shrinks), so the evidence records the choice.
    """
    tracked = set(object_names(inp.tracks))
    for n in declared(inp, "role", "subject"):
        if n in tracked:
            return n, "role"
    for n in (str(o.get("name", "")) for o in inp.objects):
        low = n.lower()
        if n in tracked and any(w in low for w in SUBJECT_WORDS.get(inp.rule, ())):
            return n, "name"
    changes = {n: net_change(area_curve(inp.tracks, n, inp.frames)) for n in object_names(inp.tracks)}
    if not changes:
        return None, "none"
    best = max(changes, key=lambda n: changes[n] * direction)
    if changes[best] * direction > 0:
        return best, "behaviour"
    return max(changes, key=lambda n: abs(changes[n])), "behaviour"


def run(inp: CheckInput) -> CheckResult:
    direction = DIRECTION.get(inp.rule)
    if direction is None:
        return not_applicable(NAME, f"rule {inp.rule!r} is not a phase change")
    name, chosen = changing_body(inp, direction)
    if name is None:
        return CheckResult(NAME, "fail", 0.0, {}, f"nothing {'shrinks' if direction < 0 else 'grows'}: no object was tracked")
    a = area_curve(inp.tracks, name, inp.frames)
    mono = monotone_fraction(a, direction)
    net = net_change(a) * direction
    ratio = net / EXPECTED_CHANGE
    # A shrinking body that vanishes at once was not consumed; growth from tiny grains (frost,
    # droplets) is too noisy to time frame by frame.
    step = largest_jump(a) if direction < 0 else 0.0
    measured: dict = {"object": name, "chosen_by": chosen, "monotone": mono, "net_change": net, "largest_step": step}
    score = mono**2 * soft_ratio(min(ratio, 1.0)) * float(np.exp(-max(0.0, step - MAX_STEP) / 0.2))
    ok = mono >= MONOTONE and ratio >= 0.5 and step <= MAX_STEP
    if ok:
        reason = ""
    elif step > MAX_STEP and mono >= MONOTONE:
        reason = f"{name!r}: area jumps by {step:.2f} of its size in one frame (it vanishes or appears at once)"
    else:
        reason = (f"{name!r}: area change is {'non-monotone' if mono < MONOTONE else 'too small'} "
                  f"(monotone {mono:.2f}, net/expected {ratio:.2f})")
    return CheckResult(NAME, "pass" if ok else "fail", float(np.clip(score, 0, 1)), measured, reason)
