"""Fail fast, say how to fix (issue 58 item 2): a bad ``--model`` exits 2 with one line and no run
directory; a ``videos:`` folder is counted against the suite; input checks land on the rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import wo_testlib

from worldolympiad.cli.evaluate import main as evaluate_main
from worldolympiad.video import write_video


def _run(model: str, suite: Path, out: Path, *extra: str) -> int:
    return evaluate_main(["--model", model, "--suite", str(suite), "--tracks", "counting", "--out", str(out),
                          "--no-progress", "--no-report", *extra])


@pytest.mark.parametrize(("model", "says"), [
    ("vidoes:{vids}", "Did you mean 'videos'?"),
    ("videos:{tmp}/no_such_folder", "no_such_folder not found"),
    ("videos:{vids}/case0.mp4", "is a file; pass the folder"),
    ("Wan-AI/Wan2.1-T2V-1.3B", "huggingface-cli download Wan-AI/Wan2.1-T2V-1.3B --local-dir DIR"),
    ("diffusers:Wan-AI/Wan2.1-T2V-1.3B", "looks like a Hugging Face hub id"),
    ("inferix:reference-wrld", "Did you mean 'reference-world'"),
    ("perturbed:telport", "Did you mean 'teleport'?"),
    ("{vids}", "did you mean --model videos:"),
], ids=["prefix", "folder", "file", "hub-id", "diffusers-hub-id", "inferix-name", "perturbation", "bare-folder"])
def test_a_bad_model_exits_2_with_one_line_and_no_run_directory(videos_suite, tmp_path, capsys, model, says):
    suite, vids = videos_suite
    out = tmp_path / "runs"
    assert _run(model.format(vids=vids, tmp=tmp_path), suite, out) == 2
    cap = capsys.readouterr()
    assert says in cap.err and cap.err.startswith("evaluate-model: error: --model")
    assert len(cap.err.strip().splitlines()) == 1, cap.err
    assert not out.exists(), "no run directory for a model that cannot run"


def test_videos_folder_without_any_case_video_exits_2_and_suggests_renames(videos_suite, tmp_path, capsys):
    suite, vids = videos_suite
    for i in range(3):
        (vids / f"case{i}.mp4").rename(vids / f"case_{i}.mp4")  # misnamed
    out = tmp_path / "runs"
    assert _run(f"videos:{vids}", suite, out) == 2
    err = capsys.readouterr().err
    assert "no video for any of the 3 case(s)" in err and "3 video file(s)" in err
    assert "rename case_0.mp4 to case0.mp4" in err and "case0, case1, case2" in err
    assert len(err.strip().splitlines()) == 1 and not out.exists()


def test_videos_folder_missing_some_cases_warns_which_and_runs(videos_suite, tmp_path, capsys):
    suite, vids = videos_suite
    (vids / "case2.mp4").unlink()
    assert _run(f"videos:{vids}", suite, tmp_path / "runs") == 0
    cap = capsys.readouterr()
    assert "videos found for 2 of 3 case(s); no video for case2" in cap.err
    (vids / "case2.mp4").write_bytes((vids / "case1.mp4").read_bytes())
    assert _run(f"videos:{vids}", suite, tmp_path / "runs2") == 0
    assert "videos found for all 3 case(s)" in capsys.readouterr().out


def test_input_checks_are_recorded_on_the_row_and_shown(tmp_path, capsys):
    vids = tmp_path / "videos"
    vids.mkdir()
    cases = [wo_testlib.case_dict("full", num_frames=8), wo_testlib.case_dict("half", num_frames=8)]
    write_video(vids / "full.mp4", wo_testlib.frames_for("full", num_frames=8), 8, qp=0, pix_fmt="yuv444p")
    write_video(vids / "half.mp4", wo_testlib.frames_for("half", num_frames=4, res=(12, 12)), 12)  # 4:2:0 by default
    suite = wo_testlib.write_suite(tmp_path / "suite.json", cases)
    out = tmp_path / "runs"
    assert _run(f"videos:{vids}", suite, out) == 0
    printed = capsys.readouterr().out
    run = next(d for d in out.iterdir() if d.is_dir() and not d.name.startswith("."))
    rows = {r["case_id"]: r for r in map(json.loads, (run / "results.jsonl").read_text().splitlines())}
    assert "warnings" not in rows["full"]
    kinds = [w.split(":")[0] for w in rows["half"]["warnings"]]
    assert {"short", "size", "fps"} <= set(kinds)
    assert "4 frames, the case has 8" in " ".join(rows["half"]["warnings"])
    summary = json.loads((run / "summary.json").read_text())
    assert [w["case_id"] for w in summary["warnings"]] == ["half"]
    assert "input warnings on 1 video(s)" in printed


def test_warnings_are_kept_when_the_rows_are_read_back(videos_suite, tmp_path):
    from worldolympiad.types import TrackResult

    row = TrackResult("c", "m", 0, "t", 0.5, warnings=["short: 4 frames"], inputs={"case": {"sha256": "x"}})
    back = TrackResult.from_dict(json.loads(json.dumps(row.to_dict())))
    assert back.warnings == row.warnings and back.inputs == row.inputs


@pytest.mark.parametrize(("flags", "says"), [
    (["--tracks", "countng"], "unknown track(s) countng (did you mean 'counting'?)"),
    (["--judge", "opnai:http://x#m"], "unknown judge 'opnai:http://x#m' (did you mean 'openai'?)"),
    (["--out", "{suite}"], "is a file; pass a folder"),
], ids=["tracks", "judge", "out-file"])
def test_other_flags_exit_2_with_did_you_mean(videos_suite, tmp_path, capsys, flags, says):
    suite, vids = videos_suite
    argv = ["--model", f"videos:{vids}", "--suite", str(suite), "--tracks", "counting", "--out", str(tmp_path / "r"),
            "--no-progress", "--no-report"] + [f.format(suite=suite) for f in flags]
    assert evaluate_main(argv) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "r").exists()
