"""Model-free kinematic checks: one module per check, each ``run(inp: CheckInput) -> CheckResult``.

A check measures quantities on object tracks (and frames where it needs colour) and says
``pass`` / ``fail`` / ``not_applicable`` with a soft compliance ``score`` in [0, 1] (1 =
behaves like the law; it falls continuously with the size of the violation, so stronger
defects score lower).

Every check decides from the generated video alone, plus what the case declares about its
objects (names, colours, ``role``, ``rigid``): users rarely have a reference video, and a
check that compared with one would measure likeness, not physics. Agreement with a
reference, when one exists, is the track's separate ``trajectory_agreement`` metric.
Tolerances come from the video's own measurement noise (:func:`area_tolerance`,
:func:`position_tolerance`), so a lossy 4:2:0 encoding of a lawful video still passes.

A rule that the case declares (or the judge or detectors find) applies demands its
phenomenon: a video in which it never happens (nothing falls, nothing melts) *fails* the
rule's own check rather than being not applicable, so a still video is never rewarded.

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
    "support": "tracks.physics.checks.support",
}


@dataclass
class CheckInput:
    """Everything a check may look at.

    Attributes:
        tracks: object tracks of the generated video.
        frames: generated frames ``uint8 [T, H, W, 3]``.
        fps: generated video's fps.
        rule: the rule being checked (some checks depend on it, e.g. melting vs freezing).
        ref_tracks: tracks of the reference video (``None`` without a reference). The rule
            checks do not read them (module docstring); they are kept for callers that
            compare with the reference.
        ref_frames: reference frames (``None`` without a reference).
        ref_fps: reference fps.
        objects: the case's ``physics.objects`` (name, colour, ``role``, ``rigid``...), as hints.
        noise: the video's noise floor (median Lab departure from its background) measured
            by the segmenter.
        focal: the case camera's vertical focal length in this video's pixels, when the case
            declares a static camera (``None`` otherwise); it only turns a body's metres per pixel
            into a depth for the evidence.
        camera_moves: the case declares a camera that moves (image motion then mixes in the
            camera's, so a fall's pixels cannot be read in metres).
        case_rules: every rule the case declares (a check of one rule may need to know another
            acts too: a fall into water under ``buoyancy`` is no free fall).
    """

    tracks: list[ObjectTrack]
    frames: np.ndarray
    fps: float
    rule: str = ""
    ref_tracks: list[ObjectTrack] | None = None
    ref_frames: np.ndarray | None = None
    ref_fps: float | None = None
    objects: list[dict[str, Any]] = field(default_factory=list)
    noise: float = 0.0
    focal: float | None = None
    camera_moves: bool = False
    case_rules: tuple[str, ...] = ()

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


def rule_key(name: str, rule: str) -> str:
    """What of ``rule`` check ``name``'s result depends on, so that a case's rules share one run of it
    where that is the same and get their own where it differs: the rule itself for a check whose
    module sets ``PER_RULE`` (which body a phase change or a mix is about), the module's own
    ``rule_key(rule)`` where it reads only part of the rule (the ride-along checks follow other
    bodies for a thermal or material rule: :func:`followed_key`), else ``""`` (the rule is not read)."""
    if name not in CHECKS:
        raise KeyError(f"unknown model-free check {name!r}; known: {', '.join(CHECKS)}")
    mod = importlib.import_module(CHECKS[name])
    if getattr(mod, "PER_RULE", False):
        return rule
    key = getattr(mod, "rule_key", None)
    return str(key(rule)) if key is not None else ""


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


def partial_sightings(area: np.ndarray, same_body: float) -> np.ndarray:
    """Sightings (of a body's successive ones) whose area breaks from both neighbours by more than
    ``same_body`` while the neighbours agree with each other: a body half found in one frame (a
    lossy frame, a teleported body caught mid-paste). Their centroids are biased, so the path links
    the sightings either side; a split or merge that lasts keeps its new area and is not dropped."""
    a = np.log(np.maximum(np.asarray(area, float), 1.0))
    out = np.zeros(len(a), bool)
    lim = np.log(same_body)
    for k in range(1, len(a) - 1):
        if abs(a[k] - a[k - 1]) > lim and abs(a[k] - a[k + 1]) > lim and abs(a[k + 1] - a[k - 1]) <= lim:
            out[k] = True
    return out


#: a sighting whose area breaks from both neighbours by more than this factor is partial
#: (:func:`partial_sightings`; continuity's ``SAME_BODY``).
PARTIAL_AREA = 1.5
#: a sighting under this share of the median area of the sightings around it is a sliver of the
#: body (impact's ``FRAGMENT_AREA``).
SLIVER_AREA = 0.4


def slivers(area: np.ndarray, window: int = 3) -> np.ndarray:
    """Sightings (of a body's successive ones) under :data:`SLIVER_AREA` of the median area of up
    to ``window`` sightings either side: a piece of the body, whose centroid is off its centre. The
    median is local, so a body that grows or shrinks steadily (nearing the camera, melting) keeps
    its sightings."""
    a = np.asarray(area, float)
    out = np.zeros(len(a), bool)
    for k in range(len(a)):
        around = np.r_[a[max(k - window, 0):k], a[k + 1:k + 1 + window]]
        if len(around) >= 2 and a[k] < SLIVER_AREA * float(np.median(around)):
            out[k] = True
    return out


def path_series(tracks: list[ObjectTrack], name: str, T: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`series` (``clipped=False``) for a kinematic fit: also without the sightings where the
    body was found only in part (:func:`partial_sightings`, :func:`slivers`). A printed crescent
    after a crf 23 encoding is found whole in most frames and as a fifth of itself, 10 px off its
    centre, in one frame of five; fitted as a position, that piece was a bounce gaining energy
    (v13)."""
    cen, area, box = series(tracks, name, clipped=False, T=T)
    drop = pieces(area)
    cen[drop], area[drop], box[drop] = np.nan, np.nan, np.nan
    return cen, area, box


def pieces(area: np.ndarray) -> np.ndarray:
    """``bool [T]``: frames where a body seen in the frames either side (``area`` per frame, nan
    where unseen) is found only in part (:func:`partial_sightings`, :func:`slivers`). A sighting
    beside a gap is kept: a body entering water or going behind something is seen in part there,
    and that is the evidence of where it went."""
    area = np.asarray(area, float)
    out = np.zeros(len(area), bool)
    idx = np.flatnonzero(np.isfinite(area))
    if len(idx) < 3:
        return out
    cand = idx[partial_sightings(area[idx], PARTIAL_AREA) | slivers(area[idx])]
    seen = np.isfinite(area)
    inner = cand[(cand > 0) & (cand < len(area) - 1)]
    out[inner[seen[inner - 1] & seen[inner + 1]]] = True
    return out


def declared(inp: CheckInput, key: str, value: Any) -> list[str]:
    """Names of the case's objects whose ``key`` equals ``value`` (e.g. ``role: subject``)."""
    return [str(o["name"]) for o in inp.objects if o.get("name") and o.get(key) == value]


def followed(inp: CheckInput, *, min_frames: int = 3) -> list[str]:
    """Objects whose identity the ride-along checks (continuity, permanence, rigidity) follow.

    Named objects (the case's, or colours learned from motion) seen in at least ``min_frames``
    frames; with none, unnamed tracks visible in at least half the frames. Short-lived unnamed
    blobs (a shadow, a splash, a fragment of steam) have no identity to keep.

    Thermal and material rules are about bodies that change: steam, fog, a spreading puddle or
    frost split, merge and spread, so their centroids jump and their pieces come and go. There,
    only the case's ``role: subject`` body and its ``rigid: true`` objects are followed when it
    declares roles or rigidity (possibly none: a dye that diffuses has no identity to keep), and
    for a thermal rule its ``role: context`` bodies: the stage the change happens on (the pool
    that freezes, the pot, the glass, the window; a teleported or vanished pool is a violation
    like any other). A material rule's context may be what mixes away (two dyes).
    """
    T = len(inp.frames)
    named = [n for n in object_names(inp.tracks, named=True) if _seen(inp.tracks, n) >= min_frames]
    if named and rule_dimension(inp.rule) in ("thermal", "material"):
        keep = set(declared(inp, "role", "subject")) | set(declared(inp, "rigid", True))
        if rule_dimension(inp.rule) == "thermal":
            keep |= set(declared(inp, "role", "context"))
        if keep or any(o.get("role") or o.get("rigid") is not None for o in inp.objects):
            named = [n for n in named if n in keep]
    if named:
        return named
    return [n for n in object_names(inp.tracks) if _seen(inp.tracks, n) >= max(min_frames, T // 2)]


def followed_key(rule: str) -> str:
    """What of ``rule`` :func:`followed` reads: a thermal or a material rule follows other bodies than
    any other rule does (its key for :func:`rule_key`)."""
    dim = rule_dimension(rule)
    return dim if dim in ("thermal", "material") else ""


def rule_dimension(rule: str) -> str | None:
    """``mechanics``, ``thermal`` or ``material`` for a rule id (``None`` for an unknown one)."""
    from tracks.physics.rules import load_rules

    r = load_rules().get(rule)
    return r.dimension if r is not None else None


def _seen(tracks: list[ObjectTrack], name: str) -> int:
    T = len(tracks[0].state) if tracks else 0
    v = np.zeros(T, bool)
    for tr in tracks:
        if (tr.name or f"#{tr.id}") == name:
            v |= tr.visible
    return int(v.sum())


def subject(inp: CheckInput, *, prefer: str = "motion") -> str | None:
    """The object the law is about: the case's ``role: subject`` object when it declares one,
    else the object with the largest motion (``prefer="motion"``) or the largest relative area
    change (``"area"``) in the video.

    Named objects (the case's, or colours learned from motion) come first; unnamed blobs — a
    robot arm's links, a shadow — are the subject only when no named object moves.
    """
    for n in declared(inp, "role", "subject"):
        if _seen(inp.tracks, n):
            return n
    tracks = inp.tracks
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


def position_tolerance(inp: CheckInput, area: float | None = None) -> float:
    """Centroid jitter (frame heights) expected from segmentation alone: a pixel and a half, twice
    that in a noisy (lossy) video, where a body's edge pixels come and go, and more for a small
    body (its centroid moves by a larger share of its size when one edge pixel flips)."""
    px = 1.5 * (2.0 if inp.noise > 0.5 else 1.0)
    if area is not None and area > 0:
        px *= max(1.0, float(np.sqrt(16.0 / max(area, 1.0))))
    return float(px / inp.height)


def area_tolerance(area: float) -> float:
    """Relative area jitter expected of a mask of ``area`` pixels from segmentation alone.

    Its boundary pixels come and go with sub-pixel motion, anti-aliasing and codec edges: about
    half the perimeter of a disc of that area, relative to the area (0.30 at 36 px, 0.09 at
    400 px), plus 5 %.
    """
    a = max(float(area), 1.0)
    return float(0.05 + 0.5 * 2.0 * np.sqrt(np.pi * a) / a)


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
