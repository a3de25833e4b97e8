"""The optional judge rating of splat renders: averaged samples, clear n.a./failure otherwise."""

from __future__ import annotations

import numpy as np

from tracks.geometry.metrics.vlm import vlm_metric
from tracks.geometry.track import track_spec
from worldolympiad.judges import Judge, JudgeAnswer, JudgeError


class _FakeJudge(Judge):
    def __init__(self, answers=None, error=None):
        self.answers, self.error, self.calls = answers, error, []

    def ask_json(self, prompt, images, *, keys, samples=1):
        self.calls.append((prompt, len(images), tuple(keys), samples))
        if self.error:
            raise JudgeError(self.error)
        return JudgeAnswer(answers=self.answers[:samples], calls=samples)


def test_vlm_rating_averages_samples_and_normalises():
    spec = track_spec().metrics["vlm_render_rating"]
    judge = _FakeJudge([{"score": 8, "reason": "sharp"}, {"score": 12, "reason": "clamped to 10"}])
    renders = [np.zeros((8, 8, 3), np.uint8)] * 3
    m = vlm_metric(spec, judge, renders, samples=2)
    assert m.status == "ok" and m.raw == 9.0 and m.normalized == 0.9
    assert judge.calls[0][1:] == (3, ("score", "reason"), 2)


def test_vlm_rating_not_applicable_without_judge_and_failed_on_judge_error():
    spec = track_spec().metrics["vlm_render_rating"]
    img = [np.zeros((8, 8, 3), np.uint8)]
    assert vlm_metric(spec, None, img).status == "not_applicable"
    bad = vlm_metric(spec, _FakeJudge(error="malformed JSON twice"), img)
    assert bad.status == "failed" and "malformed" in bad.reason and bad.normalized is None
