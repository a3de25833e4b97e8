"""`evaluate-model` without --model also scores the leaderboard baselines and prints a leaderboard.

Kept cheap: one 20-frame 32x32 case with a reference video, the ``longvideo`` track only, and
fast model specs patched in for the default model and the baselines (the real defaults are
Inferix models, too slow for a unit test).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest
import wo_testlib

import worldolympiad.cli.evaluate as ev
import worldolympiad.evaluator as evaluator
import worldolympiad.models.baselines as baselines
from worldolympiad.video import write_video

TELEPORT = "perturbed:teleport@1"


@pytest.fixture
def setup(tmp_path, monkeypatch):
    """A one-case suite; DEFAULT_MODEL = videos:DIR; baselines = three cheap specs + the main model itself."""
    vids = tmp_path / "videos"
    vids.mkdir()
    case = wo_testlib.case_dict("case0", num_frames=20, res=(32, 32))
    write_video(vids / "case0.mp4", wo_testlib.frames_for("case0", 20, (32, 32)), 8)
    case["reference"] = str(vids / "case0.mp4")
    suite = wo_testlib.write_suite(tmp_path / "suite.json", [case])
    main_model = f"videos:{vids}"
    monkeypatch.setattr(ev, "DEFAULT_MODEL", main_model)
    monkeypatch.setattr(baselines, "LEADERBOARD_BASELINES", {
        "repeat-first-frame": "the first frame held still",
        TELEPORT: "a known-bad control",
        main_model: "the main model: must not run twice",
        "reference": "the ground truth",
    })
    out = tmp_path / "runs"
    flags = ["--suite", str(suite), "--tracks", "longvideo", "--limit", "1", "--out", str(out), "--no-progress",
             "--no-report"]
    return main_model, out, flags


def _run_models(out: Path) -> list[str]:
    """The model of every run directory under ``out``."""
    return sorted(json.loads(p.read_text())["model"] for p in out.glob("*/run_spec.json"))


def _leaderboard(out: Path) -> pd.DataFrame:
    return pd.read_csv(out / "leaderboard" / "leaderboard.csv")


def test_parser_defaults_leave_baselines_to_whether_model_was_given():
    p = ev.build_parser()
    a = p.parse_args([])
    assert (a.model, a.model_given, a.baselines) == (ev.DEFAULT_MODEL, False, None)
    a = p.parse_args(["--model", "reference"])
    assert (a.model, a.model_given, a.baselines) == ("reference", True, None)
    assert p.parse_args(["--no-baselines"]).baselines is False
    assert p.parse_args(["--model", "reference", "--baselines"]).baselines is True
    assert "--baselines" in p.format_help() and "--baselines" in ev.EPILOG


def test_default_run_scores_every_baseline_and_shows_one_leaderboard_row_per_model(setup, capsys):
    main_model, out, flags = setup
    assert ev.main(flags) == 0
    text = capsys.readouterr().out
    expected = sorted([main_model, "repeat-first-frame", TELEPORT, "reference"])
    # one run directory per model (the main model is not run a second time as a baseline), same flags
    assert _run_models(out) == expected
    for p in out.glob("*/run_spec.json"):
        spec = json.loads(p.read_text())
        assert (spec["tracks"], spec["seeds"], spec["judge"]) == (["longvideo"], [0], "none")
    assert "=== baseline 1/3: repeat-first-frame" in text and "baseline 4/" not in text
    # the leaderboard: one row per model, named by its spec, overall and per-track scores
    lb = _leaderboard(out)
    assert sorted(lb["Model"]) == expected
    assert lb["All"].notna().all() and lb["LV Drift"].notna().all()
    assert list(lb["Rank"]) == [1, 2, 3, 4]
    page = (out / "leaderboard" / "leaderboard.html").read_text()
    body = page[page.index("<tbody>"):page.index("</tbody>")]
    assert body.count("<tr>") == 4 and all(f"<td>{m}</td>" in body for m in expected)  # one row per model
    assert (out / "leaderboard" / "leaderboard.sqlite").is_file()
    printed = text[text.index("leaderboard (4 models"):]
    for model in expected:
        assert model in printed
    assert "LV Drift" in printed and "All" in printed


def test_leaderboard_shows_only_this_invocations_runs_and_rerun_resumes(setup, capsys):
    _, out, flags = setup
    assert ev.main(flags) == 0
    assert ev.main(flags + ["--tracks", "interaction"]) == 0  # 4 more runs in the same store
    lb = _leaderboard(out)
    # the second invocation's runs only: interaction scores, none of the first invocation's longvideo ones
    assert len(lb) == 4 and lb["Interact."].notna().all()
    assert "LV Drift" not in lb or lb["LV Drift"].isna().all()
    assert (lb["Tracks"] == 1).all()
    capsys.readouterr()
    assert ev.main(flags) == 0  # a rerun reuses every row of every run
    text = capsys.readouterr().out
    assert text.count("(0 rows computed, 1 reused)") == 4
    assert len(_leaderboard(out)) == 4


@pytest.mark.parametrize("extra", [["--no-baselines"], ["--model", "reference"]], ids=["no-baselines", "model"])
def test_no_baselines_or_an_explicit_model_runs_only_the_main_model(setup, extra, capsys):
    main_model, out, flags = setup
    assert ev.main(flags + extra) == 0
    assert _run_models(out) == ["reference" if "--model" in extra else main_model]
    assert not (out / "leaderboard").exists()
    assert "=== baseline" not in capsys.readouterr().out


def test_explicit_model_with_baselines_flag_adds_the_other_baselines(setup):
    main_model, out, flags = setup
    assert ev.main(flags + ["--model", "reference", "--baselines"]) == 0
    # reference is both the main model and a baseline: one run; the main model of the default run is a baseline here
    assert _run_models(out) == sorted(["reference", "repeat-first-frame", TELEPORT, main_model])
    assert sorted(_leaderboard(out)["Model"]) == _run_models(out)


def test_a_baseline_that_raises_is_reported_and_the_others_still_run(setup, monkeypatch, capsys):
    main_model, out, flags = setup
    real = evaluator.evaluate

    def evaluate(spec, config=None):
        if spec.model == TELEPORT:
            raise RuntimeError("simulated crash of one baseline")
        return real(spec, config)

    monkeypatch.setattr(evaluator, "evaluate", evaluate)
    assert ev.main(flags) == 0
    cap = capsys.readouterr()
    assert "perturbed:teleport@1: RuntimeError: simulated crash of one baseline" in cap.err
    assert "baselines that could not run (1): perturbed:teleport@1" in cap.out
    # the baseline after the failing one (reference) ran, and the leaderboard has the three that did
    survivors = sorted([main_model, "repeat-first-frame", "reference"])
    assert _run_models(out) == survivors
    assert sorted(_leaderboard(out)["Model"]) == survivors
    # --strict turns a baseline that could not run into exit 1 (the other runs resume)
    assert ev.main(flags + ["--strict"]) == 1


def test_strict_exit_code_counts_failed_rows_of_baselines(setup, monkeypatch):
    _, out, flags = setup
    monkeypatch.setitem(baselines.LEADERBOARD_BASELINES, "nosuchmodel:x", "a spec that cannot be built")
    assert ev.main(flags) == 0  # failed rows are listed, the run completes
    assert ev.main(flags + ["--strict"]) == 1
    assert "nosuchmodel:x" in set(_leaderboard(out)["Model"])


def test_without_the_leaderboard_package_one_line_says_so_and_exit_is_zero(setup, monkeypatch, capsys):
    from worldolympiad.registries import REPORTING

    _, out, flags = setup
    for mod in ("leaderboard", "leaderboard.store", "leaderboard.aggregate", "leaderboard.schema",
                "leaderboard.report"):
        monkeypatch.setitem(sys.modules, mod, None)  # import raises ImportError
    # The registry keeps what an earlier test resolved; put its lazy targets back so the
    # lookup imports (and fails) the way it does in a fresh process without the package.
    for name in REPORTING.names():
        monkeypatch.setattr(REPORTING._entry(name), "target", REPORTING.target(name))
    assert ev.main(flags) == 0
    text = capsys.readouterr().out
    assert len(_run_models(out)) == 4
    lines = [ln for ln in text.splitlines() if ln.startswith("leaderboard:")]
    assert len(lines) == 1 and "leaderboard package is not available" in lines[0]
    assert not (out / "leaderboard" / "leaderboard.html").exists()
