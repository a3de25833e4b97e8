"""`inferix serve` under hostile and faulty clients (issue 59 item 5): admission control, malformed
control messages, validated numeric fields, finished sessions reclaimed.

Driven like tests/inferix/test_serve.py: the tiny model, the real ASGI app over WebSocket.
"""

from __future__ import annotations

import contextlib
import time

import numpy as np
import pytest

from inferix.engine import Engine, EngineConfig
from inferix.kv_cache import CachePolicy
from inferix.registry import load_model
from inferix.sampling import SamplingConfig

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from inferix.streaming.server import create_app  # noqa: E402

HW = (8, 8)


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny")


def _engine(tiny, max_sessions: int = 4, policy: str = "rolling:6") -> Engine:
    cfg = EngineConfig(latent_hw=HW, policy=CachePolicy.parse(policy), max_sessions=max_sessions, sampling=SamplingConfig(timesteps=tiny.sampling.timesteps[:2]))
    return Engine(tiny.model, tiny.codec, tiny.text_encoder, cfg, tiny.action_encoder)


def _receive_all(ws):
    blocks, end, errors = [], None, []
    while end is None:
        msg = ws.receive_json()
        if msg["type"] == "block":
            raw = ws.receive_bytes()
            blocks.append(np.frombuffer(raw, np.uint8).reshape(msg["frames"], msg["height"], msg["width"], 3))
        elif msg["type"] == "end":
            end = msg
        elif msg["type"] == "error":
            errors.append(msg)
    return blocks, end, errors


def test_twenty_sessions_against_four_are_refused_up_front_never_failed_mid_stream(tiny):
    """Was: all 20 admitted, then "KV pool has no free block" mid-stream."""
    engine = _engine(tiny, max_sessions=4)
    outcomes: list[str] = []
    with TestClient(create_app(engine, tiny, max_ahead=100)) as client, contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(client.websocket_connect("/ws")) for _ in range(20)]
        for i, ws in enumerate(sockets):
            ws.send_json({"prompt": f"session {i}", "seed": i, "num_blocks": 3})
        for ws in sockets:
            first = ws.receive_json()
            if first["type"] == "error":
                assert first["code"] == "busy" and "4 of the 4 sessions" in first["message"], first
                outcomes.append("refused")
                continue
            assert first["type"] == "session"
            blocks, end, errors = _receive_all(ws)
            assert (end["state"], end["error"], errors, len(blocks)) == ("finished", None, [], 3)
            outcomes.append("finished")
    assert outcomes.count("finished") >= 4 and outcomes.count("refused") >= 1
    assert "failed" not in outcomes


def test_a_refused_client_gets_in_once_a_session_ends(tiny):
    engine = _engine(tiny, max_sessions=2)
    with (TestClient(create_app(engine, tiny, max_ahead=1)) as client, client.websocket_connect("/ws") as a,
          client.websocket_connect("/ws") as b):
        for ws in (a, b):
            ws.send_json({"prompt": "long", "num_blocks": None})  # unbounded: live until cancelled
            assert ws.receive_json()["type"] == "session"
        with client.websocket_connect("/ws") as c:
            c.send_json({"prompt": "third"})
            refused = c.receive_json()
            assert refused["type"] == "error" and refused["code"] == "busy"
        a.send_json({"cancel": True})
        _, end, _ = _receive_all(a)
        assert end["state"] == "cancelled"
        with client.websocket_connect("/ws") as d:
            d.send_json({"prompt": "after", "num_blocks": 2})
            assert d.receive_json()["type"] == "session"
            blocks, end, _ = _receive_all(d)
            assert end["state"] == "finished" and len(blocks) == 2
        b.send_json({"cancel": True})
        _receive_all(b)


def test_full_policy_refuses_a_session_longer_than_the_pool_holds(tiny):
    engine = _engine(tiny, max_sessions=2, policy="full")
    with TestClient(create_app(engine, tiny)) as client, client.websocket_connect("/ws") as ws:
        ws.send_json({"prompt": "forever", "num_blocks": None})
        msg = ws.receive_json()
    assert msg["code"] == "bad_request" and "full KV policy" in msg["message"]


