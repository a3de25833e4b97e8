"""The long-video (LV-Bench) track: Video Drift Error per quality signal plus a normalised variant,
read together with a dynamic degree (:mod:`tracks.longvideo.dynamics`): score = (1 - nVDE) x motion gate."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import numpy as np

from tracks.longvideo.drift import measure_drift
from tracks.longvideo.dynamics import motion_gate
from tracks.longvideo.learned import any_weights_given, build_learned_signals
from tracks.longvideo.signals import CLARITY_SIDE, DYNAMIC_EVIDENCE, DYNAMIC_SIDE, SIGNALS
from tracks.longvideo.vde import DEFAULT_NUM_CHUNKS
from worldolympiad.options import as_bool
from worldolympiad.track import EvalContext, Track, TrackOutput, mean_normalized
from worldolympiad.trackspec import TrackSpec, load_track_spec
from worldolympiad.types import Case, MetricValue, Video

logger = logging.getLogger(__name__)

SPEC_PATH = Path(__file__).with_name("track.yaml")


def track_spec() -> TrackSpec:
    return load_track_spec(SPEC_PATH)


class LongVideoTrack(Track):
    """VDE (REFERENCE.md §B) over clarity, motion, aesthetic, background, subject, dynamic.

    Options (``ctx.option``):
        ``longvideo.num_chunks`` (10), ``longvideo.max_side`` (128 px analysis size),
        ``longvideo.frame_stride`` (1), ``longvideo.signals`` (comma list), ``longvideo.dynamic_side`` (32 px grid
        of the model-free dynamic signal, v6), ``longvideo.dynamic_evidence`` (grey levels a grid pixel must change
        by for its flow to count; 3 since v7), ``longvideo.clarity_side`` (48 px grid of the model-free clarity
        signal, v8), ``longvideo.aesthetic_parts`` (the model-free aesthetic signal drifts by its three parts, v9),
        ``longvideo.musiq_path`` / ``amt_path`` / ``clip_path`` / ``aesthetic_clip_path`` / ``aesthetic_head`` /
        ``dino_path`` / ``raft_path`` (local weights for LV-Bench's published signals, see
        :mod:`tracks.longvideo.learned`; each ``vde_*`` metric's ``details.provenance`` says what computed it).

    Score (track v3): the drift score ``1 - nvde`` times the ``dynamic_degree`` gate, which is 1 unless the
    case's reference or actions demand motion the video does not show (a still or frozen video → 0); see
    :mod:`tracks.longvideo.dynamics`.
    """

    name: ClassVar[str] = "longvideo"
    version: ClassVar[str] = track_spec().version

    def applicability(self, case: Case) -> str | None:
        why = super().applicability(case)
        if why:
            return why
        if case.num_frames < 2 * DEFAULT_NUM_CHUNKS:
            return (f"case {case.id!r} has {case.num_frames} frames; VDE needs at least "
                    f"{2 * DEFAULT_NUM_CHUNKS} (two per chunk, N = {DEFAULT_NUM_CHUNKS})")
        return None

    def evaluate(self, video: Video, case: Case, ctx: EvalContext) -> TrackOutput:
        spec = track_spec()
        n = int(ctx.option("longvideo.num_chunks", DEFAULT_NUM_CHUNKS))
        signals = ctx.option("longvideo.signals", SIGNALS)
        if isinstance(signals, str):
            signals = tuple(s.strip() for s in signals.split(",") if s.strip())
        metric_names = [f"vde_{s}" for s in signals]
        if video.num_frames < n:
            reason = f"video has {video.num_frames} frames, fewer than the {n} VDE chunks"
            failed = [spec[m].failed(reason) for m in [*metric_names, "nvde"]]
            return TrackOutput(failed, None, {"measured": 0, "requested": len(failed)}, errors=[reason])
        errors: list[str] = []
        # Which signals run on their published models (local weights given) and which fall back, with why;
        # without any weight option nothing is loaded and no torch is imported here.
        if any_weights_given(ctx.options):
            with ctx.timed("load_models"):
                loaded = build_learned_signals(ctx.options, device=ctx.device, fps=video.fps)
        else:
            loaded = build_learned_signals({}, fps=video.fps)  # provenance lines only: nothing is loaded
        errors.extend(loaded.errors)
        learned: dict[str, Callable[[np.ndarray], float]] = loaded.signals
        with ctx.timed("signals"):
            report = measure_drift(video.frames, num_chunks=n, signals=tuple(signals),
                                   max_side=int(ctx.option("longvideo.max_side", 128)),
                                   frame_stride=int(ctx.option("longvideo.frame_stride", 1)), learned=learned,
                                   provenance=loaded.provenance,
                                   dynamic_side=int(ctx.option("longvideo.dynamic_side", DYNAMIC_SIDE)),
                                   dynamic_evidence=int(ctx.option("longvideo.dynamic_evidence", DYNAMIC_EVIDENCE)),
                                   clarity_side=int(ctx.option("longvideo.clarity_side", CLARITY_SIDE)),
                                   aesthetic_by_parts=as_bool(ctx.option("longvideo.aesthetic_parts", True)))
        metrics: list[MetricValue] = []
        for s in signals:
            ms = spec[f"vde_{s}"]
            if s in report.signals:
                d = report.signals[s]
                metrics.append(ms.value(d.vde_linear, d.details()))
            else:
                reason = report.errors.get(s, "signal was not measured")
                metrics.append(ms.failed(reason, details={"provenance": loaded.provenance.get(s, "")}))
                errors.append(f"vde_{s}: {reason}")
        if report.nvde is not None:
            metrics.append(spec["nvde"].value(report.nvde, {"per_signal": {k: v.nvde_linear for k, v in report.signals.items()},
                                                           "weighting": "linear"}))
        else:
            metrics.append(spec["nvde"].failed("no signal could be measured"))
        gate = None
        with ctx.timed("dynamic_degree"):
            try:
                ref = ctx.reference()
                gate = motion_gate(video.frames, video.fps, case, (ref.frames, ref.fps) if ref is not None else None,
                                   max_side=int(ctx.option("longvideo.max_side", 128)),
                                   stride=int(ctx.option("longvideo.frame_stride", 1)))
            except Exception as e:  # noqa: BLE001 - an unreadable reference must not hide the drift numbers
                logger.debug("dynamic degree failed", exc_info=True)
                errors.append(f"dynamic_degree: {type(e).__name__}: {e}")
        if gate is not None:
            metrics.append(MetricValue("dynamic_degree", gate.dynamic, gate.gate, True, spec["dynamic_degree"].version,
                                       gate.to_dict()))
        else:
            metrics.append(spec["dynamic_degree"].failed("the dynamic degree could not be measured"))
        artifacts = {}
        try:
            import json

            ctx.work_dir.mkdir(parents=True, exist_ok=True)
            path = ctx.work_dir / "drift.json"
            path.write_text(json.dumps(report.to_dict(), indent=2, default=str))
            artifacts["drift"] = str(path)
        except OSError as e:
            errors.append(f"could not write drift.json: {e}")
        coverage = {"measured": len(report.signals), "requested": len(signals), "frames_used": report.frames_used,
                    "num_chunks": n}
        drift = mean_normalized(metrics, spec.weights)
        # The gate multiplies rather than averages: a still video's perfect drift must not buy back its stillness.
        score = None if drift is None or gate is None else drift * gate.gate
        return TrackOutput(metrics, score, coverage, artifacts, errors)
