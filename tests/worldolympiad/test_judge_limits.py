"""Judges with real limits (issue 59 item 2): one budget per run, a deadline per request, schema
checks before an answer counts, and a judge outage as a run-level failure.

Every server here is a local ``http.server`` thread (:mod:`judge_testlib`); no network.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import time

import pytest
from judge_testlib import FRAMES, KEYS, ChatServer, ask_many, register_judging_track

from worldolympiad.judges import JudgeError, build_judge
from worldolympiad.judges.base import CachedJudge, majority


@pytest.fixture
def chat():
    servers: list[ChatServer] = []

    def make(mode: str = "ok", **kw) -> ChatServer:
        servers.append(ChatServer(mode, **kw))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


@pytest.fixture(autouse=True)
def _judging_track():
    register_judging_track()


# ------------------------------------------------------------------------------ budget


def test_budget_is_one_per_run_across_worker_processes(chat, tmp_path):
    """Three spawned processes, 4 questions each, budget=5 on one run directory: 5 requests in all."""
    srv = chat("ok")
    run_dir = tmp_path / "run"
    ctx = mp.get_context("spawn")
    with ctx.Pool(3) as pool:
        answered = pool.starmap(ask_many, [(srv.url, str(run_dir), 5, 4, f"worker{w}") for w in range(3)])
    assert srv.requests == 5 and sum(answered) == 5
    ledger = json.loads((run_dir / "judge_ledger.json").read_text())
    assert (ledger["sent"], ledger["ok"], ledger["refused"], ledger["usable"]) == (5, 5, 7, 5)


@pytest.mark.parametrize("workers", [1, 2])
def test_budget_holds_for_a_whole_evaluator_run(chat, tmp_path, videos_suite, workers):
    """3 rows x 3 questions against budget=4: 4 requests were sent, not 4 per row (was 9)."""
    from worldolympiad.evaluator import EvalConfig, evaluate, make_run_spec

    suite, vids = videos_suite
    srv = chat("ok")
    spec = make_run_spec(f"videos:{vids}", str(suite), ["judging"], [0], judge=f"openai:{srv.url}#m?budget=4&retries=0")
    outcome = evaluate(spec, EvalConfig(out=tmp_path / "out", progress=False, workers=workers))
    assert srv.requests == 4
    j = outcome.summary["judge"]
    assert (j["sent"], j["usable"], j["refused"], j["budget"], j["outage"]) == (4, 4, 5, 4, False)
    assert "run_errors" not in outcome.summary
    errors = [e for r in outcome.rows for e in r.coverage["judge_errors"]]
    assert len(errors) == 5 and all("budget of 4 requests for this run exhausted" in e for e in errors)
    # a resumed run reuses its rows and has no budget left to spend: still 4
    evaluate(spec, EvalConfig(out=tmp_path / "out", progress=False, workers=workers))
    assert srv.requests == 4


# ---------------------------------------------------------------------------- deadline


@pytest.mark.parametrize("where", ["trickle-headers", "trickle-body"])
def test_a_trickling_judge_is_cut_at_its_deadline(chat, tmp_path, where):
    """A byte every 2 s never trips a per-read timeout; a 5 s deadline ends the request at 5 +- 1 s."""
    srv = chat(where, trickle_every=2.0, trickle_for=14.0)
    judge = build_judge(f"openai:{srv.url}#m", cache_dir=tmp_path, timeout=5, retries=0)
    t0 = time.monotonic()
    with pytest.raises(JudgeError, match="deadline"):
        judge.ask_json("q", FRAMES, keys=KEYS)
    elapsed = time.monotonic() - t0
    assert 4.0 <= elapsed <= 6.0, f"cut after {elapsed:.1f} s, deadline 5 s"
    assert srv.requests == 1


def test_a_prompt_answer_within_the_deadline_is_unaffected(chat, tmp_path):
    srv = chat("ok")
    judge = build_judge(f"openai:{srv.url}#m", cache_dir=tmp_path, timeout=5, retries=0)
    t0 = time.monotonic()
    ans = judge.ask_json("q", FRAMES, keys=KEYS)
    assert ans.answers[0]["compliant"] is True and time.monotonic() - t0 < 2.0


# ------------------------------------------------------------------------------ schema


class Scripted(CachedJudge):
    name = "scripted"

    def __init__(self, script, **kw):
        super().__init__("scripted-model", **kw)
        self.script = list(script)
        self.prompts: list[str] = []

    def _generate(self, prompt, images, *, sample, greedy):
        self.prompts.append(prompt)
        return self.script.pop(0)


def _v(compliant, confidence, explanation="why") -> str:
    return json.dumps({"compliant": compliant, "confidence": confidence, "explanation": explanation})


@pytest.mark.parametrize("bad, problem", [
    (_v(True, 7.5), "'confidence' must be a number in [0, 1], got 7.5"),
    (_v(True, -0.1), "'confidence' must be a number in [0, 1]"),
    ('{"compliant": true, "confidence": NaN, "explanation": "x"}', "'confidence' must be a finite number"),
    (_v(True, "very"), "'confidence' must be a finite number"),
    (_v(True, True), "'confidence' must be a finite number"),
    (_v("maybe", 0.5), "'compliant' must be true or false"),
    (_v(True, 0.5, 5), "'explanation' must be a string"),
])
def test_an_answer_out_of_its_schema_is_never_a_vote(tmp_path, bad, problem):
    j = Scripted([bad, bad], cache_dir=tmp_path)
    with pytest.raises(JudgeError, match="no usable answer"):
        j.ask_json("q", FRAMES, keys=KEYS)
    assert problem in j.prompts[1]  # the correction request says what was wrong
    # among samples, only the valid answers vote: True (0.9) and two 7.5s would have made True win
    j = Scripted([_v(False, 0.9), _v(True, 7.5), _v(True, 7.5), _v(True, 7.5), _v(True, 7.5)], cache_dir=tmp_path,
                 temperature=0.7)
    ans = j.ask_json("q2", FRAMES, keys=KEYS, samples=3)
    assert [a["compliant"] for a in ans.answers] == [False]
    assert majority(ans.answers, "compliant") == (False, 1.0)


def test_valid_answers_are_normalised_and_a_schema_can_narrow_a_range(tmp_path):
    from worldolympiad.judges.base import FieldRule

    j = Scripted([_v("yes", "0.75")], cache_dir=tmp_path)
    assert j.ask_json("q", FRAMES, keys=KEYS).answers == [{"compliant": True, "confidence": 0.75, "explanation": "why"}]
    j = Scripted(['{"score": 7, "reason": "r"}', '{"score": 4, "reason": "r"}'], cache_dir=tmp_path)
    ans = j.ask_json("rate 0-5", FRAMES, keys=["score", "reason"], schema={"score": FieldRule("number", 0, 5)})
    assert ans.answers == [{"score": 4.0, "reason": "r"}] and "in [0, 5], got 7" in j.prompts[1]


def test_the_correction_request_never_repeats_an_unbounded_answer(tmp_path):
    """A 5,000-character garbage answer: the correction request quotes at most 120 characters of it
    (85cf2c2 quoted 500, which pushed a 737-token prompt past a 1,024-token server), and none at all
    when a known context leaves no room for it."""
    from worldolympiad.judges.base import REPAIR_EXCERPT_CHARS

    garbage = "tr" * 2500
    j = Scripted([garbage, _v(True, 0.5)], cache_dir=tmp_path)
    j.ask_json("q", FRAMES, keys=KEYS)
    import re

    quoted = max(len(m) for m in re.findall(r"(?:tr)+", j.prompts[1]))
    assert quoted == REPAIR_EXCERPT_CHARS  # the quote, whatever the answer's length
    assert len(j.prompts[1]) - len(j.prompts[0]) < 500  # quote + what was wrong + the instruction again
    assert "no JSON object with keys" in j.prompts[1] and "[...]" in j.prompts[1]

    class Tight(Scripted):  # reports 240 prompt tokens of a 256-token context: no room for a quote
        def _generate(self, prompt, images, *, sample, greedy):
            from worldolympiad.judges.base import Generation

            return Generation(super()._generate(prompt, images, sample=sample, greedy=greedy), 240, 16)

    t = Tight([garbage, _v(True, 0.5)], cache_dir=tmp_path / "t", max_context=256, max_new_tokens=16)
    t.ask_json("q", FRAMES, keys=KEYS)
    assert "trtr" not in t.prompts[1] and "no JSON object with keys" in t.prompts[1]


def test_a_cached_answer_that_breaks_the_schema_is_asked_again(tmp_path):
    j = Scripted([_v(True, 0.5)], cache_dir=tmp_path)
    j.ask_json("q", FRAMES, keys=KEYS)
    (entry,) = (tmp_path).rglob("*.json")
    entry.write_text(json.dumps({"text": _v(True, 7.5), "answer": json.loads(_v(True, 7.5))}))  # an old cache entry
    again = Scripted([_v(False, 0.5)], cache_dir=tmp_path)
    assert again.ask_json("q", FRAMES, keys=KEYS).answers[0]["compliant"] is False and again.calls == 1


# ------------------------------------------------------------------------------ outage


def _cli_flags(tmp_path, videos_suite, judge: str) -> list[str]:
    suite, vids = videos_suite
    return ["--model", f"videos:{vids}", "--suite", str(suite), "--tracks", "judging", "--judge", judge,
            "--out", str(tmp_path / "out"), "--no-progress"]


def test_a_judge_outage_is_a_run_level_failure(chat, tmp_path, videos_suite, capsys):
    """Every request fails: summary.json has run_errors, the terminal says so, --strict exits 1."""
    from worldolympiad.cli import evaluate as ev

    srv = chat("down")
    flags = _cli_flags(tmp_path, videos_suite, f"openai:{srv.url}#m?retries=0")
    assert ev.main(flags) == 0  # the run completes; its rows are there
    out = capsys.readouterr().out
    assert "RUN ERROR: judge outage: all 9 judge request(s) failed" in out and "HTTP 503" in out
    (summary_path,) = (tmp_path / "out").glob("*/summary.json")
    summary = json.loads(summary_path.read_text())
    assert summary["judge"]["outage"] is True and summary["judge"]["failed"] == 9
    assert summary["run_errors"] and "judge outage" in summary["run_errors"][0]
    assert ev.main(flags + ["--strict"]) == 1


def test_a_judge_that_never_answers_within_the_schema_is_an_outage_too(chat, tmp_path, videos_suite, capsys):
    from worldolympiad.cli import evaluate as ev

    srv = chat("garbage")
    assert ev.main(_cli_flags(tmp_path, videos_suite, f"openai:{srv.url}#m?retries=0") + ["--strict"]) == 1
    out = capsys.readouterr().out
    assert "RUN ERROR: judge outage: the judge answered 18 of 18 request(s) but gave no usable answer" in out
    assert "'confidence' must be a number in [0, 1], got 7.5" in out


def test_a_healthy_judge_is_no_run_error_and_a_spent_budget_is_said(chat, tmp_path, videos_suite, capsys):
    from worldolympiad.cli import evaluate as ev

    srv = chat("ok")
    assert ev.main(_cli_flags(tmp_path, videos_suite, f"openai:{srv.url}#m?budget=2") + ["--strict"]) == 0
    out = capsys.readouterr().out
    assert "RUN ERROR" not in out and srv.requests == 2
    assert "judge budget of 2 request(s) spent: 7 request(s) not sent" in out


def test_copied_samples_are_counted_per_run_and_said(tmp_path):
    """Three samples with one text, twice: the run ledger counts 6 answered and 2 independent samples,
    and summary.json warns that the server is not sampling (and how to make it)."""
    from worldolympiad.judges.ledger import judge_run_summary

    j = Scripted([_v(True, 0.9)] * 6, cache_dir=tmp_path / "c", run_dir=tmp_path / "run", temperature=0.7)
    for q in ("q1", "q2"):
        ans = j.ask_json(q, FRAMES, keys=KEYS, samples=3)
        assert len(ans.answers) == 3 and len(ans.distinct()) == 1
    s = judge_run_summary(tmp_path / "run")
    assert (s["judge"]["answered_samples"], s["judge"]["independent_samples"], s["judge"]["identical_samples"]) == \
        (6, 2, 4)
    assert "4 of 6 judge samples repeated an earlier sample" in s["judge_warnings"][0]
    assert "do_sample" in s["judge_warnings"][0] and "run_errors" not in s
