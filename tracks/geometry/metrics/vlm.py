"""Optional judge rating of the splat renders (the published protocol's GS and meta-view ratings)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tracks.geometry import FAILURE_FLOOR
from worldolympiad.trackspec import MetricSpec
from worldolympiad.types import MetricValue

PROMPT = (
    "These images are re-renders of a 3-D Gaussian-splat reconstruction fitted to a video: first views "
    "held out of the fit, last a far view from outside the filmed path. A video of a consistent 3-D world "
    "gives sharp, artifact-free, plausible renders; an inconsistent one gives blur, floaters, ghosting and "
    "broken geometry. Rate the 3-D consistency from 0 (none) to 10 (perfect). Answer JSON with keys "
    '"score" (number 0-10) and "reason" (one sentence).'
)


def vlm_metric(spec: MetricSpec, judge: Any, renders: list[np.ndarray], samples: int = 1) -> MetricValue:
    if judge is None:
        return spec.not_applicable("no judge configured (--judge none): model-free metrics only")
    if not renders:
        return spec.failed("no renders to rate (reconstruction failed)", floor=FAILURE_FLOOR)
    from worldolympiad.judges import JudgeError

    try:
        ans = judge.ask_json(PROMPT, renders, keys=["score", "reason"], samples=samples)
        scores = [float(a["score"]) for a in ans.answers]
    except (JudgeError, KeyError, TypeError, ValueError) as e:
        return spec.failed(f"judge gave no usable rating: {e}")
    scores = [min(10.0, max(0.0, s)) for s in scores]
    return spec.value(float(np.mean(scores)), {"samples": scores, "reasons": [a.get("reason") for a in ans.answers],
                                               "cached": ans.cached})
