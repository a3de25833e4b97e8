"""`worldolympiad import --layout worldolympiad-damo` and the videos adapter on the public layout."""

from __future__ import annotations

import json

import pytest
import wo_testlib

from worldolympiad.cli import main as cli
from worldolympiad.evaluator import EvalConfig, evaluate, make_run_spec
from worldolympiad.models import build_model
from worldolympiad.models.base import ModelError
from worldolympiad.suites import load_suite
from worldolympiad.types import Chunk
from worldolympiad.video import write_chunk_timestamps, write_video


@pytest.fixture
def damo_root(tmp_path):
    """Three cases in the public layout, one per prompt.json variant; two models' videos for one case."""
    root = tmp_path / "wo"
    specs = [
        ("general", "g001", ["a street", "a car passes"], 10),
        ("gaming", "m-7", {"chunks": [{"caption": "walk", "action": "forward", "interval": [0, 0.5]},
                                      {"prompt": "turn", "action": ["left", "left"], "interval": [0.5, 1.25]}]}, 10),
        ("embodied", "r9", {"prompts": [{"text": "grasp", "chunk_index": 1}, {"description": "reach", "chunk_index": 0},
                                        "lift"]}, 12),
    ]
    for domain, cid, prompt, n in specs:
        d = root / domain / cid
        d.mkdir(parents=True)
        (d / "prompt.json").write_text(json.dumps(prompt))
        frames = wo_testlib.frames_for(cid, n, (16, 24))
        write_video(d / f"ref_{cid}.mp4", frames, 8)
        write_video(d / f"mymodel_gen_{cid}.mp4", frames[::-1].copy(), 8)
    # r9 also has a second model with chunk timestamps
    d = root / "embodied" / "r9"
    write_video(d / "other_gen_r9.mp4", wo_testlib.frames_for("o", 12, (16, 24)), 8)
    write_chunk_timestamps(d / "other_gen_r9_chunk_timestamps.json", "other_gen_r9.mp4", 8, 12,
                           [Chunk(0, 0, 5), Chunk(1, 5, 9), Chunk(2, 9, 12)])
    (root / "general" / "empty_case").mkdir()  # no prompt.json → skipped with a reason
    return root


