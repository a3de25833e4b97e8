"""Validity: the reference fly-through outscores every geometry perturbation, and the score falls
as a perturbation gets stronger (full sweep over cases and strengths: bench/bench_geometry.py validity)."""

from __future__ import annotations

import numpy as np
import pytest

from worldolympiad.types import Video

GEOMETRY_PERTURBATIONS = ("homography_jitter", "content_drift", "frame_shuffle", "scale_pumping")


def _perturb(name, video, case, strength):
    from worldolympiad.registries import PERTURBATIONS

    return PERTURBATIONS.get(name)(video, case, strength, np.random.default_rng(0), None)


@pytest.fixture(scope="module")
def perturbed_scores(flythrough, flythrough_case, tmp_path_factory, evaluate):
    video = Video(flythrough.frames, 8.0)
    return {
        name: evaluate(_perturb(name, video, flythrough_case, 1.0), flythrough_case, tmp_path_factory.mktemp(name))[0].score
        for name in GEOMETRY_PERTURBATIONS
    }


@pytest.mark.parametrize("name", GEOMETRY_PERTURBATIONS)
def test_reference_outscores_perturbation(name, reference_result, perturbed_scores):
    ref_score = reference_result[0].score
    assert ref_score > perturbed_scores[name] + 0.03, (name, ref_score, perturbed_scores[name])


def test_score_falls_with_homography_jitter_strength(flythrough, flythrough_case, reference_result, perturbed_scores,
                                                      tmp_path, evaluate):
    video = Video(flythrough.frames, 8.0)
    mid = evaluate(_perturb("homography_jitter", video, flythrough_case, 0.5), flythrough_case, tmp_path)[0].score
    assert reference_result[0].score > mid > perturbed_scores["homography_jitter"]
