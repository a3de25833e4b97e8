"""Structural consistency of the recovered SfM model: reprojection error and registration rate."""

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
