"""Two-stage judge protocol inside PhysicsTrack, with a scripted in-process judge."""

from __future__ import annotations

import numpy as np

from tracks.physics.judge_protocol import draw_marks
from tracks.physics.track import PhysicsTrack
from tracks.physics.tracking import track_objects
from worldolympiad.judges import Judge, JudgeAnswer, JudgeError
from worldolympiad.track import EvalContext
from worldolympiad.types import Case, PhysicsSpec, Video


class FakeJudge(Judge):
    """Answers by rule id found in the prompt; records what it was shown."""

    name = "fake"

    def __init__(self, related=(), compliant=None, fail_on=()):
        self.related, self.compliant, self.fail_on = set(related), dict(compliant or {}), set(fail_on)
        self.asked: list[tuple[str, int, list[np.ndarray]]] = []

    def _rule(self, prompt):
        return prompt.split("Physical rule '")[1].split("'")[0]

    def ask_json(self, prompt, images, *, keys, samples=1):
        rule = self._rule(prompt)
        self.asked.append((prompt, samples, list(images)))
        if rule in self.fail_on:
            raise JudgeError("server down")
        if "related" in keys:
            return JudgeAnswer([{"related": rule in self.related, "confidence": 0.9}] * samples, calls=samples)
        votes = self.compliant.get(rule, [True] * samples)
        return JudgeAnswer([{"compliant": v, "confidence": 0.8, "explanation": "x"} for v in votes], calls=samples)

    def describe(self):
        return {"backend": "fake"}


def _run(scene, judge, tmp_path, rules=(), samples=3):
    T, H, W = scene.frames.shape[:3]
    case = Case(id="c", scenario="robotics", fps=scene.fps, num_frames=T, resolution=(H, W), tracks=("physics",),
                physics=PhysicsSpec(rules=tuple(rules), objects=tuple(scene.object_hints())), prompt="a ball drops")
    ctx = EvalContext(work_dir=tmp_path, judge_spec="fake", reference_loader=lambda: Video(scene.frames, scene.fps),
                      options={"physics.judge_samples": samples, "physics.judge_frames": 6})
    ctx._judge = judge
    return PhysicsTrack().evaluate(Video(scene.frames, scene.fps), case, ctx)


def test_stage1_on_reference_then_stage2_on_video(ball, tmp_path):
    judge = FakeJudge(related={"gravity", "combustibility"}, compliant={"combustibility": [False, False, False]})
    out = _run(ball, judge, tmp_path)
    stage1 = [a for a in judge.asked if "related" in a[0]]
    assert len(stage1) == 14  # every rule asked once (k samples each) on the reference
    assert out.coverage["applicability_source"] == {"gravity": "judge", "combustibility": "judge"}
    # gravity: checks and judge agree
    # combustibility: the judge says it applies; the checks find no flame, and agree it fails
    assert out.coverage["decided_by"] == {"gravity": "checks+judge", "combustibility": "checks+judge"}
    rpr = next(m for m in out.metrics if m.name == "rule_pass_rate")
    assert rpr.raw == 0.5 and "MLLM judge" in rpr.details["evidence"]
    assert out.coverage["judge"] == {"backend": "fake"}
    jc = next(m for m in out.metrics if m.name == "judge_compliance")
    assert jc.raw == 0.5


def test_judge_sees_set_of_mark_frames(ball, tmp_path):
    judge = FakeJudge()
    _run(ball, judge, tmp_path, rules=("gravity",))
    prompt, samples, images = judge.asked[-1]
    assert samples == 3 and len(images) == 6
    assert "1: ball" in prompt  # the legend names the numbered marks
    raw = [ball.frames[t] for t in np.linspace(0, len(ball.frames) - 1, 6).round().astype(int)]
    assert all(im.shape == r.shape and not np.array_equal(im, r) for im, r in zip(images, raw, strict=True))


def test_marks_are_drawn_where_the_object_is(ball):
    seg = ball.segmentation()
    tracks = track_objects(ball.frames, seg)
    marked = draw_marks(ball.frames[10], seg.labels[10], tracks, 10)
    changed = np.any(marked != ball.frames[10], axis=-1)
    x0, y0, x1, y1 = tracks[0].bbox[10].astype(int)
    assert changed[y0:y1, x0:x1].any() and not changed[:, : max(0, x0 - 8)].any()


def test_measured_failure_beats_a_split_judge_and_judge_errors_are_recorded(ball, tmp_path):
    from tracks.physics.synthetic import perturb

    bad = perturb(ball, "vanish", 1.0)
    judge = FakeJudge(fail_on={"impact"})
    T, H, W = ball.frames.shape[:3]
    case = Case(id="c", scenario="robotics", fps=24, num_frames=T, resolution=(H, W), tracks=("physics",),
                physics=PhysicsSpec(rules=("gravity", "impact"), objects=tuple(ball.object_hints())))
    ctx = EvalContext(work_dir=tmp_path, judge_spec="fake", reference_loader=lambda: Video(ball.frames, 24.0))
    ctx._judge = judge
    out = PhysicsTrack().evaluate(Video(bad.frames, 24.0), case, ctx)
    assert out.coverage["decided_by"] == {"gravity": "checks", "impact": "checks"}
    assert any("server down" in e for e in out.errors)
    assert next(m for m in out.metrics if m.name == "rule_pass_rate").raw == 0.0
