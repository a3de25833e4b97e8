"""Mixing (color_mixing, solubility): the changed region spreads monotonically, and its colour
lies between the input colours.

Mixture: the colour the reference's last frame shows where it differs from its first frame
(Lab distance > 15); without a reference, the video's own. The area showing the mixture
colour must grow monotonically (and by about the reference's amount); the video's final
changed region's mean colour is compared with the reference's mixture colour (relative to
the scene's Lab range) or, without a reference, with the segment between the two largest
objects' first-frame colours (relative to their separation). Without a reference a
played-backwards (un-mixing) video cannot be told apart; with one it can.

Score = monotone share · soft_ratio(spread / reference spread) · exp(-distance / 0.3).
"""

from __future__ import annotations

import numpy as np

from tracks.physics.checks import CheckInput, CheckResult, monotone_fraction, not_applicable, soft_ratio
from tracks.physics.segmentation import rgb_to_lab

VERSION = "2"
NAME = "mixing"
#: share of the mixture area's variation that must be growth for a video to show spreading
#: (dye in the standard suite: 0.99-1.00; robot scenes the mean-colour proxy catches: 0.78-0.93).
SPREAD_MONOTONE = 0.95


def mixture_colour(frames: np.ndarray) -> np.ndarray | None:
    """Mean Lab colour of what the last frame changed relative to the first (the mixture)."""
    lab = rgb_to_lab(frames[[0, -1]])
    changed = np.linalg.norm(lab[1] - lab[0], axis=-1) > 15.0
    return lab[1][changed].mean(axis=0) if changed.any() else None


def spread(frames: np.ndarray, mix: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Share of the frame showing the mixture colour ``mix`` per frame ``[T]``, and the last
    frame's changed-vs-first mask ``[H, W]``. Without ``mix``, the changed area is used."""
    lab = rgb_to_lab(frames)
    last_changed = np.linalg.norm(lab[-1] - lab[0], axis=-1) > 15.0
    if mix is None:
        d = np.linalg.norm(lab - lab[:1], axis=-1) > 15.0  # [T, H, W]
    else:
        d = np.linalg.norm(lab - mix, axis=-1) < 15.0
    return d.mean(axis=(1, 2)), last_changed


def spreads(s: np.ndarray) -> bool:
    """A spreading phenomenon: the area gained since the first frame ends above 2 % of the frame,
    at least doubles after the first quarter (a moving rigid object changes a roughly constant
    area) and grows almost monotonically (:data:`SPREAD_MONOTONE`; a robot arm sweeping through
    the view gains and loses area). Gains, not totals: pale dye edges can show the mixture's
    colour from the first frame on, and that area is no evidence of mixing."""
    gain = s - s[0]
    return bool(gain[-1] >= 0.02 and gain[-1] >= 2 * gain[len(s) // 4] and monotone_fraction(s, +1) >= SPREAD_MONOTONE)


def segment_distance(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """Distance of ``c`` to segment ``ab``, relative to ``|ab|``."""
    ab = b - a
    L = float(np.linalg.norm(ab))
    if L < 1e-6:
        return float(np.linalg.norm(c - a)) / 100.0
    t = float(np.clip(np.dot(c - a, ab) / L**2, 0, 1))
    return float(np.linalg.norm(c - (a + t * ab)) / L)


def run(inp: CheckInput) -> CheckResult:
    # The mixture's colour comes from the reference (what mixing should produce), so a video
    # that un-mixes shows the mixture shrinking.
    mix = mixture_colour(inp.ref_frames if inp.has_reference and inp.ref_frames is not None else inp.frames)
    s, last = spread(inp.frames, mix)
    mono = monotone_fraction(s, +1)
    measured: dict = {"spread_final": float(s[-1]), "monotone": mono}
    if inp.has_reference:
        assert inp.ref_frames is not None
        rs, _ = spread(inp.ref_frames, mix)
        ref_mono = monotone_fraction(rs, +1)
        measured.update(spread_final_ref=float(rs[-1]), monotone_ref=ref_mono)
        if not spreads(rs):
            return not_applicable(NAME, "the reference shows no mixing or spreading", **measured)
        ratio = float(s[-1] / rs[-1])
        need = min(0.8, ref_mono - 0.1)
    else:
        if not spreads(s):
            return not_applicable(NAME, "nothing spreads in the video")
        ratio, need = 1.0, 0.8
    dist = 0.0
    objs = sorted((tr for tr in inp.tracks if tr.visible[0]), key=lambda tr: -float(tr.area[0]))[:2]
    if inp.has_reference and mix is not None and last.any():
        # Paints mix subtractively (blue + yellow = green, off the Lab segment between them):
        # the reference's mixture colour is the yardstick, relative to the Lab range of the scene.
        assert inp.ref_frames is not None
        mine = rgb_to_lab(inp.frames[-1])[last].mean(axis=0)
        ref_lab = rgb_to_lab(inp.ref_frames[0]).reshape(-1, 3)
        scale = max(float(np.linalg.norm(ref_lab.max(0) - ref_lab.min(0))), 1.0)
        dist = float(np.linalg.norm(mine - mix)) / scale
        measured["colour_distance"] = dist
    elif len(objs) == 2 and last.any():
        lab0 = rgb_to_lab(np.stack([objs[0].color[0], objs[1].color[0]]).astype(np.uint8).reshape(1, 2, 3))[0]
        mix = rgb_to_lab(inp.frames[-1])[last].mean(axis=0)
        dist = segment_distance(mix, lab0[0], lab0[1])
        measured["colour_distance"] = dist
    score = mono * soft_ratio(ratio) * float(np.exp(-dist / 0.3))
    ok = mono >= need and ratio >= 0.5 and dist < 0.3
    return CheckResult(NAME, "pass" if ok else "fail", float(np.clip(score, 0, 1)), measured,
                       "" if ok else f"spread monotone {mono:.2f}, spread/expected {ratio:.2f}, colour off-segment {dist:.2f}")
