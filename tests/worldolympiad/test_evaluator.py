"""The evaluator and `evaluate-model`: run directory layout, resume after SIGKILL, determinism,
failure rows, not-applicable rows, workers, summary arithmetic."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import wo_testlib

from worldolympiad.cli.evaluate import main as evaluate_main
from worldolympiad.evaluator import EvalConfig, JsonlAppender, evaluate, make_run_spec, summarize
from worldolympiad.types import MetricValue, RunSpec, TrackResult


def _rows(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]


def _only_run_dir(out: Path) -> Path:
    dirs = [d for d in out.iterdir() if d.is_dir() and not d.name.startswith(".")]
    assert len(dirs) == 1, dirs
    return dirs[0]


def test_videos_model_end_to_end_writes_the_run_directory(videos_suite, tmp_path, capsys):
    suite, vids = videos_suite
    out = tmp_path / "runs"
    rc = evaluate_main(["--model", f"videos:{vids}", "--suite", str(suite), "--tracks", "counting",
                        "--seeds", "0,1", "--out", str(out), "--no-progress"])
    assert rc == 0
    run = _only_run_dir(out)
    spec = json.loads((run / "run_spec.json").read_text())
    assert run.name.endswith(spec["hash"]) and spec["model"] == f"videos:{vids}" and spec["seeds"] == [0, 1]
    assert spec["track_versions"] == [["counting", "3"]]
    rows = _rows(run)
    assert sorted((r["case_id"], r["seed"]) for r in rows) == [(f"case{i}", s) for i in range(3) for s in (0, 1)]
    for r in rows:
        tr = TrackResult.from_dict(r)
        assert tr.status == "ok" and 0 <= tr.score <= 1 and tr.track_version == "3"
        assert tr.metric("brightness").status == "ok"
        assert (run / tr.artifacts["video"]).exists()
        assert "total" in tr.timings and "brightness" in tr.timings
    for i in range(3):
        for s in (0, 1):
            assert (run / "videos" / f"case{i}__s{s}.mp4").exists()
            assert (run / "videos" / f"case{i}__s{s}_chunk_timestamps.json").exists()
    summary = json.loads((run / "summary.json").read_text())
    per_seed = {s: np.mean([r["score"] for r in rows if r["seed"] == s]) for s in (0, 1)}
    t = summary["tracks"]["counting"]
    assert t["mean"] == pytest.approx(np.mean(list(per_seed.values())))
    assert t["std"] == pytest.approx(np.std(list(per_seed.values()), ddof=1))
    assert t["counts"] == {"ok": 6, "not_applicable": 0, "failed": 0}
    assert summary["errors"] == []
    stages = [json.loads(line) for line in (run / "timings.jsonl").read_text().splitlines()]
    assert {"read", "generate", "counting"} <= {s["stage"] for s in stages} | {"read"}
    assert all({"case_id", "seed", "seconds"} <= set(s) for s in stages)
    printed = capsys.readouterr().out
    assert "case0" in printed and "counting" in printed and "overall" in printed
    assert "report:" in printed  # report.html written, or a one-line reason why not
    import importlib.util

    if importlib.util.find_spec("leaderboard.report") is not None:
        assert (run / "report.html").is_file()


def test_resume_after_sigkill_keeps_every_row_once_and_recomputes_nothing(tmp_path):
    vids = tmp_path / "videos"
    vids.mkdir()
    from worldolympiad.video import write_video

    cases = [wo_testlib.case_dict(f"k{i}") for i in range(6)]
    for c in cases:
        write_video(vids / f"{c['id']}.mp4", wo_testlib.frames_for(c["id"]), 8)
    suite = wo_testlib.write_suite(tmp_path / "suite.json", cases)
    calls = tmp_path / "calls.txt"
    out = tmp_path / "runs"
    args = ["--model", f"videos:{vids}", "--suite", str(suite), "--tracks", "counting", "--out", str(out),
            "--no-progress", "--option", f"counting.calls={calls}", "--option", "counting.sleep=0.5"]
    code = ("import sys, wo_testlib; wo_testlib.register_test_tracks(); "
            "from worldolympiad.cli.evaluate import main; sys.exit(main(sys.argv[1:]))")
    proc = subprocess.Popen([sys.executable, "-c", code, *args], env=wo_testlib.subprocess_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline:
        if calls.exists() and len(calls.read_text().splitlines()) >= 3:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    run = _only_run_dir(out)
    before = _rows(run)
    assert 1 <= len(before) < 6, "the kill should land halfway"
    # A writer killed mid-line leaves a partial last line: resume must drop it.
    with open(run / "results.jsonl", "a") as f:
        f.write('{"case_id": "k5", "seed": 0, "tra')
    calls_before = calls.read_text().splitlines()
    rc = subprocess.run([sys.executable, "-c", code, *args], env=wo_testlib.subprocess_env(),
                        capture_output=True, text=True, timeout=120)
    assert rc.returncode == 0, rc.stderr
    after = _rows(run)
    keys = [(r["case_id"], r["seed"], r["track"]) for r in after]
    assert sorted(keys) == sorted({(c["id"], 0, "counting") for c in cases}), "every row exactly once"
    new_calls = calls.read_text().splitlines()[len(calls_before):]
    finished = {r["case_id"] for r in before}
    assert not finished & {line.split()[0] for line in new_calls}, "finished rows were recomputed"
    assert len(new_calls) == 6 - len(before)


def _tiny_generator_registered():
    """Register a deterministic in-test reference generator (a moving square)."""
    from worldolympiad.registries import GENERATORS
    from worldolympiad.scenario import CaseGenerator, Rendered
    from worldolympiad.types import Video

    class SquareGen(CaseGenerator):
        name = "test.square"
        version = "2"

        def render(self, case):
            t, (h, w) = case.num_frames, case.resolution
            frames = np.full((t, h, w, 3), 40, np.uint8)
            masks = np.zeros((t, h, w), np.int32)
            for i in range(t):
                frames[i, 4:10, 2 + i:8 + i] = (200, 60, 60)
                masks[i, 4:10, 2 + i:8 + i] = 1
            return Rendered(video=Video(frames, case.fps, case.chunks), masks=masks, object_ids={"square": 1},
                            states={"x": np.arange(t, dtype=float)})

    GENERATORS.register("test.square", SquareGen(), override=True)


def test_same_seed_gives_identical_scores_across_runs(tmp_path):
    _tiny_generator_registered()
    cases = [wo_testlib.case_dict(f"g{i}", num_frames=6, res=(16, 20),
                                  metadata={"generator": "test.square", "generator_version": "2", "i": i})
             for i in range(2)]
    suite = wo_testlib.write_suite(tmp_path / "suite.json", cases)
    spec = make_run_spec("reference", str(suite), ["counting"], [0, 1])
    scores = []
    for k in range(2):
        outcome = evaluate(spec, EvalConfig(out=tmp_path / f"out{k}", progress=False))
        rows = sorted(_rows(outcome.run_dir), key=lambda r: (r["case_id"], r["seed"]))
        assert all(r["status"] == "ok" for r in rows)
        scores.append([(r["case_id"], r["seed"], r["score"], [m["normalized"] for m in r["metrics"]]) for r in rows])
    assert scores[0] == scores[1]
    # The reference matches itself: ref_diff is perfect; seeds differ only by the track's seeded jitter.
    assert all(s[3][1] == 1.0 for s in scores[0])
    assert scores[0][0][2] != scores[0][1][2]


def test_failing_track_and_not_applicable_rows_do_not_stop_the_run(videos_suite, tmp_path):
    suite, vids = videos_suite
    d = json.loads(suite.read_text())
    d["cases"][1]["metadata"] = {"skip_counting": True}
    suite.write_text(json.dumps(d))
    spec = make_run_spec(f"videos:{vids}", str(suite), ["counting", "crashing"], [0])
    outcome = evaluate(spec, EvalConfig(out=tmp_path / "out", progress=False))
    by = {(r.case_id, r.track): r for r in outcome.rows}
    na = by[("case1", "counting")]
    assert na.status == "not_applicable" and na.score is None and "skip the counting" in na.reason
    assert na.errors == []  # a reason, not an error (issue 58: 276 "errors" and 0 failures in one run)
    crash = by[("case0", "crashing")]
    assert crash.status == "failed" and crash.score is None
    assert "boom" in crash.errors[0] and "wo_testlib.py" in crash.errors[0]
    assert (outcome.run_dir / crash.artifacts["traceback"]).read_text().count("RuntimeError") >= 1
    assert by[("case2", "counting")].status == "ok"
    s = outcome.summary
    assert s["tracks"]["counting"]["counts"] == {"ok": 2, "not_applicable": 1, "failed": 0}
    assert len(s["errors"]) == 3 and all(e["track"] == "crashing" for e in s["errors"])


def test_unknown_model_spec_fails_each_row_with_a_clear_error(videos_suite, tmp_path):
    suite, _ = videos_suite
    spec = make_run_spec("vidoes:/nowhere", str(suite), ["counting"], [0])
    outcome = evaluate(spec, EvalConfig(out=tmp_path / "out", progress=False))
    assert len(outcome.rows) == 3 and all(r.status == "failed" for r in outcome.rows)
    msg = outcome.rows[0].errors[0]
    assert "vidoes" in msg and "Did you mean 'videos'" in msg and "--model" in msg


def test_workers_in_processes_match_one_process(videos_suite, tmp_path):
    suite, vids = videos_suite
    spec = make_run_spec(f"videos:{vids}", str(suite), ["counting"], [0, 1])
    one = evaluate(spec, EvalConfig(out=tmp_path / "a", progress=False, workers=1))
    two = evaluate(spec, EvalConfig(out=tmp_path / "b", progress=False, workers=2))
    key = lambda r: (r.case_id, r.seed)  # noqa: E731
    assert [(key(r), r.score) for r in sorted(one.rows, key=key)] == [(key(r), r.score) for r in sorted(two.rows, key=key)]
    pids = {json.loads(line)["pid"] for line in (two.run_dir / "timings.jsonl").read_text().splitlines()}
    assert len(pids) >= 1 and not (pids & {__import__("os").getpid()}), "work ran in worker processes"


def test_no_resume_recomputes_and_resume_skips(videos_suite, tmp_path):
    suite, vids = videos_suite
    calls = tmp_path / "calls.txt"
    spec = make_run_spec(f"videos:{vids}", str(suite), ["counting"], [0], options={"counting.calls": str(calls)})
    evaluate(spec, EvalConfig(out=tmp_path / "o", progress=False))
    again = evaluate(spec, EvalConfig(out=tmp_path / "o", progress=False))
    assert again.computed == 0 and again.skipped == 3 and len(calls.read_text().splitlines()) == 3
    fresh = evaluate(spec, EvalConfig(out=tmp_path / "o", progress=False, resume=False))
    assert fresh.computed == 3 and len(_rows(fresh.run_dir)) == 3 and len(calls.read_text().splitlines()) == 6


def test_limit_takes_the_first_cases(videos_suite, tmp_path):
    suite, vids = videos_suite
    spec = make_run_spec(f"videos:{vids}", str(suite), ["counting"], [0])
    outcome = evaluate(spec, EvalConfig(out=tmp_path / "o", progress=False, limit=2))
    assert sorted(r.case_id for r in outcome.rows) == ["case0", "case1"]


def test_summary_is_mean_over_cases_per_seed_then_mean_std_over_seeds():
    spec = RunSpec(model="m", suite="s", tracks=("a", "b"), seeds=(0, 1))

    def row(case, seed, track, score, status="ok"):
        return TrackResult(case, "m", seed, track, score, [MetricValue("x", score, score)] if score is not None else [],
                           status=status, errors=["why"] if status != "ok" else [])

    rows = [row("c1", 0, "a", 0.2), row("c2", 0, "a", 0.4), row("c1", 1, "a", 0.6), row("c2", 1, "a", 0.8),
            row("c1", 0, "b", 1.0), row("c2", 0, "b", None, "failed"), row("c1", 1, "b", 0.0),
            row("c2", 1, "b", None, "not_applicable")]
    s = summarize(rows, spec, weights={"a": 1.0, "b": 1.0})
    assert s["tracks"]["a"]["per_seed"] == {"0": pytest.approx(0.3), "1": pytest.approx(0.7)}
    assert s["tracks"]["a"]["mean"] == pytest.approx(0.5)
    assert s["tracks"]["a"]["std"] == pytest.approx(np.std([0.3, 0.7], ddof=1))
    assert s["tracks"]["b"]["counts"] == {"ok": 2, "not_applicable": 1, "failed": 1}
    # overall (the leaderboard's): per seed, the weighted mean of track scores: seed 0 → (0.3 + 1.0) / 2,
    # seed 1 → (0.7 + 0.0) / 2; overall: seeds, then cases, then tracks → (0.5 + 0.5) / 2
    assert s["overall"]["per_seed"] == {"0": pytest.approx(0.65), "1": pytest.approx(0.35)}
    assert s["overall"]["mean"] == pytest.approx(0.5)
    assert s["errors"] == [{"case_id": "c2", "seed": 0, "track": "b", "error": "why"}]


def test_summary_overall_is_the_weighted_mean_of_track_scores_not_of_case_means():
    """One overall (issue 57.4): a track mean over 3 cases and one over 1 case weigh by track, not by case."""
    spec = RunSpec(model="m", suite="s", tracks=("a", "b"), seeds=(0, 1))

    def row(case, seed, track, score):
        return TrackResult(case, "m", seed, track, score, [MetricValue("x", score, score)])

    rows = [row("c1", 0, "a", 0.0), row("c2", 0, "a", 0.0), row("c3", 0, "a", 0.0), row("c1", 0, "b", 1.0),
            row("c1", 1, "a", 0.2), row("c2", 1, "a", 0.2), row("c3", 1, "a", 0.2), row("c1", 1, "b", 0.6)]
    s = summarize(rows, spec, weights={"a": 1.0, "b": 3.0})
    # a = 0.1, b = 0.8 → (0.1 + 3 * 0.8) / 4; the old per-case mean gave 0.4333
    assert s["overall"]["mean"] == pytest.approx(0.625)
    assert s["overall"]["weights"] == {"a": 1.0, "b": 3.0}
    assert s["overall"]["per_seed"] == {"0": pytest.approx(0.75), "1": pytest.approx(0.5)}
    assert s["overall"]["std"] == pytest.approx(np.std([0.75, 0.5], ddof=1))
    # the schema's weights by default: a track the leaderboard does not know weighs 0 there too
    assert summarize(rows, spec)["overall"]["mean"] is None


def test_jsonl_appender_drops_a_partial_last_line(tmp_path):
    f = JsonlAppender(tmp_path / "r.jsonl")
    f.append({"a": 1})
    f.append({"a": 2})
    f.close()
    with open(tmp_path / "r.jsonl", "ab") as fh:
        fh.write(b'{"a": 3, "b"')
    assert f.read() == [{"a": 1}, {"a": 2}]
    assert (tmp_path / "r.jsonl").read_bytes().endswith(b"}\n")
    f.append({"a": 4})
    f.close()
    assert [r["a"] for r in f.read()] == [1, 2, 4]


def test_cli_usage_errors_exit_2_with_one_line(videos_suite, tmp_path, capsys):
    suite, vids = videos_suite
    assert evaluate_main(["--suite", str(suite), "--tracks", "nosuch", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown track" in err[0]
    assert evaluate_main(["--suite", str(tmp_path / "missing.json"), "--tracks", "counting", "--out", str(tmp_path)]) == 2
    assert "not found" in capsys.readouterr().err
    assert evaluate_main(["--seeds", "a,b", "--tracks", "counting", "--out", str(tmp_path)]) == 2
    from worldolympiad.registries import SUITES

    SUITES.register("wo_empty", lambda: [], override=True)
    try:
        assert evaluate_main(["--suite", "wo_empty", "--tracks", "counting", "--out", str(tmp_path)]) == 2
        assert "has no cases" in capsys.readouterr().err
    finally:
        SUITES.unregister("wo_empty")


def test_workers_fall_back_to_one_process_when_a_track_cannot_be_pickled(videos_suite, tmp_path):
    from worldolympiad.registries import TRACKS
    from worldolympiad.track import Track, TrackOutput

    class LocalTrack(Track):  # defined in a function: a spawned worker could not import it
        name = "local"

        def applicability(self, case):
            return None

        def evaluate(self, video, case, ctx):
            return TrackOutput(metrics=[], score=0.5)

    TRACKS.register("local", LocalTrack, override=True)
    try:
        suite, vids = videos_suite
        outcome = evaluate(make_run_spec(f"videos:{vids}", str(suite), ["local"], [0]),
                           EvalConfig(out=tmp_path / "o", progress=False, workers=2))
        assert [r.score for r in outcome.rows] == [0.5, 0.5, 0.5]
    finally:
        TRACKS.unregister("local")


def test_unknown_judge_is_a_usage_error(videos_suite, tmp_path, capsys):
    suite, vids = videos_suite
    assert evaluate_main(["--model", f"videos:{vids}", "--suite", str(suite), "--tracks", "counting",
                          "--judge", "gpt:x", "--out", str(tmp_path)]) == 2
    assert "unknown judge 'gpt:x'" in capsys.readouterr().err


def test_a_second_writer_on_the_same_run_directory_is_refused(videos_suite, tmp_path):
    from worldolympiad.evaluator import EvaluationError, _lock_run_dir

    suite, vids = videos_suite
    spec = make_run_spec(f"videos:{vids}", str(suite), ["counting"], [0])
    run_dir = tmp_path / "o" / spec.dirname
    run_dir.mkdir(parents=True)
    held = _lock_run_dir(run_dir)  # flock: a second open of the file conflicts even in this process
    try:
        with pytest.raises(EvaluationError, match="another evaluate-model process"):
            evaluate(spec, EvalConfig(out=tmp_path / "o", progress=False))
    finally:
        held.close()
    assert evaluate(spec, EvalConfig(out=tmp_path / "o", progress=False)).computed == 3


def test_retry_failed_recomputes_only_failed_rows(videos_suite, tmp_path):
    suite, vids = videos_suite
    (vids / "case2.mp4").rename(tmp_path / "case2.mp4")
    spec = make_run_spec(f"videos:{vids}", str(suite), ["counting"], [0])
    cfg = EvalConfig(out=tmp_path / "o", progress=False)
    first = evaluate(spec, cfg)
    assert {r.case_id: r.status for r in first.rows} == {"case0": "ok", "case1": "ok", "case2": "failed"}
    again = evaluate(spec, cfg)
    assert again.computed == 0 and again.reused_failed == 1  # failed rows count as finished on a plain resume
    retried = evaluate(spec, EvalConfig(out=tmp_path / "o", progress=False, retry_failed=True))
    assert retried.computed == 1 and retried.skipped == 2
    assert sorted((r.case_id, r.status) for r in retried.rows) == [("case0", "ok"), ("case1", "ok"), ("case2", "failed")]
    assert len(_rows(retried.run_dir)) == 3
    # the missing input appears: a plain resume recomputes that row (issue 58), no --retry-failed needed
    (tmp_path / "case2.mp4").rename(vids / "case2.mp4")
    fixed = evaluate(spec, cfg)
    assert fixed.computed == 1 and fixed.recomputed_inputs == 1 and fixed.reused_failed == 0
    assert sorted((r.case_id, r.status) for r in fixed.rows) == [("case0", "ok"), ("case1", "ok"), ("case2", "ok")]
    assert len(_rows(fixed.run_dir)) == 3


def test_references_used_by_tracks_are_published_next_to_the_videos(tmp_path):
    """The report and the site show generated vs reference side by side from the run folder."""
    import numpy as np

    from worldolympiad.evaluator import _Env, _Worker
    from worldolympiad.types import Case, RunSpec, Video

    run_dir = tmp_path / "run"
    env = _Env(spec=RunSpec(model="m", suite="s", tracks=()), run_dir=run_dir, cache_dir=tmp_path / "c",
               device="cpu", resume=False, track_classes={})
    worker = _Worker(env, lambda kind, payload: None)
    case = Case(id="c0", scenario="gaming", fps=4, num_frames=3, resolution=(16, 16))
    worker.publish_reference(case, Video(np.full((3, 16, 16, 3), 200, np.uint8), 4.0))
    from worldolympiad.video import read_video

    ref = read_video(run_dir / "references" / "c0.mp4")
    assert ref.num_frames == 3 and abs(int(ref.frames.mean()) - 200) <= 2
    worker.publish_reference(case, None)  # no reference: nothing written, no error


def test_a_static_copy_keeps_the_atari_agent_it_starts_with(tmp_path):
    """Generated videos are stored and scored in 4:4:4: with 4:2:0 the 2 px breakout paddle of a
    64 px case lost its colour, so no model's agent could be tracked (identity 0, direction 0)
    while the simulator reference, stored lossless, kept it. A still copy of the first frame keeps
    its agent exactly, so its identity consistency is 1."""
    from worldolympiad.suites import load_suite, write_suite

    case = next(c for c in load_suite("smoke").cases if c.id == "smoke-gaming-breakout")
    suite = write_suite(tmp_path / "one.json", "one", [case])
    rc = evaluate_main(["--model", "repeat-first-frame", "--suite", str(suite), "--tracks", "interaction",
                        "--out", str(tmp_path / "runs"), "--no-progress", "--no-baselines", "--no-report"])
    assert rc == 0
    run = _only_run_dir(tmp_path / "runs")
    assert json.loads((run / "run_spec.json").read_text())["video_format"] == "h264 yuv444p qp18"
    (row,) = _rows(run)
    identity = next(m for m in row["metrics"] if m["name"] == "identity_consistency")
    # A still copy keeps its agent, but where the actions ask for motion a video that never moves
    # is not credited with a perfectly kept identity (issue 56: stillness is never rewarded).
    assert identity["status"] == "not_applicable" and "mov" in identity["reason"], identity


def test_the_video_storage_format_is_part_of_the_run_hash():
    a = make_run_spec("reference", "smoke", ["interaction"])
    b = make_run_spec("reference", "smoke", ["interaction"], options={"video.pix_fmt": "yuv420p"})
    assert a.video_format == "h264 yuv444p qp18" and b.video_format == "h264 yuv420p qp18"
    with pytest.raises(ValueError, match="video.crf is gone.*video.qp"):
        make_run_spec("reference", "smoke", ["interaction"], options={"video.crf": "18"})
    assert a.hash != b.hash and RunSpec.from_dict(a.to_dict()).hash == a.hash
    # a run_spec.json written before the format was recorded (session 3) keeps its directory's hash
    old = {"model": "reference", "suite": "smoke", "tracks": ["physics", "geometry", "interaction", "longvideo"],
           "seeds": [0], "judge": "none", "options": [],
           "track_versions": [["physics", "1"], ["geometry", "1"], ["interaction", "1"], ["longvideo", "1"]],
           "git_hash": "b146d771b199d4f69a85b04b13114646fb672234", "hash": "7b7da523f677"}
    assert RunSpec.from_dict(old).video_format is None and RunSpec.from_dict(old).hash == "7b7da523f677"


def test_generated_videos_are_encoded_deterministically_and_a_still_video_stays_still(tmp_path):
    """With x264's CRF rate control one process wrote the same 24 generated frames to up to 7 different
    files in 16 tries (decoded up to 37 grey levels apart), so a rerun of the same model scored other
    pixels and its track scores moved by up to 0.14 on a case; CRF without its macroblock tree was
    deterministic but let a still video drift by 1-1.5 grey levels, which the long-video track scored
    as drift. At a constant quantizer the stream says so, the same frames give the same bytes, and
    every copy of a repeated frame decodes exactly like the first."""
    import hashlib
    import re

    from worldolympiad.video.io import read_video, write_video

    rng = np.random.default_rng(0)
    frames = np.clip(128 + 40 * np.sin(np.arange(64)[None, :, None] / 4.0) + rng.normal(0, 12, (24, 64, 64, 3)),
                     0, 255).astype(np.uint8)
    digests = set()
    for i in range(4):
        path = write_video(tmp_path / f"v{i}.mp4", frames, 15.0, qp=18, pix_fmt="yuv444p")
        data = path.read_bytes()
        digests.add(hashlib.md5(data).hexdigest())
    options = re.search(rb"x264 - core .*? options: ([^\x00]*)", data)
    assert options is not None
    assert b" rc=cqp " in options.group(1) and b" threads=1 " in options.group(1)
    assert len(digests) == 1
    still = read_video(write_video(tmp_path / "still.mp4", np.repeat(frames[:1], 24, 0), 15.0, qp=18,
                                   pix_fmt="yuv444p")).frames
    assert all(np.array_equal(f, still[0]) for f in still)


def test_eval_context_default_work_dir_is_private_and_removed_with_the_context() -> None:
    """Direct use (tests, notebooks, benches) once left one ``wo-track-*`` folder per context in /tmp."""
    import gc

    from worldolympiad.track import EvalContext

    a, b = EvalContext(), EvalContext()
    assert a.work_dir.is_dir() and a.work_dir != b.work_dir and a.work_dir != Path.cwd()
    (a.work_dir / "interaction.json").write_text("{}")
    folder = a.work_dir
    del a
    gc.collect()
    assert not folder.exists()


def test_eval_context_keeps_a_given_work_dir(tmp_path: Path) -> None:
    import gc

    from worldolympiad.track import EvalContext

    ctx = EvalContext(work_dir=tmp_path / "w")
    ctx.work_dir.mkdir()
    (ctx.work_dir / "drift.json").write_text("{}")
    del ctx
    gc.collect()
    assert (tmp_path / "w" / "drift.json").is_file()
