"""Issue 58 item 5: progress measured in work, naming the running row; third-party output in run.log.

On 85cf2c2 the bar counted rows: 50 not-applicable rows finished at once and the bar showed 51/80
with 17 s left after 30 s, then sat still for minutes on geometry rows while naming the last
finished row; ~1,700 glog lines of pycolmap went to the terminal.
"""

from __future__ import annotations

import io
import json
import os

import pytest

from worldolympiad.evaluator import EvalConfig, evaluate, make_run_spec
from worldolympiad.progress import ProgressLine, WorkProgress
from worldolympiad.rundir import RUN_LOG, native_output_to

# A run like the smoke suite's: per unit a video and two tracks of very different cost (true seconds).
TRUE_COST = {"video": 0.3, "geometry": 25.0, "physics": 0.6}
FRAMES = 16


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _run_unit(p: WorkProgress, clock: FakeClock, case: str, tracks: list[str]) -> None:
    p.start(case, 0, "video")
    clock.t += TRUE_COST["video"]
    p.finish(case, 0, "video", TRUE_COST["video"], kind="generate")
    for t in tracks:
        p.start(case, 0, t)
        clock.t += TRUE_COST[t]
        p.row(case, 0, t, "ok", TRUE_COST[t])


def test_instant_rows_do_not_move_the_fraction_and_the_eta_follows_the_work():
    clock = FakeClock()
    p = WorkProgress(clock=clock)
    units = [f"case{i}" for i in range(10)]
    # geometry on the first four cases only (as in smoke, where the costly rows come first)
    plan = {c: (["geometry", "physics"] if i < 4 else ["physics"]) for i, c in enumerate(units)}
    for c, tracks in plan.items():
        p.plan(c, 0, FRAMES, "generate", tracks)
    p.add_reused(20)
    for i in range(50):  # not-applicable rows written at once, before any work
        p.row(f"na{i}", 0, "longvideo", "not_applicable")
    assert p.fraction() == 0.0
    assert p.eta() is None
    line = p.line("model on suite")
    assert "0%" in line and "0/14 rows" in line and "20 reused" in line and "50 n/a" in line

    true_total = sum(TRUE_COST["video"] + sum(TRUE_COST[t] for t in tr) for tr in plan.values())
    spent = 0.0
    checked = 0
    for c in units:
        _run_unit(p, clock, c, plan[c])
        spent += TRUE_COST["video"] + sum(TRUE_COST[t] for t in plan[c])
        if spent / true_total < 0.25 or spent >= true_total:
            continue
        true_left = true_total - spent
        eta = p.eta()
        assert eta is not None and true_left / 2 <= eta <= true_left * 2, (c, eta, true_left)
        # the fraction is work, not rows: after the geometry rows most of the work is done
        assert abs(p.fraction() - spent / true_total) < 0.25, (c, p.fraction(), spent / true_total)
        checked += 1
    assert checked >= 3
    assert p.fraction() == 1.0 and p.eta() == 0.0


def test_the_line_names_the_running_row_and_credits_its_elapsed_time():
    clock = FakeClock()
    p = WorkProgress(clock=clock)
    p.plan("room", 0, FRAMES, "generate", ["geometry"])
    p.plan("ball", 0, FRAMES, "generate", ["physics"])
    _run_unit(p, clock, "ball", ["physics"])
    p.start("room", 0, "video")
    clock.t += 0.3
    p.finish("room", 0, "video", 0.3, kind="generate")
    p.start("room", 0, "geometry")
    before = p.fraction()
    clock.t += 5.0
    assert p.fraction() > before  # a long row keeps the bar moving
    assert "running: room s0 geometry 0:05" in p.line("x")
    assert "ball" not in p.line("x")  # not the last finished row
    clock.t += 1e4  # a row far past its estimate never shows 100 %
    assert p.fraction() < 1.0
    p.row("room", 0, "geometry", "ok", 1e4)
    assert "running" not in p.line("x") and p.fraction() == 1.0


def test_two_workers_are_both_named():
    p = WorkProgress(clock=FakeClock())
    p.plan("a", 0, 8, "generate", ["physics"])
    p.plan("b", 0, 8, "generate", ["geometry"])
    p.start("a", 0, "physics", worker=11)
    p.start("b", 0, "video", worker=12)
    line = p.line("x")
    assert "a s0 physics" in line and "b s0 generate" in line


def test_progress_line_off_a_terminal_logs_lines_and_ends_with_the_counts():
    clock = FakeClock()
    p = WorkProgress(clock=clock)
    p.plan("a", 0, 8, "generate", ["physics"])
    out = io.StringIO()
    line = ProgressLine(p, "m on s", stream=out, log_interval=30).start()
    _run_unit(p, clock, "a", ["physics"])
    line.close()
    text = out.getvalue()
    assert "\r" not in text and text.endswith("\n")
    assert "100%" in text.splitlines()[-1] and "1/1 rows" in text.splitlines()[-1]


def test_evaluate_shows_reused_rows_as_a_count_not_progress(videos_suite, tmp_path, capsys):
    suite, vids = videos_suite
    spec = make_run_spec(f"videos:{vids}", str(suite), ["counting"])
    evaluate(spec, EvalConfig(out=tmp_path / "runs", progress=True))
    first = capsys.readouterr().err.strip().splitlines()[-1]
    assert "100%" in first and "3/3 rows" in first
    evaluate(spec, EvalConfig(out=tmp_path / "runs", progress=True))
    again = capsys.readouterr().err.strip().splitlines()[-1]
    assert "0/0 rows" in again and "3 reused" in again


