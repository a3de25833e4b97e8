"""File formats users write: validate reports schema and semantic problems together with fix hints
that fit the object, JSON-lines suites are told the expected shape, the documented examples load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import wo_testlib

from worldolympiad.cli import main as cli
from worldolympiad.suites import SuiteError, load_suite
from worldolympiad.validate import validate_case_dict

REPO = Path(__file__).resolve().parents[2]


def test_validate_reports_schema_and_semantic_problems_at_once(tmp_path, capsys):
    case = wo_testlib.case_dict("a", num_frames=6, fps=-1, mood="calm")
    case["chunks"][0]["captoin"] = "typo"
    case["chunks"][1]["frame_end"] = 9  # semantic: past num_frames
    case["camera"] = {"intrinsics": [[10, 0, 8], [0, 10, 8], [0, 0, 1]], "trajectory": [], "fov": 60}
    problems = {p.path: p.message for p in validate_case_dict(case)}
    assert "$.fps" in problems  # schema
    assert "past num_frames" in problems["$.chunks[1].frame_end"]  # semantic, in the same pass
    assert "'captoin' (did you mean 'caption'?)" in problems["$.chunks[0]"]
    assert "metadata" not in problems["$.chunks[0]"].split(";")[1].split("(")[0]  # no "move it under 'metadata'"
    assert "takes only index, frame_start, frame_end, caption, action" in problems["$.chunks[0]"]
    assert "under 'metadata'" not in problems["$.camera"] and "'fov'" in problems["$.camera"]
    assert "'mood'" in problems["$"] and "move it under 'metadata'" in problems["$"]  # the case has metadata
    path = tmp_path / "case.json"
    path.write_text(json.dumps(case))
    assert cli.main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert "$.fps" in out and "past num_frames" in out and "did you mean 'caption'" in out


def test_semantic_checks_survive_malformed_fields():
    case = {**wo_testlib.case_dict("a"), "num_frames": "six"}
    case["chunks"] = [{"index": "0", "frame_start": None}, "not a chunk"]
    case["camera"] = {"intrinsics": "K", "trajectory": [[1, 2]]}
    problems = validate_case_dict(case)  # schema problems only, no crash
    assert problems and all(isinstance(p.message, str) for p in problems)


def test_suite_with_a_bad_top_level_key_still_checks_its_cases(tmp_path, capsys):
    bad = wo_testlib.case_dict("b", num_frames=6)
    bad["chunks"][1]["frame_end"] = 9
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"name": "s", "cases": [bad], "autor": "me"}))
    assert cli.main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert "'autor'" in out and "$.cases[0].chunks[1].frame_end" in out


def test_json_lines_suite_is_told_the_expected_shape(tmp_path, capsys):
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(json.dumps(wo_testlib.case_dict(c)) for c in "ab") + "\n")
    assert cli.main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert "JSON lines" in out and '"cases": [' in out and "docs/formats.md" in out
    also = tmp_path / "cases.json"  # same content, .json suffix: recognised from the "Extra data" at line 2
    also.write_text(path.read_text())
    with pytest.raises(SuiteError, match=r'JSON lines.*"cases": \['):
        load_suite(also)


@pytest.mark.parametrize("name", ["case.json", "suite.json"])
def test_documented_examples_are_valid(name, capsys):
    path = REPO / "docs" / "examples" / name
    assert cli.main(["validate", str(path)]) == 0, capsys.readouterr().out
    assert load_suite(path).cases


def test_documented_actions_file_is_what_inferix_reads():
    from inferix.cli import load_actions

    controls = load_actions(REPO / "docs" / "examples" / "actions.json", fps=16, frames_per_block=4)
    assert controls(0) == (None, "forward")
    assert controls(2) == ("the door opens", "left")
    assert controls(99) == controls(3)  # the last entry holds
    per_second = load_actions(REPO / "docs" / "examples" / "actions_per_second.json", fps=16, frames_per_block=4)
    assert per_second(0)[1] == "forward" and per_second(4)[1] == "left"  # block 4 starts at 1.0 s


def test_formats_page_is_linked_from_the_readme():
    assert "docs/formats.md" in (REPO / "README.md").read_text()
    text = (REPO / "docs" / "formats.md").read_text()
    for heading in ("## Case", "## Suite", "## Actions file", "## Public WorldOlympiad (DAMO) layout"):
        assert heading in text, heading


def test_license_file_matches_the_declared_license():
    import tomllib

    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["license"]["text"]
    assert declared == "Apache-2.0"
    head = (REPO / "LICENSE").read_text()[:300]
    assert "Apache License" in head and "Version 2.0, January 2004" in head
