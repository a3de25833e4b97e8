"""Bad inputs (issue 2, acceptance 4): each broken case gives a failed row naming the file and the
fix, odd pixel formats decode to exact uint8 RGB, and the run completes for every other case."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import wo_testlib

from worldolympiad.evaluator import EvalConfig, evaluate, make_run_spec
from worldolympiad.video import VideoError, read_video, write_video


def _encode(path: Path, codec: str, pix_fmt: str, frames: np.ndarray, in_fmt: str) -> Path:
    import av

    with av.open(str(path), "w") as out:
        s = out.add_stream(codec, rate=Fraction(8))
        s.width, s.height, s.pix_fmt = frames.shape[2], frames.shape[1], pix_fmt
        for f in frames:
            for p in s.encode(av.VideoFrame.from_ndarray(np.ascontiguousarray(f), format=in_fmt)):
                out.mux(p)
        for p in s.encode():
            out.mux(p)
    return path


def _zero_frame_mp4(path: Path) -> Path:
    import av

    out = av.open(str(path), "w", format="mp4")
    s = out.add_stream("libx264", rate=8)
    s.width, s.height, s.pix_fmt = 16, 16, "yuv420p"
    out.start_encoding()
    out.close()
    return path


@pytest.fixture
def bad_suite(tmp_path):
    vids = tmp_path / "videos"
    vids.mkdir()
    rgb = wo_testlib.frames_for("x", 6, (16, 16))
    write_video(vids / "good.mp4", rgb, 8)
    write_video(vids / "truncated.mp4", rgb, 8)
    data = (vids / "truncated.mp4").read_bytes()
    (vids / "truncated.mp4").write_bytes(data[: len(data) // 2])
    _zero_frame_mp4(vids / "zeroframe.mp4")
    (vids / "textfile.mp4").write_text("this is not a video\n")
    write_video(vids / "oneframe.mp4", rgb[:1], 8)
    gray = (np.arange(6 * 15 * 17) % 251).reshape(6, 15, 17).astype(np.uint8)
    _encode(vids / "gray.mkv", "ffv1", "gray", gray, "gray")
    rgba = np.random.default_rng(0).integers(0, 255, (6, 16, 18, 4)).astype(np.uint8)
    _encode(vids / "rgba.avi", "png", "rgba", rgba, "rgba")
    g16 = (np.arange(6 * 12 * 10) * 97 % 65536).reshape(6, 12, 10).astype(np.uint16)
    _encode(vids / "sixteen.mkv", "ffv1", "gray16le", g16, "gray16le")
    r48 = np.random.default_rng(1).integers(0, 65535, (6, 8, 10, 3)).astype(np.uint16)
    _encode(vids / "rgb48.mkv", "ffv1", "rgb48le", r48, "rgb48le")
    odd = wo_testlib.frames_for("odd", 6, (15, 17))
    write_video(vids / "odd.mp4", odd, 8)
    (tmp_path / "malformed.json").write_text('{"id": "malformed", "scenario": ')
    ids = ["good", "truncated", "zeroframe", "textfile", "oneframe", "gray", "rgba", "sixteen", "rgb48", "odd",
           "missing"]
    res = {"gray": (15, 17), "odd": (15, 17), "rgba": (16, 18)}  # at their cases' sizes (a larger one is resampled)
    cases: list = [wo_testlib.case_dict(i, res=res.get(i, (16, 16))) for i in ids]
    cases.append("malformed.json")
    cases.append({**wo_testlib.case_dict("badfield"), "scenario": "mars"})
    cases.append(wo_testlib.case_dict("good"))  # duplicate id
    suite = wo_testlib.write_suite(tmp_path / "suite.json", cases)
    return suite, vids, {"gray": gray, "rgba": rgba, "sixteen": g16, "rgb48": r48, "odd": odd}


def test_bad_inputs_fail_per_case_with_file_and_fix_and_the_run_completes(bad_suite, tmp_path):
    suite, vids, arrays = bad_suite
    spec = make_run_spec(f"videos:{vids}", str(suite), ["counting"], [0])
    outcome = evaluate(spec, EvalConfig(out=tmp_path / "out", progress=False))
    by = {r.case_id: r for r in outcome.rows}
    ok = {"good", "oneframe", "gray", "rgba", "sixteen", "rgb48", "odd"}
    for cid in ok:
        assert by[cid].status == "ok", (cid, by[cid].errors)
    shape = {cid: by[cid].metric("brightness").details["shape"] for cid in ok}
    assert shape["oneframe"] == [1, 16, 16, 3]
    assert shape["gray"] == [6, 15, 17, 3] and shape["odd"] == [6, 15, 17, 3]
    assert shape["rgba"] == [6, 16, 18, 3] and shape["sixteen"] == [6, 12, 10, 3] and shape["rgb48"] == [6, 8, 10, 3]
    expect_failed = {
        "truncated": ("truncated.mp4", "complete"),
        "zeroframe": ("zeroframe.mp4", "regenerate"),
        "textfile": ("textfile.mp4", "complete mp4"),
        "missing": ("missing.mp4", "generate it"),
        "malformed": ("malformed.json", "fix the file"),
        "badfield": ("suite.json", "mars"),
    }
    for cid, (name, fix) in expect_failed.items():
        r = by[cid]
        assert r.status == "failed" and r.score is None, cid
        assert name in r.errors[0] and fix in r.errors[0], (cid, r.errors[0])
    dup = [r for r in outcome.rows if r.case_id.startswith("good#")]
    assert len(dup) == 1 and dup[0].status == "failed" and "duplicate case id 'good'" in dup[0].errors[0]
    assert "rename" in dup[0].errors[0]
    assert len(outcome.rows) == 14
    assert len(outcome.summary["errors"]) == 7


def test_odd_formats_decode_exactly_to_uint8_rgb(bad_suite):
    _, vids, arrays = bad_suite
    gray = read_video(vids / "gray.mkv").frames
    assert gray.dtype == np.uint8 and np.array_equal(gray[..., 0], arrays["gray"]) and np.array_equal(gray[..., 0], gray[..., 2])
    rgba = read_video(vids / "rgba.avi").frames
    assert np.array_equal(rgba, arrays["rgba"][..., :3])
    g16 = read_video(vids / "sixteen.mkv").frames[..., 0].astype(int)
    assert np.abs(g16 - (arrays["sixteen"] >> 8)).max() <= 1  # 16 → 8 bits, rounding
    r48 = read_video(vids / "rgb48.mkv").frames.astype(int)
    assert np.abs(r48 - (arrays["rgb48"] >> 8)).max() <= 1
    odd = read_video(vids / "odd.mp4").frames
    assert odd.shape == (6, 15, 17, 3)
    assert np.abs(odd.astype(int) - arrays["odd"]).mean() < 3  # lossy H.264 but exact size


def test_lossless_write_round_trips_bit_exact(tmp_path):
    frames = np.random.default_rng(0).integers(0, 256, (4, 15, 17, 3)).astype(np.uint8)
    write_video(tmp_path / "x.mp4", frames, 10, lossless=True)
    v = read_video(tmp_path / "x.mp4")
    assert np.array_equal(v.frames, frames) and v.fps == 10


def test_read_video_without_pyav_decodes_the_same_frames(tmp_path, monkeypatch, bad_suite):
    # an H.264 render as the scenario generators write them (yuv420p) and the generated-video format (yuv444p)
    rng = np.random.default_rng(0)
    frames = np.repeat(np.repeat(rng.integers(0, 256, (5, 12, 16, 3)), 4, 1), 4, 2).astype(np.uint8)
    write_video(tmp_path / "a.mp4", frames, 15)
    write_video(tmp_path / "b.mp4", frames, 15, pix_fmt="yuv444p")
    with_av = [read_video(tmp_path / n) for n in ("a.mp4", "b.mp4")]
    # on a case's clock and size (7.5 fps, 24x32): every other frame, area-resampled, as PyAV decodes them
    case_like = {"max_frames": 3, "max_size": (24, 32), "clock": 7.5}
    av_case = read_video(tmp_path / "b.mp4", **case_like)
    assert av_case.metadata["retimed_from_fps"] == 15 and av_case.frames.shape == (3, 24, 32, 3)
    monkeypatch.setitem(__import__("sys").modules, "av", None)  # `import av` now raises ImportError
    for n, ref in zip(("a.mp4", "b.mp4"), with_av, strict=True):
        v = read_video(tmp_path / n)
        assert v.metadata["decoder"] == "opencv" and "decoder" not in ref.metadata
        assert np.array_equal(v.frames, ref.frames) and v.fps == pytest.approx(ref.fps)
    cv_case = read_video(tmp_path / "b.mp4", **case_like)
    assert np.array_equal(cv_case.frames, av_case.frames) and cv_case.metadata["resized_from"] == [48, 64]
    assert len(read_video(tmp_path / "a.mp4", max_frames=2).frames) == 2
    _, vids, _ = bad_suite
    with pytest.raises(VideoError, match="textfile"):
        read_video(vids / "textfile.mp4")


@pytest.mark.parametrize("name", ["zeroframe", "textfile", "truncated"])
def test_read_video_errors_name_the_file(bad_suite, name):
    _, vids, _ = bad_suite
    with pytest.raises(VideoError, match=name):
        read_video(vids / f"{name}.mp4")


def test_duplicate_ids_are_a_clear_error_when_loading_strictly(tmp_path):
    from worldolympiad.suites import SuiteError, load_suite

    suite = wo_testlib.write_suite(tmp_path / "s.json", [wo_testlib.case_dict("a"), wo_testlib.case_dict("a")])
    with pytest.raises(SuiteError, match=r"duplicate case id 'a'.*\$\.cases\[0\]"):
        load_suite(suite)


def test_load_suite_resolves_relative_case_files_and_single_cases(tmp_path):
    from worldolympiad.suites import load_suite

    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "one.json").write_text(json.dumps(wo_testlib.case_dict("one", reference="ref.mp4")))
    suite = wo_testlib.write_suite(tmp_path / "s.json", ["cases/one.json", wo_testlib.case_dict("two")], name="mine")
    s = load_suite(suite)
    assert s.name == "mine" and [c.id for c in s.cases] == ["one", "two"]
    assert s.cases[0].resolve(s.cases[0].reference) == (tmp_path / "cases" / "ref.mp4").resolve()
    assert s.cases[1].suite == "mine"
    single = load_suite(tmp_path / "cases" / "one.json")
    assert [c.id for c in single.cases] == ["one"]


def test_suite_argument_that_is_a_folder_or_binary_is_a_clear_error(tmp_path, monkeypatch):
    from worldolympiad.suites import SuiteError, load_suite

    (tmp_path / "smoke").mkdir()
    with pytest.raises(SuiteError, match="is a folder"):
        load_suite(str(tmp_path / "smoke"))
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(SuiteError, match="bin.json"):
        load_suite(tmp_path / "bin.json")
    # a folder named like a registered suite in the working directory does not shadow the name
    from worldolympiad.registries import SUITES

    SUITES.register("wo_dir_clash", lambda: [], override=True)
    try:
        (tmp_path / "wo_dir_clash").mkdir()
        monkeypatch.chdir(tmp_path)
        assert load_suite("wo_dir_clash").source == "registry:wo_dir_clash"
    finally:
        SUITES.unregister("wo_dir_clash")
