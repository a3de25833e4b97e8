"""`bench_smoke_acceptance.py`: issue 9's acceptance 3 judged per track and seed from the default run's
four summaries (model above the better weak baseline and below the simulator at every seed)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .conftest import load_bench


@pytest.fixture(scope="module")
def bench():
    return load_bench("bench_smoke_acceptance")


def _write(out: Path, model: str, per_seed: dict[str, dict[int, float]], suite: str = "smoke", tag: str = "") -> Path:
    run = out / f"{model.replace(':', '-')}{tag}__{suite}"
    run.mkdir(parents=True)
    seeds = sorted({s for v in per_seed.values() for s in v})
    tracks = {t: {"per_seed": {str(s): x for s, x in v.items()}} for t, v in per_seed.items()}
    (run / "summary.json").write_text(json.dumps({"model": model, "suite": suite, "seeds": seeds, "tracks": tracks}))
    return run


def _four(out: Path, model_physics: dict[int, float]) -> None:
    _write(out, "inferix:reference-world", {"physics": model_physics, "interaction": {0: 0.67, 1: 0.70}})
    _write(out, "repeat-first-frame", {"physics": {0: 0.179, 1: 0.179}, "interaction": {0: 0.59, 1: 0.59}})
    _write(out, "inferix:reference-world-random", {"physics": {0: 0.02, 1: 0.03}, "interaction": {0: 0.56, 1: 0.75}})
    _write(out, "reference", {"physics": {0: 1.0, 1: 1.0}, "interaction": {0: 0.99, 1: 0.99}})


def test_a_track_passes_only_when_the_model_beats_the_better_weak_baseline_at_every_seed(
        bench, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _four(tmp_path, {0: 0.194, 1: 0.189})
    res = bench.judge(bench.read_rows(tmp_path))
    assert res["tracks"]["physics"]["ok"]
    assert res["tracks"]["physics"]["min_margin"] == pytest.approx(0.189 - 0.179)
    # at seed 1 the random twin (0.75) beats repeat-first-frame (0.59) and the model (0.70) on interaction
    inter = res["tracks"]["interaction"]["per_seed"]
    assert [r["weak_model"] for r in inter] == ["repeat-first-frame", "inferix:reference-world-random"]
    assert [r["ok"] for r in inter] == [True, False] and not res["ok"]
    assert bench.main(["--out", str(tmp_path)]) == 1
    assert "BELOW a weak baseline" in capsys.readouterr().out


def test_every_seed_counts_and_a_missing_row_or_seed_is_refused_by_name(
        bench, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _four(tmp_path, {0: 0.194, 1: 0.173})  # above at seed 0, below at seed 1 (session 41's physics)
    res = bench.judge(bench.read_rows(tmp_path), seeds=[0])
    assert res["tracks"]["physics"]["ok"]
    assert not bench.judge(bench.read_rows(tmp_path))["tracks"]["physics"]["ok"]
    with pytest.raises(KeyError, match="no physics score at seed 2"):
        bench.judge(bench.read_rows(tmp_path), seeds=[0, 2])
    other = tmp_path / "other"
    _write(other, "inferix:reference-world", {"physics": {0: 0.2}})
    _write(other, "repeat-first-frame", {"physics": {0: 0.1}}, suite="standard")  # another suite's run
    assert bench.main(["--out", str(other)]) == 2
    assert "no smoke run of repeat-first-frame, inferix:reference-world-random, reference" in capsys.readouterr().err


def test_of_two_runs_of_one_model_the_one_with_more_seeds_is_read(bench, tmp_path: Path) -> None:
    _four(tmp_path, {0: 0.194, 1: 0.189})
    one = _write(tmp_path, "inferix:reference-world", {"physics": {0: 0.1}, "interaction": {0: 0.1}}, tag="-one")
    os.utime(one / "summary.json", (4e9, 4e9))  # the newest file, but of one seed only
    rows = bench.read_rows(tmp_path)
    assert rows["inferix:reference-world"]["tracks"]["physics"]["per_seed"] == {"0": 0.194, "1": 0.189}
