"""`bench_reference_world.py` keeps what it scored: the results are handed out after every case
(``--json`` is rewritten each time), and ``--resume`` scores only the cases an earlier run did not."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from .conftest import load_bench

AGENT = (40, 220, 240)
SPEC = "inferix:fake"


@pytest.fixture(scope="module")
def bench():
    return load_bench("bench_reference_world")


def _case(i: int, actions: list[str]):
    from worldolympiad.types import Case, even_chunks

    n = 8 * len(actions)
    space = {"kind": "image_translation", "agent_color": list(AGENT),
             "actions": {"RIGHT": {"translation": [1, 0]}, "LEFT": {"translation": [-1, 0]},
                         "NOOP": {"translation": [0, 0]}}}
    return Case(id=f"synthetic-{i}", scenario="gaming", fps=15.0, num_frames=n, resolution=(48, 48),
                chunks=even_chunks(n, len(actions), actions=actions), reference=f"/refs/synthetic-{i}.mp4",
                metadata={"generator": "gaming.atari_breakout", "game": "breakout", "action_space": space})


def _video(xs: list[float]) -> np.ndarray:
    frames = np.zeros((len(xs), 48, 48, 3), np.uint8)
    for t, x in enumerate(xs):
        frames[t, 20:23, int(x) : int(x) + 3] = AGENT
    return frames


RIGHT = [10.0 + t for t in range(8)]
LEFT = [30.0 - t for t in range(8)]
STILL = [20.0] * 8


@pytest.fixture()
def world(bench, monkeypatch):
    """Three cases whose references follow their actions, a fake model that follows all but the
    last chunk of case 2, and a count of the videos it generated."""
    import worldolympiad.video.io as vio

    cases = [_case(0, ["RIGHT", "LEFT"]), _case(1, ["NOOP", "RIGHT"]), _case(2, ["LEFT", "RIGHT"])]
    refs = {"synthetic-0": _video(RIGHT + LEFT), "synthetic-1": _video(STILL + RIGHT),
            "synthetic-2": _video(LEFT + RIGHT)}
    generated = {**refs, "synthetic-2": _video(LEFT + LEFT)}
    calls: list[str] = []

    class Fake:
        def generate(self, case, seed=0):
            calls.append(case.id)
            return SimpleNamespace(frames=generated[case.id])

        def close(self):
            pass

    monkeypatch.setattr(vio, "read_video", lambda path: SimpleNamespace(frames=refs[Path(path).stem]))
    monkeypatch.setattr(bench, "_model", lambda spec, **options: Fake())
    return SimpleNamespace(cases=cases, calls=calls)


def _without_seconds(result: dict) -> dict:
    return {k: v for k, v in result.items() if k != "seconds"}


def test_results_are_handed_out_after_every_case_so_a_stopped_run_keeps_them(bench, world):
    seen: list[dict] = []
    out = bench.direction_accuracy([SPEC], world.cases, on_case=lambda spec, summary: seen.append(summary))
    assert [sorted(s["per_case"]) for s in seen] == [["synthetic-0"], ["synthetic-0", "synthetic-1"],
                                                     ["synthetic-0", "synthetic-1", "synthetic-2"]]
    assert out[SPEC]["per_case"] == {"synthetic-0": [True, True], "synthetic-1": [True, True],
                                     "synthetic-2": [True, False]}
    assert out[SPEC]["why"]["breakout"]["wrong_way"] == 1
    assert out[SPEC]["direction_accuracy"] == pytest.approx(5 / 6)


def test_resume_scores_only_the_missing_cases_and_gives_the_same_results(bench, world):
    full = bench.direction_accuracy([SPEC], world.cases)[SPEC]
    assert world.calls == ["synthetic-0", "synthetic-1", "synthetic-2"]
    world.calls.clear()
    # a run stopped after two cases: its JSON holds their rows
    done = {SPEC: {cid: full["rows"][cid] for cid in ("synthetic-0", "synthetic-1")}}
    resumed = bench.direction_accuracy([SPEC], world.cases, done=done)[SPEC]
    assert world.calls == ["synthetic-2"]
    assert _without_seconds(resumed) == _without_seconds(full)
    # the rows survive a JSON round trip (what --resume actually reads)
    again = bench.direction_accuracy([SPEC], world.cases, done=json.loads(json.dumps({SPEC: full["rows"]})))[SPEC]
    assert world.calls == ["synthetic-2"] and _without_seconds(again) == _without_seconds(full)


def test_resume_refuses_a_json_written_with_other_options_and_drops_cases_not_in_this_run(bench, world, tmp_path):
    full = bench.direction_accuracy([SPEC], world.cases)[SPEC]
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"roles": {"trained": SPEC}, "options": {"action_guidance": "2"},
                                "direction": {SPEC: full}}))
    this = {"roles": {"trained": SPEC}, "options": {"action_guidance": "2"}}
    assert list(bench.resumable_rows(path, this, world.cases[:2])[SPEC]) == ["synthetic-0", "synthetic-1"]
    with pytest.raises(SystemExit, match="options"):
        bench.resumable_rows(path, {**this, "options": {"action_guidance": "2.5"}}, world.cases)
    assert bench.resumable_rows(tmp_path / "missing.json", this, world.cases) == {}
    with pytest.raises(SystemExit, match="give --json"):
        bench.resumable_rows(None, this, world.cases)


def test_paired_files_compare_two_stopped_runs_on_the_cases_both_scored(bench, world, capsys):
    # "old": a run that saw all three cases; "new": a run stopped after two, whose case 1 got worse
    full = bench.direction_accuracy([SPEC], world.cases)[SPEC]
    stopped = bench.direction_accuracy([SPEC], world.cases[:2])[SPEC]
    stopped["rows"]["synthetic-1"]["ok"] = [True, False]
    stopped["per_case"]["synthetic-1"] = [True, False]
    old = json.loads(json.dumps({"roles": {"trained": SPEC}, "direction": {SPEC: full}}))
    new = json.loads(json.dumps({"roles": {"trained": SPEC}, "direction": {SPEC: stopped}}))
    change = bench.paired_files(old, new)
    assert list(change) == ["breakout", "all"]  # the game comes from the rows
    assert (change["all"]["chunks"], change["all"]["gained"], change["all"]["lost"]) == (4, 0, 1)
    bench.print_paired(change, "old.json")
    assert "+0 / -1 of 4" in capsys.readouterr().out
