"""Mixing (color_mixing, solubility): the changed region spreads monotonically, and its colour
lies between the input colours.

Mixture: the colour of the case's mixture object (``role: product``, or a name such as
``mixed_dye``); without one, the colour the video's last frame shows where it differs from its
first frame (Lab distance > 15). The area showing the mixture colour must grow (at least
doubling after the first quarter, to 2 % of the frame) and monotonically. Without a declared
mixture, the final changed region's colour must lie on the segment between the two largest
objects' first-frame colours (relative to their separation); such a video played backwards
(un-mixing) cannot be told apart, with a declared mixture it can. A video in which nothing
mixes fails: the rule applies.

Solubility is read as a *tint*, not a spread: a dissolving solute colours the whole solvent at
once (a stirred or well-mixed glass), so the tinted area jumps to the glass in a frame or two
and then holds still while the tint deepens. The solvent region is every pixel the video
changed between its first and last frame that did not show the solute in the first frame; its
mean colour must move toward the solute's colour (``role: subject``, else the declared mixture)
by at least :data:`MIN_TINT` Lab units, and monotonically. A video played backwards (the water
clearing) moves away from the solute and fails; a still one does not move and fails.

Score = monotone share · exp(-distance / 0.3).
"""

from __future__ import annotations

import numpy as np

from tracks.physics.checks import CheckInput, CheckResult, monotone_fraction
from tracks.physics.segmentation import rgb_to_lab

VERSION = "4"
#: the result depends on the rule it is run for: the track runs it once per rule, not once per case
PER_RULE = True
NAME = "mixing"
#: share of the spread's variation that must be growth.
MONOTONE = 0.8
#: share of the mixture area's variation that must be growth for a video to show spreading
#: (dye in the standard suite: 0.99-1.00; robot scenes the mean-colour proxy catches: 0.78-0.93).
SPREAD_MONOTONE = 0.95


def mixture_colour(frames: np.ndarray) -> np.ndarray | None:
    """Mean Lab colour of what the last frame changed relative to the first (the mixture)."""
    lab = rgb_to_lab(frames[[0, -1]])
    changed = np.linalg.norm(lab[1] - lab[0], axis=-1) > 15.0
    return lab[1][changed].mean(axis=0) if changed.any() else None


#: chroma (Lab) below which a pixel shows no dye: white water, grey walls.
MIN_CHROMA = 10.0
#: hue separation (radians) the declared mixture needs from the other colours for hue alone to
#: tell it apart (blue + yellow -> green); closer hues (a blue crystal tinting water blue) are
#: told apart in full Lab.
HUE_SEPARATION = np.deg2rad(30.0)


def _hue(lab: np.ndarray) -> np.ndarray:
    return np.arctan2(lab[..., 2], lab[..., 1])


