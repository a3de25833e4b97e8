"""Input checks of a ``videos:`` folder (issue 56, item 7): each weak-evidence finding is a warning that
names the file, what it costs and the fix; ``validate --videos`` lists them, ``evaluate-model`` summarises."""

from __future__ import annotations

import numpy as np
import pytest

from worldolympiad.models.videos import summarize_warnings, video_input_warnings
from worldolympiad.types import Case, even_chunks
from worldolympiad.video.io import encode_like_users, write_video


def _case(cid: str, T: int = 20, hw: tuple[int, int] = (32, 48), fps: float = 10.0) -> Case:
    return Case(id=cid, scenario="realworld", fps=fps, num_frames=T, resolution=hw, chunks=even_chunks(T, 2),
                tracks=("longvideo",))


def _frames(T: int = 20, h: int = 32, w: int = 48) -> np.ndarray:
    rng = np.random.default_rng(0)
    base = rng.integers(0, 256, (h, w * 2, 3)).astype(np.uint8)
    return np.stack([base[:, t: t + w] for t in range(T)])


def _kinds(ws, cid):
    return sorted(w.kind for w in ws if w.case_id == cid)


@pytest.fixture()
def folder(tmp_path):
    d = tmp_path / "vids"
    write_video(d / "exact.mp4", _frames(), 10.0, lossless=True)
    encode_like_users(d / "user.mp4", _frames(), 10.0, crf=23)
    encode_like_users(d / "small.mp4", _frames(), 10.0, crf=0, pix_fmt="yuv444p", scale=0.5)
    encode_like_users(d / "large.mp4", _frames(), 10.0, crf=0, pix_fmt="yuv444p", scale=2.0)
    write_video(d / "short.mp4", _frames(T=12), 10.0, lossless=True)
    write_video(d / "slow.mp4", _frames(), 5.0, lossless=True)
    np.savez(d / "raw.npz", frames=_frames())
    cases = [_case(c) for c in ("exact", "user", "small", "large", "short", "slow", "raw", "absent")]
    return d, cases


def test_each_weakness_is_found_in_its_own_file_and_nothing_in_exact_files(folder):
    d, cases = folder
    ws = video_input_warnings(d, cases)
    assert _kinds(ws, "exact") == [] and _kinds(ws, "raw") == []
    assert _kinds(ws, "user") == ["chroma_420", "lossy"]
    assert _kinds(ws, "small") == ["size"]  # crf 0 in 4:4:4 is lossless and full-chroma: only the size
    assert _kinds(ws, "large") == ["resized"]  # larger than the case: scored at the case's resolution
    assert _kinds(ws, "short") == ["short"]
    assert _kinds(ws, "slow") == ["fps"]
    assert _kinds(ws, "absent") == ["missing"]


def test_warnings_name_the_file_the_cost_and_the_fix(folder):
    d, cases = folder
    ws = {(w.case_id, w.kind): w for w in video_input_warnings(d, cases)}
    chroma = ws[("user", "chroma_420")]
    assert chroma.path.endswith("user.mp4") and "1-2 px objects" in chroma.message and "yuv444p" in chroma.message
    assert "crf=23" in ws[("user", "lossy")].message and "-qp 0" in ws[("user", "lossy")].message
    assert "the video is 24x16 px, the case asks for 48x32" in ws[("small", "size")].message
    assert "the video is 96x64 px, scored at the case's 48x32" in ws[("large", "resized")].message
    assert "its aspect ratio" not in ws[("large", "resized")].message  # the same aspect ratio: nothing stretched
    assert "12 frames, the case has 20" in ws[("short", "short")].message
    assert str(chroma).startswith(chroma.path)


def test_summary_is_one_line_per_kind_with_counts(folder):
    d, cases = folder
    ws = video_input_warnings(d, cases)
    lines = summarize_warnings(ws, len(cases))
    assert len(lines) == len({w.kind for w in ws})
    assert any(line.startswith("chroma_420: 1 of 8 video(s) (user.mp4;") for line in lines)


def test_validate_videos_prints_the_warnings_and_keeps_exit_code(folder, tmp_path, capsys):
    from worldolympiad.cli.main import main
    from worldolympiad.suites import write_suite

    d, cases = folder
    suite = write_suite(tmp_path / "suite.json", "t", cases[:2])
    assert main(["validate", str(suite), "--videos", str(d)]) == 0
    out = capsys.readouterr().out
    assert "OK (2 cases)" in out
    assert "warning: " + str(d / "user.mp4") in out and "2 case(s) checked, 2 warning(s)" in out
    assert main(["validate", str(suite), "--videos", str(tmp_path / "nope")]) == 2


def test_evaluate_model_prints_the_summary_once_per_run(tmp_path, capsys):
    from worldolympiad.cli.evaluate import main as evaluate_model
    from worldolympiad.suites import write_suite

    d = tmp_path / "vids"
    cases = [_case(f"c{i}") for i in range(3)]
    for c in cases:
        encode_like_users(d / f"{c.id}.mp4", _frames(), 10.0, crf=23)
    suite = write_suite(tmp_path / "suite.json", "t", cases)
    rc = evaluate_model(["--model", f"videos:{d}", "--suite", str(suite), "--tracks", "longvideo", "--out",
                         str(tmp_path / "runs"), "--no-progress", "--no-report"])
    assert rc == 0
    out = capsys.readouterr().out
    assert out.count("input check of") == 1
    assert out.count("warning: chroma_420: 3 of 3 video(s)") == 1 and out.count("warning: lossy: 3 of 3") == 1
