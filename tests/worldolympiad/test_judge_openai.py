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

    def __init__(self, script):
        self.script = list(script)
        self.requests: list[dict] = []
        lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

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
                    data = json.dumps({"choices": [{"message": {"role": "assistant", "content": payload}}]}).encode()
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

    def make(script):
        s = ScriptedServer(script)
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
