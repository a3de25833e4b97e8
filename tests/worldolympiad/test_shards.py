"""`evaluate-model --shard I/N` + `worldolympiad merge`: shards of one run joined equal the unsharded run
(issue 61 acceptance 2); merge refuses shards of different runs, missing or unfinished shards, overlaps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import wo_testlib

from worldolympiad.cli import main as cli
from worldolympiad.cli.evaluate import main as evaluate_main
from worldolympiad.evaluator import EvalConfig, evaluate, make_run_spec
from worldolympiad.shards import Shard, ShardError, merge_runs


def test_two_shards_merged_equal_the_unsharded_run_on_smoke(tmp_path, capsys):
    # A perturbed model on real smoke cases and tracks, two seeds: shards interleave cases and seeds.
    flags = ["--model", "perturbed:teleport@0.5", "--suite", "smoke", "--tracks", "physics,interaction,longvideo",
             "--seeds", "0,1", "--limit", "6", "--no-progress", "--no-report"]
    assert evaluate_main([*flags, "--out", str(tmp_path / "whole")]) == 0
    sharded = tmp_path / "sharded"
    for i in (0, 1):
        assert evaluate_main([*flags, "--out", str(sharded), "--shard", f"{i}/2"]) == 0
    assert "worldolympiad merge" in capsys.readouterr().out  # the shard run says how to join the shards
    (whole,) = [d for d in (tmp_path / "whole").iterdir() if not d.name.startswith(".")]
    shard_dirs = sorted(sharded.glob("*__shard-*-of-2"))
    assert [d.name for d in shard_dirs] == [f"{whole.name}__shard-{i}-of-2" for i in (0, 1)]
    halves = [wo_testlib.rows_by_key(d) for d in shard_dirs]
    assert halves[0] and halves[1] and not set(halves[0]) & set(halves[1])
    items = [json.loads((d / "shard.json").read_text())["items"] for d in shard_dirs]
    assert items[0][:2] == [["smoke-flythrough-room", 0], ["smoke-gaming-breakout", 0]]  # round robin, seeds inner
    assert items[1][:2] == [["smoke-flythrough-room", 1], ["smoke-gaming-breakout", 1]]

    # a shard alone is not a run the leaderboard takes: it says to merge first
    from leaderboard.store import SHARD_FILE, Store
    from leaderboard.submission import SubmissionError
    from worldolympiad.shards import SHARD_FILE as WRITTEN

    assert SHARD_FILE == WRITTEN
    with Store(tmp_path / "lb.sqlite") as store, pytest.raises(SubmissionError, match="worldolympiad merge"):
        store.add_run(shard_dirs[0])

    assert cli.main(["merge", *map(str, reversed(shard_dirs))]) == 0
    merged = sharded / whole.name
    assert wo_testlib.rows_by_key(merged) == wo_testlib.rows_by_key(whole)
    summary = json.loads((merged / "summary.json").read_text())
    assert summary == json.loads((whole / "summary.json").read_text())
    assert all((merged / r["artifacts"]["video"]).exists() for r in wo_testlib.rows_by_key(merged).values() if "video" in r["artifacts"])
    # The merged directory is the unsharded run's: its command resumes it and computes nothing.
    outcome = evaluate(make_run_spec("perturbed:teleport@0.5", "smoke", ["physics", "interaction", "longvideo"], [0, 1]),
                       EvalConfig(out=sharded, limit=6, progress=False))
    assert outcome.run_dir == merged and outcome.computed == 0 and outcome.skipped == len(wo_testlib.rows_by_key(whole))


def _shard(suite: Path, vids: Path, out: Path, shard: str, seeds=(0,)) -> Path:
    spec = make_run_spec(f"videos:{vids}", str(suite), ["counting"], list(seeds))
    return evaluate(spec, EvalConfig(out=out, progress=False, shard=Shard.parse(shard))).run_dir


def test_merge_refuses_other_runs_missing_unfinished_and_doubled_shards(videos_suite, tmp_path):
    suite, vids = videos_suite
    out = tmp_path / "runs"
    a0, a1 = _shard(suite, vids, out, "0/2"), _shard(suite, vids, out, "1/2")
    other = _shard(suite, vids, out, "1/2", seeds=(0, 1))
    with pytest.raises(ShardError, match=r"seeds differ.*only shards of one evaluate-model command"):
        merge_runs([a0, other])
    with pytest.raises(ShardError, match=r"shard\(s\) 1/2 missing: run `evaluate-model \.\.\. --shard I/2`"):
        merge_runs([a0])
    with pytest.raises(ShardError, match="given twice"):
        merge_runs([a0, a0, a1])
    three = _shard(suite, vids, out, "1/3")
    with pytest.raises(ShardError, match="same --shard I/N split"):
        merge_runs([a0, three])
    lines = (a1 / "results.jsonl").read_text().splitlines()
    (a1 / "results.jsonl").write_text("\n".join(lines[1:]) + "\n")
    with pytest.raises(ShardError, match=r"shard 1/2 at .* is unfinished: 1 row\(s\) missing .*run its evaluate-model"):
        merge_runs([a0, a1])
    (a1 / "results.jsonl").write_text("\n".join(lines) + "\n")
    (a1 / "results.jsonl").write_text((a1 / "results.jsonl").read_text() + (a0 / "results.jsonl").read_text())
    with pytest.raises(ShardError, match="not one of this shard's items"):
        merge_runs([a0, a1])
    (a1 / "results.jsonl").write_text("\n".join(lines) + "\n")
    # each shard counted its own judge requests: the merged run's ledger is their sum
    (a0 / "judge_ledger.json").write_text(json.dumps({"sent": 3, "ok": 3, "usable": 2, "unusable": 1, "budget": 10}))
    (a1 / "judge_ledger.json").write_text(json.dumps({"sent": 2, "ok": 1, "failed": 1, "usable": 1, "budget": 10}))
    merged = merge_runs([a0, a1])
    assert merged.rows == 3 and merged.run_dir.name == a0.name.split("__shard-")[0]
    judge = merged.summary["judge"]
    assert (judge["sent"], judge["ok"], judge["failed"], judge["usable"], judge["unusable"]) == (5, 4, 1, 3, 1)
    with pytest.raises(ShardError, match="already exists; pass --replace"):
        merge_runs([a0, a1])
    assert merge_runs([a0, a1], replace=True).rows == 3
    with pytest.raises(ShardError, match="no shard.json, so it is not a shard"):
        merge_runs([merged.run_dir])


@pytest.mark.parametrize("bad", ["2/2", "1", "a/b", "-1/3", "0/0"])
def test_a_bad_shard_flag_exits_2_naming_the_form(videos_suite, tmp_path, capsys, bad):
    suite, vids = videos_suite
    rc = evaluate_main(["--model", f"videos:{vids}", "--suite", str(suite), "--tracks", "counting",
                        "--out", str(tmp_path / "o"), f"--shard={bad}", "--no-progress"])
    assert rc == 2 and "--shard" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
