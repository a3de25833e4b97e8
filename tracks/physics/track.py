"""The physical track: segmentation → tracking → model-free checks (+ MLLM judge) → rule verdicts.

Pipeline for one (video, case):

1. Object hints: the case's ``physics.objects`` (name, colour, box, ``role``, ``rigid``); when
   they carry no colour, the moving objects (motion segmentation) of the reference video, or
   of the video itself when there is no reference, lend theirs.
2. Segment and track the generated video (and the reference, when there is one) with the
   same hints.
3. Applicable rules: the case's ``physics.rules``; else the judge's stage-1 answers on the
   reference (on the video itself when the case has no reference); else the rules whose
   phenomenon the model-free detectors find in the reference (gravity, impact,
   combustibility, color_mixing; the others need declared rules or a judge).
4. Per rule: its model-free checks (``rules.yaml``) on the generated video alone — never
   on its likeness to the reference — then the judge's stage-2 compliance verdict, combined
   by :func:`tracks.physics.scoring.decide`.
5. Metrics from :func:`tracks.physics.scoring.summarize`, plus ``trajectory_agreement`` (the
   objects' paths against the reference), reported beside the rule checks and kept out of
   the track score (``track.yaml``), so a case with a reference and one without are scored
   by the same evidence; evidence JSON and a set-of-mark contact sheet in ``ctx.work_dir``.

Options (``ctx.option``): ``physics.segmenter`` (``opencv`` | ``sam:/ckpt.pth``),
``physics.judge_samples`` (k = 3), ``physics.judge_frames`` (8), ``physics.max_frames``
(128, the protocol's cap), ``physics.max_objects`` (4).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from worldolympiad.track import EvalContext, Track, TrackOutput, mean_normalized
from worldolympiad.trackspec import TrackSpec, load_track_spec
from worldolympiad.types import Case, MetricValue, Video, jsonable

logger = logging.getLogger(__name__)

SPEC_PATH = Path(__file__).with_name("track.yaml")
#: rules the model-free detectors can find on their own in a reference video.
AUTO_RULES = ("gravity", "impact", "combustibility", "color_mixing")


def track_spec() -> TrackSpec:
    """The physics track's declared metrics and score weights (``track.yaml``)."""
    return load_track_spec(SPEC_PATH)


def _metric(name: str, raw: float | None, reason: str, details: dict[str, Any] | None = None) -> MetricValue:
    """``name``'s value normalised by its declared bounds, or not applicable (``reason``) when ``raw`` is None."""
    spec = track_spec()[name]
    if raw is None:
        return spec.not_applicable(reason)
    return spec.value(raw, details)


def _verdict_args(d: dict[str, Any]) -> dict[str, Any]:
    """A stage-1 ``JudgeVerdict.to_dict()`` back into constructor arguments (for the accounting)."""
    keys = ("value", "agreement", "votes", "calls", "cached", "error", "samples", "failures", "prompt_tokens",
            "completion_tokens", "frames", "notes")
    return {k: d[k] for k in keys if k in d}


def _judge_failure(asked: list[Any]) -> str | None:
    """``"14 of 14 questions failed: 14 timeout"`` when any question got no verdict for a judge failure."""
    failed = [v for v in asked if v.value is None and v.error and not v.votes]
    if not failed:
        return None
    kinds: dict[str, int] = {}
    for v in failed:
        for k in v.failures or {"error": 1}:
            kinds[k] = kinds.get(k, 0) + 1
    return (f"{len(failed)} of {len(asked)} judge question(s) failed: "
            + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) + f"; last: {failed[-1].error[:300]}")


