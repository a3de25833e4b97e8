"""hf: judge end to end with a tiny random-init Qwen2-VL built from a config (:mod:`tiny_vlm`).

The model is taught to answer the test's question with a fixed JSON object, saved with
``save_pretrained`` to a temp dir and loaded back through ``hf:PATH`` exactly as a real
Qwen2-VL / Qwen2.5-VL snapshot would be. ``test_judge_served.py`` serves the same folder with
``transformers serve`` and drives the ``openai:`` judge against it.
"""

from __future__ import annotations

import json
import os

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from tiny_vlm import ANSWER, FRAMES, KEYS, QUESTION, build_tiny_vlm  # noqa: E402


@pytest.fixture(scope="module")
def tiny_vlm_dir(tmp_path_factory):
    return build_tiny_vlm(tmp_path_factory.mktemp("tiny-qwen2-vl"))


def test_hf_judge_answers_votes_and_caches(tiny_vlm_dir, tmp_path):
    from worldolympiad.judges import build_judge
    from worldolympiad.judges.base import majority

    judge = build_judge(f"hf:{tiny_vlm_dir}", cache_dir=tmp_path, max_new_tokens=24, temperature=0.01)
    assert json.loads((tiny_vlm_dir / "config.json").read_text())["model_type"] == "qwen2_vl"
    ans = judge.ask_json(QUESTION, FRAMES, keys=KEYS, samples=3)
    assert ans.answers == [json.loads(ANSWER)] * 3
    assert ans.calls == 3
    # the same protocol as openai: tokens counted, copies of one answer are one independent vote
    assert ans.prompt_tokens > 3 * 2 and ans.completion_tokens > 0 and len(ans.distinct()) == 1
    assert majority(ans.answers, "compliant") == (True, 1.0)
    assert judge.describe()["architecture"] == "Qwen2VLForConditionalGeneration"

    # second run: a fresh judge on the same cache makes zero model calls
    judge2 = build_judge(f"hf:{tiny_vlm_dir}", cache_dir=tmp_path, max_new_tokens=24, temperature=0.01)
    again = judge2.ask_json(QUESTION, FRAMES, keys=KEYS, samples=3)
    assert (again.calls, again.cached) == (0, 3)


def test_hf_judge_garbage_is_retried_once_then_reported(tiny_vlm_dir, tmp_path):
    from worldolympiad.judges import JudgeError, build_judge

    judge = build_judge(f"hf:{tiny_vlm_dir}", cache_dir=tmp_path, max_new_tokens=8, budget=10)
    # a question it was never taught: the random-ish answer is not JSON with these keys
    with pytest.raises(JudgeError, match="no usable answer"):
        judge.ask_json("Is the water boiling?", FRAMES[:1], keys=("related", "confidence"))
    assert judge.calls == 2  # the answer plus exactly one correction request
    assert judge.failures == 1


def test_hf_judge_missing_folder_says_what_to_pass(tmp_path):
    from worldolympiad.judges import build_judge

    with pytest.raises(FileNotFoundError, match="config.json"):
        build_judge(f"hf:{tmp_path / 'nope'}")
