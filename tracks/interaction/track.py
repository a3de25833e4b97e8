"""The interaction track: action following, chunk transitions, consistency, VLM rubric."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from tracks.interaction.actions import AmbiguousActionError, UnknownActionError, agent_appearance, expected_motion
from tracks.interaction.response import REFERENCE_MOVES, chunk_response
from worldolympiad.track import EvalContext, Track, TrackOutput, mean_normalized
from worldolympiad.trackspec import TrackSpec, load_track_spec
from worldolympiad.types import Case, Chunk, MetricValue, Video

if TYPE_CHECKING:
    from tracks.interaction.motion import MotionSeries

logger = logging.getLogger(__name__)

SPEC_PATH = Path(__file__).with_name("track.yaml")


def track_spec() -> TrackSpec:
    return load_track_spec(SPEC_PATH)


class InteractionTrack(Track):
    """Action following, chunk-transition smoothness and consistency of a chunked video.

    Options (``ctx.option``): ``interaction.clip_path`` (local CLIP folder: text alignment,
    deep-feature seam signal, CLIP identity descriptor), ``interaction.seam_threshold`` (4.0),
    ``interaction.judge_samples`` (1).
    """

    name: ClassVar[str] = "interaction"
    version: ClassVar[str] = track_spec().version

    def applicability(self, case: Case) -> str | None:
        why = super().applicability(case)
        if why:
            return why
        if len(case.chunks) < 1:
            return f"case {case.id!r} has no chunks; the interaction track judges chunked, action-labelled videos"
        return None

    @classmethod
    def case_problems(cls, case: Case) -> list[tuple[str, str]]:
        """``(path in the case, message)`` for each chunk whose action the case's vocabulary does not know,
        the known names listed (``worldolympiad validate`` warns about them; scoring fails the row).
        A bare direction without an action space is a validate warning, not a problem."""
        if cls().applicability(case) is not None:
            return []
        out = []
        for i, c in enumerate(case.chunks):
            try:
                expected_motion(c.action, case, c.num_frames)
            except AmbiguousActionError:
                continue
            except UnknownActionError as e:
                out.append((f"chunks[{i}].action", str(e)))
        return out

    def evaluate(self, video: Video, case: Case, ctx: EvalContext) -> TrackOutput:
        spec = track_spec()
        chunks = _chunks_for(video, case)
        frames = video.frames
        metrics: list[MetricValue] = []
        errors: list[str] = []
        details: dict[str, Any] = {}
        scorer = None
        if ctx.option("interaction.clip_path"):
            try:
                from tracks.interaction.consistency import ClipScorer

                with ctx.timed("load_clip"):
                    scorer = ClipScorer(ctx.option("interaction.clip_path"), device=ctx.device)
            except Exception as e:  # noqa: BLE001 - reported, the model-free metrics still run
                errors.append(f"CLIP could not be loaded: {type(e).__name__}: {e}")

        ref = self._reference_frames(frames, ctx, errors, details)
        # the motion series action following measures ("video" / "reference" -> target -> series): identity
        # consistency reads the same agent track instead of tracking it again
        series: dict[str, dict[str, Any]] = {}
        framing, ref = self._framing(frames, case, ref, details, series)
        with ctx.timed("action_following"):
            follow = self._following(frames, case, chunks, ref, spec, errors, details, series)
        metrics += follow

        with ctx.timed("world_response"):
            response = chunk_response(frames, ref, chunks) if ref is not None else None
            metrics.append(self._response(response, spec, details))

        with ctx.timed("transitions"):
            metrics += self._transitions(frames, chunks, ctx, spec, scorer, details)

        with ctx.timed("consistency"):
            metrics += self._consistency(frames, case, chunks, ref, spec, scorer, details, series, framing)

        still = _stillness(details)
        if still is None and response is not None:
            still = _still_against_reference(response)
        if still is not None:
            # A video that never moves where its actions ask for motion has no transitions to smooth and
            # keeps every identity by doing nothing: those metrics cannot tell it from a good video, and
            # scoring them perfect lifted a frozen first frame to 0.59 on Atari (issue 56). They say so.
            details["stillness"] = still
            metrics = [spec[m.name].not_applicable(still) if m.name in _MOTION_DEPENDENT and m.status == "ok" else m
                       for m in metrics]

        with ctx.timed("rubric"):
            metrics.append(self._rubric(frames, video.fps, case, chunks, ctx, spec, details))

        artifacts = {}
        try:
            ctx.work_dir.mkdir(parents=True, exist_ok=True)
            path = ctx.work_dir / "interaction.json"
            path.write_text(json.dumps(details, indent=2, default=_json_default))
            artifacts["interaction"] = str(path)
        except OSError as e:
            errors.append(f"could not write interaction.json: {e}")
        measured = [m for m in metrics if m.status == "ok"]
        coverage = {"measured": len(measured), "declared": len(metrics),
                    "not_applicable": [m.name for m in metrics if m.status == "not_applicable"],
                    "failed": [m.name for m in metrics if m.status == "failed"]}
        score = mean_normalized(metrics, spec.weights)
        chance = (details.get("following") or {}).get("chance")
        if still is not None and score is not None and chance is not None:
            # A still video is the player who never presses a button: it passes the no-op chunks (and
            # those where the reference stands still) and nothing else. Its score is scaled onto
            # [0, chance], the chance level of direction accuracy being the line no model is credited
            # below (issue 56); version 20 scales where version 5-19 clipped (min(score, chance)), so
            # two still videos keep the order of what was measured on them (a world that still moves
            # in the no-op chunks) instead of tying at chance.
            coverage["capped_at_chance"] = {"score": score, "chance": chance, "reason": still}
            score = capped_still_score(score, float(chance))
        elif still is not None and score is not None:
            # No chance level to scale onto: no action to draw one from (the reference moves and the video
            # does not: issue 56's frozen real clip tied the clip at 1.000), or continuous commands (a robot's
            # end-effector deltas, a camera's moves). A video that moved in none of the chunks asking for
            # motion shows no control at all, so it is credited nothing (v22: with its end effector followed
            # by points, v21 passed a still pick's grasp chunk, 0.133 where the blob tracker had found
            # nothing to pass).
            coverage["capped_at_chance"] = {"score": score, "chance": 0.0, "reason": still}
            score = 0.0
        unfollowed = [m for m in follow if m.status == "failed"]
        if unfollowed and score is not None:
            # Action following is what this track is for: without it the rest scores a video that ignores
            # every command (a frozen video went 0.352 -> 0.667 once an unknown action failed it; issue 59).
            # No score, so the row is failed with the reason, never "ok".
            coverage["unscored"] = {"score": score, "reason": unfollowed[0].reason}
            score = None
        return TrackOutput(metrics, score, coverage, artifacts, errors)

    # ------------------------------------------------------------------ parts
    @staticmethod
    def _framing(frames: np.ndarray, case: Case, ref: np.ndarray | None, details: dict[str, Any],
                 series: dict[str, dict[str, Any]]) -> tuple[dict[str, Any] | None, np.ndarray | None]:
        """How the video's picture sits against the reference's (:func:`tracks.interaction.framing.register`;
        ``None``: as the case frames it, or no reference), and the reference to compare with. Where the picture
        moved (v25), the reference is moved with it (:func:`~tracks.interaction.framing.warp_like`: its pictures,
        its agent's speed in the video's framing) and the agent is searched for in its window moved likewise: both
        agent series are measured here for action following and identity consistency to read."""
        from tracks.interaction.actions import agent_start
        from tracks.interaction.framing import reframe_appearance, register, warp_like
        from tracks.interaction.motion import agent_motion

        if ref is None or not len(frames):
            return None, ref
        framing = register(frames[0], ref[0])
        if framing is None:
            return None, ref
        details["framing"] = framing
        ref = warp_like(ref, framing)
        app = agent_appearance(case) or agent_start(case)
        if app is not None:
            moved = reframe_appearance(app, framing)
            series.setdefault("video", {})["agent"] = agent_motion(frames, moved)
            series.setdefault("reference", {})["agent"] = agent_motion(ref, moved)
        return framing, ref

    @staticmethod
    def _reference_frames(frames: np.ndarray, ctx: EvalContext, errors: list[str],
                          details: dict[str, Any]) -> np.ndarray | None:
        """The reference's frames when it exists and has the video's shape (else ``None``, with the reason)."""
        try:
            rv = ctx.reference()
        except Exception as e:  # noqa: BLE001 - a broken reference only removes the reference comparisons
            errors.append(f"reference could not be loaded: {type(e).__name__}: {e}")
            return None
        if rv is None:
            return None
        if rv.frames.shape != frames.shape:
            fitted = _fit_reference(rv.frames, frames.shape)
            if fitted is None:
                details["reference_skipped"] = (f"reference shape {rv.frames.shape} differs from the video's "
                                                f"{frames.shape} (another length or aspect ratio); compared with "
                                                "the vocabulary only, identity not calibrated")
                return None
            details["reference_resized"] = {"from": list(rv.frames.shape[1:3]), "to": list(frames.shape[1:3])}
            return fitted
        return rv.frames

    def _following(self, frames: np.ndarray, case: Case, chunks: tuple[Chunk, ...], ref: np.ndarray | None,
                   spec: TrackSpec, errors: list[str], details: dict[str, Any],
                   series: dict[str, dict[str, Any]] | None = None) -> list[MetricValue]:
        from tracks.interaction.following import analyze_following

        names = ("direction_accuracy", "magnitude_error", "response_delay")
        if not any(c.action is not None for c in chunks):
            return [spec[n].not_applicable("no chunk of this case carries an action") for n in names]
        try:
            for c in chunks:
                expected_motion(c.action, case)  # validate every action first: a clear per-case error
        except AmbiguousActionError as e:
            # Not the video's fault: the case does not say what its actions move (issue 56).
            return [spec[n].not_applicable(str(e)) for n in names]
        except UnknownActionError as e:
            errors.append(str(e))
            return [spec[n].failed(str(e)) for n in names]
        rep = analyze_following(frames, case, chunks, reference=ref, series=series)
        details["following"] = rep.to_dict()
        details["agent_appearance"] = agent_appearance(case)
        out = []
        acc = rep.direction_accuracy
        # chance: what a uniformly random action of the vocabulary scores on these chunks, the line
        # direction accuracy has to clear before it says anything about control
        chance = {"chance": rep.chance} if rep.chance is not None else {"chance": None, "chance_reason": rep.chance_reason}
        out.append(spec["direction_accuracy"].value(acc, {"chunks": len(rep.chunks), **chance})
                   if acc is not None
                   else spec["direction_accuracy"].not_applicable("no chunk with an action could be measured"))
        mag = rep.magnitude_error
        if mag is not None:
            out.append(spec["magnitude_error"].value(mag, {"target": "reference" if ref is not None else "vocabulary"}))
        else:
            out.append(spec["magnitude_error"].not_applicable(
                "no expected magnitude: the case has no reference video and its vocabulary gives no speeds"))
        if rep.delay_frames is not None:
            fps = case.fps
            out.append(spec["response_delay"].value(rep.delay_frames / fps, {"frames": rep.delay_frames,
                                                                              "method": rep.delay_method,
                                                                              "correlation": rep.correlation}))
        else:
            out.append(spec["response_delay"].not_applicable("no moving action chunk to time the response on"))
        return out

    @staticmethod
    def _response(response: dict[str, Any] | None, spec: TrackSpec, details: dict[str, Any]) -> MetricValue:
        if response is None:
            return spec["world_response"].not_applicable(
                "no reference video of this case's shape: nothing says in which chunks the world moves")
        details["world_response"] = response
        if response["share"] is None:
            return spec["world_response"].not_applicable(
                "the reference moves in none of the chunks (median frame change under "
                f"{REFERENCE_MOVES} grey levels): nothing to respond to")
        return spec["world_response"].value(response["share"], {"moving_chunks": response["moving"],
                                                                 "responded": response["responded"]})

    def _transitions(self, frames: np.ndarray, chunks: tuple[Chunk, ...], ctx: EvalContext, spec: TrackSpec,
                     scorer: Any, details: dict[str, Any]) -> list[MetricValue]:
        from tracks.interaction.transitions import SEAM_THRESHOLD, analyze_transitions

        names = ("transition_smoothness", "seam_rate")
        if len(chunks) < 2:
            return [spec[n].not_applicable("a single chunk has no transitions") for n in names]
        feature_fn = scorer.image_features if scorer is not None else None
        rep = analyze_transitions(frames, [c.frame_start for c in chunks[1:]], feature_fn=feature_fn,
                                  threshold=float(ctx.option("interaction.seam_threshold", SEAM_THRESHOLD)))
        details["transitions"] = rep.to_dict()
        smoothness = rep.smoothness
        if smoothness is None:
            reason = "; ".join(rep.skipped) or "no boundary could be analysed"
            return [spec[n].failed(reason) for n in names]
        return [spec["transition_smoothness"].value(smoothness, {"boundaries": len(rep.boundaries),
                                                                     "signals": list(rep.signals)}),
                spec["seam_rate"].value(len(rep.seam_indices) / len(rep.boundaries), {"seams": rep.seam_indices})]

    def _consistency(self, frames: np.ndarray, case: Case, chunks: tuple[Chunk, ...], ref: np.ndarray | None,
                     spec: TrackSpec, scorer: Any, details: dict[str, Any],
                     series: dict[str, dict[str, Any]] | None = None,
                     framing: dict[str, Any] | None = None) -> list[MetricValue]:
        from tracks.interaction.consistency import calibrate_identity, text_alignment

        out = []
        if scorer is None:
            out.append(spec["text_alignment"].not_applicable("no CLIP weights: set interaction.clip_path to a local CLIP folder"))
        elif not any(c.caption for c in chunks):
            out.append(spec["text_alignment"].not_applicable("no chunk has a caption"))
        else:
            ta = text_alignment(frames, chunks, scorer)
            details["text_alignment"] = ta
            out.append(spec["text_alignment"].value(ta["mean"], {"per_chunk": ta["per_chunk"]}))
        if len(chunks) < 2:
            out.append(spec["identity_consistency"].not_applicable("needs at least two chunks"))
            return out
        series = series or {}
        ic = self._identity(frames, case, chunks, scorer, (series.get("video") or {}).get("agent"), framing)
        ic_ref = (self._identity(ref, case, chunks, scorer, (series.get("reference") or {}).get("agent"), framing)
                  if ref is not None else None)
        erased = next((x["erased"] for x in (ic, ic_ref) if x is not None and x.get("erased")), None)
        if erased is not None:
            # v14: the agent was followed by its motion, its colour being gone from the video; a size and
            # colour read off that track compare codec smears, not the agent (Freeway at crf 35: 0.0)
            details["identity_consistency"] = {"video": ic, "reference": ic_ref}
            out.append(spec["identity_consistency"].not_applicable(erased))
            return out
        cal = calibrate_identity(ic["per_chunk"], ic_ref["per_chunk"] if ic_ref is not None else None)
        details["identity_consistency"] = {**cal, "video": ic, "reference": ic_ref}
        if cal["mean"] is None:
            out.append(spec["identity_consistency"].not_applicable(cal["reason"]))
            return out
        out.append(spec["identity_consistency"].value(cal["mean"], {
            "per_chunk": cal["per_chunk"], "video_per_chunk": ic["per_chunk"], "calibration": cal["calibration"],
            "reference_per_chunk": None if ic_ref is None else ic_ref["per_chunk"],
            "descriptor": ic["descriptor"], "region": ic["region"]}))
        return out

    @staticmethod
    def _identity(frames: np.ndarray, case: Case, chunks: tuple[Chunk, ...], scorer: Any,
                  agent: MotionSeries | None = None, framing: dict[str, Any] | None = None) -> dict[str, Any]:
        """Similarity of each later chunk to the first: the agent, else every coloured object the case names, else the place.

        ``agent``: the agent's track of these frames where action following has measured it already
        (:func:`~tracks.interaction.motion.agent_motion` of the case's agent appearance); ``framing``: how these
        frames' picture sits against the reference's (:meth:`_framing`): the objects' boxes move with it."""
        from tracks.interaction.consistency import agent_identity_consistency, identity_consistency
        from tracks.interaction.framing import reframe_appearance
        from tracks.interaction.motion import agent_motion

        targets = []
        app = agent_appearance(case)
        if app is not None:
            targets.append(("agent", app))
        elif case.physics is not None:
            targets += [(str(o.get("name", i)), {"color": o["color"], "window": None, "box": o.get("box"),
                                                 "resolution": [case.height, case.width]})
                        for i, o in enumerate(case.physics.objects) if o.get("color")]
        if framing is not None:
            targets = [(name, reframe_appearance(app_, framing)) for name, app_ in targets]
        if not targets:
            return identity_consistency(frames, chunks, scorer)
        per = {}
        for name, appearance in targets:
            m = agent if name == "agent" and agent is not None else agent_motion(frames, appearance)
            assert m.areas is not None and m.colors is not None
            if m.tracking == "motion":
                return {"erased": f"the {name}'s colour is erased (in nine frames of ten no pixel of its window holds "
                                  "half its contrast, so it was followed by its motion): its size and colour "
                                  "cannot be compared", "per_chunk": None}
            # the component's size as its coverage (v17): a codec spreads a small sprite over more pixels, and its
            # pixel count crossed MIN_AREA_PX (Freeway's 12 px chicken read 18 px at crf 23, so its colour was
            # compared with later chunks' 3-6 px sightings; clean identity 0.70 against 1.0 lossless)
            sizes = m.coverage if m.coverage is not None else m.areas
            # a named object may be hidden for a chunk (a gripper over the cube it grasps): unseen, not changed (v23)
            per[name] = agent_identity_consistency(chunks, sizes, m.colors, occludable=name != "agent")
        per_chunk = [[v for v in x if v is not None] for x in zip(*(v["per_chunk"] for v in per.values()), strict=True)]
        return {"per_object": {k: v["per_chunk"] for k, v in per.items()},
                "per_chunk": [float(np.mean(x)) if x else None for x in per_chunk],
                "mean": float(np.mean([v["mean"] for v in per.values()])), "descriptor": "area+colour",
                "region": "agent" if app is not None else "objects"}

    def _rubric(self, frames: np.ndarray, fps: float, case: Case, chunks: tuple[Chunk, ...], ctx: EvalContext,
                spec: TrackSpec, details: dict[str, Any]) -> MetricValue:
        from tracks.interaction.rubric import rubric_scores

        try:
            judge = ctx.judge()
        except Exception as e:  # noqa: BLE001
            return spec["vlm_rubric"].failed(f"judge could not be built: {type(e).__name__}: {e}")
        if judge is None:
            return spec["vlm_rubric"].not_applicable("no judge configured (--judge none)")
        r = rubric_scores(judge, frames, fps, chunks, case.prompt, samples=int(ctx.option("interaction.judge_samples", 1)))
        details["vlm_rubric"] = r
        if r["score"] is None:
            return spec["vlm_rubric"].failed("the judge answered no rubric item: " + "; ".join(r["failures"].values())[:500])
        return spec["vlm_rubric"].value(r["score"], {"items": r["items"], "failures": r["failures"]})


# Metrics a still video passes by doing nothing (no seam, no identity change, no response to time).
_MOTION_DEPENDENT = ("transition_smoothness", "seam_rate", "identity_consistency", "response_delay")


def capped_still_score(score: float, chance: float) -> float:
    """A still video's track score: its measured ``score`` (in ``[0, 1]``) scaled onto ``[0, chance]`` (v20).

    Never above chance, and monotone in ``score``: of two still videos the one whose world responds where
    its reference's does keeps its lead (``min(score, chance)``, versions 5-19, tied every still video
    scoring above chance)."""
    return float(chance) * float(np.clip(score, 0.0, 1.0))


def _stillness(details: dict[str, Any]) -> str | None:
    """Why the motion-dependent metrics cannot judge this video (it moved in none of the chunks whose
    action asks for motion), or ``None`` when it moved in some or no chunk asks for motion."""
    follow = details.get("following") or {}
    moved = follow.get("moved_fraction")
    if moved is None or moved > 0:
        return None
    asked = sum(1 for c in follow.get("chunks", []) if c["mode"] != "none" and c["expectation"] == "vocabulary")
    return (f"the video moved in none of the {asked} chunk(s) whose action asks for motion: a still video has "
            "no transitions, identity changes or response delay to judge (direction_accuracy and "
            "magnitude_error score it)")


def _still_against_reference(response: dict[str, Any]) -> str | None:
    """Why the video stands still where its reference moves (it changes in none of the chunks in which
    the reference moves, :func:`~tracks.interaction.response.chunk_response`), else ``None``. A video that
    moves, but not the way its reference does (version 12: late, elsewhere, churning), is not still: its
    ``world_response`` and the other metrics judge it.

    Chunk by chunk, not over the whole video (version 8 took the median change of all frames): a video
    that froze four chunks of six was "still" and capped like one that froze all of them
    (issue 56: ties between defect strengths)."""
    if not response["moving"] or response["moved"]:
        return None
    per = [p for p in response["per_chunk"] if p["moves"] is not None]
    ref_e = float(np.median([p["reference"] for p in per]))
    gen_e = float(np.median([p["video"] for p in per]))
    return (f"the video stands still (median change {gen_e:.2f} grey levels a frame) in all {len(per)} chunk(s) "
            f"where its reference moves ({ref_e:.2f}): a still video has no transitions, identity changes or "
            "response delay to judge")


def _fit_reference(ref: np.ndarray, shape: tuple[int, ...]) -> np.ndarray | None:
    """The reference resized to a video of ``shape`` (``[T, H, W, 3]``), or ``None`` when it cannot stand in.

    Users write their videos at any size: a reference of the same length and aspect ratio (within
    2 %, the rounding of even sizes) is the same footage at another scale, and every motion the
    track compares is a fraction of the image size.
    """
    import cv2

    T, H, W = shape[:3]
    if len(ref) != T or abs((ref.shape[2] / ref.shape[1]) / (W / H) - 1.0) > 0.02:
        return None
    interp = cv2.INTER_AREA if ref.shape[2] > W else cv2.INTER_LINEAR
    return np.stack([cv2.resize(np.ascontiguousarray(f), (W, H), interpolation=interp) for f in ref])


def _chunks_for(video: Video, case: Case) -> tuple[Chunk, ...]:
    """The case's chunks (with actions and captions), clipped to the video's length.

    A model may return fewer frames than asked; chunks past the end are dropped and the last
    one is cut, so every metric judges only frames that exist.
    """
    import dataclasses

    chunks = case.chunks or video.chunks
    T = video.num_frames
    return tuple(dataclasses.replace(c, frame_end=min(c.frame_end, T)) for c in chunks
                 if c.frame_start < T and c.frame_end - c.frame_start > 0)


def _json_default(o: Any) -> Any:
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    return str(o)
