"""Combustion: a flame is visible while the fuel shrinks monotonically.

Flame pixels: bright, saturated orange-yellow (OpenCV HSV hue 5..35 i.e. 10°..70°, S > 120,
V > 200); pure red is excluded so red objects are not taken for fire. Fuel: the object whose area changes most. The flame must be present in at least
half the frames where the reference shows one (30 % of frames without a reference), and the
fuel's area must decrease monotonically. A reference with flame-coloured pixels but no object
that shrinks (a yellow box) shows no combustion: not applicable.

Score = min(1, flame frames / reference flame frames) · monotone share of the fuel's decrease.
"""

from __future__ import annotations

import numpy as np

from tracks.physics.checks import CheckInput, CheckResult, monotone_fraction, not_applicable, object_names

VERSION = "2"
NAME = "combustion"


def flame_frames(frames: np.ndarray, min_share: float = 0.002) -> np.ndarray:
    """``bool [T]``: frames where flame-coloured pixels cover at least ``min_share`` of the frame."""
    import cv2

    T, H, W, _ = frames.shape
    hsv = cv2.cvtColor(frames.reshape(-1, W, 3), cv2.COLOR_RGB2HSV).reshape(T, H, W, 3)
    fl = (hsv[..., 0] >= 5) & (hsv[..., 0] <= 35) & (hsv[..., 1] > 120) & (hsv[..., 2] > 200)
    return fl.mean(axis=(1, 2)) >= min_share


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


def fuel(inp: CheckInput) -> str | None:
    """The named object that shrinks most in the reference (else in the video): the fuel."""
    tracks = inp.ref_tracks if inp.has_reference and inp.ref_tracks else inp.tracks
    best, best_v = None, 0.0
    for n in object_names(tracks, named=True):
        a = smoothed_area(tracks, n)
        if len(a) < 3:
            continue
        k = max(1, len(a) // 4)
        v = (a[:k].mean() - a[-k:].mean()) / max(a[:k].mean(), 1.0)
        if v > best_v:
            best, best_v = n, v
    return best


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
    name = fuel(inp)
    if inp.has_reference and name is None:
        # Flame-coloured pixels over nothing that burns down (a yellow box) are not combustion.
        return not_applicable(NAME, "the reference shows nothing burning down", **measured)
    mono, need = 1.0, 0.7
    if name is not None:
        a = smoothed_area(inp.tracks, name)
        mono = monotone_fraction(a, -1) if len(a) and np.nanmax(a) > np.nanmin(a) else 0.0
        measured.update(fuel=name, fuel_monotone=mono)
        if inp.has_reference and inp.ref_tracks:
            ra = smoothed_area(inp.ref_tracks, name)
            ref_mono = monotone_fraction(ra, -1) if len(ra) and np.nanmax(ra) > np.nanmin(ra) else 0.0
            need = min(0.7, ref_mono - 0.1)
            measured["fuel_monotone_ref"] = ref_mono
    score = float(presence * mono)
    ok = presence >= 0.5 and mono >= need
    return CheckResult(NAME, "pass" if ok else "fail", float(np.clip(score, 0, 1)), measured,
                       "" if ok else f"flame presence {presence:.2f}, fuel shrink monotone {mono:.2f}")
