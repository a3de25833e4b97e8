"""One definition of the overall score (issue 57, item 4 and acceptance 2).

``summary.json``, the terminal table, ``report.html`` and the leaderboard of one default
``evaluate-model`` run (the model and its baselines) show the same overall for every model.
Kept cheap like ``test_default_baselines.py``: two 20-frame 32x32 cases, the long-video and
interaction tracks, the second case without interaction, so averaging per case (the old
summary) and per track (the leaderboard) give different numbers.
"""

from __future__ import annotations

import json
import re

import pandas as pd
import wo_testlib

import worldolympiad.cli.evaluate as ev
import worldolympiad.models.baselines as baselines
from worldolympiad.video import write_video


def test_summary_terminal_report_and_leaderboard_show_the_same_overall(tmp_path, monkeypatch, capsys):
    vids = tmp_path / "videos"
    vids.mkdir()
    cases = []
    for cid, tracks in (("case0", ["longvideo", "interaction"]), ("case1", ["longvideo"])):
        case = wo_testlib.case_dict(cid, num_frames=20, res=(32, 32), tracks=tracks)
        write_video(vids / f"{cid}.mp4", wo_testlib.frames_for(cid, 20, (32, 32)), 8)
        case["reference"] = str(vids / f"{cid}.mp4")
        cases.append(case)
    suite = wo_testlib.write_suite(tmp_path / "suite.json", cases)
    main_model = f"videos:{vids}"
    monkeypatch.setattr(ev, "DEFAULT_MODEL", main_model)
    monkeypatch.setattr(baselines, "LEADERBOARD_BASELINES", {
        "repeat-first-frame": "the first frame held still", "perturbed:teleport@1": "a known-bad control",
        main_model: "the main model", "reference": "the ground truth"})
    out = tmp_path / "runs"
    assert ev.main(["--suite", str(suite), "--tracks", "longvideo,interaction", "--out", str(out),
                    "--no-progress"]) == 0
    text = capsys.readouterr().out

    # the terminal: each model's summary ends with an `overall` line before its `run directory:` line
    terminal = dict(zip(re.findall(r"^run directory: (\S+)", text, re.M),
                        re.findall(r"^overall\s+([0-9.]+) ±", text, re.M), strict=True))
    board = pd.read_csv(out / "leaderboard" / "leaderboard.csv").set_index("Model")["All"]
    assert len(terminal) == len(board) == 4
    differs = 0
    for run_dir, shown in terminal.items():
        summary = json.loads((out / run_dir.rsplit("/", 1)[-1] / "summary.json").read_text())
        overall = summary["overall"]["mean"]
        assert shown == f"{overall:.4f}"
        assert round(overall, 4) == board[summary["model"]]
        report = (out / run_dir.rsplit("/", 1)[-1] / "report.html").read_text()
        assert re.search(r"All \(overall\)</th><td></td><th>([0-9.]+)</th>", report).group(1) == f"{overall:.4f}"
        # the old per-case definition: the mean over cases of each case's mean track score
        per_case = {}
        for line in (out / run_dir.rsplit("/", 1)[-1] / "results.jsonl").read_text().splitlines():
            r = json.loads(line)
            if r["status"] == "ok":
                per_case.setdefault(r["case_id"], []).append(r["score"])
        old = sum(sum(v) / len(v) for v in per_case.values()) / len(per_case)
        differs += abs(old - overall) > 1e-4
    assert differs, "the fixture must tell the per-case and the per-track definitions apart"


def test_track_score_does_not_depend_on_the_order_rows_arrived_in():
    """A Ray run writes rows as they finish; its smoke summary differed from the local run's in the
    last bit of the long-video mean (0.9420723562186222 vs ...221) because a plain sum depends on order."""
    from worldolympiad.overall import track_score

    scores = {"a": [0.229], "b": [0.945], "c": [0.901], "d": [0.031]}
    backwards = dict(reversed(list(scores.items())))
    assert sum([0.229, 0.945, 0.901, 0.031]) != sum([0.031, 0.901, 0.945, 0.229])  # the order matters to a plain sum
    assert track_score(scores) == track_score(backwards)