def _hue_distance(a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    return np.abs(np.angle(np.exp(1j * (np.asarray(a) - np.asarray(b)))))


def spread(frames: np.ndarray, mix: np.ndarray | None = None,
           others: list[np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Share of the frame showing the mixture colour ``mix`` per frame ``[T]``, and the last
    frame's changed-vs-first mask ``[H, W]``. Without ``mix``, the changed area is used.

    With ``others`` (the case's other declared RGB colours), a pixel shows the mixture when its
    hue is nearer the mixture's than any other declared hue (and it has some colour at all): a
    diffusing dye pales as it spreads, so its lightness and saturation are no yardstick, its hue
    is. Where the hues are too close to tell apart, it is the nearest declared colour in Lab
    (within 30 units): a declared mixture colour is a name, not the exact shade a renderer or a
    codec gives it."""
    lab = rgb_to_lab(frames)
    last_changed = np.linalg.norm(lab[-1] - lab[0], axis=-1) > 15.0
    if mix is None:
        d = np.linalg.norm(lab - lab[:1], axis=-1) > 15.0  # [T, H, W]
    elif others:
        rivals = [rgb_to_lab(c.reshape(1, 1, 3))[0, 0] for c in others]
        if min(float(_hue_distance(_hue(mix), _hue(r))) for r in rivals) >= HUE_SEPARATION:
            h = _hue(lab)
            dm = _hue_distance(h, _hue(mix))
            nearest_other = np.min(np.stack([_hue_distance(h, _hue(r)) for r in rivals]), axis=0)
            d = (dm < nearest_other) & (np.hypot(lab[..., 1], lab[..., 2]) > MIN_CHROMA)
        else:
            dm = np.linalg.norm(lab - mix, axis=-1)
            nearest_other = np.min(np.stack([np.linalg.norm(lab - r, axis=-1) for r in rivals]), axis=0)
            d = (dm < 30.0) & (dm < nearest_other)
    else:
        d = np.linalg.norm(lab - mix, axis=-1) < 15.0
    return d.mean(axis=(1, 2)), last_changed


def spreads(s: np.ndarray, monotone: float = SPREAD_MONOTONE) -> bool:
    """A spreading phenomenon: the area gained since the first frame ends above 2 % of the frame,
    at least doubles after the first quarter (a moving rigid object changes a roughly constant
    area) and grows almost monotonically (:data:`SPREAD_MONOTONE`; a robot arm sweeping through
    the view gains and loses area). Gains, not totals: pale dye edges can show the mixture's
    colour from the first frame on, and that area is no evidence of mixing. A case's declared
    mixture hue excludes the arm, so there ``monotone`` is :data:`MONOTONE` (codec noise)."""
    gain = s - s[0]
    return bool(gain[-1] >= 0.02 and gain[-1] >= 2 * gain[len(s) // 4] and monotone_fraction(s, +1) >= monotone)


def segment_distance(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """Distance of ``c`` to segment ``ab``, relative to ``|ab|``."""
    ab = b - a
    L = float(np.linalg.norm(ab))
    if L < 1e-6:
        return float(np.linalg.norm(c - a)) / 100.0
    t = float(np.clip(np.dot(c - a, ab) / L**2, 0, 1))
    return float(np.linalg.norm(c - (a + t * ab)) / L)


#: words in an object's name that mark the mixture (when no object has ``role: product``).
MIXTURE_WORDS = ("mix", "blend", "solution", "tint", "green")


def _declared(inp: CheckInput, role: str, words: tuple[str, ...] = ()) -> tuple[np.ndarray | None, str | None]:
    """Lab colour and name of the case's coloured object with ``role``, else of one whose name holds
    one of ``words``; ``(None, None)`` when there is none (learned colours do not count)."""
    objs = [o for o in inp.objects if o.get("color") is not None and o.get("name") and not o.get("learned")]
    pick = next((o for o in objs if o.get("role") == role), None)
    if pick is None:
        pick = next((o for o in objs if any(w in str(o["name"]).lower() for w in words)), None)
    if pick is None:
        return None, None
    c = np.asarray(pick["color"], np.uint8).reshape(1, 1, 3)
    return rgb_to_lab(c)[0, 0], str(pick["name"])


def declared_mixture(inp: CheckInput) -> tuple[np.ndarray | None, str | None]:
    """Lab colour and name of the case's mixture object (``role: product``, else a mixture name)."""
    return _declared(inp, "product", MIXTURE_WORDS)


#: Lab units the solvent's mean colour must move toward the solute for a tint to count (codec
#: noise on a region's mean is < 2; a clear-to-pale tint is ~ 20).
MIN_TINT = 8.0


def _solute_colour(inp: CheckInput) -> tuple[np.ndarray | None, str | None]:
    """Lab colour and name of the dissolving solid (``role: subject``), else of the mixture."""
    colour, name = _declared(inp, "subject")
    return (colour, name) if colour is not None else declared_mixture(inp)


def tint_progress(frames: np.ndarray, solute: np.ndarray) -> tuple[np.ndarray, float, int]:
    """Per-frame progress ``[T]`` (Lab units) of the solvent's mean colour toward ``solute``, the
    total distance from the first frame's solvent colour to the solute, and the region's size.

    The solvent region: pixels changed between the first and last frame (Lab > 15) that were
    not solute-coloured in the first frame (nearer the solute than 15 units); those are where
    the solid was and dissolved away, not solvent taking its colour."""
    lab = rgb_to_lab(frames)
    changed = np.linalg.norm(lab[-1] - lab[0], axis=-1) > 15.0
    region = changed & (np.linalg.norm(lab[0] - solute, axis=-1) > 15.0)
    n = int(region.sum())
    if n == 0:
        return np.zeros(len(frames)), 0.0, 0
    mean = lab[:, region].mean(axis=1)  # [T, 3]
    axis = solute - mean[0]
    total = float(np.linalg.norm(axis))
    if total < 1e-6:
        return np.zeros(len(frames)), 0.0, n
    return (mean - mean[0]) @ (axis / total), total, n


def _run_tint(inp: CheckInput) -> CheckResult | None:
    """Solubility: the solvent's tint deepens toward the solute (module docstring)."""
    solute, name = _solute_colour(inp)
    if solute is None:
        return None
    p, total, n = tint_progress(inp.frames, solute)
    mono = monotone_fraction(p, +1)
    gain = float(p[-1] - p[0])
    measured: dict = {"tint_gain": gain, "monotone": mono, "solute": name, "solvent_pixels": n,
                      "solvent_to_solute": total}
    if n == 0 or gain < MIN_TINT:
        score = 0.5 * float(np.clip(mono * max(gain, 0.0) / MIN_TINT, 0, 1))
        return CheckResult(NAME, "fail", score, measured,
                           f"the liquid does not take the {name}'s colour (tint moved {gain:.1f} Lab units "
                           f"toward it, needs {MIN_TINT:.0f})")
    ok = mono >= MONOTONE
    return CheckResult(NAME, "pass" if ok else "fail", float(np.clip(mono, 0, 1)), measured,
                       "" if ok else f"the tint does not deepen steadily (monotone {mono:.2f} < {MONOTONE})")


def run(inp: CheckInput) -> CheckResult:
    if inp.rule == "solubility":
        tinted = _run_tint(inp)
        if tinted is not None:
            return tinted
    # The mixture's colour comes from the case when it names the mixture, so a video that
    # un-mixes shows the mixture shrinking; otherwise from what the video's last frame changed.
    mix, mix_name = declared_mixture(inp)
    source = "case" if mix is not None else "video"
    if mix is None:
        mix = mixture_colour(inp.frames)
    others = [np.asarray(o["color"], np.uint8) for o in inp.objects
              if o.get("color") is not None and o.get("name") != mix_name] if source == "case" else []
    s, last = spread(inp.frames, mix, others)
    mono = monotone_fraction(s, +1)
    measured: dict = {"spread_final": float(s[-1]), "monotone": mono, "mixture": mix_name, "mixture_from": source}
    if not spreads(s, MONOTONE if source == "case" else SPREAD_MONOTONE):
        # The rule applies, so something should mix: a still or un-mixing video fails.
        return CheckResult(NAME, "fail", float(np.clip(mono * min(1.0, max(0.0, s[-1] - s[0]) / 0.02), 0, 1)) * 0.5,
                           measured, "nothing mixes or spreads in the video")
    dist = 0.0
    objs = sorted((tr for tr in inp.tracks if tr.visible[0]), key=lambda tr: -float(tr.area[0]))[:2]
    if source == "video" and len(objs) == 2 and last.any():
        lab0 = rgb_to_lab(np.stack([objs[0].color[0], objs[1].color[0]]).astype(np.uint8).reshape(1, 2, 3))[0]
        mixed = rgb_to_lab(inp.frames[-1])[last].mean(axis=0)
        dist = segment_distance(mixed, lab0[0], lab0[1])
        measured["colour_distance"] = dist
    score = mono * float(np.exp(-dist / 0.3))
    ok = mono >= MONOTONE and dist < 0.3
    return CheckResult(NAME, "pass" if ok else "fail", float(np.clip(score, 0, 1)), measured,
                       "" if ok else f"spread monotone {mono:.2f}, colour off-segment {dist:.2f}")
