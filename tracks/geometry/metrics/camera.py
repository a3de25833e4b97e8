"""Camera-trajectory alignment metrics: ATE, RPE and the published bounded camera score."""

from __future__ import annotations

from typing import Any

import numpy as np

from tracks.geometry import FAILURE_FLOOR
from tracks.geometry.sfm import Reliability
from tracks.geometry.trajectory import (
    TrajectoryError,
    camera_score,
    path_length,
    reference_motion,
    rpe,
    trajectory_errors,
)
from worldolympiad.trackspec import MetricSpec
from worldolympiad.types import MetricValue

NAMES = ("ate_rmse", "ate_mean", "rpe_trans", "rpe_rot", "camera_score")


def rpe_delta(frame_idx: np.ndarray | None, fps: float | None) -> int:
    """Poses apart over which RPE translation is measured: about one second of video (TUM RGB-D's
    default, Sturm et al. 2012), in steps of the matched poses (``frame_idx``: their frame numbers).

    Per frame, a camera that moves a centimetre is all SfM noise: with one-step deltas the same clean
    fly-through measured 0.59 of a step at lossless and 1.43 after an ordinary H.264 encode (session 47).
    Over a second the motion outgrows the noise. One step when the frame numbers or fps are unknown."""
    if frame_idx is None or fps is None or not fps > 0 or len(frame_idx) < 3:
        return 1
    step = float(np.median(np.diff(np.asarray(frame_idx, dtype=float))))
    return int(min(len(frame_idx) - 1, max(1, round(fps / max(step, 1.0)))))


