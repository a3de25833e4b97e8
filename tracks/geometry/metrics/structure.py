"""Structural consistency of the recovered SfM model: reprojection error and registration rate."""

from __future__ import annotations

import math

from tracks.geometry import FAILURE_FLOOR
from tracks.geometry.sfm import CameraRecovery
from worldolympiad.trackspec import MetricSpec
from worldolympiad.types import MetricValue


def registration_rate_metric(spec: MetricSpec, rec: CameraRecovery) -> MetricValue:
    """Fraction of sampled frames registered (measured even when recovery failed: then 0 or low)."""
    details = {"registered": int(rec.registered.sum()), "sampled": int(len(rec.registered)), "method": rec.method}
    if rec.failure:
        details["failure"] = rec.failure
    if rec.reliability is not None:
        details["reliability"] = {"verdict": rec.reliability.verdict, "positions": rec.reliability.positions,
                                  "rotations": rec.reliability.rotations,
                                  "reason": rec.reliability.reason, **rec.reliability.checks}
    if "variant" in rec.details:
        details["variant"] = rec.details["variant"]
    return spec.value(rec.registration_rate, details)


def reprojection_error_metric(spec: MetricSpec, rec: CameraRecovery) -> MetricValue:
    if rec.failure or not math.isfinite(rec.reprojection_error):
        return spec.failed(f"no reconstruction: {rec.failure or 'no triangulated points'}", floor=FAILURE_FLOOR)
    return spec.value(rec.reprojection_error, {"track_length": rec.track_length, "num_points": int(len(rec.points)),
                                                "method": rec.method})
