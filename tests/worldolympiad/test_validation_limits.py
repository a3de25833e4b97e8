"""Validation refuses what cannot be scored (issue 59, item 3): frame rates that are not real ones, ids that
only look whole, camera poses that are not rotations, cases and decodes past the frame and pixel budgets,
actions the case's vocabulary does not know, files nested too deep to read. Each test failed at f2a8484."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import wo_testlib

from worldolympiad.budgets import MAX_FRAMES_ENV, MAX_PIXELS_ENV, decode_limits
from worldolympiad.cli import main as cli
from worldolympiad.cli.evaluate import main as evaluate_main
from worldolympiad.suites import load_suite_lenient
from worldolympiad.types import Case, CaseError
from worldolympiad.validate import case_warnings, validate_case_dict
from worldolympiad.video.io import VideoError, read_video


def _problems(case: dict) -> dict[str, str]:
    return {p.path: p.message for p in validate_case_dict(case)}


@pytest.mark.parametrize("fps", [float("nan"), float("inf"), 1e-300, 1e6])
def test_a_frame_rate_must_be_finite_and_real(fps, tmp_path, capsys):
    case = wo_testlib.case_dict("a", fps=fps)
    assert "$.fps" in _problems(case)
    path = tmp_path / "case.json"
    path.write_text(json.dumps(case))  # NaN / Infinity as Python's json writes them
    assert cli.main(["validate", str(path)]) == 1
    assert "$.fps" in capsys.readouterr().out
    with pytest.raises(CaseError, match="fps"):
        Case.from_dict(case)


def test_ordinary_frame_rates_pass():
    for fps in (8, 23.976, 29.97002997002997, 240):
        assert _problems(wo_testlib.case_dict("a", fps=fps)) == {}


def test_an_id_ending_in_a_newline_is_refused():
    problems = _problems(wo_testlib.case_dict("walk\n"))
    assert "trailing newline" in problems["$.id"]
    assert _problems(wo_testlib.case_dict("walk.v2-a_b")) == {}


def _camera(poses):
    return {"intrinsics": [[20, 0, 8], [0, 20, 8], [0, 0, 1]], "trajectory": [p.tolist() for p in poses]}


def test_camera_poses_must_be_rotations():
    eye = np.eye(4)
    scaled, mirror, nan = eye.copy(), eye.copy(), eye.copy()
    scaled[:3, :3] *= 2.0
    mirror[0, 0] = -1.0
    nan[0, 3] = np.nan
    for bad, word in ((scaled, "not a rotation"), (mirror, "det R = -1"), (nan, "not finite")):
        case = wo_testlib.case_dict("a", camera=_camera([eye, eye, bad, eye, eye, eye]))
        assert word in _problems(case)["$.camera.trajectory[2]"]
    c, s = np.cos(0.3), np.sin(0.3)
    turned = eye.copy()
    turned[:3, :3] = [[c, 0, s], [0, 1, 0], [-s, 0, c]]
    turned[:3, :3] += 1e-5  # JSON rounding stays inside the tolerance
    assert _problems(wo_testlib.case_dict("a", camera=_camera([eye, turned] * 3))) == {}


def test_a_case_past_the_frame_budget_is_refused_before_anything_allocates(tmp_path, monkeypatch):
    monkeypatch.delenv(MAX_FRAMES_ENV, raising=False)
    huge = wo_testlib.case_dict("long", num_frames=100_000)
    problems = _problems(huge)
    assert MAX_FRAMES_ENV in problems["$.num_frames"]
    suite = wo_testlib.write_suite(tmp_path / "s.json", [huge, wo_testlib.case_dict("ok")])
    loaded = load_suite_lenient(suite)  # the evaluator's loader: the huge case is a broken item
    assert [c.id for c in loaded.cases] == ["ok"] and "frame budget" in loaded.broken[0].error
    monkeypatch.setenv(MAX_FRAMES_ENV, "200000")  # the documented way to raise it
    assert _problems(huge) == {}


def test_a_case_past_the_pixel_budget_is_refused(monkeypatch):
    monkeypatch.delenv(MAX_PIXELS_ENV, raising=False)
    big = wo_testlib.case_dict("big", num_frames=1000, res=(2160, 3840))  # 8.3 G pixels, 25 GB of RGB
    assert MAX_PIXELS_ENV in _problems(big)["$.resolution"]
    monkeypatch.setenv(MAX_PIXELS_ENV, str(10**10))
    assert _problems(big) == {}
    monkeypatch.setenv(MAX_PIXELS_ENV, "lots")
    assert "not a positive integer" in _problems(big)["$"]


def _bomb(path: Path, frames: int = 120, size: int = 1024) -> Path:
    """A solid colour at 1024 x 1024: a few KB of H.264 that decode to ``frames`` x 3 MB."""
    import av

    with av.open(str(path), "w") as c:
        s = c.add_stream("libx264", rate=8)
        s.width = s.height = size
        s.pix_fmt = "yuv420p"
        s.options = {"preset": "ultrafast"}
        img = np.full((size, size, 3), 90, np.uint8)
        for _ in range(frames):
            for packet in s.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                c.mux(packet)
        for packet in s.encode():
            c.mux(packet)
    return path


def test_the_decoder_stops_at_the_case_and_the_pixel_budget(tmp_path, monkeypatch):
    bomb = _bomb(tmp_path / "small.mp4")
    assert bomb.stat().st_size < 200_000  # decodes to 377 MB
    tight = Case.from_dict(wo_testlib.case_dict("small", num_frames=24, res=(64, 64)))
    tracemalloc.start()
    try:
        # frames larger than the case are resampled to it as they are decoded: the case's memory, not the stream's
        video = read_video(bomb, **decode_limits(tight))
        assert video.frames.shape == (24, 64, 64, 3) and video.metadata["resized_from"] == [1024, 1024]
        del video
        monkeypatch.setenv(MAX_PIXELS_ENV, str(10 * 1024 * 1024))  # a stream past the budget is refused
        with pytest.raises(VideoError, match="WORLDOLYMPIAD_MAX_PIXELS"):
            read_video(bomb, **decode_limits(tight))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20e6
    monkeypatch.delenv(MAX_PIXELS_ENV)
    roomy = Case.from_dict(wo_testlib.case_dict("small", num_frames=6, res=(1024, 1024)))
    assert read_video(bomb, **decode_limits(roomy)).num_frames == 6  # stops at the case's frame count


def test_a_videos_model_file_is_read_within_the_case(tmp_path):
    from worldolympiad.models.videos import VideosModel, check_video_file

    bomb = _bomb(tmp_path / "small.mp4")
    small = VideosModel(str(tmp_path)).generate(Case.from_dict(wo_testlib.case_dict("small", num_frames=24,
                                                                                     res=(64, 64))))
    assert small.frames.shape == (24, 64, 64, 3) and small.metadata["resized_from"] == [1024, 1024]
    case = Case.from_dict(wo_testlib.case_dict("small", num_frames=6, res=(1024, 1024)))
    assert VideosModel(str(tmp_path)).generate(case).num_frames == 6
    long = [w for w in check_video_file(bomb, case) if w.kind == "long"]
    assert long and "120 frames, the case has 6" in long[0].message and "not decoded or scored" in long[0].message


def test_an_unknown_action_is_flagged_by_validate_with_the_known_names(tmp_path, capsys):
    case = wo_testlib.case_dict("a", metadata={"action_space_name": "camera"})
    case["chunks"][1]["action"] = "moonwalk"
    warned = {p.path: p.message for p in case_warnings(case)}
    assert "unknown action 'moonwalk'" in warned["$.chunks[1].action"]
    assert "turn_left" in warned["$.chunks[1].action"]  # the known names
    assert "interaction track cannot score this case" in warned["$.chunks[1].action"]
    suite = wo_testlib.write_suite(tmp_path / "s.json", [case])
    assert cli.main(["validate", str(suite)]) == 0  # imported public data carries such names: a warning
    assert "warning: $.cases[0].chunks[1].action: case 'a': unknown action 'moonwalk'" in capsys.readouterr().out


def test_a_row_whose_action_metrics_failed_is_not_ok(tmp_path):
    from worldolympiad.evaluator import score_video
    from worldolympiad.video.io import write_video

    frames = np.repeat(wo_testlib.frames_for("a", num_frames=12, res=(32, 32))[:1], 12, axis=0)  # frozen
    write_video(tmp_path / "frozen.mp4", frames, 8.0, lossless=True)
    case = wo_testlib.case_dict("a", num_frames=12, res=(32, 32), tracks=["interaction"],
                                metadata={"action_space_name": "camera"})
    case["chunks"][0]["action"], case["chunks"][1]["action"] = "turn_left", "moonwalk"
    [row] = score_video(tmp_path / "frozen.mp4", Case.from_dict(case), ["interaction"], device="cpu",
                        work_dir=tmp_path / "w", cache_dir=tmp_path / "c")
    assert row.status == "failed" and row.score is None
    assert any("unknown action 'moonwalk'" in e and "known actions" in e for e in row.errors)


def _nested(tmp_path: Path, depth: int) -> Path:
    x: object = 1
    for _ in range(depth):
        x = [x]
    case = wo_testlib.case_dict("a", metadata={"x": x})
    path = tmp_path / f"deep{depth}.json"
    path.write_text(json.dumps({"name": "s", "cases": [case]}) if depth < 900 else
                    '{"name": "s", "cases": [{"id": "a", "metadata": {"x": ' + "[" * depth + "]" * depth + "}}]}")
    return path


@pytest.mark.parametrize("depth", [200, 100_000])
def test_deeply_nested_json_is_one_line_not_a_traceback(depth, tmp_path, capsys):
    path = _nested(tmp_path, depth)
    assert cli.main(["validate", str(path)]) == 1
    out = capsys.readouterr()
    assert "nested" in out.out and "Traceback" not in out.out + out.err
    assert evaluate_main(["--model", "reference", "--suite", str(path), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "nested" in err and len(err.strip().splitlines()) == 1


def test_a_raw_frames_file_is_measured_from_its_header_before_it_is_loaded(tmp_path):
    from worldolympiad.models.videos import VideosModel, check_video_file

    frames = np.zeros((200, 512, 512, 3), np.uint8)  # 157 MB of zeros, a few hundred KB compressed
    np.savez_compressed(tmp_path / "raw.npz", frames=frames, fps=np.float64(8.0),
                        chunk_frames=np.array([[0, 3], [3, 6]]))
    del frames
    tight = Case.from_dict(wo_testlib.case_dict("raw", num_frames=6, res=(64, 64)))
    tracemalloc.start()
    try:
        with pytest.raises(VideoError, match="past the budget"):
            VideosModel(str(tmp_path)).generate(tight)
        assert sorted(w.kind for w in check_video_file(tmp_path / "raw.npz", tight)) == ["long", "resized"]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20e6
    # a raw file is decompressed whole, so its budget is on every frame it holds; then cut to the case's
    roomy = Case.from_dict(wo_testlib.case_dict("raw", num_frames=24, res=(512, 512)))
    assert VideosModel(str(tmp_path)).generate(roomy).num_frames == 24
