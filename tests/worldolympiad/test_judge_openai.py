"""OpenAI-compatible judge against a scripted HTTP server on 127.0.0.1 (no network)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from worldolympiad.judges import JudgeError, build_judge


class ScriptedServer:
    """Serves /v1/chat/completions from a script of (kind, payload) items, one per request."""

    def __init__(self, script, models=None):
        self.script = list(script)
        self.requests: list[dict] = []
        self.models = models  # the /v1/models answer (None: 404, as servers without the endpoint)
        self.gets = 0
        lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):  # noqa: N802 - http.server API
                outer.gets += 1
                data = json.dumps(outer.models).encode() if outer.models is not None else b"not found"
                self.send_response(200 if outer.models is not None else 404)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):  # noqa: N802 - http.server API
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with lock:
                    outer.requests.append(body)
                    kind, payload = outer.script.pop(0) if outer.script else ("status", 503)
                try:
                    if kind == "sleep":
                        time.sleep(payload)
                        kind, payload = "ok", '{"compliant": true, "confidence": 0.1, "explanation": "late"}'
                    if kind == "status":
                        self.send_response(payload)
                        self.end_headers()
                        self.wfile.write(b"server error")
                        return
                    if kind == "error":  # (status, body text)
                        data = json.dumps({"detail": payload[1]}).encode()
                        self.send_response(payload[0])
                        self.send_header("Content-Length", str(len(data)))
                        self.end_headers()
                        self.wfile.write(data)
                        return
                    texts = payload if kind == "choices" else [payload]
                    data = json.dumps({"choices": [{"index": i, "message": {"role": "assistant", "content": t}}
                                                   for i, t in enumerate(texts)],
                                       "usage": {"prompt_tokens": 100, "completion_tokens": 10 * len(texts)}}).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    servers = []

    def make(script, models=None):
        s = ScriptedServer(script, models)
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.close()


FRAMES = [np.full((16, 16, 3), 90, np.uint8), np.full((16, 16, 3), 160, np.uint8)]
KEYS = ("compliant", "confidence", "explanation")


def _ok(v: bool) -> tuple[str, str]:
    return ("ok", json.dumps({"compliant": v, "confidence": 0.9, "explanation": "because"}))


def test_votes_retries_repair_timeout_and_cache(server, tmp_path):
    srv = server([
        ("status", 500),  # sample 0: server error -> retried
        _ok(True),
        ("ok", "The ball falls, so yes."),  # sample 1: malformed -> one correction request
        ("ok", "```json\n{'compliant': True, 'confidence': 0.8, 'explanation': 'ok',}\n```"),
        ("sleep", 1.5),  # sample 2: times out -> retried
        _ok(False),
    ])
    opts = {"cache_dir": tmp_path, "timeout": 0.5, "retries": 2, "backoff": 0.01, "temperature": 0.7}
    judge = build_judge(f"openai:{srv.url}#tiny-vlm", **opts)
    ans = judge.ask_json("Does the ball obey gravity?", FRAMES, keys=KEYS, samples=3)
    from worldolympiad.judges.base import majority

    assert [a["compliant"] for a in ans.answers] == [True, True, False]
    assert majority(ans.answers, "compliant") == (True, pytest.approx(2 / 3))
    assert ans.calls == 6 and len(srv.requests) == 6
    # every request carries the frames as images, the model name and a per-sample seed
    first = srv.requests[1]
    assert first["model"] == "tiny-vlm"
    parts = first["messages"][0]["content"]
    assert sum(p["type"] == "image_url" for p in parts) == 2
    assert parts[0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert "not a valid JSON object" in srv.requests[3]["messages"][0]["content"][-1]["text"]
    assert {r["seed"] for r in srv.requests} == {0, 1, 2}

    # a second run (new judge, same cache dir) makes zero calls
    judge2 = build_judge(f"openai:{srv.url}#tiny-vlm", **opts)
    again = judge2.ask_json("Does the ball obey gravity?", FRAMES, keys=KEYS, samples=3)
    assert (again.calls, again.cached) == (0, 3)
    assert len(srv.requests) == 6
    assert again.answers == ans.answers
    assert judge2.describe()["base_url"] == srv.url and "api_key" not in judge2.describe()


def test_budget_is_enforced_across_questions(server, tmp_path):
    srv = server([_ok(True)] * 4)
    judge = build_judge(f"openai:{srv.url}#m", cache_dir=tmp_path, budget=3, temperature=0.7)
    judge.ask_json("q1", FRAMES, keys=KEYS, samples=2)
    # q2: its first sample is the budget's last request; the second is refused, the answer it got is kept
    partial = judge.ask_json("q2", FRAMES, keys=KEYS, samples=2)
    assert len(partial.answers) == 1 and partial.failures == {"budget": 1}
    assert "budget of 3" in partial.errors[0]
    with pytest.raises(JudgeError, match="budget of 3") as e:
        judge.ask_json("q3", FRAMES, keys=KEYS, samples=2)
    assert e.value.kind == "budget" and e.value.calls == 0
    assert len(srv.requests) == 3


def test_options_ride_on_the_spec(server, tmp_path):
    srv = server([_ok(True)] * 3)
    judge = build_judge(f"openai:{srv.url}#m?budget=1&timeout=5&temperature=0.3", cache_dir=tmp_path)
    d = judge.describe()
    assert (d["model"], d["budget"], d["timeout"], d["temperature"]) == ("m", 1, 5.0, 0.3)
    judge.ask_json("q", FRAMES, keys=KEYS)
    with pytest.raises(JudgeError, match="budget of 1"):
        judge.ask_json("q2", FRAMES, keys=KEYS)


def test_persistent_server_error_is_a_judge_error(server, tmp_path):
    srv = server([("status", 500)] * 3)
    judge = build_judge(f"openai:{srv.url}#m", cache_dir=tmp_path, retries=2, backoff=0.0)
    with pytest.raises(JudgeError, match="after 3 attempts"):
        judge.ask_json("q", FRAMES, keys=KEYS)


@pytest.mark.parametrize("spec", ["openai:http://127.0.0.1:1/v1", "openai:127.0.0.1#m", "openai:"])
def test_bad_spec_explains_the_format(spec):
    with pytest.raises(ValueError, match="BASE_URL"):
        build_judge(spec)


# --------------------------------------------------------------------------- issue 62


def test_sampled_requests_ask_for_independent_samples_and_greedy_ones_do_not(server, tmp_path):
    """temperature + top_p=1.0 (overriding a model config's top_p=0.001) + one seed per sample; a
    single sample is greedy and sends no top_p."""
    srv = server([_ok(True), ("ok", _ok(False)[1]), _ok(True), _ok(True)])
    judge = build_judge(f"openai:{srv.url}#m", cache_dir=tmp_path, temperature=0.7)
    judge.ask_json("q", FRAMES, keys=KEYS, samples=3)
    assert [(r["temperature"], r["top_p"], r["seed"]) for r in srv.requests] == [(0.7, 1.0, 0), (0.7, 1.0, 1),
                                                                                   (0.7, 1.0, 2)]
    judge.ask_json("q1", FRAMES, keys=KEYS)
    assert srv.requests[-1]["temperature"] == 0.0 and "top_p" not in srv.requests[-1]


def test_use_n_draws_the_samples_in_one_request_and_asks_for_what_a_server_did_not_return(server, tmp_path):
    v = [_ok(b)[1] for b in (True, False, True)]
    srv = server([("choices", v)])
    judge = build_judge(f"openai:{srv.url}#m?use_n=1", cache_dir=tmp_path, temperature=0.7)
    ans = judge.ask_json("q", FRAMES, keys=KEYS, samples=3)
    assert [a["compliant"] for a in ans.answers] == [True, False, True] and ans.calls == 1
    assert srv.requests[0]["n"] == 3 and (ans.prompt_tokens, ans.completion_tokens) == (100, 30)
    # a server that ignores n (transformers serve) returns one choice: samples 1 and 2 are asked one by one
    srv = server([("choices", v[:1]), ("ok", v[1]), ("ok", v[2])])
    judge = build_judge(f"openai:{srv.url}#m?use_n=true", cache_dir=tmp_path / "b", temperature=0.7)
    ans = judge.ask_json("q", FRAMES, keys=KEYS, samples=3)
    assert len(ans.answers) == 3 and [r.get("n") for r in srv.requests] == [3, None, None]
    assert [r["seed"] for r in srv.requests] == [0, 1, 2]


def test_extra_body_reaches_the_server(server, tmp_path):
    srv = server([_ok(True)])
    extra = json.dumps({"generation_config": json.dumps({"do_sample": True}), "top_k": -1})
    judge = build_judge(f"openai:{srv.url}#m", cache_dir=tmp_path, extra_body=extra)
    judge.ask_json("q", FRAMES, keys=KEYS)
    assert srv.requests[0]["top_k"] == -1 and json.loads(srv.requests[0]["generation_config"]) == {"do_sample": True}
    with pytest.raises(ValueError, match="extra_body must be a JSON object"):
        build_judge(f"openai:{srv.url}#m", extra_body="[1]")


@pytest.mark.parametrize("status, body, kind, says", [
    (400, "invalid image", "http", "will refuse it again"),
    (401, "bad key", "http", "check the API key"),
    (422, "Unexpected fields in the request: {'top_k'}", "http", "against what the server accepts"),
    # 3,391 tokens for 2 frames: not even one frame would fit (int(2 x 768 / 3391) = 0), so not asked again
    (400, "The prompt has 3391 tokens, but the model takes at most 1024, prompt and answer (`--max-model-len`).",
     "context_length", "prompt of 3,391 tokens (2 frame(s)) exceeds the server's 1,024-token context"),
])
def test_a_4xx_is_one_failed_request_with_its_kind_and_fix_never_a_bare_error(server, tmp_path, status, body, kind,
                                                                               says):
    """On 85cf2c2 a 4xx raised a bare ValueError ("check model name and URL") that the physics track
    did not catch, and the whole row was lost."""
    srv = server([("error", (status, body))] * 3)
    judge = build_judge(f"openai:{srv.url}#m", cache_dir=tmp_path, retries=2)
    with pytest.raises(JudgeError) as e:
        judge.ask_json("q", FRAMES, keys=KEYS, samples=3)
    assert e.value.kind == kind and says in str(e.value)
    assert len(srv.requests) == 1 == e.value.calls  # not retried, and the other samples are not asked


def test_an_unserved_model_is_named_with_what_the_server_serves(server, tmp_path):
    srv = server([("error", (404, "The model `qwen` does not exist."))],
                 models={"object": "list", "data": [{"id": "Qwen/Qwen2.5-VL-7B-Instruct", "max_model_len": 8192}]})
    judge = build_judge(f"openai:{srv.url}#qwen", cache_dir=tmp_path)
    with pytest.raises(JudgeError, match=r"'qwen' is not served there; it serves \['Qwen/Qwen2.5-VL-7B-Instruct'\]") as e:
        judge.ask_json("q", FRAMES, keys=KEYS)
    assert e.value.kind == "model_not_served"


def test_the_context_the_server_reports_caps_the_answer_and_a_too_long_cap_is_asked_again(server, tmp_path):
    """vLLM reports max_model_len in /v1/models; its error for prompt + max_tokens over the context
    names both numbers: the request is sent again with the room that is left."""
    msg = ("This model's maximum context length is 1024 tokens. However, you requested 1156 tokens "
           "(900 in the messages, 256 in the completion). Please reduce the length of the messages or completion.")
    srv = server([("error", (400, msg)), _ok(True)],
                 models={"data": [{"id": "m", "max_model_len": 2048}]})
    judge = build_judge(f"openai:{srv.url}#m", cache_dir=tmp_path)
    ans = judge.ask_json("q", FRAMES, keys=KEYS)
    assert ans.answers[0]["compliant"] is True
    assert [r["max_tokens"] for r in srv.requests] == [256, 124] and judge.max_context == 1024


def test_server_info_reads_served_ids_and_context(server, tmp_path):
    srv = server([], models={"data": [{"id": "a", "max_model_len": 4096}, {"id": "b"}]})
    judge = build_judge(f"openai:{srv.url}#a", cache_dir=tmp_path)
    info = judge.check_served()
    assert info is not None and info.ids == ("a", "b") and judge.max_context == 4096
    fixed = build_judge(f"openai:{srv.url}#a?max_context=2000", cache_dir=tmp_path)
    fixed.check_served()
    assert fixed.max_context == 2000  # the option wins over the report


@pytest.mark.parametrize("text, numbers", [
    ("The prompt has 1391 tokens, but the model takes at most 1024, prompt and answer (`--max-model-len`).",
     (1391, 1024)),  # transformers serve
    ("This model's maximum context length is 1024 tokens. However, you requested 1391 tokens (1135 in the "
     "messages, 256 in the completion).", (1135, 1024)),  # vLLM
    ("'max_tokens' is too large: 256. This model's maximum context length is 1024 tokens and your request has "
     "900 input tokens (256 > 1024 - 900).", (900, 1024)),  # newer vLLM
    ("This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
     (130000, 128000)),  # OpenAI
    ("The input (1391 tokens) is longer than the model's context length (1024 tokens).", (1391, 1024)),  # SGLang
    ("invalid image_url", None),
])
def test_context_errors_of_the_common_servers_are_read(text, numbers):
    from worldolympiad.judges.openai import parse_context_error

    assert parse_context_error(text) == numbers


def test_frames_are_thinned_to_fit_a_context_the_server_names(server, tmp_path):
    """8 frames make a 2,100-token prompt on a 1,024-token server: the question is asked again on
    int(8 x (1024 - 256) / 2100) = 2 evenly spaced frames (first and last), and the judge remembers:
    the next question with 8 frames sends 2 at once. The answer says so."""
    over = ("error", (400, "The prompt has 2100 tokens, but the model takes at most 1024, prompt and answer."))
    srv = server([over, _ok(True), _ok(False)])
    frames = [np.full((16, 16, 3), 10 * i, np.uint8) for i in range(8)]
    judge = build_judge(f"openai:{srv.url}#m", cache_dir=tmp_path, max_new_tokens=512)
    ans = judge.ask_json("q", frames, keys=KEYS)
    assert ans.answers[0]["compliant"] is True and ans.calls == 2 and ans.frames_sent == 2
    assert "asked on 2 of 8 frames" in ans.notes[0] and "1,024-token" in ans.notes[0]
    parts = [[p for p in r["messages"][0]["content"] if p["type"] == "image_url"] for r in srv.requests]
    assert [len(p) for p in parts] == [8, 2]
    assert parts[1][0] == parts[0][0] and parts[1][1] == parts[0][7]  # evenly spaced: the first and the last
    again = judge.ask_json("q2", frames, keys=KEYS)
    assert again.calls == 1 and again.frames_sent == 2 and again.answers[0]["compliant"] is False


def test_a_prompt_whose_text_alone_is_over_the_context_fails_without_guessing(server, tmp_path):
    over = ("error", (400, "The prompt has 5000 tokens, but the model takes at most 1024, prompt and answer."))
    srv = server([over])
    judge = build_judge(f"openai:{srv.url}#m", cache_dir=tmp_path)
    with pytest.raises(JudgeError, match="prompt of 5,000 tokens") as e:
        judge.ask_json("q", FRAMES, keys=KEYS)  # int(2 x 768 / 5000) = 0 frames: nothing to ask on
    assert e.value.kind == "context_length" and len(srv.requests) == 1


def test_the_servers_model_list_is_asked_once_per_process_not_once_per_row(server, tmp_path):
    """Every row builds its own judge; each asked ``/v1/models`` again (500 rows, 500 requests). The answer
    is shared by the process's judges of one server for a while, and ``refresh`` asks again."""
    srv = server([], models={"data": [{"id": "m", "max_model_len": 4096}]})
    judges = [build_judge(f"openai:{srv.url}#m", cache_dir=tmp_path) for _ in range(3)]
    assert all(j.check_served().ids == ("m",) and j.max_context == 4096 for j in judges)
    assert srv.gets == 1
    judges[0].server_info(refresh=True)
    assert srv.gets == 2
    other = server([], models={"data": [{"id": "n"}]})  # another server is asked for itself
    assert build_judge(f"openai:{other.url}#n", cache_dir=tmp_path).check_served().ids == ("n",)
