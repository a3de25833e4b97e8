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
