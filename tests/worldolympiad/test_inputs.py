"""Runs that cannot go stale (issue 58 item 1): every row records the fingerprints of its inputs, and a
rerun of the same command recomputes exactly the rows whose inputs changed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import wo_testlib

from worldolympiad.cli.evaluate import main as evaluate_main
from worldolympiad.inputs import changed_inputs, stamp_file
from worldolympiad.video import write_video


def _rows(out: Path) -> dict[tuple[str, int, str], dict]:
    run = [d for d in out.iterdir() if d.is_dir() and not d.name.startswith(".")]
    assert len(run) == 1, run
    rows = [json.loads(x) for x in (run[0] / "results.jsonl").read_text().splitlines()]
    return {(r["case_id"], r["seed"], r["track"]): r for r in rows}


def _args(vids: Path, suite: Path, out: Path, calls: Path, *extra: str) -> list[str]:
    return ["--model", f"videos:{vids}", "--suite", str(suite), "--tracks", "counting", "--out", str(out),
            "--no-progress", "--no-report", "--option", f"counting.calls={calls}", *extra]


def _calls(calls: Path) -> list[str]:
    return calls.read_text().splitlines() if calls.exists() else []


def test_a_replaced_video_recomputes_only_its_rows_and_matches_a_fresh_run(videos_suite, tmp_path, capsys):
    suite, vids = videos_suite
    out, calls = tmp_path / "runs", tmp_path / "calls.txt"
    args = _args(vids, suite, out, calls, "--seeds", "0,1")
    assert evaluate_main(args) == 0
    before = _rows(out)
    assert all(r["inputs"]["model.video"]["sha256"] for r in before.values())
    n_calls = len(_calls(calls))
    capsys.readouterr()

    # the user replaces case1's video (other frames) and reruns the same command
    write_video(vids / "case1.mp4", wo_testlib.frames_for("case1", seed=7), 8)
    assert evaluate_main(args) == 0
    printed = capsys.readouterr().out
    after = _rows(out)
    new_calls = _calls(calls)[n_calls:]
    assert sorted(new_calls) == ["case1 0", "case1 1"], "only the replaced video's rows were computed"
    assert "2 row(s) recomputed because their inputs changed (case1 s0: model.video; case1 s1: model.video)" in printed
    for key, row in before.items():
        if key[0] == "case1":
            assert after[key]["score"] != row["score"]
        else:
            assert after[key] == row
    # the new scores are those of a fresh run on the new folder
    fresh_out = tmp_path / "fresh"
    assert evaluate_main(_args(vids, suite, fresh_out, tmp_path / "calls2.txt", "--seeds", "0,1")) == 0
    fresh = _rows(fresh_out)
    assert {k: r["score"] for k, r in after.items()} == {k: r["score"] for k, r in fresh.items()}
    # and a third run recomputes nothing
    n_calls = len(_calls(calls))
    assert evaluate_main(args) == 0
    assert len(_calls(calls)) == n_calls and "recomputed because" not in capsys.readouterr().out


def test_a_touched_but_unchanged_video_keeps_its_rows(videos_suite, tmp_path):
    suite, vids = videos_suite
    out, calls = tmp_path / "runs", tmp_path / "calls.txt"
    assert evaluate_main(_args(vids, suite, out, calls)) == 0
    n_calls = len(_calls(calls))
    st = (vids / "case0.mp4").stat()
    os.utime(vids / "case0.mp4", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # mtime changes, content does not
    assert evaluate_main(_args(vids, suite, out, calls)) == 0
    assert len(_calls(calls)) == n_calls


def test_an_edited_case_recomputes_its_rows_only(videos_suite, tmp_path, capsys):
    suite, vids = videos_suite
    out, calls = tmp_path / "runs", tmp_path / "calls.txt"
    assert evaluate_main(_args(vids, suite, out, calls)) == 0
    n_calls = len(_calls(calls))
    d = json.loads(suite.read_text())
    d["cases"][2]["prompt"] = "another prompt"
    suite.write_text(json.dumps(d))
    capsys.readouterr()
    assert evaluate_main(_args(vids, suite, out, calls)) == 0
    assert _calls(calls)[n_calls:] == ["case2 0"]
    assert "1 row(s) recomputed because their inputs changed (case2 s0: case)" in capsys.readouterr().out


def test_a_missing_video_that_now_exists_is_scored_without_retry_failed(videos_suite, tmp_path, capsys):
    suite, vids = videos_suite
    out, calls = tmp_path / "runs", tmp_path / "calls.txt"
    (vids / "case1.mp4").rename(tmp_path / "case1_misnamed.mp4")
    assert evaluate_main(_args(vids, suite, out, calls)) == 0
    failed = _rows(out)[("case1", 0, "counting")]
    assert failed["status"] == "failed" and "no video for case 'case1'" in failed["errors"][0]
    assert failed["inputs"]["model.video"] == {"missing": True}
    capsys.readouterr()
    # rerun without fixing: the failed row is reused, and the terminal says how to recompute it
    assert evaluate_main(_args(vids, suite, out, calls)) == 0
    printed = capsys.readouterr().out
    assert "1 failed row(s) reused from an earlier run" in printed and "add --retry-failed" in printed
    # the user fixes the file name: the rerun scores the case, no "expected .../case1.mp4" again
    (tmp_path / "case1_misnamed.mp4").rename(vids / "case1.mp4")
    assert evaluate_main(_args(vids, suite, out, calls)) == 0
    printed = capsys.readouterr().out
    row = _rows(out)[("case1", 0, "counting")]
    assert row["status"] == "ok" and "expected" not in printed and "failed row(s) reused" not in printed
    assert "1 row(s) recomputed because their inputs changed (case1 s0: model.video)" in printed


def test_a_row_written_before_inputs_were_recorded_is_rechecked_when_its_missing_video_appears(videos_suite, tmp_path):
    suite, vids = videos_suite
    out, calls = tmp_path / "runs", tmp_path / "calls.txt"
    (vids / "case0.mp4").rename(tmp_path / "keep.mp4")
    assert evaluate_main(_args(vids, suite, out, calls)) == 0
    run = next(d for d in out.iterdir() if d.is_dir() and not d.name.startswith("."))
    legacy = [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines()]
    for r in legacy:  # as main at 85cf2c2 wrote them
        r.pop("inputs")
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in legacy))
    (tmp_path / "keep.mp4").rename(vids / "case0.mp4")
    assert evaluate_main(_args(vids, suite, out, calls)) == 0
    rows = _rows(out)
    assert rows[("case0", 0, "counting")]["status"] == "ok"
    assert all("inputs" not in rows[(c, 0, "counting")] for c in ("case1", "case2")), "legacy ok rows are kept"


def test_stamp_fast_path_reads_nothing_when_size_and_mtime_match(tmp_path):
    f = tmp_path / "v.mp4"
    f.write_bytes(b"abc")
    first = stamp_file(f)
    fake = {str(f.resolve()): {**first, "sha256": "recorded"}}
    assert stamp_file(f, fake)["sha256"] == "recorded"  # size + mtime equal: the recorded hash is trusted
    f.write_bytes(b"abcd")
    assert stamp_file(f, fake)["sha256"] != "recorded"
    assert changed_inputs({"model.video": first}, {"model.video": stamp_file(f)}) == ["model.video"]
    assert changed_inputs({"case": {"sha256": "x"}}, {"case": {"sha256": "x"}}) == []
    assert changed_inputs({}, {"a": {"path": "p", "missing": True}}) == ["a"]


def test_new_weights_in_a_diffusers_folder_start_a_new_run(tmp_path):
    from worldolympiad.evaluator import make_run_spec

    pipe = tmp_path / "pipe"
    (pipe / "transformer").mkdir(parents=True)
    (pipe / "model_index.json").write_text('{"_class_name": "WanPipeline"}')
    weights = pipe / "transformer" / "diffusion_pytorch_model.safetensors"
    weights.write_bytes(b"\0" * 1000)
    first = make_run_spec(f"diffusers:{pipe}", "smoke", ["interaction"])
    assert first.model_fingerprint
    (pipe / "README.md").write_text("notes")  # not a weight or config file
    assert make_run_spec(f"diffusers:{pipe}", "smoke", ["interaction"]).hash == first.hash
    weights.write_bytes(b"\0" * 999 + b"\1")
    assert make_run_spec(f"diffusers:{pipe}", "smoke", ["interaction"]).hash != first.hash


def test_a_replaced_npz_of_raw_frames_is_stored_and_scored_again(tmp_path):
    """Raw frames are re-encoded into the run's videos/: the stored copy of the old frames must not be reused."""
    vids = tmp_path / "videos"
    vids.mkdir()
    cases = [wo_testlib.case_dict(f"n{i}") for i in range(2)]
    for c in cases:
        np.savez(vids / f"{c['id']}.npz", frames=wo_testlib.frames_for(c["id"]), fps=np.float64(8))
    suite = wo_testlib.write_suite(tmp_path / "suite.json", cases)
    out, calls = tmp_path / "runs", tmp_path / "calls.txt"
    assert evaluate_main(_args(vids, suite, out, calls)) == 0
    before = _rows(out)
    np.savez(vids / "n1.npz", frames=wo_testlib.frames_for("n1", seed=3), fps=np.float64(8))
    assert evaluate_main(_args(vids, suite, out, calls)) == 0
    after = _rows(out)
    assert after[("n0", 0, "counting")] == before[("n0", 0, "counting")]
    fresh = tmp_path / "fresh"
    assert evaluate_main(_args(vids, suite, fresh, tmp_path / "c2.txt")) == 0
    assert after[("n1", 0, "counting")]["score"] == _rows(fresh)[("n1", 0, "counting")]["score"]
    assert after[("n1", 0, "counting")]["score"] != before[("n1", 0, "counting")]["score"]
