"""Judge machinery shared by the backends: JSON repair, votes, cache, retries, budget."""

from __future__ import annotations

import numpy as np
import pytest

from worldolympiad.judges import JudgeError
from worldolympiad.judges.base import CachedJudge, TransientJudgeError, majority, parse_json_answer


@pytest.mark.parametrize("text", [
    '{"compliant": true, "confidence": 0.9}',
    'Sure! Here you go:\n```json\n{"compliant": true, "confidence": 0.9}\n```',
    "{'compliant': True, 'confidence': 0.9}",
    '{"compliant": true, "confidence": 0.9,}',
    'The answer is {"compliant": true, "confidence": 0.9} as requested {"x": 1}',
])
def test_parse_repairs_common_slips(text):
    assert parse_json_answer(text, ["compliant", "confidence"]) == {"compliant": True, "confidence": 0.9}


@pytest.mark.parametrize("text", ["yes, it is compliant", '{"compliant": true}', "{compliant: maybe", ""])
def test_parse_rejects_what_it_cannot_recover(text):
    assert parse_json_answer(text, ["compliant", "confidence"]) is None


def test_majority_and_agreement():
    assert majority([{"c": True}, {"c": "yes"}, {"c": False}], "c") == (True, pytest.approx(2 / 3))
    assert majority([{"c": True}, {"c": False}], "c") == (None, 0.5)
    assert majority([{"c": "perhaps"}], "c") == (None, 0.0)


class Scripted(CachedJudge):
    """A backend whose answers come from a list (exceptions are raised)."""

    name = "scripted"

    def __init__(self, script, **kw):
        super().__init__("scripted-model", **kw)
        self.script = list(script)
        self.prompts = []

    def _generate(self, prompt, images, *, sample, greedy):
        self.prompts.append(prompt)
        item = self.script.pop(0)
        if isinstance(item, Exception):
            raise item
        return item


IMG = [np.zeros((8, 8, 3), np.uint8)]
OK = '{"related": true, "confidence": 1}'


def test_malformed_answer_is_retried_once_with_a_correction_prompt(tmp_path):
    j = Scripted(["no idea", OK], cache_dir=tmp_path)
    ans = j.ask_json("Is it falling?", IMG, keys=["related", "confidence"])
    assert ans.answers == [{"related": True, "confidence": 1}] and ans.calls == 2
    assert "not a valid JSON object" in j.prompts[1] and "no idea" in j.prompts[1]


def test_twice_malformed_is_a_failure_not_a_guess(tmp_path):
    j = Scripted(["no idea", "still no idea"], cache_dir=tmp_path)
    with pytest.raises(JudgeError, match="no usable answer"):
        j.ask_json("Is it falling?", IMG, keys=["related", "confidence"])
    assert j.failures == 1


def test_transient_errors_retry_with_backoff_then_give_up(tmp_path):
    j = Scripted([TransientJudgeError("HTTP 500"), OK], cache_dir=tmp_path, backoff=0.0)
    assert j.ask_json("q", IMG, keys=["related", "confidence"]).calls == 2
    j = Scripted([TransientJudgeError("timeout")] * 3, cache_dir=tmp_path, retries=2, backoff=0.0)
    with pytest.raises(JudgeError, match="after 3 attempts"):
        j.ask_json("q2", IMG, keys=["related", "confidence"])


def test_cache_is_keyed_by_prompt_frames_and_sample(tmp_path):
    j = Scripted([OK] * 5, cache_dir=tmp_path, temperature=0.7)
    j.ask_json("q", IMG, keys=["related", "confidence"], samples=2)
    again = Scripted([], cache_dir=tmp_path, temperature=0.7)  # a fresh process: disk cache only
    hit = again.ask_json("q", IMG, keys=["related", "confidence"], samples=2)
    assert (hit.calls, hit.cached) == (0, 2)
    other = Scripted([OK], cache_dir=tmp_path, temperature=0.7)
    assert other.ask_json("q", [IMG[0] + 1], keys=["related", "confidence"]).calls == 1  # other frames


def test_budget_caps_requests(tmp_path):
    j = Scripted([OK] * 5, cache_dir=tmp_path, budget=2, temperature=0.7)
    part = j.ask_json("q", IMG, keys=["related", "confidence"], samples=3)  # 2 answered, the 3rd refused
    assert len(part.answers) == 2 and part.failures == {"budget": 1} and "budget of 2" in part.errors[0]
    with pytest.raises(JudgeError, match="budget of 2"):
        j.ask_json("q2", IMG, keys=["related", "confidence"], samples=3)
    assert j.calls == 2