def camera_metrics(specs: dict[str, MetricSpec], est: np.ndarray, ref: np.ndarray, source: str,
                   coverage: float = 1.0, reliability: Reliability | None = None,
                   frame_idx: np.ndarray | None = None, fps: float | None = None,
                   turn: dict[str, Any] | None = None) -> list[MetricValue]:
    """All trajectory metrics of estimated vs reference camera-to-world poses ``[N, 4, 4]`` (matched frames).

    ATE is reported as a fraction of the reference path length (scale-free across cases); the
    absolute values in reference units are in ``details``. ``coverage`` is the fraction of the
    frames with a reference pose that the video's own reconstruction registered: the camera
    score is multiplied by it, since the frames it could not place are frames whose camera it
    did not get right (version 1 scored only the registered ones, so a video that registered its
    first 3 of 24 frames, before the reference camera had moved, scored as if it followed it).

    ``reliability`` is the reconstruction's self-consistency verdict (judged without the reference):
    when it is ``"unreliable"`` (no two camera estimators agree on the positions though they agree on
    the rotations), ATE, RPE translation and the camera score are not applicable: a path the
    reconstruction could not pin down says nothing about the video. RPE rotation is still measured.

    RPE translation is measured over about one second (:func:`rpe_delta` of ``frame_idx``, the matched
    poses' frame numbers, and ``fps``) as a fraction of the reference's displacement over the same
    span; RPE rotation over one step, in degrees.

    ``turn`` (the fit's details) says ``est`` is the turn-in-place fit (:mod:`tracks.geometry.turn`) of a
    video whose reference camera turns in place: RPE rotation and the camera score are measured on its
    orientations, the SfM reliability verdict (about positions, which this fit does not use) does not
    apply, and the position metrics are not applicable (the reference has no path).
    """
    if turn is not None:
        return _turn_metrics(specs, est, ref, source, coverage, turn)
    if reliability is not None and reliability.verdict == "unreliable":
        why = f"camera reconstruction unreliable: {reliability.reason}"
        out = [specs[n].not_applicable(why) for n in NAMES if n != "rpe_rot"]
        try:
            err = trajectory_errors(est, ref, with_scale=True, delta=1)
        except TrajectoryError as e:
            return [*out, specs["rpe_rot"].failed(f"trajectory comparison impossible: {e}", floor=FAILURE_FLOOR)]
        out.append(specs["rpe_rot"].value(err.rpe_rot_deg_mean, {"reference": source, "positions_unreliable": why}))
        return out
    try:
        err = trajectory_errors(est, ref, with_scale=True, delta=1)
        cam = camera_score(est, ref)
    except TrajectoryError as e:
        return [specs[n].failed(f"trajectory comparison impossible: {e}", floor=FAILURE_FLOOR) for n in NAMES]
    cover = {"coverage": coverage, "score_on_registered": cam.score}
    length = path_length(ref)
    if length <= 1e-9:
        rel = [specs[n].not_applicable("reference camera does not move: ATE/RPE relative to path length undefined")
               for n in ("ate_rmse", "ate_mean", "rpe_trans")]
        rot = specs["rpe_rot"].value(err.rpe_rot_deg_mean, {"reference": source})
        return [*rel, rot, specs["camera_score"].value(cam.score * coverage, {"mode": cam.mode, **cam.parts, **cover})]
    delta = rpe_delta(frame_idx, fps)
    span = trajectory_errors(est, ref, with_scale=True, delta=delta) if delta != 1 else err
    moved = float(np.mean(np.linalg.norm(ref[delta:, :3, 3] - ref[:-delta, :3, 3], axis=1)))
    if moved <= 1e-9:
        moved = length / (len(ref) - 1)  # a path that returns to where it was a second ago: per-step length
    common = {"reference": source, "num_poses": err.num_poses, "scale": err.scale, "ref_path_length": length}
    return [
        specs["ate_rmse"].value(err.ate_rmse / length, {**common, "ate_rmse_abs": err.ate_rmse}),
        specs["ate_mean"].value(err.ate_mean / length, {**common, "ate_mean_abs": err.ate_mean}),
        specs["rpe_trans"].value(span.rpe_trans_mean / moved,
                                 {**common, "rpe_delta": delta, "ref_displacement": moved,
                                  "rpe_trans_mean_abs": span.rpe_trans_mean, "rpe_trans_rmse_abs": span.rpe_trans_rmse}),
        specs["rpe_rot"].value(err.rpe_rot_deg_mean, {**common, "rpe_rot_deg_rmse": err.rpe_rot_deg_rmse}),
        specs["camera_score"].value(cam.score * coverage, {"mode": cam.mode, "translation": cam.translation,
                                                           "rotation": cam.rotation, **cam.parts, **cover}),
    ]


def _turn_metrics(specs: dict[str, MetricSpec], est: np.ndarray, ref: np.ndarray, source: str, coverage: float,
                  turn: dict[str, Any]) -> list[MetricValue]:
    """Camera metrics of the turn-in-place fit ``est`` against a reference that turns in place."""
    motion = reference_motion(ref)
    if motion != "rotation":
        raise ValueError(f"the turn-in-place fit is for a reference camera that turns in place; this one is {motion!r}")
    why = "the reference camera turns in place: it has no path to measure positions against"
    out = [specs[n].not_applicable(why) for n in ("ate_rmse", "ate_mean", "rpe_trans")]
    try:
        _, rot = rpe(est, ref, delta=1)
        cam = camera_score(est, ref)
    except TrajectoryError as e:
        return [*out, *(specs[n].failed(f"trajectory comparison impossible: {e}", floor=FAILURE_FLOOR)
                        for n in ("rpe_rot", "camera_score"))]
    common = {"reference": source, "num_poses": len(ref), "camera_model": turn}
    return [
        *out,
        specs["rpe_rot"].value(float(rot.mean()), {**common, "rpe_rot_deg_rmse": float(np.sqrt(np.mean(rot**2)))}),
        specs["camera_score"].value(cam.score * coverage, {**common, "mode": cam.mode, "rotation": cam.rotation, **cam.parts,
                                                           "coverage": coverage, "score_on_registered": cam.score}),
    ]
