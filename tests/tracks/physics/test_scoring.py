"""The documented rule that combines model-free checks and judge verdicts."""

from __future__ import annotations

import pytest

from tracks.physics.checks import CheckResult
from tracks.physics.judge_protocol import JudgeVerdict
from tracks.physics.rules import get_rule
from tracks.physics.scoring import RuleVerdict, decide, summarize


def _v(check: str | None, judge: bool | None = None, agreement: float = 1.0, rule: str = "gravity", score: float = 0.5):
    checks = []
    primary = get_rule(rule).checks[0]
    if check == "na":
        checks = [CheckResult(primary, "not_applicable", None, reason="nothing moves")]
    elif check is not None:
        checks = [CheckResult(primary, check, 1.0 if check == "pass" else score)]
    j = None if judge is None else JudgeVerdict(judge, agreement, [judge] * 3)
    return RuleVerdict(get_rule(rule), "case", checks, j)


@pytest.mark.parametrize(("check", "judge", "agreement", "samples", "verdict", "by"), [
    ("pass", None, 1.0, 3, True, "checks"),
    ("fail", None, 1.0, 3, False, "checks"),
    (None, True, 1.0, 3, True, "judge"),
    ("na", False, 1.0, 3, False, "judge"),
    ("pass", True, 1.0, 3, True, "checks+judge"),
    ("fail", True, 1.0, 3, False, "checks"),  # a measured failure always fails
    ("pass", False, 1.0, 3, False, "judge"),  # unanimous k>=3 judge overturns a pass
    ("pass", False, 2 / 3, 3, True, "checks"),  # a split judge does not
    ("pass", False, 1.0, 1, True, "checks"),  # nor a single sample
    ("na", None, 1.0, 3, None, None),  # nothing to go on: unjudged
])
def test_decide(check, judge, agreement, samples, verdict, by):
    v = decide(_v(check, judge, agreement), samples)
    assert (v.verdict, v.decided_by) == (verdict, by)


def test_summary_pass_rate_ignores_unjudged_and_reports_coverage():
    vs = [decide(_v("pass"), 3), decide(_v("fail", score=0.2, rule="impact"), 3), decide(_v("na", rule="melting"), 3)]
    s = summarize(vs)
    assert s["pass_rate"] == 0.5
    assert s["coverage"] == pytest.approx(2 / 3)
    assert s["pass_rate_mechanics"] == 0.5 and s["pass_rate_thermal"] is None
    assert s["kinematic_compliance"] == pytest.approx((1.0 + 0.2) / 2)
    assert s["decided_by"] == {"gravity": "checks", "impact": "checks", "melting": None}


def test_ride_along_checks_can_veto_but_not_pass_a_rule():
    rule = get_rule("impact")  # checks: impact (own), continuity, permanence, rigidity
    na = CheckResult("impact", "not_applicable", None, reason="no collision in the reference")
    v = decide(RuleVerdict(rule, "case", [na, CheckResult("continuity", "pass", 1.0)]), 3)
    assert (v.verdict, v.check_score) == (None, None)
    v = decide(RuleVerdict(rule, "case", [na, CheckResult("permanence", "fail", 0.1)]), 3)
    assert (v.verdict, v.decided_by, v.check_score) == (False, "checks", 0.1)


def test_copies_of_one_sample_never_overturn_a_measured_pass():
    """k=3 samples that came back as one text (a server that does not sample) are one independent
    vote (``judge_protocol.ask`` keeps distinct samples only): agreement 1.0 of one vote is no
    unanimous judge, so the measured pass stands (issue 62; 85cf2c2 counted three votes)."""
    v = _v("pass", False)
    v.judge = JudgeVerdict(False, 1.0, [False], samples=3, identical=2)
    assert (decide(v, 3).verdict, v.decided_by) == (True, "checks")
    assert summarize([v])["judge_compliance"] == 0.0  # the one vote counts once
