"""Static HTML report of a run directory."""

import numpy as np

from leaderboard.report import build_report, main
from worldolympiad.video import write_video

from .conftest import result_row, write_run


def test_report_has_track_table_plots_videos_and_escaped_details(tmp_path):
    rows = [result_row("m", "c0", 0, "physics", 0.75), result_row("m", "c0", 0, "geometry", None, status="failed"),
            result_row("m", "c1", 0, "physics", 0.25)]
    rows[1]["errors"] = ["<b>bad</b> video: file truncated"]
    run = write_run(tmp_path, "m", rows)
    write_video(run / "videos" / "c0__s0.mp4", np.zeros((3, 16, 16, 3), np.uint8), 3)
    out = build_report(run)
    html = out.read_text()
    assert "<td>Physical</td>" in html and "<td>0.500</td>" in html  # mean of 0.75 and 0.25
    assert html.count("data:image/png;base64,") == 2  # bar + radar
    assert "src='videos/c0__s0.mp4'" in html  # generated video linked relative to the run
    assert "reference: not available" in html
    assert "&lt;b&gt;bad&lt;/b&gt;" in html and "<b>bad</b>" not in html  # errors escaped


def test_report_cli_on_missing_run_is_a_clear_error(tmp_path, capsys):
    assert main([str(tmp_path / "nope")]) == 2
    assert "run evaluate-model first" in capsys.readouterr().out


def test_report_says_how_the_videos_were_stored_when_browsers_may_not_play_them(tmp_path):
    import json

    run = write_run(tmp_path, "m", [result_row("m", "c0", 0, "physics", 0.5)])
    assert "4:4:4" not in build_report(run).read_text()  # older runs record no format: no note
    spec = json.loads((run / "run_spec.json").read_text())
    spec["video_format"] = "h264 yuv444p crf18"
    (run / "run_spec.json").write_text(json.dumps(spec))
    html = build_report(run).read_text()
    assert "h264 yuv444p crf18" in html and "video.pix_fmt=yuv420p" in html


def test_report_shows_the_chance_level_next_to_a_metric_that_carries_one(tmp_path):
    row = result_row("m", "c0", 0, "interaction", 0.5)
    row["metrics"][0]["details"] = {"chunks": 6, "chance": 0.25}
    other = result_row("m", "c1", 0, "interaction", 0.5)
    html = build_report(write_run(tmp_path, "m", [row, other])).read_text()
    assert html.count("(chance 0.250)") == 1  # only on the metric whose details carry it


def test_report_shows_input_warnings_and_run_errors(tmp_path):
    """Issue 59.3: mismatched fps, size or length are recorded on the row and shown in the report; a
    judge outage (summary.json run_errors) is shown at the top, not only inside each row."""
    import json

    rows = [result_row("m", "c0", 0, "physics", 0.75), result_row("m", "c0", 0, "longvideo", 0.5),
            result_row("m", "c1", 0, "physics", 0.25)]
    for r in rows[:2]:
        r["warnings"] = ["short: 10 of 24 frames <script>", "fps: 12 against the case's 24"]
    run = write_run(tmp_path, "m", rows)
    (run / "summary.json").write_text(json.dumps({"run_errors": ["judge openai:x: 0 of 6 requests answered"]}))
    html = build_report(run).read_text()
    assert "<h2>Input warnings</h2>" in html and "1 video(s)" in html  # one video, two rows
    assert "10 of 24 frames &lt;script&gt;" in html and "<script>" not in html
    assert "<h2>Run errors</h2>" in html and "0 of 6 requests answered" in html
    clean = write_run(tmp_path / "clean", "m", [result_row("m", "c1", 0, "physics", 0.25)])
    assert "Input warnings" not in build_report(clean).read_text()
