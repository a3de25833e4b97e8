"""``--model http:URL`` (issue 58 item 3): the contract in docs/model_http.md, tested against the page's own
example server (run in a thread): the case goes out as JSON, frames come back, per-chunk rollout carries
each action and the last frame; a dead URL exits 2, and timeouts, HTTP errors and non-frames are one-line
per-case errors."""

from __future__ import annotations

import base64
import io
import json
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import wo_testlib
from PIL import Image

from worldolympiad.cli.evaluate import main as evaluate_main
from worldolympiad.models.base import ModelError
from worldolympiad.models.http_model import HttpModel
from worldolympiad.types import Case

DOC = Path(__file__).resolve().parents[2] / "docs" / "model_http.md"


def _doc_handler() -> type[BaseHTTPRequestHandler]:
    code = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert len(code) == 1
    namespace: dict[str, Any] = {"__name__": "model_http_example"}
    exec(compile(code[0], str(DOC), "exec"), namespace)
    return namespace["Handler"]  # type: ignore[no-any-return]


def _serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def doc_server() -> Iterator[tuple[str, list[tuple[str, dict[str, Any]]]]]:
    """The documented example server, recording every (path, request JSON)."""
    seen: list[tuple[str, dict[str, Any]]] = []

    class Recording(_doc_handler()):  # type: ignore[misc]
        def do_POST(self) -> None:  # noqa: N802 - http.server names it
            body = self.rfile.read(int(self.headers["Content-Length"]))
            seen.append((self.path, json.loads(body)))
            self.rfile = io.BytesIO(body)
            super().do_POST()

        def log_message(self, *args: Any) -> None:
            pass

    for url in _serve(Recording):
        yield url, seen


def _png(text: str) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(text))).convert("RGB"))


@pytest.fixture
def conditioned_suite(tmp_path) -> tuple[Path, np.ndarray]:
    """Two cases with a conditioning image: 24 frames at 32 px (enough for the long-video track), two chunks."""
    image = wo_testlib.frames_for("cond", 1, (32, 32))[0]
    Image.fromarray(image).save(tmp_path / "first.png")
    cases = [wo_testlib.case_dict(f"case{i}", 24, (32, 32), conditioning="first.png") for i in range(2)]
    return wo_testlib.write_suite(tmp_path / "suite.json", cases), image


def _rows(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for p in out.glob("*/results.jsonl") for line in p.read_text().splitlines()]


def _run(model: str, suite: Path, out: Path, *extra: str, tracks: str = "counting") -> int:
    return evaluate_main(["--model", model, "--suite", str(suite), "--tracks", tracks, "--out", str(out),
                          "--no-progress", "--no-report", *extra])


def test_the_case_goes_out_as_documented_and_the_frames_come_back(doc_server, conditioned_suite, tmp_path):
    url, seen = doc_server
    suite, image = conditioned_suite
    assert _run(f"http:{url}", suite, tmp_path / "runs", "--limit", "1") == 0
    [(path, req)] = seen
    assert path == "/generate"
    assert {k: req[k] for k in ("id", "seed", "prompt", "fps", "num_frames", "resolution")} == {
        "id": "case0", "seed": 0, "prompt": "a test scene case0", "fps": 8.0, "num_frames": 24, "resolution": [32, 32]}
    np.testing.assert_array_equal(_png(req["first_frame"]), image)
    assert [(c["index"], c["num_frames"], c["caption"], c["action"]) for c in req["chunks"]] == [
        (0, 12, "first", "left"), (1, 12, "second", "right")]
    [row] = _rows(tmp_path / "runs")
    brightness = next(m["raw"] for m in row["metrics"] if m["name"] == "brightness")
    assert row["status"] == "ok" and brightness == pytest.approx(image.mean() / 255, abs=0.01)


def test_chunks_mode_sends_each_action_with_the_last_frame_so_far(doc_server, conditioned_suite, tmp_path):
    url, seen = doc_server
    suite, image = conditioned_suite
    assert _run(f"http:{url}", suite, tmp_path / "runs", "--limit", "1", "--option", "model.mode=chunks") == 0
    assert [(p, r["chunk"]["index"], r["chunk"]["action"]) for p, r in seen] == [
        ("/chunk", 0, "left"), ("/chunk", 1, "right")]
    for _, req in seen:
        np.testing.assert_array_equal(_png(req["last_frame"]), image)
        assert "chunks" not in req and req["num_frames"] == 24
    assert [r["status"] for r in _rows(tmp_path / "runs")] == ["ok"]


def test_evaluate_model_scores_the_long_video_track_through_http(doc_server, conditioned_suite, tmp_path):
    url, _ = doc_server
    suite, _ = conditioned_suite
    assert _run(f"http:{url}", suite, tmp_path / "runs", "--limit", "1", tracks="longvideo") == 0
    [row] = _rows(tmp_path / "runs")
    assert row["status"] == "ok" and row["score"] is not None and row["model"] == f"http:{url}", row


