"""Action following: does the realised motion match the commanded action, in direction and size, on time?

Per chunk with an action (see :mod:`tracks.interaction.actions`), the realised motion of the
camera or the agent (:mod:`tracks.interaction.motion`) is projected on the expected direction:
``p_t = v_t · d`` (translate) or ``p_t = ±zoom_t`` (zoom), per frame pair inside the chunk.

* **Direction**: the chunk's mean motion points the expected way (cosine >= 0.5 and speed
  above the noise floor); for ``none`` actions, the speed stays below the floor. When the
  case has a reference video and the *reference* itself does not show the expected motion
  (an Atari paddle already against the wall), the chunk is judged against the reference's
  realised motion instead (``details.expectation = "reference"``).
* **Magnitude**: relative error ``|p - p*| / max(p*, floor)`` of the mean projected speed,
  ``p*`` = the reference's realised speed when there is a reference, else the vocabulary's
  magnitude; chunks with neither are skipped (not applicable if none remains).
* **Response delay**: with a reference, the lag (frames, then seconds) maximising the
  normalised cross-correlation of the generated and reference projected-speed series over
  the whole video (a model that answers late lags behind), or of their motion-energy series
  (:func:`motion_energy`, the whole picture's change per frame) where that peak is higher; a
  video that shows the reference's own pictures late is aligned frame by frame instead
  (:func:`_aligned_lag`). Without one, the mean onset
  inside chunks: the first frame whose projected speed reaches half the chunk's steady
  (90th-percentile) speed. A video in which nothing moves above the noise floor never
  answered: its delay is the longest lag considered (about one chunk), as an onset that never
  comes counts as the whole chunk.

**Chance** (:func:`chance_following`): the direction accuracy of a player that presses a uniformly
random action of the case's vocabulary in every chunk, in a video that shows exactly that action's
motion; the line a model's direction accuracy has to clear before it says anything about control.
It is defined where the player has a finite set of buttons: not for structured commands (a
continuous end-effector or camera move) nor for the default ``camera`` vocabulary, a table of synonyms.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tracks.interaction.actions import (
    ExpectedMotion,
    UnknownActionError,
    agent_appearance,
    agent_start,
    chunk_expectations,
    expected_motion,
    vocabulary_for,
)
from tracks.interaction.flow import frame_change, to_gray
from tracks.interaction.motion import MotionSeries, agent_motion, camera_motion, luma_noise
from worldolympiad.types import Case, Chunk

# Speeds below these are "not moving" (fraction of width / log-scale per frame): ~0.25 px at 128 px.
TRANSLATE_FLOOR = 0.002
ZOOM_FLOOR = 0.002
MIN_COSINE = 0.5
#: Where the expected speed is known and the agent is followed by its own points (``tracking == "points"``: they hold
#: exactly still when it does), the floor is half the expected speed, between this and :data:`TRANSLATE_FLOOR` (v21).
POINT_FLOOR = 0.0004


def motion_floor(exp: ExpectedMotion, series: MotionSeries | None) -> float:
    """The speed under which ``series`` cannot tell ``exp``'s motion from stillness.

    :data:`TRANSLATE_FLOOR` / :data:`ZOOM_FLOOR` where the motion's size is unknown or the tracker has its own noise
    (a blob's centroid, a colour mask's edge). An end effector followed by its points, moving by a projected
    command of known speed (:func:`~tracks.interaction.actions.chunk_expectations`), is judged against half that
    speed (at least :data:`POINT_FLOOR`): a lift filmed from above moves its gripper 0.001 of the width a frame,
    under the blind floor, and a still video's points read exactly 0 (v21)."""
    if exp.mode == "zoom":
        return ZOOM_FLOOR
    if exp.mode == "translate" and exp.magnitude and series is not None and series.tracking == "points":
        return float(np.clip(0.5 * exp.magnitude, POINT_FLOOR, TRANSLATE_FLOOR))
    return TRANSLATE_FLOOR


