"""`inferix` CLI: generate a minute of video with a bounded KV cache, actions/image input, errors."""

from __future__ import annotations

import json

import av
import numpy as np
import pytest
from PIL import Image

from inferix.cli import main


def _probe(path):
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        frames = [f.to_ndarray(format="rgb24") for f in c.decode(s)]
        return len(frames), float(s.average_rate), frames


def _summary(capsys):
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_generate_60_seconds_with_rolling_kv_bounded(tmp_path, capsys):
    out = tmp_path / "minute.mp4"
    rc = main(["generate", "--model", "tiny", "--prompt", "a long drive", "--seconds", "60", "--out", str(out),
               "--height", "16", "--width", "16", "--steps", "1", "--policy", "rolling:6"])
    assert rc == 0
    s = _summary(capsys)
    n, fps, _ = _probe(out)
    assert (n, fps) == (960, 16.0) and s["seconds"] == 60.0
    # rolling:6 = two 3-frame KV blocks, whatever the length
    assert s["kv_device_blocks_max"] == 2


@pytest.mark.slow
def test_generate_60_seconds_default_steps(tmp_path, capsys):
    out = tmp_path / "minute.mp4"
    assert main(["generate", "--model", "tiny", "--seconds", "60", "--out", str(out)]) == 0
    assert _probe(out)[0] == 960
    assert _summary(capsys)["kv_device_blocks_max"] == 3


def test_generate_with_actions_file_and_first_image(tmp_path, capsys):
    actions = tmp_path / "a.json"
    actions.write_text(json.dumps(["forward", "left", {"action": "jump", "prompt": "a cave"}]))
    img = np.zeros((32, 32, 3), np.uint8)
    img[:, :16] = 255
    Image.fromarray(img).save(tmp_path / "first.png")
    out = tmp_path / "x.mp4"
    rc = main(["generate", "--model", "tiny", "--seconds", "1", "--out", str(out), "--actions", str(actions),
               "--image", str(tmp_path / "first.png"), "--height", "16", "--width", "16", "--steps", "1"])
    assert rc == 0
    n, _, frames = _probe(out)
    assert n == 16 and frames[0].shape == (16, 16, 3)


def test_generate_writes_the_same_bytes_for_the_same_seed(tmp_path, capsys):
    """`inferix generate` output is reproducible to the byte: the streaming writer runs x264 on one
    thread at a constant quantizer (its CRF rate control encoded one clip to different files from
    call to call)."""
    import hashlib
    import re

    data = []
    for i in range(3):
        out = tmp_path / f"v{i}.mp4"
        assert main(["generate", "--model", "tiny", "--seconds", "2", "--out", str(out), "--seed", "3",
                     "--height", "32", "--width", "32", "--steps", "1"]) == 0
        data.append(out.read_bytes())
    options = re.search(rb"x264 - core .*? options: ([^\x00]*)", data[0])
    assert options is not None
    assert b" rc=cqp " in options.group(1) and b" qp=18 " in options.group(1) and b" threads=1 " in options.group(1)
    assert len({hashlib.md5(d).hexdigest() for d in data}) == 1
    # decoding each block on a worker thread while the next one denoises writes the very same file
    out = tmp_path / "overlap.mp4"
    assert main(["generate", "--model", "tiny", "--seconds", "2", "--out", str(out), "--seed", "3",
                 "--height", "32", "--width", "32", "--steps", "1", "--overlap-decode"]) == 0
    assert out.read_bytes() == data[0]


def test_bad_inputs_are_clear_errors(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("[forward")
    assert main(["generate", "--model", "tiny", "--seconds", "1", "--out", str(tmp_path / "x.mp4"),
                 "--actions", str(bad)]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    bad.write_text(json.dumps(["forward", "fly"]))
    assert main(["generate", "--model", "tiny", "--seconds", "1", "--out", str(tmp_path / "x.mp4"),
                 "--actions", str(bad), "--steps", "1", "--height", "16", "--width", "16"]) == 2
    assert "unknown action 'fly'" in capsys.readouterr().err
    assert main(["generate", "--model", "tiny", "--seconds", "1", "--out", str(tmp_path / "x.mp4"),
                 "--policy", "window=3"]) == 2
    assert "rolling:WINDOW" in capsys.readouterr().err
    assert main(["generate", "--model", "nosuchmodel", "--seconds", "1", "--out", str(tmp_path / "x.mp4")]) == 2
    assert "tiny" in capsys.readouterr().err


def test_stream_reads_actions_from_stdin(tmp_path, capsys, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("action right\nprompt a beach\nwarp\n"))
    out = tmp_path / "live.mp4"
    assert main(["stream", "--model", "tiny", "--seconds", "1", "--out", str(out), "--steps", "1",
                 "--height", "16", "--width", "16"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.strip().splitlines()]
    blocks = [x for x in lines if "block" in x]
    assert blocks[-1]["action"] == "right" and blocks[-1]["prompt"] == "a beach"
    assert any("unknown command 'warp'" in x.get("error", "") for x in lines)
    assert _probe(out)[0] == 16


def test_profile_writes_json_and_plot(tmp_path, capsys):
    out = tmp_path / "prof.json"
    assert main(["profile", "--model", "tiny", "--seconds", "1", "--out", str(out), "--steps", "1",
                 "--height", "16", "--width", "16"]) == 0
    prof = json.loads(out.read_text())
    assert len(prof["blocks"]) == 6 and prof["fps"] > 0 and prof["time_to_first_frame_s"] > 0
    assert prof["fps_includes_decode"] is True
    assert all(b["denoise_s"] > 0 and b["cache_update_s"] > 0 and b["kv_bytes"] > 0 for b in prof["blocks"])
    assert (tmp_path / "prof.png").stat().st_size > 1000


