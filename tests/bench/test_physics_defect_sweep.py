"""``bench/physics_defect_sweep.py``: which suites it sweeps (the tuning split only, bench tuning suites by
name) and what it hands ``evaluate-model``."""

from __future__ import annotations

import json

import pytest


def test_a_built_in_suite_name_or_a_suite_file_is_passed_as_is(sweep, tmp_path):
    assert sweep.suite_arg("smoke", tmp_path) == "smoke"
    f = tmp_path / "mine.json"
    f.write_text("{}")
    assert sweep.suite_arg(str(f), tmp_path) == str(f)
    assert not (tmp_path / "suites").exists()


def test_a_bench_tuning_suite_is_built_into_a_suite_file_evaluate_model_can_read(sweep, tmp_path):
    """``evaluate-model --suite physics_tune`` fails (it knows only the built-in names): the sweep writes the
    bench suite's cases into OUT/suites/NAME.json and passes that file."""
    from worldolympiad.suites import load_suite

    path = sweep.suite_arg("physics_tune", tmp_path)
    assert path == str(tmp_path / "suites" / "physics_tune.json")
    suite = load_suite(path)
    assert suite.name == "physics_tune"
    assert len(suite.cases) == 17 and all(c.id.startswith("pt-") for c in suite.cases)
    written = json.loads((tmp_path / "suites" / "physics_tune.json").read_text())
    assert sweep.suite_arg("physics_tune", tmp_path) == path  # reused, not rebuilt
    assert json.loads((tmp_path / "suites" / "physics_tune.json").read_text()) == written


def test_an_unknown_suite_exits_naming_the_known_ones(sweep, tmp_path):
    with pytest.raises(SystemExit, match="physics_tune"):
        sweep.suite_arg("no_such_suite", tmp_path)


def test_the_held_out_split_is_refused(sweep, tmp_path, capsys):
    with pytest.raises(SystemExit):
        sweep.main(["--suite", "scenarios/heldout/suite", "--out", str(tmp_path)])
    assert "held-out split is never swept" in capsys.readouterr().err


def test_the_default_defects_are_physics_perturbations_a_rule_is_about(sweep):
    """Every default defect exists in the perturbation library, and an interaction-family one (a hue swap, which
    no physics rule judges) is not among them."""
    from scenarios.perturb import NAMES

    assert set(sweep.PHYSICS_DEFECTS) <= set(NAMES)
    assert all(NAMES[d][0] == "physics" for d in sweep.PHYSICS_DEFECTS), \
        {d: NAMES[d][0] for d in sweep.PHYSICS_DEFECTS if NAMES[d][0] != "physics"}


def test_the_listing_and_its_record_name_what_was_measured(sweep):
    text = sweep.listing(4, [("c1", 0, "vanish", 1.0, 1.0)], [("c2", 1, "appear", 0.9, 0.9)], 1.0)
    assert text.splitlines() == [
        "4 (case, seed, defect) pairs with a verdict on both; the defect scored at least the reference on 1 (and left "
        "the video unchanged on 1):",
        "  MISSED   c1 s0 vanish@1: reference 1.000, defect 1.000",
        "  no-op    c2 s1 appear@1: the same video (0.900)"]
    spec = {"git_hash": "abc123", "track_versions": [["physics", "26"]]}  # the reference run's run_spec.json
    rec = sweep.record_text(text, ["--suite", "physics_tune", "--out", "OUT"], "physics_tune", spec)
    assert rec.startswith("# Physics defect sweep: physics_tune\n")
    assert "python bench/physics_defect_sweep.py --suite physics_tune --out OUT" in rec and text in rec
    assert "physics v" in rec and ("commit `" in rec or "commit unknown" in rec)