@dataclass
class ChunkFollowing:
    """The verdict on one chunk."""

    index: int
    action: str
    target: str
    mode: str
    mean_motion: list[float]
    projected: float
    direction_ok: bool
    expectation: str = "vocabulary"
    magnitude_error: float | None = None
    onset_frames: float | None = None
    chance: float | None = None
    floor: float = TRANSLATE_FLOOR  # the speed under which it is still (motion_floor)

    def to_dict(self) -> dict[str, Any]:
        return {k: (round(v, 5) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


@dataclass
class FollowingReport:
    chunks: list[ChunkFollowing]
    delay_frames: float | None
    delay_method: str
    errors: list[str] = field(default_factory=list)
    correlation: float | None = None
    chance_reason: str | None = None  # why chance is not defined on these chunks
    # how the agent was found in the video and in the reference (MotionSeries.tracking): "colour", or
    # "motion" where the video erased the agent's colour (v14)
    tracking: dict[str, str] = field(default_factory=dict)

    @property
    def direction_accuracy(self) -> float | None:
        return float(np.mean([c.direction_ok for c in self.chunks])) if self.chunks else None

    @property
    def moved_fraction(self) -> float | None:
        """Share of the chunks whose action asks for motion (and whose reference, if any, shows it) in
        which the video moved above the noise floor; ``None`` when no chunk asks for motion."""
        asked = [c for c in self.chunks if c.mode != "none" and c.expectation == "vocabulary"]
        if not asked:
            return None
        def moved(c: ChunkFollowing) -> bool:
            v = np.asarray(c.mean_motion, dtype=np.float64)
            return bool(np.isfinite(v).all() and float(np.linalg.norm(v)) > c.floor)
        return float(np.mean([moved(c) for c in asked]))

    @property
    def magnitude_error(self) -> float | None:
        vals = [c.magnitude_error for c in self.chunks if c.magnitude_error is not None]
        return float(np.mean(vals)) if vals else None

    @property
    def chance(self) -> float | None:
        """The direction accuracy a uniformly random action of the vocabulary gets on these chunks
        (:func:`chance_following`); ``None`` (``chance_reason`` says why) unless every chunk has one:
        a mean over some of the chunks would not be the line the accuracy over all of them must clear."""
        vals = [c.chance for c in self.chunks if c.chance is not None]
        return float(np.mean(vals)) if vals and len(vals) == len(self.chunks) else None

    def to_dict(self) -> dict[str, Any]:
        return {"chunks": [c.to_dict() for c in self.chunks], "delay_frames": self.delay_frames,
                "delay_method": self.delay_method, "correlation": self.correlation, "errors": self.errors,
                "moved_fraction": self.moved_fraction,
                "chance": self.chance, "chance_reason": self.chance_reason, "tracking": self.tracking}


def _series(frames: np.ndarray, target: str, case: Case, cache: dict[str, MotionSeries]) -> MotionSeries:
    if target not in cache:
        cache[target] = (camera_motion(frames) if target == "camera"
                         else agent_motion(frames, agent_appearance(case) or agent_start(case)))
    return cache[target]


def _pairs(chunk: Chunk, n_pairs: int) -> slice:
    """Frame pairs whose motion belongs to ``chunk``: ``t -> t+1`` for t in [start, end - 1)."""
    return slice(chunk.frame_start, min(chunk.frame_end - 1, n_pairs))


def _projected(series: MotionSeries, exp: ExpectedMotion) -> np.ndarray:
    if exp.mode == "zoom":
        return exp.direction[0] * series.zoom
    if exp.mode == "translate":
        return series.translation @ np.asarray(exp.direction)
    return np.linalg.norm(series.translation, axis=1)


def _mean_vec(series: MotionSeries, sl: slice, mode: str) -> np.ndarray:
    if mode == "zoom":
        z = series.zoom[sl]
        return np.array([np.nanmean(z) if np.isfinite(z).any() else np.nan])
    tr = series.translation[sl]
    ok = np.isfinite(tr).all(axis=1)
    return tr[ok].mean(axis=0) if ok.any() else np.array([np.nan, np.nan])


def _direction_ok(v: np.ndarray, exp: ExpectedMotion, floor: float | None = None) -> bool:
    if not np.isfinite(v).all():
        return False
    floor = motion_floor(exp, None) if floor is None else floor
    if exp.mode == "zoom":
        return bool(v[0] * exp.direction[0] > floor)
    speed = float(np.linalg.norm(v))
    if exp.mode == "none":
        return speed < floor
    return speed > floor and float(v @ np.asarray(exp.direction)) / speed >= MIN_COSINE


def _matches_reference(v: np.ndarray, v_ref: np.ndarray, mode: str, floor: float | None = None) -> bool:
    if not (np.isfinite(v).all() and np.isfinite(v_ref).all()):
        return False
    if floor is None:
        floor = ZOOM_FLOOR if mode == "zoom" else TRANSLATE_FLOOR
    return float(np.linalg.norm(v - v_ref)) <= floor + 0.5 * float(np.linalg.norm(v_ref))


def _onset(p: np.ndarray, floor: float = TRANSLATE_FLOOR) -> float | None:
    p = p[np.isfinite(p)]
    if len(p) < 4:
        return None
    # The 90th percentile, not the end of the chunk: a sprite that reaches a wall stops moving.
    steady = float(np.percentile(p, 90))
    if steady <= floor:
        return float(len(p))  # never responded within the chunk
    return float(np.argmax(p >= 0.5 * steady))


#: analysis size (longer side, pixels) of the frames the delay is timed on.
DELAY_SIDE = 64


def motion_energy(frames: np.ndarray) -> np.ndarray:
    """The whole picture's change per frame pair ``[T - 1]`` (:func:`~tracks.interaction.flow.frame_change`
    at :data:`DELAY_SIDE`)."""
    return frame_change(frames, DELAY_SIDE)


#: :func:`_aligned_lag` compares the pixels whose grey level at :data:`DELAY_SIDE` spans more than this over the
#: reference (the places where something happens), and counts those that differ by more than this plus
#: :data:`ALIGN_NOISE` times the video's luma noise
ALIGN_GREY = 8.0
ALIGN_NOISE = 3.0


def _aligned_lag(frames: np.ndarray, ref: np.ndarray, max_lag: int) -> int | None:
    """Lag ``k`` (|k| <= max_lag) minimising the share of the pixels where the reference changes (its grey range
    over time above :data:`ALIGN_GREY`) at which ``frames[t]`` and ``ref[t - k]`` differ (by more than
    :data:`ALIGN_GREY` plus :data:`ALIGN_NOISE` times the video's luma noise), when that minimum is distinct (under
    half the median over lags); ``None`` when the video does not show the reference's pictures or nothing in the
    reference changes.

    Version 16; before, the mean grey difference over the whole picture. A still pixel looks the same at every lag,
    and a codec's error (a grey level or two on a flat field, ringing along walls and digits, a sprite's blurred
    edge) was added to the cost at every lag, so the reference's own pictures re-encoded read as no distinct
    alignment (clean tuning videos aligned at lag 0: 13 of 14 lossless, 8 at crf 23, 4 at crf 35 x0.75), and the
    cross-correlation that answered instead read a 7-frame delay in a Pong video whose last two chunks were frozen,
    at crf 23 only (bench/suites/interaction_tune).
    """
    T = len(frames)
    g = to_gray(frames, DELAY_SIDE).astype(np.float32)
    r = to_gray(ref, DELAY_SIDE).astype(np.float32)
    where = (r.max(axis=0) - r.min(axis=0)) > ALIGN_GREY
    if not where.any():
        return None
    differ = ALIGN_NOISE * luma_noise(g) + ALIGN_GREY
    costs = {}
    for k in range(-max_lag, max_lag + 1):
        x, y = (g[k:], r[: T - k]) if k >= 0 else (g[: T + k], r[-k:])
        if len(x) >= max(3, T // 2):
            costs[k] = float((np.abs(x - y)[:, where] > differ).mean())
    if len(costs) < 3:
        return None
    best = min(costs, key=lambda k: (costs[k], abs(k)))
    if costs[best] >= 0.5 * float(np.median(list(costs.values()))):
        return None
    return best


def _xcorr_lag(a: np.ndarray, b: np.ndarray, max_lag: int) -> tuple[int, float]:
    """Lag ``k`` maximising corr(a[t + k], b[t]) for |k| <= max_lag (``a`` lags ``b`` by k frames)."""
    a = np.nan_to_num(a - (np.nanmean(a) if np.isfinite(a).any() else 0.0))
    b = np.nan_to_num(b - (np.nanmean(b) if np.isfinite(b).any() else 0.0))
    best, best_r = 0, -np.inf
    n = len(a)
    for k in range(-max_lag, max_lag + 1):
        x, y = (a[k:], b[: n - k]) if k >= 0 else (a[: n + k], b[-k:])
        den = float(np.linalg.norm(x) * np.linalg.norm(y))
        r = float(x @ y) / den if den > 0 else -np.inf
        if r > best_r + 1e-9 or (abs(r - best_r) <= 1e-9 and abs(k) < abs(best)):
            best, best_r = k, r
    return best, best_r


def analyze_following(frames: np.ndarray, case: Case, chunks: tuple[Chunk, ...],
                      reference: np.ndarray | None = None, max_lag: int | None = None,
                      series: dict[str, dict[str, MotionSeries]] | None = None) -> FollowingReport:
    """Action-following verdict for every chunk with an action.

    ``series``: where given, the motion series measured are left in it (``series["video"]`` and
    ``series["reference"]``, each keyed by target: ``camera`` or ``agent``), and series already there are
    used, not measured again (the track's identity consistency reads the same agent track).

    Raises:
        UnknownActionError: a chunk's action is not in the case's vocabulary.
    """
    expected = [(c, e) for c, e in zip(chunks, chunk_expectations(case, chunks), strict=True) if e is not None]
    series = {} if series is None else series
    gen_cache: dict[str, MotionSeries] = series.setdefault("video", {})
    ref_cache: dict[str, MotionSeries] = series.setdefault("reference", {})
    out: list[ChunkFollowing] = []
    n_pairs = len(frames) - 1
    proj_gen = np.full(n_pairs, np.nan)
    proj_ref = np.full(n_pairs, np.nan)
    floors = np.full(n_pairs, TRANSLATE_FLOOR)
    ref = reference if reference is not None and len(reference) == len(frames) else None
    report_chance_reason: str | None = None
    for c, exp in expected:
        s = _series(frames, exp.target, case, gen_cache)
        sl = _pairs(c, n_pairs)
        if sl.stop - sl.start < 1:
            continue
        v = _mean_vec(s, sl, exp.mode)
        p = _projected(s, exp)
        proj_gen[sl] = p[sl]
        floor = motion_floor(exp, s)
        floors[sl] = floor
        ok = _direction_ok(v, exp, floor)
        expectation = "vocabulary"
        target_speed = exp.magnitude
        v_ref: np.ndarray | None = None
        if ref is not None:
            rs = _series(ref, exp.target, case, ref_cache)
            v_ref = _mean_vec(rs, sl, exp.mode)
            p_ref = _projected(rs, exp)
            proj_ref[sl] = p_ref[sl]
            if not _direction_ok(v_ref, exp, motion_floor(exp, rs)):
                expectation = "reference"
                ok = _matches_reference(v, v_ref, exp.mode, floor)
            if exp.mode != "none":
                # the reference's agent may be untrackable in a chunk: then no magnitude target
                target_speed = float(np.nanmean(p_ref[sl])) if np.isfinite(p_ref[sl]).any() else None
        mag_err = None
        realised = float(np.nanmean(p[sl])) if np.isfinite(p[sl]).any() else float("nan")
        if exp.mode != "none" and target_speed is not None:
            # an agent that cannot be found in the generated chunk did not move as asked: maximal error
            mag_err = abs(realised - target_speed) / max(abs(target_speed), floor) if np.isfinite(realised) else 1.0
        onset = _onset(p[sl], floor) if exp.mode != "none" else None
        chunk_draws, why = _chance_draws(case, c.action, c.num_frames)
        chance = None if chunk_draws is None else _chance(chunk_draws, exp, v_ref if expectation == "reference" else None)
        if why is not None:
            report_chance_reason = why
        out.append(ChunkFollowing(c.index, exp.action, exp.target, exp.mode, [float(x) for x in v], realised, ok,
                                  expectation, mag_err, onset, chance, floor))
    tracking = {name: cache["agent"].tracking for name, cache in (("video", gen_cache), ("reference", ref_cache))
                if "agent" in cache and cache["agent"].tracking is not None}
    report = FollowingReport(out, None, "none", chance_reason=report_chance_reason, tracking=tracking)
    moving = [c for c in out if c.mode != "none"]
    if ref is not None and np.isfinite(proj_ref).sum() >= 4:
        # up to one chunk: a model that answers a whole chunk late shows the previous action's motion
        lag_max = max_lag if max_lag is not None else max(1, min(min(c.num_frames for c in chunks), n_pairs // 2))
        if not (np.abs(np.nan_to_num(proj_gen)) > floors).any():
            # nothing moved above the noise floor (or the agent was never found): the video never answered,
            # as an onset that never comes is the whole chunk. A flat series has no correlation peak, and
            # taking lag 0 for it scored a frozen video as answering on time.
            report.delay_frames, report.delay_method = float(lag_max), "no_response"
        else:
            lag, r = _xcorr_lag(proj_gen, proj_ref, lag_max)
            method = "xcorr_with_reference"
            # The whole picture's motion energy lags with the agent's and needs no tracking: where
            # it aligns better (a higher peak), its lag is the delay.
            e_lag, e_r = _xcorr_lag(motion_energy(frames), motion_energy(ref), lag_max)
            if e_r > r:
                lag, r, method = e_lag, e_r, "xcorr_motion_energy"
            # Where the video shows the reference's own pictures late, aligning the frames says by
            # how much directly (a camera fly-through's energy is flat and has no peak to find).
            a_lag = _aligned_lag(frames, ref, lag_max)
            if a_lag is not None:
                lag, method = a_lag, "frame_alignment"
            report.delay_frames, report.delay_method, report.correlation = float(abs(lag)), method, r
    elif moving:
        onsets = [c.onset_frames for c in moving if c.onset_frames is not None]
        if onsets:
            report.delay_frames, report.delay_method = float(np.mean(onsets)), "onset_in_chunk"
    return report


# The speed a random action is shown at when its vocabulary gives none (camera moves of unknown
# depth): well above the noise floor, so only its direction decides (10x the floor: ~2.5 px at 128 px).
_NOMINAL_SPEED = 10 * TRANSLATE_FLOOR


def _shown(m: ExpectedMotion, exp: ExpectedMotion) -> np.ndarray:
    """The mean motion a video that plays ``m`` exactly shows, in the representation ``exp`` is judged in
    (zoom: ``[zoom]``; translate / none: ``[dx, dy]``). Another target, or another kind of motion, shows
    nothing of it (a pure zoom has no mean translation, a pan no zoom)."""
    speed = m.magnitude if m.magnitude else _NOMINAL_SPEED
    if exp.mode == "zoom":
        return np.array([m.direction[0] * speed if m.mode == "zoom" and m.target == exp.target else 0.0])
    if m.mode == "translate" and m.target == exp.target:
        return np.asarray(m.direction, dtype=np.float64) * speed
    return np.zeros(2)


#: Default vocabularies that are look-up tables of synonyms (``forward``, ``move_forward``, ``w``) for
#: imported data, not a player's set of buttons: a uniform draw over their names is not a uniform draw
#: over commands, so chance is not defined on them.
_SYNONYM_TABLES = ("camera",)


def _chance_draws(case: Case, action: Any, frames: int) -> tuple[list[ExpectedMotion] | None, str | None]:
    """The motions a uniformly random player draws from for a chunk commanded ``action`` (every action of
    ``case``'s vocabulary over ``frames`` frames), or ``None`` and why chance is not defined there."""
    if isinstance(action, dict):
        return None, "a structured command (a continuous move) has no finite set of alternatives to draw from"
    try:
        vocab, space, from_case = vocabulary_for(case)
    except UnknownActionError as e:
        return None, str(e)
    if not from_case and vocab in _SYNONYM_TABLES:
        return None, f"the default {vocab!r} vocabulary lists synonyms, not a set of buttons to draw from"
    out: list[ExpectedMotion] = []
    for name in space["actions"]:
        try:
            m = expected_motion(name, case, frames)
        except UnknownActionError:
            continue
        if m is not None:
            out.append(m)
    if not out:
        return None, f"no action of the {vocab!r} vocabulary has a readable motion"
    return out, None


def _chance(draws: list[ExpectedMotion], exp: ExpectedMotion, v_ref: np.ndarray | None) -> float:
    """Share of ``draws`` that, shown exactly, pass a chunk commanded ``exp``: judged against the
    vocabulary, or against the reference's realised motion ``v_ref`` where the reference does not show
    the commanded move."""
    hits = [(_matches_reference(_shown(m, exp), v_ref, exp.mode) if v_ref is not None else
             _direction_ok(_shown(m, exp), exp)) for m in draws]
    return float(np.mean(hits))


def chance_following(case: Case, chunks: tuple[Chunk, ...], reference: np.ndarray | None = None) -> list[float]:
    """Per chunk with an action (the chunks :func:`analyze_following` judges, in order): the probability
    that it is judged followed when the action is drawn uniformly from the case's vocabulary
    (:func:`~tracks.interaction.actions.vocabulary_for`) and the video shows exactly that action's
    motion, at the vocabulary's speed. :func:`analyze_following` reports the same per chunk
    (``ChunkFollowing.chance``); this needs no generated video.

    With ``reference`` the verdict is the track's: where the reference itself does not show the
    commanded motion (an Atari paddle against the wall), a random action is judged against the
    reference's realised motion. Vocabulary entries whose motion cannot be read (structured commands)
    are left out of the draw.

    Raises:
        UnknownActionError: a chunk's action, or the case, has no vocabulary, or chance is not defined
            there (a structured command; a default vocabulary of synonyms, ``_SYNONYM_TABLES``).
    """
    vocabulary_for(case)  # raises with the message that names the missing vocabulary
    ref = reference if reference is not None and len(reference) > 1 else None
    n_pairs = len(ref) - 1 if ref is not None else None
    ref_cache: dict[str, MotionSeries] = {}
    out: list[float] = []
    for c, exp in zip(chunks, chunk_expectations(case, chunks), strict=True):
        if exp is None:
            continue
        sl = _pairs(c, n_pairs) if n_pairs is not None else None
        if sl is not None and sl.stop - sl.start < 1:
            continue  # analyze_following skips a chunk the video does not reach
        v_ref: np.ndarray | None = None
        if ref is not None and sl is not None:
            rs = _series(ref, exp.target, case, ref_cache)
            v_ref = _mean_vec(rs, sl, exp.mode)
            if _direction_ok(v_ref, exp, motion_floor(exp, rs)):
                v_ref = None
        draws, why = _chance_draws(case, c.action, c.num_frames)
        if draws is None:
            raise UnknownActionError(f"case {case.id!r}, chunk {c.index}: no chance level: {why}")
        out.append(_chance(draws, exp, v_ref))
    return out
