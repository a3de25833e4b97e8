"""Model-free kinematic checks: one module per check, each ``run(inp: CheckInput) -> CheckResult``.

A check measures quantities on object tracks (and frames where it needs colour) and says
``pass`` / ``fail`` / ``not_applicable`` with a soft compliance ``score`` in [0, 1] (1 =
behaves like the law / the reference; it falls continuously with the size of the
violation, so stronger defects score lower). When the case's reference video is
available its tracks are the yardstick (e.g. the generated fall's acceleration is compared
with the reference's); otherwise only the law's sign/shape is checked.

Units: positions in frame heights (so resolutions compare), time in seconds.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from tracks.physics.tracking import ObjectTrack

CheckStatus = Literal["pass", "fail", "not_applicable"]

#: check name → module under tracks.physics.checks (each has ``run`` and ``VERSION``).
CHECKS: dict[str, str] = {
    "gravity": "tracks.physics.checks.gravity",
    "impact": "tracks.physics.checks.impact",
    "continuity": "tracks.physics.checks.continuity",
    "permanence": "tracks.physics.checks.permanence",
    "rigidity": "tracks.physics.checks.rigidity",
    "phase_change": "tracks.physics.checks.phase_change",
    "mixing": "tracks.physics.checks.mixing",
    "combustion": "tracks.physics.checks.combustion",
    "buoyancy": "tracks.physics.checks.buoyancy",
}


@dataclass
class CheckInput:
    """Everything a check may look at.

    Attributes:
        tracks: object tracks of the generated video.
        frames: generated frames ``uint8 [T, H, W, 3]``.
        fps: generated video's fps.
        rule: the rule being checked (some checks depend on it, e.g. melting vs freezing).
        ref_tracks: tracks of the reference video (``None`` without a reference).
        ref_frames: reference frames (``None`` without a reference).
        ref_fps: reference fps.
    """

    tracks: list[ObjectTrack]
    frames: np.ndarray
    fps: float
    rule: str = ""
    ref_tracks: list[ObjectTrack] | None = None
    ref_frames: np.ndarray | None = None
    ref_fps: float | None = None

    @property
    def height(self) -> int:
        return int(self.frames.shape[1])

    @property
    def has_reference(self) -> bool:
        return self.ref_tracks is not None and self.ref_frames is not None


@dataclass
class CheckResult:
    """Verdict of one check: status, soft score and what was measured."""

    check: str
    status: CheckStatus
    score: float | None
    measured: dict[str, Any] = field(default_factory=dict)
    reason: str = ""
    version: str = "1"

    def __post_init__(self) -> None:
        if self.status != "not_applicable" and (self.score is None or not 0.0 <= self.score <= 1.0):
            raise ValueError(f"check {self.check}: score must be in [0, 1] when status is {self.status}, got {self.score}")
        if self.status == "not_applicable" and not self.reason:
            raise ValueError(f"check {self.check}: not_applicable needs a reason")

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.check, "status": self.status, "score": self.score, "measured": self.measured,
                "reason": self.reason, "version": self.version}


def run_check(name: str, inp: CheckInput) -> CheckResult:
    """Run check ``name``. Unknown names raise ``KeyError`` listing the known checks."""
    if name not in CHECKS:
        raise KeyError(f"unknown model-free check {name!r}; known: {', '.join(CHECKS)}")
    mod = importlib.import_module(CHECKS[name])
    res: CheckResult = mod.run(inp)
    res.version = getattr(mod, "VERSION", "1")
    return res


def not_applicable(check: str, reason: str, **measured: Any) -> CheckResult:
    return CheckResult(check, "not_applicable", None, measured, reason)


# ------------------------------------------------------------------ shared helpers


def object_names(tracks: list[ObjectTrack], *, named: bool = False) -> list[str]:
    """Distinct object names (unnamed tracks get ``#<id>``; ``named=True`` leaves them out)."""
    seen: list[str] = []
    for tr in tracks:
        n = tr.name or ("" if named else f"#{tr.id}")
        if n and n not in seen:
            seen.append(n)
    return seen


def series(tracks: list[ObjectTrack], name: str, *, clipped: bool = True,
           T: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-frame centroid ``[T, 2]``, area ``[T]`` and bbox ``[T, 4]`` of object ``name``
    (all its tracks merged; the largest wins where several are visible; ``nan`` when unseen).

    ``clipped=False`` drops frames where the object is cut by the image border (its centroid
    and area are biased there), which kinematic fits need. ``T`` (the video's frame count) sizes
    the arrays when there is no track at all."""
    if T is None:
        T = len(tracks[0].state) if tracks else 0
    cen = np.full((T, 2), np.nan)
    area = np.full(T, np.nan)
    box = np.full((T, 4), np.nan)
    for tr in tracks:
        if (tr.name or f"#{tr.id}") != name:
            continue
        v = tr.visible & ~(tr.area <= np.nan_to_num(area, nan=-1.0))
        if not clipped:
            v &= ~tr.at_border
        cen[v], area[v], box[v] = tr.centroid[v], tr.area[v], tr.bbox[v]
    return cen, area, box


def subject(inp: CheckInput, *, prefer: str = "motion") -> str | None:
    """The object the law is about: the one with the largest motion (``prefer="motion"``) or
    the largest relative area change (``"area"``) in the reference (else in the video).

    Named objects (the case's, or colours learned from the reference) come first; unnamed
    blobs — a robot arm's links, a shadow — are the subject only when no named object moves.
    """
    tracks = inp.ref_tracks if inp.has_reference and inp.ref_tracks else inp.tracks
    return _most_changing(tracks, object_names(tracks, named=True), prefer) or _most_changing(tracks, object_names(tracks), prefer)


def _most_changing(tracks: list[ObjectTrack], names: list[str], prefer: str) -> str | None:
    best, best_v = None, 0.0
    for n in names:
        cen, area, _ = series(tracks, n)
        ok = ~np.isnan(area)
        if ok.sum() < 3:
            continue
        if prefer == "motion":
            c = cen[ok]
            val = float(np.linalg.norm(np.diff(c, axis=0), axis=1).sum())
        else:
            a = area[ok]
            val = float((a.max() - a.min()) / max(a.max(), 1.0))
        if val > best_v:
            best, best_v = n, val
    return best


def soft_ratio(r: float) -> float:
    """Compliance of a measured/expected ratio ``r`` (1 ideal): 0 at r ≤ -1, 1 at r = 1, 1/r above."""
    if not np.isfinite(r):
        return 0.0
    if r <= 1.0:
        return float(np.clip((r + 1) / 2, 0.0, 1.0) ** 2)
    return float(1.0 / r)


def monotone_fraction(x: np.ndarray, direction: int) -> float:
    """Share of the total variation of ``x`` going in ``direction`` (+1 up, -1 down); 1 = monotone."""
    d = np.diff(x[~np.isnan(x)])
    tv = np.abs(d).sum()
    if tv <= 0:
        return 0.0
    return float(np.clip((d * direction)[d * direction > 0].sum() / tv, 0.0, 1.0))