def test_malformed_control_messages_are_answered_and_the_session_goes_on(tiny):
    """The protocol says a bad control message gets an error and the session goes on (was: socket closed)."""
    with TestClient(create_app(_engine(tiny), tiny, max_ahead=1)) as client, client.websocket_connect("/ws") as ws:
        ws.send_json({"prompt": "a maze", "seed": 0, "num_blocks": 4, "action": "left"})
        assert ws.receive_json()["type"] == "session"
        ws.send_text("this is not json")
        ws.send_bytes(b"\x00\x01binary")
        ws.send_text("[1, 2, 3]")
        ws.send_text('{"action": ')
        ws.send_json({"pause": "yes"})
        ws.send_json({"prompt": 5})
        ws.send_json({"action": {"nested": [1]}})
        ws.send_json({"teleport": True})
        ws.send_json({"action": "right"})  # a good one after all that still steers
        blocks, end, errors = _receive_all(ws)
    assert end["state"] == "finished" and len(blocks) == 4
    text = " | ".join(e["message"] for e in errors)
    for expected in ("not valid JSON", "binary message", "JSON objects, got list", "pause must be true or false",
                     "prompt must be a string", "unknown control field(s) ['teleport']"):
        assert expected in text, text
    assert len(errors) == 8


@pytest.mark.parametrize("raw, field", [
    ('{"prompt": "x", "seed": 1e999}', "seed"),
    ('{"prompt": "x", "seed": -1e999}', "seed"),
    ('{"prompt": "x", "seed": NaN}', "seed"),
    ('{"prompt": "x", "seed": 2.5}', "seed"),
    ('{"prompt": "x", "seed": -1}', "seed"),
    ('{"prompt": "x", "seed": 99999999999999999999999}', "seed"),
    ('{"prompt": "x", "seed": "7"}', "seed"),
    ('{"prompt": "x", "seed": true}', "seed"),
    ('{"prompt": "x", "num_blocks": 1e999}', "num_blocks"),
    ('{"prompt": "x", "num_blocks": 0}', "num_blocks"),
    ('{"prompt": "x", "num_blocks": 2.5}', "num_blocks"),
    ('{"prompt": "x", "num_blocks": "3"}', "num_blocks"),
    ('{"prompt": ["x"]}', "prompt"),
    ("[1]", "JSON object"),
    ("{not json", "not valid JSON"),
])
def test_bad_numbers_in_the_first_message_get_an_error_not_a_dead_handler(tiny, raw, field):
    with TestClient(create_app(_engine(tiny), tiny)) as client:
        with client.websocket_connect("/ws") as ws:
            ws.send_text(raw)
            msg = ws.receive_json()
        assert msg["type"] == "error" and msg["code"] == "bad_request" and field in msg["message"], msg
        with client.websocket_connect("/ws") as ws:  # the server is fine afterwards
            ws.send_json({"prompt": "x", "seed": 3.0, "num_blocks": 1})
            assert ws.receive_json()["type"] == "session"
            assert _receive_all(ws)[1]["state"] == "finished"


def test_http_control_rejects_bad_types(tiny):
    with TestClient(create_app(_engine(tiny), tiny, max_ahead=1)) as client, client.websocket_connect("/ws") as ws:
        ws.send_json({"prompt": "x", "num_blocks": 3})
        sid = ws.receive_json()["session_id"]
        r = client.post(f"/sessions/{sid}/control", json={"pause": "no"})
        assert r.status_code == 400 and "pause must be true or false" in r.json()["detail"]
        assert _receive_all(ws)[1]["state"] == "finished"