GLOG_MARKERS = ("feature_extraction.cc", "I2026", "I2025", "I2027")


def test_native_output_goes_to_the_log_file_and_the_terminal_is_restored(tmp_path, capfd):
    log = tmp_path / "run.log"
    with native_output_to(log, "physics case s0"):
        os.write(2, b"I20261205 12:00:00.0 1 feature_extraction.cc:1] from C\n")
        os.write(1, b"pybullet build time: from C\n")
    os.write(2, b"after the block\n")
    out, err = capfd.readouterr()
    assert "feature_extraction" not in err and "pybullet" not in out
    assert "after the block" in err
    text = log.read_text()
    assert "==== physics case s0" in text and "feature_extraction.cc" in text and "pybullet" in text


def test_a_geometry_row_prints_no_glog_line_on_the_terminal(tmp_path, capfd):
    """``evaluate-model`` scoring a geometry row (pycolmap, in this process): glog's lines go to run.log."""
    pytest.importorskip("pycolmap")
    from worldolympiad.cli.evaluate import main

    code = main(["--model", "reference", "--suite", "smoke", "--tracks", "geometry", "--limit", "1",
                 "--out", str(tmp_path / "runs"), "--no-report", "--no-baselines",
                 "--option", "geometry.max_frames=8", "--option", "geometry.splat_iterations=5",
                 "--option", "geometry.sfm_cross_check=false"])
    out, err = capfd.readouterr()
    assert code == 0, out + err
    (run_dir,) = [p for p in (tmp_path / "runs").iterdir() if p.name.startswith("reference__smoke")]
    row = json.loads((run_dir / "results.jsonl").read_text().splitlines()[0])
    assert row["track"] == "geometry" and row["status"] == "ok", row
    log = (run_dir / RUN_LOG).read_text()
    assert "feature_extraction.cc" in log and "==== geometry smoke-flythrough-room s0" in log
    for marker in GLOG_MARKERS:
        assert marker not in err and marker not in out, [ln for ln in (out + err).splitlines() if marker in ln][:3]
    assert "reference on smoke" in err  # the progress line still reaches the terminal
    assert f"third-party output (pycolmap/glog, MuJoCo, ...): {run_dir / RUN_LOG}" in out

def test_a_row_running_past_its_estimate_raises_the_estimate_of_rows_like_it():
    """A busy machine: geometry takes 60 s where the prior says ~10 s. While the first geometry row
    runs, the second one (not started) is estimated from the first's elapsed time, so the ETA is
    within 1.5x of the truth before either finishes (the prior alone gives ~1.6x too much)."""
    clock = FakeClock()
    p = WorkProgress(clock=clock)
    p.plan("a", 0, FRAMES, "generate", ["geometry"])
    p.plan("b", 0, FRAMES, "generate", ["geometry"])
    for i in range(8):
        p.plan(f"c{i}", 0, FRAMES, "generate", ["physics"])
    p.start("a", 0, "video")
    clock.t += 0.3
    p.finish("a", 0, "video", 0.3, kind="generate")
    p.start("a", 0, "geometry")
    clock.t += 60.0  # a's geometry is about to finish
    true_left = 0.3 + 60.0 + 8 * (TRUE_COST["video"] + TRUE_COST["physics"])
    eta = p.eta()
    assert eta is not None and true_left / 1.5 <= eta <= true_left * 1.5, (eta, true_left)


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_log_record_starts_on_a_cleared_line_and_the_bar_is_redrawn_below_it(capsys):
    import logging
    import sys

    handler = logging.StreamHandler(sys.stderr)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        p = WorkProgress(clock=FakeClock())
        p.plan("a", 0, 8, "generate", ["physics"])
        term = _Tty()
        line = ProgressLine(p, "m on s", stream=term, interval=3600).start()
        logging.getLogger("worldolympiad.test").warning("stored video unreadable")
        assert handler.stream is not sys.stderr
        line.close()
        assert handler.stream is sys.stderr
    finally:
        root.removeHandler(handler)
    assert "stored video unreadable" in capsys.readouterr().err
    drawn = term.getvalue()
    assert drawn.count("\r\x1b[2K") >= 2 and drawn.rstrip().endswith("0/1 rows | 0:00<?")


NOISY = '''
import os

import numpy as np

from worldolympiad.models.base import WorldModel
from worldolympiad.types import Video


class Noisy(WorldModel):
    def __init__(self, cache_dir=None):
        os.write(2, b"W0000 loading weights from C (model build)\\n")

    def generate(self, case, seed=0):
        os.write(1, b"MuJoCo-like banner on stdout (generate)\\n")
        h, w = case.resolution
        return Video(frames=np.full((case.num_frames, h, w, 3), 90, np.uint8), fps=case.fps)
'''


def test_what_a_model_prints_while_built_and_generating_goes_to_run_log(videos_suite, tmp_path, capfd):
    from worldolympiad.cli.evaluate import main

    suite, _ = videos_suite
    model = tmp_path / "noisy_model.py"
    model.write_text(NOISY)
    code = main(["--model", f"py:{model}:Noisy", "--suite", str(suite), "--tracks", "counting",
                 "--out", str(tmp_path / "runs"), "--no-report", "--workers", "1"])
    out, err = capfd.readouterr()
    assert code == 0, out + err
    assert "loading weights" not in out + err and "banner" not in out + err
    (log,) = (tmp_path / "runs").glob(f"*/{RUN_LOG}")
    text = log.read_text()
    assert text.count("loading weights") == 1 and text.count("banner") == 3 and "==== generate case0 s0" in text
