"""Combine model-free checks and judge verdicts into per-rule verdicts and the case's metrics.

Combination rule (per applicable rule):

1. *Check verdict*: ``fail`` if any of the rule's model-free checks fails; ``pass`` if none
   fails and the rule's own (first-listed) check passes; none otherwise — the ride-along
   checks (continuity, permanence, rigidity, support) can veto a rule but never pass it alone. Its
   soft score is the **minimum** of the applicable checks' soft scores (the weakest piece of
   evidence), none when there is no check verdict.
2. *Judge verdict*: the majority of ``k`` compliance samples (none without a judge, on a tie
   or when the judge failed).
3. Decision: only one verdict → it decides. Both and they agree → ``checks+judge``. They
   disagree → a **measured failure always fails** (``checks``); a measured pass is overturned
   only by a *unanimous* judge failure with ``k ≥ 3`` independent votes (``judge``), because the
   judge sees things the checks do not measure (colour, texture) but single votes are noisy
   (samples whose text repeats an earlier sample's are one vote, see ``judge_protocol.ask``). Neither →
   the rule is *unjudged* (it lowers coverage, never the pass rate).

Metrics: ``rule_pass_rate`` (passed / judged applicable rules — the published estimator,
done once), ``kinematic_compliance`` (mean of the rules' soft check scores: a graded
version that falls with the size of a violation), ``judge_compliance`` (mean share of
compliant votes), per-dimension pass rates and ``rule_coverage`` (judged / applicable).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from tracks.physics.checks import CheckResult
from tracks.physics.judge_protocol import JudgeVerdict
from tracks.physics.rules import DIMENSIONS, Rule

Decider = Literal["checks", "judge", "checks+judge"]


@dataclass
class RuleVerdict:
    """Everything known about one applicable rule in one video."""

    rule: Rule
    applicability_source: str  # "case" | "judge" | "checks"
    checks: list[CheckResult] = field(default_factory=list)
    judge: JudgeVerdict | None = None
    verdict: bool | None = None
    decided_by: Decider | None = None

    @property
    def primary(self) -> CheckResult | None:
        """The rule's own check (first in ``rules.yaml``); the others ride along."""
        return next((c for c in self.checks if c.check == self.rule.checks[0]), None) if self.rule.checks else None

    @property
    def check_verdict(self) -> bool | None:
        if any(c.status == "fail" for c in self.checks):
            return False
        p = self.primary
        return True if p is not None and p.status == "pass" else None

    @property
    def check_score(self) -> float | None:
        if self.check_verdict is None:
            return None
        sc = [c.score for c in self.checks if c.status != "not_applicable" and c.score is not None]
        return float(min(sc)) if sc else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule.id,
            "dimension": self.rule.dimension,
            "applicability_source": self.applicability_source,
            "verdict": None if self.verdict is None else ("pass" if self.verdict else "fail"),
            "decided_by": self.decided_by,
            "check_verdict": self.check_verdict,
            "check_score": self.check_score,
            "checks": [c.to_dict() for c in self.checks],
            "judge": self.judge.to_dict() if self.judge else None,
        }


def decide(v: RuleVerdict, samples: int) -> RuleVerdict:
    """Apply the combination rule (module docstring) to ``v`` in place and return it."""
    c = v.check_verdict
    j = v.judge.value if v.judge else None
    if c is None and j is None:
        v.verdict, v.decided_by = None, None
    elif j is None:
        v.verdict, v.decided_by = c, "checks"
    elif c is None:
        v.verdict, v.decided_by = j, "judge"
    elif c == j:
        v.verdict, v.decided_by = c, "checks+judge"
    elif c is False:
        v.verdict, v.decided_by = False, "checks"
    else:
        assert v.judge is not None
        # three independent votes: copies of one sample (a server that does not sample) are one vote
        unanimous = v.judge.agreement >= 1.0 and min(samples, len(v.judge.votes)) >= 3
        v.verdict, v.decided_by = (False, "judge") if unanimous else (True, "checks")
    return v


def summarize(verdicts: list[RuleVerdict]) -> dict[str, Any]:
    """Pass rates (overall and per dimension), coverage and soft scores of a case."""
    judged = [v for v in verdicts if v.verdict is not None]
    out: dict[str, Any] = {
        "applicable": len(verdicts),
        "judged": len(judged),
        "passed": sum(1 for v in judged if v.verdict),
        "pass_rate": (sum(1 for v in judged if v.verdict) / len(judged)) if judged else None,
        "coverage": (len(judged) / len(verdicts)) if verdicts else None,
    }
    soft = [v.check_score for v in verdicts if v.check_score is not None]
    out["kinematic_compliance"] = float(np.mean(soft)) if soft else None
    jv = [v.judge for v in verdicts if v.judge is not None and v.judge.votes]
    shares = [sum(1 for x in j.votes if x) / len(j.votes) for j in jv]
    out["judge_compliance"] = float(np.mean(shares)) if shares else None
    out["judge_agreement"] = float(np.mean([j.agreement for j in jv])) if jv else None
    for d in DIMENSIONS:
        dj = [v for v in judged if v.rule.dimension == d]
        out[f"pass_rate_{d}"] = (sum(1 for v in dj if v.verdict) / len(dj)) if dj else None
    out["decided_by"] = {v.rule.id: v.decided_by for v in verdicts}
    return out
