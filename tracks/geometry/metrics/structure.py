"""Structural consistency of the recovered cameras: reprojection error and registration rate.

Both come from the model the track follows the camera with: SfM's, or the turn-in-place fit's
(``tracks/geometry/turn.py``) when the reference camera turns in place (SfM, given no baseline there,
invents one; its points and their errors describe that invention, not the video).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tracks.geometry import FAILURE_FLOOR
from tracks.geometry.sfm import CameraRecovery
from worldolympiad.trackspec import MetricSpec
from worldolympiad.types import MetricValue


def registration_rate_metric(spec: MetricSpec, rec: CameraRecovery, turn: Any = None) -> MetricValue:
    """Fraction of sampled frames registered (measured even when recovery failed: then 0 or low).

    ``turn``: the turn-in-place fit (``tracks/geometry/turn.py``) when the reference camera turns in place;
    the cameras (and the splat) are then that fit's, and so is the rate. SfM, given no baseline, registers a
    part of such a sweep (14 of 24 frames of a clean lossless maze sweep), a failure of SfM, not of the video.
    """
    details: dict[str, Any] = {"registered": int(rec.registered.sum()), "sampled": int(len(rec.registered)),
                               "method": rec.method}
    rate = rec.registration_rate
    if turn is not None:
        rate = float(np.mean(turn.registered))
        details.update({"cameras": "turn-in-place fit", "sfm_registered": details["registered"],
                        "registered": int(turn.registered.sum()), "method": "turn-in-place fit"})
    if rec.failure:
        details["failure"] = rec.failure
    if rec.reliability is not None:
        details["reliability"] = {"verdict": rec.reliability.verdict, "positions": rec.reliability.positions,
                                  "rotations": rec.reliability.rotations,
                                  "reason": rec.reliability.reason, **rec.reliability.checks}
    if "variant" in rec.details:
        details["variant"] = rec.details["variant"]
    return spec.value(rate, details)


def reprojection_error_metric(spec: MetricSpec, rec: CameraRecovery) -> MetricValue:
    if rec.failure or not math.isfinite(rec.reprojection_error):
        return spec.failed(f"no reconstruction: {rec.failure or 'no triangulated points'}", floor=FAILURE_FLOOR)
    return spec.value(rec.reprojection_error, {"track_length": rec.track_length, "num_points": int(len(rec.points)),
                                                "method": rec.method})


def turn_reprojection_error_metric(spec: MetricSpec, turn: Any, K: np.ndarray,  # noqa: N803 - intrinsics
                                   observations: np.ndarray | None = None) -> MetricValue:
    """Mean reprojection error (px) of the turn-in-place fit's feature tracks (``TurnFit.reprojection_errors``;
    ``observations``: its ``observations()`` when the caller built them already).

    The same quantity as SfM's: the mean pixel distance between each observation of a tracked scene
    point and that point projected by the fitted camera, over all observations; the point is a direction
    (a pure rotation has no depth) and the cameras are one rotation each about a common centre. A video
    whose frames are one panorama measures the keypoints' own noise (0.2-0.5 px on the 64 x 96 tuning
    sweeps, lossless to crf 35 x0.75); per-frame homographies no rotation explains (jitter) leave 0.4-1.5 px.
    """
    if int(turn.registered.sum()) < 3:
        return spec.failed(f"the turn-in-place fit placed only {int(turn.registered.sum())} frames (need >= 3)",
                           floor=FAILURE_FLOOR)
    errors, obs = turn.reprojection_errors(K, observations)
    if len(errors) == 0:
        return spec.failed("the turn-in-place fit tracked no feature across two placed frames", floor=FAILURE_FLOOR)
    n_tracks = int(obs[:, 0].max()) + 1
    return spec.value(float(errors.mean()), {
        "method": "turn-in-place fit", "num_points": n_tracks, "observations": int(len(errors)),
        "track_length": round(len(errors) / n_tracks, 3), "median_px": round(float(np.median(errors)), 4),
        "points": "directions (a pure rotation has no depth)"})
