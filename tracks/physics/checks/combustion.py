"""Combustion: a flame is visible while the fuel shrinks monotonically.

Flame pixels: bright, saturated orange-yellow (OpenCV HSV hue 5..35 i.e. 10°..70°, S > 120,
V > 200); pure red is excluded so red objects are not taken for fire. Fuel: the case's
``role: subject`` object, else one named as fuel (:data:`FUEL_WORDS`), else the named object
that shrinks most. The flame must be present in 30 % of frames or more and the fuel's area
(unseen frames count 0: it chars and hides under its flame) must decrease monotonically, by
at least :data:`~tracks.physics.checks.phase_change.EXPECTED_CHANGE`. The flame must flicker
(:func:`flicker`): a still or fading picture of a fire is not one burning. The rule applies, so a video without flame or without a
shrinking fuel (a still video) fails.

Score = min(1, flame frames / 30 % of frames) · min(1, flicker / 0.1) · monotone share of the fuel's decrease · min(1, decrease / expected).
"""

from __future__ import annotations

import numpy as np

from tracks.physics.checks import CheckInput, CheckResult, declared, monotone_fraction, object_names
from tracks.physics.checks.phase_change import EXPECTED_CHANGE, area_curve, net_change

VERSION = "4"
NAME = "combustion"
#: share of the fuel's area variation that must be decrease.
MONOTONE = 0.7
#: share of the flame that must change from frame to frame (renders and real fires: 0.28-0.30;
#: a still or fading picture of a flame: 0.04 and below).
MIN_FLICKER = 0.1


def flame_masks(frames: np.ndarray) -> np.ndarray:
    """``bool [T, H, W]``: flame-coloured pixels (bright, saturated orange-yellow)."""
    import cv2

    T, H, W, _ = frames.shape
    hsv = cv2.cvtColor(frames.reshape(-1, W, 3), cv2.COLOR_RGB2HSV).reshape(T, H, W, 3)
    return (hsv[..., 0] >= 5) & (hsv[..., 0] <= 35) & (hsv[..., 1] > 120) & (hsv[..., 2] > 200)


def flame_frames(frames: np.ndarray, min_share: float = 0.002) -> np.ndarray:
    """``bool [T]``: frames where flame-coloured pixels cover at least ``min_share`` of the frame."""
    return flame_masks(frames).mean(axis=(1, 2)) >= min_share


def flicker(frames: np.ndarray) -> float:
    """Median share of the flame that changes between consecutive frames (1 - IoU of the flame
    masks, over pairs showing any flame); 0 without flame. A flame is never still: an orange
    patch that does not move (a painted flame, a frozen frame) is not fire."""
    f = flame_masks(frames)
    union = (f[1:] | f[:-1]).sum(axis=(1, 2))
    if not (union > 0).any():
        return 0.0
    inter = (f[1:] & f[:-1]).sum(axis=(1, 2))
    return float(np.median((1 - inter / np.maximum(union, 1))[union > 0]))


def smoothed_area(tracks, name: str) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Area of ``name`` over the frames it is seen unobstructed (flames cover the fuel), median of 3."""
    if not tracks:
        return np.zeros(0)
    a = np.full(len(tracks[0].state), np.nan)
    for tr in tracks:
        if (tr.name or f"#{tr.id}") == name:
            ok = tr.visible & ~tr.touching
            a[ok] = tr.area[ok]
    v = a[~np.isnan(a)]
    if len(v) >= 3:
        v = np.median(np.stack([np.r_[v[:1], v[:-1]], v, np.r_[v[1:], v[-1:]]]), axis=0)
    return v


#: words in an object's name that mark the fuel (when no object has ``role: subject``).
FUEL_WORDS = ("wood", "log", "paper", "candle", "wax", "fuel", "match", "coal", "charcoal", "twig", "stick", "cloth")


def fuel(inp: CheckInput) -> tuple[str | None, str]:
    """The fuel and how it was chosen: the case's ``role: subject``, else a fuel name, else the
    named object that shrinks most in the video."""
    tracked = set(object_names(inp.tracks, named=True))
    for n in declared(inp, "role", "subject"):
        if n in tracked:
            return n, "role"
    for o in inp.objects:
        n = str(o.get("name", ""))
        if n in tracked and any(w in n.lower() for w in FUEL_WORDS):
            return n, "name"
    best, best_v = None, 0.0
    for n in object_names(inp.tracks, named=True):
        a = smoothed_area(inp.tracks, n)
        if len(a) < 3:
            continue
        k = max(1, len(a) // 4)
        v = (a[:k].mean() - a[-k:].mean()) / max(a[:k].mean(), 1.0)
        if v > best_v:
            best, best_v = n, v
    return best, "behaviour"


def run(inp: CheckInput) -> CheckResult:
    f = flame_frames(inp.frames)
    flick = flicker(inp.frames)
    measured: dict = {"flame_frames": int(f.sum()), "flicker": flick}
    presence = min(1.0, f.mean() / 0.3) * min(1.0, flick / MIN_FLICKER)
    name, chosen = fuel(inp)
    mono, net = 0.0, 0.0
    if name is not None:
        # Burning fuel chars and hides under its flame: every frame counts, unseen ones as 0.
        a = area_curve(inp.tracks, name, inp.frames)
        a = a[int(np.argmax(a > 0)):] if (a > 0).any() else a
        mono = monotone_fraction(a, -1) if len(a) and a.max() > a.min() else 0.0
        net = -net_change(a)
        measured.update(fuel=name, fuel_chosen_by=chosen, fuel_monotone=mono, fuel_net_decrease=net)
    score = float(presence * mono * min(1.0, max(net, 0.0) / EXPECTED_CHANGE))
    ok = presence >= 0.5 and mono >= MONOTONE and net >= EXPECTED_CHANGE
    reason = "" if ok else ("no flame in the video" if not f.any() else
                            f"the flame does not flicker ({flick:.2f} of it changes per frame)" if flick < MIN_FLICKER else
                            f"flame presence {presence:.2f}, fuel shrink monotone {mono:.2f}")
    return CheckResult(NAME, "pass" if ok else "fail", float(np.clip(score, 0, 1)), measured, reason)