def test_finished_sessions_are_reclaimed_from_the_table(tiny):
    engine = _engine(tiny, max_sessions=2)
    with TestClient(create_app(engine, tiny)) as client:
        for i in range(6):
            with client.websocket_connect("/ws") as ws:
                ws.send_json({"prompt": "x", "seed": i, "num_blocks": 1})
                ws.receive_json()
                assert _receive_all(ws)[1]["state"] == "finished"
        with client.websocket_connect("/ws") as ws:  # a client that leaves mid-stream: cancelled, reclaimed
            ws.send_json({"prompt": "x", "num_blocks": None})
            ws.receive_json()
        deadline = time.monotonic() + 10
        while engine.sessions and time.monotonic() < deadline:
            time.sleep(0.05)
        assert client.get("/sessions").json() == [] and client.get("/health").json()["sessions"] == 0
    assert engine.sessions == {}


def test_the_idle_clock_runs_only_while_a_session_waits_for_its_client(tiny):
    """A session being generated is never idle however long it takes (its blocks here outlast the 1 ms
    timeout); once its client stops taking blocks, back-pressure pauses it and the clock runs out."""
    from inferix.streaming.server import EngineLoop

    engine = _engine(tiny)
    loop = EngineLoop(engine, max_ahead=100, idle_timeout_s=0.001)
    ends: dict[str, dict] = {}

    def callback(name):
        def deliver(msg, frames):
            if msg["type"] == "end":
                ends[name] = msg
        return deliver

    loop.start()
    try:
        loop.call(lambda: loop.admit(callback("busy"), prompt="x", seed=0, num_blocks=4)).result(timeout=30)
        deadline = time.monotonic() + 30
        while "busy" not in ends and time.monotonic() < deadline:
            time.sleep(0.01)
        loop.max_ahead = 1
        loop.call(lambda: loop.admit(callback("gone"), prompt="x", seed=1, num_blocks=None)).result(timeout=30)
        while "gone" not in ends and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        loop.stop()
    assert ends["busy"]["state"] == "finished" and ends["busy"]["error"] is None
    assert ends["gone"]["state"] == "cancelled" and ends["gone"]["error"].startswith("idle")
    assert engine.sessions == {}


def test_a_clients_pause_is_not_undone_when_back_pressure_lifts(tiny):
    """Was (issue 60; `test_serve_soak.py` hung to pytest-timeout's 600 s in a CI run): a pause that reached
    the engine after back-pressure had paused the session for its undelivered block, and before that block
    was taken, was undone when it was taken; the session streamed on for good and was never idle. Here the
    order is forced: block 0 handed out (back-pressure pauses), the client pauses, then takes block 0."""
    from inferix.streaming.server import EngineLoop

    engine = _engine(tiny)
    loop = EngineLoop(engine, max_ahead=1, idle_timeout_s=None)
    blocks: list[int] = []

    def deliver(msg, frames):
        if msg["type"] == "block":
            blocks.append(msg["index"])

    def state(sid):
        return loop.call(lambda: (engine.sessions[sid].state.value, engine.sessions[sid].blocks_done)).result(timeout=30)

    loop.start()
    try:
        sid = loop.call(lambda: loop.admit(deliver, prompt="x", seed=0, num_blocks=None)).result(timeout=30)
        deadline = time.monotonic() + 30
        while not blocks and time.monotonic() < deadline:
            time.sleep(0.01)
        assert blocks == [0], f"no block within 30 s: {blocks}"
        assert state(sid) == ("paused", 1)  # back-pressure: block 0 is not taken yet
        loop.call(lambda: loop.control(sid, {"pause": True})).result(timeout=30)
        loop.taken(sid)
        time.sleep(0.5)  # ~40 blocks' time on the tiny model: a resumed session would have made one more
        assert state(sid) == ("paused", 1) and blocks == [0], (state(sid), blocks)
        loop.call(lambda: loop.control(sid, {"resume": True})).result(timeout=30)  # the client resumes it
        while len(blocks) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert blocks == [0, 1], f"the resumed session made no block within 30 s: {blocks}"
    finally:
        loop.stop()
