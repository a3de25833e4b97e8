"""Combustion: a flame is visible while the fuel shrinks monotonically.

Flame pixels: bright, saturated orange-yellow (OpenCV HSV hue 5..35 i.e. 10°..70°, S > 120,
V > 200); pure red is excluded so red objects are not taken for fire. Fuel: the object whose area changes most. The flame must be present in at least
half the frames where the reference shows one (30 % of frames without a reference), and the
fuel's area must decrease monotonically.

Score = min(1, flame frames / reference flame frames) · monotone share of the fuel's decrease.
"""

from __future__ import annotations

import numpy as np

from tracks.physics.checks import CheckInput, CheckResult, monotone_fraction, not_applicable, series, subject

VERSION = "1"
NAME = "combustion"


def flame_frames(frames: np.ndarray, min_share: float = 0.002) -> np.ndarray:
    """``bool [T]``: frames where flame-coloured pixels cover at least ``min_share`` of the frame."""
    import cv2

    T, H, W, _ = frames.shape
    hsv = cv2.cvtColor(frames.reshape(-1, W, 3), cv2.COLOR_RGB2HSV).reshape(T, H, W, 3)
    fl = (hsv[..., 0] >= 5) & (hsv[..., 0] <= 35) & (hsv[..., 1] > 120) & (hsv[..., 2] > 200)
    return fl.mean(axis=(1, 2)) >= min_share


def run(inp: CheckInput) -> CheckResult:
    f = flame_frames(inp.frames)
    measured: dict = {"flame_frames": int(f.sum())}
    if inp.has_reference:
        assert inp.ref_frames is not None
        rf = flame_frames(inp.ref_frames)
        measured["flame_frames_ref"] = int(rf.sum())
        if not rf.any():
            return not_applicable(NAME, "the reference shows no flame", **measured)
        presence = min(1.0, f.sum() / rf.sum())
    else:
        if not f.any():
            return not_applicable(NAME, "no flame in the video")
        presence = min(1.0, f.mean() / 0.3)
    name = subject(inp, prefer="area")
    mono = 1.0
    if name is not None:
        a = np.nan_to_num(series(inp.tracks, name)[1], nan=0.0)
        mono = monotone_fraction(a, -1) if np.ptp(a) > 0 else 0.0
        measured.update(fuel=name, fuel_monotone=mono)
    score = float(presence * mono)
    ok = presence >= 0.5 and mono >= 0.7
    return CheckResult(NAME, "pass" if ok else "fail", float(np.clip(score, 0, 1)), measured,
                       "" if ok else f"flame presence {presence:.2f}, fuel shrink monotone {mono:.2f}")
