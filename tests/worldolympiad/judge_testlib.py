"""Helpers of the judge-limit tests, importable by spawned workers (the test directory is on sys.path).

* :class:`ChatServer`: a local OpenAI-compatible ``/v1/chat/completions`` on 127.0.0.1 that
  counts requests and answers ``ok`` (a valid verdict), ``down`` (HTTP 503), ``garbage`` (out of
  the schema) or ``trickle``
  (one byte every ``trickle_every`` s, in the headers or in the body);
* :class:`JudgingTrack`: a test track that asks the run's judge ``judging.questions`` questions
  per row;
* :func:`ask_many`: what one worker process does in the cross-process budget test.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from worldolympiad.track import EvalContext, Track, TrackOutput
from worldolympiad.types import Case, MetricValue, Video

KEYS = ("compliant", "confidence", "explanation")
FRAMES = [np.full((8, 8, 3), 90, np.uint8)]
VERDICT = json.dumps({"compliant": True, "confidence": 0.9, "explanation": "it falls"})


class ChatServer:
    """Counts requests; ``mode`` is ``ok``, ``down``, ``garbage`` (confidence 7.5) or ``trickle-headers`` /
    ``trickle-body``."""

    def __init__(self, mode: str = "ok", trickle_every: float = 2.0, trickle_for: float = 14.0) -> None:
        self.mode = mode
        self.requests = 0
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                self.rfile.read(int(self.headers["Content-Length"]))
                with outer._lock:
                    outer.requests += 1
                try:
                    if outer.mode == "garbage":  # answers, but never within the schema
                        bad = json.dumps({"compliant": True, "confidence": 7.5, "explanation": "sure"})
                        data = json.dumps({"choices": [{"message": {"content": bad}}]}).encode()
                        self.send_response(200)
                        self.send_header("Content-Length", str(len(data)))
                        self.end_headers()
                        self.wfile.write(data)
                        return
                    if outer.mode == "down":
                        self.send_response(503)
                        self.send_header("Content-Length", "4")
                        self.end_headers()
                        self.wfile.write(b"down")
                        return
                    data = json.dumps({"choices": [{"message": {"role": "assistant", "content": VERDICT}}]}).encode()
                    head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                            f"Content-Length: {len(data)}\r\n\r\n").encode()
                    if outer.mode == "ok":
                        self.wfile.write(head + data)
                        return
                    # trickle: one byte every trickle_every s (for at most trickle_for s, then the rest)
                    slow = head if outer.mode == "trickle-headers" else data
                    if outer.mode == "trickle-body":
                        self.wfile.write(head)
                    t0 = time.monotonic()
                    i = 0
                    while i < len(slow) and time.monotonic() - t0 < trickle_for:
                        self.wfile.write(slow[i : i + 1])
                        self.wfile.flush()
                        i += 1
                        time.sleep(trickle_every)
                    self.wfile.write(slow[i:] + (data if outer.mode == "trickle-headers" else b""))
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up: what a deadline is for

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class JudgingTrack(Track):
    """Asks the run's judge ``judging.questions`` (3) questions per row; score = share answered."""

    name = "judging"
    version = "1"

    def applicability(self, case: Case) -> str | None:
        return None

    def evaluate(self, video: Video, case: Case, ctx: EvalContext) -> TrackOutput:
        from worldolympiad.judges import JudgeError

        judge = ctx.judge()
        n = int(ctx.option("judging.questions", 3))
        answered, errors = 0, []
        for q in range(n):
            try:
                judge.ask_json(f"case {case.id} seed {ctx.seed} question {q}", FRAMES, keys=KEYS)
                answered += 1
            except JudgeError as e:
                errors.append(str(e))
        share = answered / n
        return TrackOutput(metrics=[MetricValue("answered", share, share, version="1")], score=share,
                           coverage={"judge_errors": errors})


def register_judging_track() -> None:
    from worldolympiad.registries import TRACKS

    TRACKS.register("judging", JudgingTrack, override=True)


def ask_many(url: str, run_dir: str, budget: int, questions: int, tag: str) -> int:
    """One worker: its own judge on the shared run ledger asks ``questions`` questions; returns answers."""
    from worldolympiad.judges import JudgeError, build_judge

    judge = build_judge(f"openai:{url}#m?retries=0&budget={budget}", run_dir=run_dir)
    answered = 0
    for q in range(questions):
        try:
            judge.ask_json(f"{tag} question {q}", FRAMES, keys=KEYS)
            answered += 1
        except JudgeError:
            pass
    return answered
