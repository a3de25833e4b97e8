"""A damaged line in ``results.jsonl`` (not UTF-8, not JSON) is skipped with a warning by every
reader, never a crash (issue 59, item 4)."""

import json

from leaderboard.cli import main as lb_main
from leaderboard.report import build_report
from leaderboard.report import main as report_main
from leaderboard.store import Store

from .conftest import result_row, write_run


def _damaged_run(tmp_path):
    rows = [result_row("m", "c0", 0, "physics", 0.75), result_row("m", "c1", 0, "physics", 0.25)]
    run = write_run(tmp_path, "m", rows)
    lines = [json.dumps(r).encode() for r in rows]
    (run / "results.jsonl").write_bytes(lines[0] + b"\n\xff\xfe garbage \x80\n[1, 2]\n" + lines[1] + b"\n")
    return run


def test_leaderboard_add_skips_a_garbage_line_and_names_it(tmp_path, capsys):
    run = _damaged_run(tmp_path)
    db = tmp_path / "lb.sqlite"
    assert lb_main(["--db", str(db), "add", str(run)]) == 0
    out = capsys.readouterr().out
    assert ": added" in out and "skipped 2 damaged lines (2, 3)" in out
    with Store(db) as s:
        assert s.counts()["results"] == 2


def test_report_skips_a_garbage_line_and_says_so(tmp_path, capsys):
    run = _damaged_run(tmp_path)
    assert report_main([str(run)]) == 0
    page = build_report(run).read_text()
    assert "<td>0.500</td>" in page  # both good rows used
    assert "skipped 2 damaged lines (2, 3)" in page


def test_a_trailing_partial_line_is_not_called_damaged(tmp_path):
    from leaderboard.aggregate import scan_results_jsonl

    run = write_run(tmp_path, "m", [result_row("m", "c0", 0, "physics", 0.5)])
    with (run / "results.jsonl").open("ab") as f:
        f.write(b'{"case_id": "c1", "mod')  # a run killed while writing
    scan = scan_results_jsonl(run / "results.jsonl")
    assert len(scan.rows) == 1 and scan.damaged == []
