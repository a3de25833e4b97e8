"""`inferix serve`: frames stream over WebSocket exactly as the engine makes them; actions flow back."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from inferix.engine import Engine, EngineConfig
from inferix.kv_cache import CachePolicy
from inferix.registry import load_model
from inferix.sampling import SamplingConfig

fastapi = pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from inferix.streaming.server import create_app  # noqa: E402

HW = (8, 8)


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny")


def _engine(tiny, overlap_decode=False):
    cfg = EngineConfig(latent_hw=HW, policy=CachePolicy.parse("rolling:6"), sampling=SamplingConfig(timesteps=tiny.sampling.timesteps[:2]),
                       overlap_decode=overlap_decode)
    return Engine(tiny.model, tiny.codec, tiny.text_encoder, cfg, tiny.action_encoder)


def _receive_all(ws):
    blocks, end, errors = [], None, []
    while end is None:
        msg = ws.receive_json()
        if msg["type"] == "block":
            raw = ws.receive_bytes()
            frames = np.frombuffer(raw, np.uint8).reshape(msg["frames"], msg["height"], msg["width"], 3)
            blocks.append((msg, frames))
        elif msg["type"] == "end":
            end = msg
        elif msg["type"] == "error":
            errors.append(msg)
    return blocks, end, errors


@pytest.mark.parametrize("overlap_decode", [False, True])
def test_websocket_streams_the_same_frames_as_the_engine(tiny, overlap_decode):
    """Also with decodes overlapped: the server steps the engine while a finished session's last block is
    still decoding (nothing left to denoise), so that block and the end message still arrive."""
    ref = list(_engine(tiny).stream("a red ball", num_blocks=3, seed=4, action="left"))
    with TestClient(create_app(_engine(tiny, overlap_decode), tiny)) as client:
        assert client.get("/health").json()["status"] == "ok"
        with client.websocket_connect("/ws") as ws:
            ws.send_json({"prompt": "a red ball", "seed": 4, "num_blocks": 3, "action": "left"})
            hello = ws.receive_json()
            assert hello["type"] == "session" and hello["height"] == 16
            blocks, end, errors = _receive_all(ws)
    assert end["state"] == "finished" and not errors
    assert [m["index"] for m, _ in blocks] == [0, 1, 2]
    for (_, frames), r in zip(blocks, ref, strict=True):
        np.testing.assert_array_equal(frames, r.frames)


def test_actions_sent_back_steer_later_blocks_and_bad_ones_are_reported(tiny):
    with TestClient(create_app(_engine(tiny), tiny, max_ahead=1)) as client, client.websocket_connect("/ws") as ws:
        ws.send_json({"prompt": "a maze", "seed": 0, "num_blocks": 6, "action": "left"})
        ws.receive_json()
        first = ws.receive_json()
        ws.receive_bytes()
        ws.send_json({"action": "fly"})
        ws.send_json({"action": "jump"})
        blocks, end, errors = _receive_all(ws)
    assert first["action"] == "left"
    actions = [m["action"] for m, _ in blocks]
    assert actions[-1] == "jump"
    k = actions.index("jump")
    assert k <= 2 and set(actions[k:]) == {"jump"}  # within max_ahead (+ the block in flight)
    assert any("unknown action 'fly'" in e["message"] for e in errors)
    assert end["state"] == "finished"


def test_bad_start_message_and_http_control_errors(tiny):
    with TestClient(create_app(_engine(tiny), tiny)) as client:
        with client.websocket_connect("/ws") as ws:
            ws.send_json({"prompt": "x", "action": "teleport"})
            msg = ws.receive_json()
            assert msg["type"] == "error" and "unknown action 'teleport'" in msg["message"]
        r = client.post("/sessions/nope/control", json={"action": "left"})
        assert r.status_code == 404 and "unknown session" in r.json()["detail"]


def test_a_failing_session_ends_with_an_error_while_another_streams_on(tiny):
    cfg = EngineConfig(latent_hw=HW, policy=CachePolicy.parse("rolling:6"), sampling=SamplingConfig(timesteps=tiny.sampling.timesteps[:2]))

    def encoder(action):
        return torch.tensor([99]) if action == "broken" else tiny.action_encoder(action)

    engine = Engine(tiny.model, tiny.codec, tiny.text_encoder, cfg, encoder)
    with (TestClient(create_app(engine, tiny)) as client, client.websocket_connect("/ws") as good,
          client.websocket_connect("/ws") as bad):
        good.send_json({"prompt": "ok", "num_blocks": 3})
        bad.send_json({"prompt": "ok", "num_blocks": 3, "action": "broken"})
        good.receive_json()
        bad.receive_json()
        _, bad_end, _ = _receive_all(bad)
        good_blocks, good_end, _ = _receive_all(good)
    assert bad_end["state"] == "failed" and "unknown action id 99" in bad_end["error"]
    assert good_end["state"] == "finished" and len(good_blocks) == 3


def test_gradio_demo_page_is_mounted(tiny):
    pytest.importorskip("gradio")
    with TestClient(create_app(_engine(tiny), tiny, gradio=True)) as client:
        r = client.get("/demo/")
        assert r.status_code == 200 and "gradio" in r.text.lower()