def test_import_damo_writes_a_valid_suite(damo_root, tmp_path, capsys):
    out = tmp_path / "suites" / "wo.json"
    assert cli.main(["import", str(damo_root), "--layout", "worldolympiad-damo", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "3 case(s)" in printed and "empty_case" in printed and "prompt.json not found" in printed
    assert cli.main(["validate", str(out)]) == 0
    suite = load_suite(out)
    by = {c.id: c for c in suite.cases}
    g, m, r = by["g001"], by["m-7"], by["r9"]
    assert (g.scenario, m.scenario, r.scenario) == ("realworld", "gaming", "robotics")
    assert g.fps == 8 and g.num_frames == 10 and g.resolution == (16, 24)
    assert [c.caption for c in g.chunks] == ["a street", "a car passes"]
    assert [(c.frame_start, c.frame_end) for c in g.chunks] == [(0, 5), (5, 10)]  # even split
    assert [(c.frame_start, c.frame_end) for c in m.chunks] == [(0, 4), (4, 10)]  # from intervals (seconds)
    assert m.chunks[0].action == "forward" and m.chunks[1].action == {"sequence": ["left", "left"]}
    assert [c.caption for c in r.chunks] == ["reach", "grasp", "lift"]  # ordered by chunk_index
    assert g.resolve(g.reference).resolve() == (damo_root / "general" / "g001" / "ref_g001.mp4").resolve()
    assert g.prompt == "a street a car passes"
    assert sorted(r.metadata["models"]) == ["mymodel", "other"]


def test_videos_adapter_reads_the_public_layout_with_prefix_and_timestamps(damo_root, tmp_path):
    out = tmp_path / "wo.json"
    cli.main(["import", str(damo_root), "--layout", "worldolympiad-damo", "--out", str(out)])
    suite = load_suite(out)
    r9 = suite.case("r9")
    with pytest.raises(ModelError, match="several models.*mymodel, other.*#PREFIX"):
        build_model(f"videos:{damo_root}").generate(r9)
    v = build_model(f"videos:{damo_root}#other").generate(r9)
    assert [(c.frame_start, c.frame_end) for c in v.chunks] == [(0, 5), (5, 9), (9, 12)]
    assert [c.caption for c in v.chunks] == ["reach", "grasp", "lift"]
    mine = build_model(f"videos:{damo_root}#mymodel").generate(suite.case("g001"))
    assert mine.num_frames == 10 and mine.frames.shape[1:3] == (16, 24)
    # end to end: the suite scored with the model prefix; reference model reads ref_<id>.mp4
    spec = make_run_spec(f"videos:{damo_root}#mymodel", str(out), ["counting"], [0])
    outcome = evaluate(spec, EvalConfig(out=tmp_path / "runs", progress=False))
    assert [r.status for r in outcome.rows] == ["ok"] * 3
    ref = evaluate(make_run_spec("reference", str(out), ["counting"], [0]),
                   EvalConfig(out=tmp_path / "runs", progress=False))
    diffs = {r.case_id: r.metric("ref_diff").normalized for r in ref.rows}
    assert all(d == 1.0 for d in diffs.values())
    mine_diff = {r.case_id: r.metric("ref_diff").normalized for r in outcome.rows}
    assert all(d < 1.0 for d in mine_diff.values())  # reversed frames differ from the reference


def test_import_of_a_folder_without_domains_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "x").mkdir()
    assert cli.main(["import", str(tmp_path / "x"), "--layout", "worldolympiad-damo"]) == 2
    assert "general/gaming/embodied" in capsys.readouterr().err


# ------------------------------------------- files written exactly as the public layout documents

FIXTURES = __import__("pathlib").Path(__file__).parent / "fixtures" / "damo_layout"
# (domain, case, video file, fps, frames): the videos each hand-written case assumes (fixtures/README.md)
LAYOUT_VIDEOS = [
    ("general", "case1", "ref_case1.mp4", 2, 60),
    ("gaming", "walk_02", "ref_walk_02.mp4", 8, 64),
    ("embodied", "arm-3", "cosmos_gen_arm-3.mp4", 28, 186),
    ("general", "bad_interval", "ref_bad_interval.mp4", 2, 60),
    ("general", "past_end", "ref_past_end.mp4", 2, 60),
    ("embodied", "inclusive_end", "wm_gen_inclusive_end.mp4", 28, 186),
]


@pytest.fixture
def public_layout(tmp_path):
    import shutil

    root = tmp_path / "outputs_batch"
    shutil.copytree(FIXTURES, root, ignore=shutil.ignore_patterns("README.md"))
    for domain, case, name, fps, n in LAYOUT_VIDEOS:
        write_video(root / domain / case / name, wo_testlib.frames_for(case, n, (16, 24)), fps)
    return root


def test_import_reads_the_layouts_interval_strings_and_exclusive_frame_end(public_layout, tmp_path, capsys):
    out = tmp_path / "wo.json"
    assert cli.main(["import", str(public_layout), "--layout", "worldolympiad-damo", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    suite = load_suite(out)
    by = {c.id: c for c in suite.cases}
    assert sorted(by) == ["arm-3", "case1", "walk_02"]
    # "[00:00, 00:15)", "[00:15, 00:30)" on a 30 s reference at 2 fps: half-open, contiguous
    assert [(c.frame_start, c.frame_end) for c in by["case1"].chunks] == [(0, 30), (30, 60)]
    assert [c.action for c in by["case1"].chunks] == ["turn left", "turn right"]
    assert by["case1"].metadata["chunk_boundaries"] == "prompt.json intervals"
    # "00:00-00:03", "00:03-00:08" at 8 fps (an even split would give (0, 32), (32, 64))
    assert [(c.frame_start, c.frame_end) for c in by["walk_02"].chunks] == [(0, 24), (24, 64)]
    # the layout's timestamp file: frame_end 93 with generated_end_sec 93/28 is exclusive
    assert [(c.frame_start, c.frame_end) for c in by["arm-3"].chunks] == [(0, 93), (93, 186)]
    assert by["arm-3"].metadata["chunk_boundaries"].startswith("chunk timestamps")
    # refusals name the case, the chunk and the readable forms
    skipped = dict(line.strip()[len("skipped "):].split(": ", 1) for line in printed.splitlines()
                   if line.strip().startswith("skipped "))
    assert set(skipped) == {"bad_interval", "past_end", "inclusive_end"}
    assert "chunk 1 interval cannot be read" in skipped["bad_interval"] and "'MM:SS-MM:SS'" in skipped["bad_interval"]
    assert "ends at 60 s" in skipped["past_end"] and "60 frames" in skipped["past_end"]
    assert "frame_end is exclusive" in skipped["inclusive_end"]
    assert "3 skipped" in printed and "note:" not in printed  # no case was split evenly
    assert cli.main(["validate", str(out)]) == 0
    # the videos adapter reads the same timestamp file the same way
    v = build_model(f"videos:{public_layout}#cosmos").generate(by["arm-3"])
    assert [(c.frame_start, c.frame_end) for c in v.chunks] == [(0, 93), (93, 186)]


def test_chunks_without_intervals_are_split_evenly_only_with_a_note(damo_root, tmp_path, capsys):
    out = tmp_path / "wo.json"
    assert cli.main(["import", str(damo_root), "--layout", "worldolympiad-damo", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    g = load_suite(out).case("g001")
    assert g.metadata["chunk_boundaries"].startswith("even split")
    assert "note: 2 case(s)" in printed and "g001" in printed and '"interval": "[MM:SS, MM:SS)"' in printed


@pytest.mark.parametrize("interval, expected", [
    ("[00:00, 00:15)", (0.0, 15.0)), ("00:00-00:04", (0.0, 4.0)), ("[01:02.5, 01:10)", (62.5, 70.0)),
    ("00:01:00-00:01:30", (60.0, 90.0)), ("[0, 4.5)", (0.0, 4.5)), ([1, 2], (1.0, 2.0)),
    ({"start": 0.5, "end": 1}, (0.5, 1.0)),
])
def test_parse_interval_reads_every_documented_form(interval, expected):
    from worldolympiad.importers.damo import parse_interval

    assert parse_interval(interval) == expected


@pytest.mark.parametrize("interval", ["second half", "00:15-00:15", "[00:10, 00:05)", "00:75-01:00", "1:2:3:4-5", None])
def test_parse_interval_refuses_what_it_cannot_read(interval):
    from worldolympiad.importers.damo import parse_interval

    with pytest.raises((ValueError, TypeError)):
        parse_interval(interval)


def test_mixed_and_overlapping_intervals_refuse_the_case(tmp_path):
    from worldolympiad.importers.damo import import_case
    from worldolympiad.types import CaseError

    d = tmp_path / "general" / "c"
    d.mkdir(parents=True)
    write_video(d / "ref_c.mp4", wo_testlib.frames_for("c", 20, (16, 24)), 2)
    (d / "prompt.json").write_text('[{"interval": "[00:00, 00:05)", "caption": "a"}, {"caption": "b"}]')
    with pytest.raises(CaseError, match=r"chunk\(s\) \[1\] have no interval"):
        import_case(d, "realworld")
    (d / "prompt.json").write_text('[{"interval": "[00:00, 00:06)", "caption": "a"},'
                                   ' {"interval": "[00:05, 00:10)", "caption": "b"}]')
    with pytest.raises(CaseError, match="inside chunk 0"):
        import_case(d, "realworld")
