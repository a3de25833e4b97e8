"""Camera-trajectory alignment metrics: ATE, RPE and the published bounded camera score."""

from __future__ import annotations

import numpy as np

from tracks.geometry import FAILURE_FLOOR
from tracks.geometry.sfm import Reliability
from tracks.geometry.trajectory import TrajectoryError, camera_score, path_length, trajectory_errors
from worldolympiad.trackspec import MetricSpec
from worldolympiad.types import MetricValue

NAMES = ("ate_rmse", "ate_mean", "rpe_trans", "rpe_rot", "camera_score")


def camera_metrics(specs: dict[str, MetricSpec], est: np.ndarray, ref: np.ndarray, source: str,
                   coverage: float = 1.0, reliability: Reliability | None = None) -> list[MetricValue]:
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
    """
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
    mean_step = length / (len(ref) - 1)
    common = {"reference": source, "num_poses": err.num_poses, "scale": err.scale, "ref_path_length": length}
    return [
        specs["ate_rmse"].value(err.ate_rmse / length, {**common, "ate_rmse_abs": err.ate_rmse}),
        specs["ate_mean"].value(err.ate_mean / length, {**common, "ate_mean_abs": err.ate_mean}),
        specs["rpe_trans"].value(err.rpe_trans_mean / mean_step,
                                 {**common, "rpe_trans_mean_abs": err.rpe_trans_mean, "rpe_trans_rmse_abs": err.rpe_trans_rmse}),
        specs["rpe_rot"].value(err.rpe_rot_deg_mean, {**common, "rpe_rot_deg_rmse": err.rpe_rot_deg_rmse}),
        specs["camera_score"].value(cam.score * coverage, {"mode": cam.mode, "translation": cam.translation,
                                                           "rotation": cam.rotation, **cam.parts, **cover}),
    ]