def _judge_accounting(asked: list[Any]) -> dict[str, Any]:
    """Per-row judge accounting: questions, requests, failures by kind, tokens, votes."""
    kinds: dict[str, int] = {}
    for v in asked:
        for k, n in (v.failures or {}).items():
            kinds[k] = kinds.get(k, 0) + n
    return {
        "questions": len(asked),
        "failed_questions": sum(1 for v in asked if v.value is None and v.error and not v.votes),
        "requests": sum(v.calls for v in asked),
        "cached_samples": sum(v.cached for v in asked),
        "failures_by_kind": kinds,
        "prompt_tokens": sum(v.prompt_tokens for v in asked),
        "completion_tokens": sum(v.completion_tokens for v in asked),
        "answered_samples": sum(v.samples for v in asked),
        "independent_votes": sum(len(v.votes) for v in asked),
        "identical_samples": sum(v.identical for v in asked),
        "questions_on_fewer_frames": sum(1 for v in asked if v.notes),
    }


def _judge_metric(value: float | None, has_judge: bool, no_rules: str | None, judge_failed: str | None) -> MetricValue:
    """``judge_compliance``: not applicable without a judge or without a rule; **failed** (with what
    went wrong) when the judge was asked and gave no verdict — never a silent blank."""
    if not has_judge:
        return _metric("judge_compliance", None, "no judge configured (--judge none): model-free checks only")
    if value is None and judge_failed:
        return track_spec()["judge_compliance"].failed(f"the judge gave no usable verdict: {judge_failed}")
    return _metric("judge_compliance", value, no_rules or "the judge gave no usable verdict")


@dataclass
class Analysis:
    """Segmentation + tracks of one video."""

    frames: np.ndarray
    fps: float
    seg: Any
    tracks: list[Any]


def _cap_frames(video: Video, max_frames: int) -> tuple[np.ndarray, float]:
    T = video.num_frames
    if max_frames >= T:
        return video.frames, video.fps
    idx = np.unique(np.linspace(0, T - 1, max_frames).round().astype(int))
    return video.frames[idx], video.fps * len(idx) / T


def case_camera_moves(case: Case) -> bool:
    """Whether the case declares a camera whose pose changes over the clip."""
    poses = case.camera.poses if case.camera is not None else np.zeros((0, 4, 4))
    return bool(len(poses) and float(np.abs(poses - poses[0]).max()) > 1e-6)


def case_focal(case: Case, height: int) -> float | None:
    """The case camera's vertical focal length in pixels of a video ``height`` rows tall, or ``None``
    when the case declares no camera or a moving one. A model that keeps the case's view keeps its
    focal length; a resized video scales it."""
    cam = case.camera
    if cam is None or case.height <= 0 or case_camera_moves(case):
        return None
    fy = float(cam.K[1, 1])
    return fy * height / case.height if fy > 0 else None


def analyse(frames: np.ndarray, fps: float, segmenter: Any, hints: list[dict[str, Any]]) -> Analysis:
    """Segment and track one video."""
    from tracks.physics.tracking import track_objects

    seg = segmenter.segment(frames, hints)
    return Analysis(frames, fps, seg, track_objects(frames, seg))


def scale_hints(hints: list[dict[str, Any]], case: Case, shape: tuple[int, int]) -> list[dict[str, Any]]:
    """Boxes/points are in pixels of the case's resolution; rescale them to a video of ``shape`` (H, W)."""
    sy, sx = shape[0] / case.height, shape[1] / case.width
    if (sy, sx) == (1.0, 1.0):
        return hints
    out = []
    for h in hints:
        h = dict(h)
        if h.get("box") is not None:
            x0, y0, x1, y1 = h["box"]
            h["box"] = [x0 * sx, y0 * sy, x1 * sx, y1 * sy]
        if h.get("point") is not None:
            h["point"] = [h["point"][0] * sx, h["point"][1] * sy]
        out.append(h)
    return out


