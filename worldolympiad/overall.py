"""The one definition of the overall score (pure functions; no pandas).

The leaderboard declares it in ``leaderboard/schema.yaml`` (``overall``) and every place
that shows an overall number uses these functions: ``summary.json`` and the terminal table
(:func:`worldolympiad.evaluator.summarize`), ``report.html`` and the leaderboard
(``leaderboard.aggregate``). The order of averaging is fixed:

1. **Seeds first.** Each case's ``ok`` scores of a track are averaged over seeds.
2. **Then cases.** A track's score is the mean over cases of those seed means.
3. **Then tracks.** The overall is the weighted mean of the track scores a model *has*
   (weights from ``leaderboard/schema.yaml``); a track without a score is dropped and the
   others re-weighted, never counted as zero.

Rows of one track are compared only at one version: the newest one present.

``worldolympiad`` never imports ``leaderboard`` (DESIGN.md §2): :func:`overall_weights` reads
the schema's weights through the ``schema`` entry of :data:`worldolympiad.registries.REPORTING`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["overall_score", "overall_weights", "track_score", "version_key"]


def version_key(version: str) -> tuple[Any, ...]:
    """Sort key of a version string: ``"10" > "9"``, ``"2.1" > "2"``."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in str(version).split("."))


def track_score(case_seed_scores: Mapping[str, Sequence[float]]) -> float | None:
    """Steps 1-2: the mean over cases of each case's mean over seeds (``None`` when no case has a score).

    Args:
        case_seed_scores: case id → the ``ok`` scores of that case, one per seed.
    """
    # math.fsum is exactly rounded, so the score does not depend on the order rows arrived in (a Ray
    # run writes them as they finish; a plain sum differed from the local run's in the last bit).
    means = [math.fsum(s) / len(s) for s in case_seed_scores.values() if len(s)]
    return math.fsum(means) / len(means) if means else None


def overall_score(track_scores: Mapping[str, float | None], weights: Mapping[str, float]) -> float | None:
    """Step 3: the weighted mean of the track scores that exist.

    Args:
        track_scores: track → score in [0, 1]; ``None`` or NaN means the model has no score there.
        weights: track → weight (``leaderboard/schema.yaml``); a track not named weighs 0.

    Returns:
        The overall score, or ``None`` when no weighted track has a score.
    """
    num = den = 0.0
    for track, score in track_scores.items():
        if score is None or math.isnan(score):
            continue
        w = float(weights.get(track, 0.0))
        num += w * float(score)
        den += w
    return num / den if den > 0 else None


def overall_weights(tracks: Iterable[str]) -> dict[str, float]:
    """The track weights of the overall score, from the leaderboard schema (through ``REPORTING``).

    Without the leaderboard package every track weighs 1.0 (what the schema ships).
    """
    from worldolympiad.registries import REPORTING

    try:
        weights = dict(REPORTING.get("schema")().weights())
    except (ImportError, AttributeError, KeyError):
        return dict.fromkeys(tracks, 1.0)
    return {t: float(weights.get(t, 0.0)) for t in tracks}