@pytest.mark.parametrize(("spec", "says"), [
    ("http:http://127.0.0.1:{port}", "nothing answers at 127.0.0.1:{port}"),
    ("http:", "give the server's base URL, e.g. --model http:http://127.0.0.1:8000"),
    ("http:ftp://example.org", "give the server's base URL"),
], ids=["dead", "empty", "scheme"])
def test_a_url_that_cannot_work_exits_2_in_one_line(conditioned_suite, tmp_path, capsys, spec, says):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    suite, _ = conditioned_suite
    assert _run(spec.format(port=port), suite, tmp_path / "runs") == 2
    err = capsys.readouterr().err
    assert says.format(port=port) in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "runs").exists()


class _Misbehaving(BaseHTTPRequestHandler):
    """/slow sleeps past the timeout; /broken answers 500 with a text body; /junk sends no frames."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        kind = self.path.strip("/").split("/")[0]
        if kind == "slow":
            time.sleep(1.5)
        status, body = {"broken": (500, b"CUDA out of memory"), "junk": (200, b"not frames at all")}.get(kind, (200, b""))
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.parametrize(("route", "says"), [
    ("slow", "no answer within 0.3 s; raise --option model.timeout=SECONDS"),
    ("broken", "answered HTTP 500 Internal Server Error: CUDA out of memory; fix the server"),
    ("junk", "neither an npz nor a readable video"),
], ids=["timeout", "http-error", "not-frames"])
def test_a_misbehaving_server_is_one_line_naming_the_url_and_the_case(route, says, tmp_path):
    case = Case.from_dict(wo_testlib.case_dict("c0"), base_dir=tmp_path)
    for url in _serve(_Misbehaving):
        model = HttpModel(f"{url}/{route}", timeout=0.3)
        model.name = f"http:{url}/{route}"
        with pytest.raises(ModelError) as e:
            model.generate(case)
        assert says in str(e.value) and f"case 'c0': POST {url}/{route}/generate" in str(e.value)


def test_a_422_with_a_reason_is_recorded_on_the_case_and_the_run_goes_on(doc_server, tmp_path):
    url, _ = doc_server
    suite = wo_testlib.write_suite(tmp_path / "suite.json", [wo_testlib.case_dict("textonly")])
    assert _run(f"http:{url}", suite, tmp_path / "runs") == 0
    [row] = _rows(tmp_path / "runs")
    assert row["status"] == "failed" and "HTTP 422 this model needs a first frame" in row["errors"][0], row


def test_an_mp4_answer_is_decoded_like_an_npz_one(tmp_path):
    from worldolympiad.models.http_model import decode_frames
    from worldolympiad.video import write_video

    frames = wo_testlib.frames_for("mp4", 8, (32, 32))
    write_video(tmp_path / "a.mp4", frames, 8)
    decoded, fps = decode_frames((tmp_path / "a.mp4").read_bytes(), "video/mp4")
    assert decoded.shape == frames.shape and fps == pytest.approx(8)
    assert np.abs(decoded.astype(int) - frames).mean() < 3


class _OwnSizeAndRate(BaseHTTPRequestHandler):
    """A model at its own size and rate: twice the case's side and frame rate over the case's duration (npz)."""

    def do_POST(self) -> None:  # noqa: N802 - http.server names it
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        h, w = req["resolution"]
        frames = wo_testlib.frames_for(req["id"], req["num_frames"], (h, w))
        big = np.repeat(np.repeat(np.repeat(frames, 2, axis=0), 2, axis=1), 2, axis=2)  # each frame twice, 2x side
        buf = io.BytesIO()
        np.savez(buf, frames=big, fps=np.float64(2 * req["fps"]))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-npz")
        self.end_headers()
        self.wfile.write(buf.getvalue())

    def log_message(self, *args: Any) -> None:
        pass


def test_a_server_at_its_own_size_and_rate_is_scored_on_the_case_frames(tmp_path):
    """Session 65: a served video is read as a videos: file is, on the case's size and clock (the answer was cut at the
    case's frame count before, so a server at twice the rate had half the case's duration read)."""
    suite = wo_testlib.write_suite(tmp_path / "suite.json", [wo_testlib.case_dict("own", 8, (16, 16))])
    for url in _serve(_OwnSizeAndRate):
        assert _run(f"http:{url}", suite, tmp_path / "runs") == 0
    [row] = _rows(tmp_path / "runs")
    assert row["status"] == "ok", row
    shape = next(m for m in row["metrics"] if m["name"] == "brightness")["details"]["shape"]
    assert shape == [8, 16, 16, 3]
    kinds = {w.split(":")[0] for w in row["warnings"]}
    assert {"resized", "fps"} <= kinds, row["warnings"]
    brightness = next(m["raw"] for m in row["metrics"] if m["name"] == "brightness")  # the case's own frames back
    assert brightness == pytest.approx(float(wo_testlib.frames_for("own", 8, (16, 16)).mean()) / 255.0, abs=0.01)