def object_hints(case: Case, frames: np.ndarray | None, segmenter: Any) -> list[dict[str, Any]]:
    """Case objects, with colours learned from moving objects when the case gives none.

    ``frames`` is the video the colours are learned from: the reference when there is one,
    else the judged video itself (motion segmentation finds what moves; the evidence then
    names those objects ``learned: true``, with the case's names where it gives them).
    """
    hints = [dict(o) for o in (case.physics.objects if case.physics else ())]
    if any(h.get("color") is not None for h in hints) or frames is None:
        return hints
    from tracks.physics.segmentation import OpenCVSegmenter
    from tracks.physics.tracking import track_objects

    # Motion-only pass: the moving objects' mean colours become hints.
    seg = OpenCVSegmenter(max_objects=getattr(segmenter, "max_objects", 4)).segment(frames, ())
    tracks = [t for t in track_objects(frames, seg) if t.visible.sum() >= max(3, len(frames) // 4)]
    tracks.sort(key=lambda t: -t.displacement)
    learned = []
    for k, tr in enumerate(tracks[: getattr(segmenter, "max_objects", 4)]):
        base = dict(hints[k]) if k < len(hints) else {}
        base.setdefault("name", f"object{k + 1}")
        base.update(color=[int(round(c)) for c in tr.mean_color], learned=True)
        learned.append(base)
    return learned or hints


def _subject_direction(rules: Any) -> str | None:
    """``"shrinks"`` when a rule's subject only shrinks (a phase change going down, fire's fuel),
    ``"grows"`` when it grows (frost over a window), else ``None``."""
    from tracks.physics.checks.phase_change import DIRECTION

    if any(DIRECTION.get(r, 0) < 0 or r == "combustibility" for r in rules):
        return "shrinks"
    if any(DIRECTION.get(r, 0) > 0 for r in rules):
        return "grows"
    return None


def mark_shrinking(hints: list[dict[str, Any]], rules: Any) -> list[dict[str, Any]]:
    """Flag the ``role: subject`` object of a rule whose subject only shrinks (``shrinks: true``: the
    segmenter bounds its mask by its first-frame box, ``segmentation._size_cap``) or grows
    (``grows: true``: its mask may cover most of the frame)."""
    flag = _subject_direction(rules)
    if flag is None:
        return hints
    return [{**h, flag: True} if h.get("role") == "subject" else h for h in hints]


def trajectory_agreement(gen: Analysis, ref: Analysis, cap: float = 0.5) -> tuple[float | None, dict[str, Any]]:
    """Mean distance (frame heights) between each reference object's centroid and the same
    object's centroid in the video, frame by frame (time-resampled when lengths differ).

    Frames where the reference shows the object and the video does not count ``cap``; each
    distance is capped at ``cap``. The simulator's reference is the physically correct outcome,
    so this is a graded, model-free fidelity measure that complements the rule checks.
    """
    from tracks.physics.checks import object_names, series

    per: dict[str, float] = {}
    Tr, Tg = len(ref.frames), len(gen.frames)
    idx = np.clip(np.round(np.linspace(0, Tg - 1, Tr)).astype(int), 0, Tg - 1)
    for n in object_names(ref.tracks, named=True):  # unnamed blobs have no counterpart to compare with
        rc = series(ref.tracks, n)[0] / ref.frames.shape[1]
        gc = series(gen.tracks, n, T=Tg)[0][idx] / gen.frames.shape[1]
        seen = ~np.isnan(rc[:, 0])
        if seen.sum() == 0:
            continue
        d = np.linalg.norm(gc[seen] - rc[seen], axis=1)
        per[n] = float(np.mean(np.minimum(np.nan_to_num(d, nan=cap), cap)))
    if not per:
        return None, {}
    return float(np.mean(list(per.values()))), {"per_object": per}


def reference_rule_verdicts(case: Case, reference: Video, work_dir: Path) -> list[dict[str, Any]]:
    """The per-rule evidence (``physics_evidence.json``'s ``rules``) when the case's reference
    is scored against itself, model-free. A rule the case declares should pass there: one with
    no verdict on the simulator's own video can fail a model but never pass it
    (``bench/bench_physics_coverage.py``)."""
    ctx = EvalContext(work_dir=work_dir, reference_loader=lambda: reference)
    PhysicsTrack().evaluate(reference, case, ctx)
    rules: list[dict[str, Any]] = json.loads((work_dir / "physics_evidence.json").read_text())["rules"]
    return rules


class PhysicsTrack(Track):
    """Mechanics, thermal and material rules; see the module docstring for the pipeline."""

    name: ClassVar[str] = "physics"
    version: ClassVar[str] = track_spec().version


    @classmethod
    def rules(cls) -> list[dict[str, Any]]:
        """The 14-rule taxonomy of ``rules.yaml`` (``worldolympiad ls rules`` reads it here)."""
        from tracks.physics.rules import list_rules

        return list_rules()

    def applicability(self, case: Case) -> str | None:
        why = super().applicability(case)
        if why:
            return why
        if not (case.physics and (case.physics.rules or case.physics.objects)) and not case.reference and "generator" not in case.metadata:
            return (f"case {case.id!r} has no physics section (rules/objects) and no reference video; "
                    "the physical track needs one of them to know which rules apply")
        return None

    def evaluate(self, video: Video, case: Case, ctx: EvalContext) -> TrackOutput:
        from tracks.physics import judge_protocol as jp
        from tracks.physics.checks import CheckInput, rule_key, run_check
        from tracks.physics.rules import get_rule, load_rules
        from tracks.physics.scoring import RuleVerdict, decide, summarize
        from tracks.physics.segmentation import build_segmenter

        errors: list[str] = []
        max_frames = int(ctx.option("physics.max_frames", 128))
        samples = int(ctx.option("physics.judge_samples", 3))
        n_judge_frames = int(ctx.option("physics.judge_frames", 8))
        seg_spec = str(ctx.option("physics.segmenter", "opencv"))
        segmenter = build_segmenter(seg_spec, device=ctx.device, max_objects=int(ctx.option("physics.max_objects", 4)))

        ref_video = ctx.reference()
        frames, fps = _cap_frames(video, max_frames)
        ref_frames, ref_fps = _cap_frames(ref_video, max_frames) if ref_video is not None else (None, 0.0)

        with ctx.timed("segmentation"):
            hints = mark_shrinking(object_hints(case, ref_frames if ref_frames is not None else frames, segmenter),
                                   case.physics.rules if case.physics else ())
            gen = analyse(frames, fps, segmenter, scale_hints(hints, case, frames.shape[1:3]))
            ref = (analyse(ref_frames, ref_fps, segmenter, scale_hints(hints, case, ref_frames.shape[1:3]))
                   if ref_frames is not None else None)

        judge = ctx.judge()
        rules_all = load_rules()
        declared = [r for r in (case.physics.rules if case.physics else ()) if r in rules_all]
        unknown = [r for r in (case.physics.rules if case.physics else ()) if r not in rules_all]
        if unknown:
            errors.append(f"unknown rule ids in case physics.rules ignored: {unknown}")

        def check_input(rule: str, src: Any) -> CheckInput:
            # The checks judge the video alone (tracks/physics/checks/__init__.py); the reference
            # only lends object colours, says which rules apply when nothing else does (stage 1) and,
            # below, feeds the separate trajectory agreement.
            return CheckInput(src.tracks, src.frames, src.fps, rule, objects=scale_hints(hints, case, src.frames.shape[1:3]),
                              noise=src.seg.noise, focal=case_focal(case, src.frames.shape[1]),
                              camera_moves=case_camera_moves(case),
                              case_rules=tuple(case.physics.rules) if case.physics else ())

        def cached_check(cache: dict[tuple[str, str], Any], cname: str, rule: str, src: Any, where: str = "") -> Any:
            """``cname``'s result on ``src`` (the video, or the reference: ``where``), run once per case and
            what it reads of the rule (:func:`~tracks.physics.checks.rule_key`: a phase or mixing check per
            rule, the ride-along checks per dimension); ``None`` when it raised (logged in ``errors``: one
            broken check must not sink the case)."""
            key = (cname, rule_key(cname, rule))
            if key not in cache:
                try:
                    cache[key] = run_check(cname, check_input(rule, src))
                except Exception as e:
                    logger.exception("check %s failed on %scase %s", cname, f"{where} of " if where else "", case.id)
                    errors.append(f"check {cname} ({rule}){f' on {where}' if where else ''}: {type(e).__name__}: {e}")
                    return None
            return cache[key]

        # ---- stage 1: which rules apply
        applicability: dict[str, str] = {}
        stage1: dict[str, Any] = {}
        unasked: list[str] = []  # rules whose applicability question the judge failed
        if declared:
            applicability = dict.fromkeys(declared, "case")
        elif judge is not None:
            # Stage 1 on the reference; a case without one is asked about the video itself.
            src, tag = (ref, "judge") if ref is not None else (gen, "judge_on_video")
            with ctx.timed("judge"):
                marks = jp.marked_frames(src.frames, src.seg, src.tracks, n_judge_frames)
                for rid, rule in rules_all.items():
                    related = jp.ask(judge, jp.applicability_prompt(rule, case.prompt, src.tracks), marks,
                                     ("related", "confidence"), "related", samples)
                    stage1[rid] = related.to_dict()
                    if related.error:
                        errors.append(f"judge stage 1 ({rid}): {related.error}")
                    if related.value:
                        applicability[rid] = tag
                    elif related.value is None and related.error:
                        unasked.append(rid)
        # Without a judge, or where it failed a question, the reference's own checks say which of the
        # rules they can detect apply: a failed judge leaves exactly the evidence of a run without one.
        # A rule is found when its phenomenon's check passes on the reference and none of its other checks
        # fails there: a rule the reference itself breaks (an arm's parts read as a body that vanishes) is
        # one these checks cannot judge on this case, and would score the reference's own likeness ~0.
        fallback = AUTO_RULES if judge is None else tuple(r for r in AUTO_RULES if r in unasked)
        detection: dict[str, dict[str, str]] = {}
        if not declared and ref is not None and fallback:
            ref_cache: dict[tuple[str, str], Any] = {}
            with ctx.timed("checks"):
                for rid in fallback:
                    found = detection.setdefault(rid, {})
                    for i, cname in enumerate(rules_all[rid].checks):
                        res = cached_check(ref_cache, cname, rid, ref, "the reference")
                        found[cname] = "failed" if res is None else res.status  # a broken check finds nothing
                        if found[cname] in ("fail", "failed") or (i == 0 and found[cname] != "pass"):
                            break
                    else:  # its own check passed and none of the others failed
                        applicability[rid] = "checks"

        # ---- stage 2: evidence per applicable rule
        verdicts: list[RuleVerdict] = []
        cache: dict[tuple[str, str], Any] = {}
        gen_marks = None
        for rid, source in applicability.items():
            rule = get_rule(rid)
            v = RuleVerdict(rule, source)
            with ctx.timed("checks"):
                for cname in rule.checks:
                    res = cached_check(cache, cname, rid, gen)
                    if res is not None:
                        v.checks.append(res)
            if judge is not None:
                with ctx.timed("judge"):
                    if gen_marks is None:
                        gen_marks = jp.marked_frames(gen.frames, gen.seg, gen.tracks, n_judge_frames)
                    v.judge = jp.ask(judge, jp.compliance_prompt(rule, case.prompt, gen.tracks), gen_marks,
                                     ("compliant", "confidence", "explanation"), "compliant", samples)
                    if v.judge.error:
                        errors.append(f"judge ({rid}): {v.judge.error}")
            verdicts.append(decide(v, samples))

        summary = summarize(verdicts)
        evidence_mode = "model-free checks + MLLM judge" if judge is not None else "model-free checks only (no judge configured)"
        no_rules = "no applicable rule (none declared, none detected)" if not verdicts else None
        broken = {rid: [c for c, st in found.items() if st in ("fail", "failed")]
                  for rid, found in detection.items() if found.get(rules_all[rid].checks[0]) == "pass"}
        if not verdicts and any(broken.values()):
            no_rules = ("no applicable rule: none declared, and the reference itself fails checks of the rules its "
                        "motion shows (" + "; ".join(f"{rid}: {', '.join(cs)}" for rid, cs in broken.items() if cs)
                        + "), so they cannot judge this case; declare the case's physics.rules or configure a judge")
        asked = [v.judge for v in verdicts if v.judge is not None] + [jp.JudgeVerdict(**_verdict_args(d))
                                                                        for d in stage1.values()]
        judge_failed = _judge_failure(asked) if judge is not None else None
        if not verdicts and unasked and len(unasked) == len(stage1):
            no_rules = (f"no applicable rule: the judge failed all {len(unasked)} applicability questions "
                        f"({judge_failed}) and the model-free checks detected none")
        details = {"rules": [v.to_dict() for v in verdicts]}
        metrics = [
            _metric("rule_pass_rate", summary["pass_rate"], no_rules or "no applicable rule got a verdict",
                    {**details, "evidence": evidence_mode}),
            _metric("kinematic_compliance", summary["kinematic_compliance"],
                    no_rules or "no model-free check applied to the applicable rules"),
            _judge_metric(summary["judge_compliance"], judge is not None, no_rules, judge_failed),
        ]
        if ref is not None:
            err, tdet = trajectory_agreement(gen, ref)
            metrics.append(_metric("trajectory_agreement", err, "no named object was tracked in the reference", tdet))
        else:
            metrics.append(_metric("trajectory_agreement", None, "the case has no reference video"))
        for d in ("mechanics", "thermal", "material"):
            metrics.append(_metric(f"pass_rate_{d}", summary[f"pass_rate_{d}"], f"no applicable {d} rule got a verdict"))
        metrics.append(_metric("rule_coverage", summary["coverage"], no_rules or "no applicable rule"))

        coverage = {
            "evidence": evidence_mode,
            "applicable_rules": list(applicability),
            "applicability_source": applicability,
            # the statuses of each detectable rule's checks on the reference (rules found without a judge)
            "detection_on_reference": detection or None,
            "judged_rules": summary["judged"],
            "rule_coverage": summary["coverage"],
            "decided_by": summary["decided_by"],
            "segmenter": segmenter.describe(),
            "judge": judge.describe() if judge is not None else None,
            "judge_stats": judge.stats() if judge is not None and hasattr(judge, "stats") else None,
            "judge_questions": _judge_accounting(asked) if judge is not None else None,
            "reference": ref is not None,
        }
        artifacts = self._write_artifacts(ctx, gen, verdicts, stage1, coverage, n_judge_frames)
        return TrackOutput(metrics, mean_normalized(metrics, track_spec().weights), coverage, artifacts, errors)

    @staticmethod
    def _write_artifacts(ctx: EvalContext, gen: Analysis, verdicts: list[Any], stage1: dict[str, Any],
                         coverage: dict[str, Any], n: int) -> dict[str, str]:
        from tracks.physics.judge_protocol import marked_frames

        out: dict[str, str] = {}
        try:
            ctx.work_dir.mkdir(parents=True, exist_ok=True)
            ev = ctx.work_dir / "physics_evidence.json"
            ev.write_text(json.dumps(jsonable({
                "coverage": coverage,
                "stage1": stage1,
                "rules": [v.to_dict() for v in verdicts],
                "tracks": [t.summary() for t in gen.tracks],
                # what was segmented and how: per object, frames found by colour or by motion
                "segmentation": {"backend": gen.seg.backend, "found_by": gen.seg.found_by},
            }), indent=1))
            out["physics_evidence"] = str(ev)
            from PIL import Image

            sheet = np.concatenate(marked_frames(gen.frames, gen.seg, gen.tracks, n), axis=1)
            p = ctx.work_dir / "physics_marks.png"
            Image.fromarray(sheet).save(p)
            out["physics_marks"] = str(p)
        except OSError as e:
            logger.warning("could not write physics artifacts to %s: %s", ctx.work_dir, e)
        return out
