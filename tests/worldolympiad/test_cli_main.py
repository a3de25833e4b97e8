"""`worldolympiad` CLI: ls without torch, metrics from track.yaml without importing track code,
validate, score, dispatchers, --help examples."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
import wo_testlib

from worldolympiad.cli import main as cli
from worldolympiad.video import write_video


def test_ls_never_imports_torch():
    code = textwrap.dedent("""
        import sys
        from worldolympiad.cli.main import main
        for kind in ["models", "tracks", "metrics", "suites", "rules", "judges"]:
            assert main(["ls", kind]) == 0, kind
            assert "torch" not in sys.modules, f"ls {kind} imported torch"
        print("NO_TORCH_OK")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=wo_testlib.subprocess_env())
    assert r.returncode == 0, r.stderr[-2000:]
    assert "NO_TORCH_OK" in r.stdout and "videos" in r.stdout and "physics" in r.stdout


@pytest.fixture
def yaml_track(tmp_path, monkeypatch):
    """A lazily registered track whose package declares track.yaml and whose class module must not load."""
    pkg = tmp_path / "wo_yaml_track"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "track.py").write_text("raise RuntimeError('track code must not be imported by ls')\n")
    (pkg / "track.yaml").write_text(textwrap.dedent("""
        name: yamltrack
        version: "7"
        description: a declared test track
        metrics:
          - {name: sharpness, description: how sharp, higher_is_better: true, bounds: [0, 10], version: "2"}
          - {name: drift, description: how much it drifts, higher_is_better: false, bounds: [0, 1], version: "1"}
        score: {weights: {sharpness: 0.25}}
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    from worldolympiad.registries import TRACKS

    TRACKS.register("yamltrack", "wo_yaml_track.track:YamlTrack", override=True, description="yaml test")
    yield
    TRACKS.unregister("yamltrack")
    sys.modules.pop("wo_yaml_track", None)


def test_ls_metrics_reads_track_yaml_and_flags_undeclared_tracks(yaml_track, capsys):
    assert cli.main(["ls", "metrics"]) == 0
    out = capsys.readouterr().out
    assert "yamltrack v7" in out
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("sharpness"))
    assert "higher better" in line and "[0, 10]" in line and "w=0.25" in line and "v2" in line
    assert "drift" in out and "lower better" in out
    assert "counting: (metrics not declared)" in out
    assert "wo_yaml_track.track" not in sys.modules
    assert cli.main(["ls", "tracks"]) == 0
    tracks_out = capsys.readouterr().out
    assert any("yamltrack" in ln and "v7" in ln for ln in tracks_out.splitlines())


def test_ls_rules_lists_the_taxonomy(capsys):
    assert cli.main(["ls", "rules"]) == 0
    out = capsys.readouterr().out
    for rule in ("gravity", "melting", "color_mixing", "combustibility"):
        assert rule in out


def test_ls_suites_counts_cases(capsys):
    from worldolympiad.registries import SUITES

    SUITES.register("wo_test_suite", lambda: [wo_testlib_case(i) for i in range(3)], override=True,
                    description="three test cases")
    try:
        assert cli.main(["ls", "suites"]) == 0
        line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("wo_test_suite"))
        assert "3 cases" in line and "three test cases" in line
    finally:
        SUITES.unregister("wo_test_suite")


def wo_testlib_case(i):
    from worldolympiad.types import Case

    return Case.from_dict(wo_testlib.case_dict(f"s{i}"))


def test_validate_reports_every_problem_with_json_paths(tmp_path, capsys):
    good = wo_testlib.write_suite(tmp_path / "good.json", [wo_testlib.case_dict("a"), wo_testlib.case_dict("b")])
    assert cli.main(["validate", str(good)]) == 0
    assert "OK (2 cases)" in capsys.readouterr().out
    bad_case = wo_testlib.case_dict("b", num_frames=6)
    bad_case["chunks"][1]["frame_end"] = 9
    bad = wo_testlib.write_suite(tmp_path / "bad.json", [
        {**wo_testlib.case_dict("a"), "fps": -1}, bad_case, wo_testlib.case_dict("a")])
    assert cli.main(["validate", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "$.cases[0].fps" in out
    assert "$.cases[1].chunks[1].frame_end" in out and "past num_frames" in out
    assert "$.cases[2].id" in out and "duplicate" in out
    (tmp_path / "broken.json").write_text("{not json")
    assert cli.main(["validate", str(tmp_path / "broken.json")]) == 1
    assert cli.main(["validate", str(tmp_path / "nope.json")]) == 2


def test_score_prints_table_and_json(tmp_path, capsys):
    case = tmp_path / "case.json"
    case.write_text(json.dumps(wo_testlib.case_dict("sc", metadata={})))
    write_video(tmp_path / "gen.mp4", wo_testlib.frames_for("sc"), 8)
    write_video(tmp_path / "ref.mp4", wo_testlib.frames_for("sc"), 8)
    rc = cli.main(["score", str(tmp_path / "gen.mp4"), "--case", str(case), "--reference", str(tmp_path / "ref.mp4"),
                   "--tracks", "counting,crashing,nosuchtrack", "--work-dir", str(tmp_path / "w")])
    assert rc == 0
    out = capsys.readouterr().out
    table, js = out.split("\n[", 1)
    rows = {r["track"]: r for r in json.loads("[" + js)}
    assert rows["counting"]["status"] == "ok"
    ref_diff = next(m for m in rows["counting"]["metrics"] if m["name"] == "ref_diff")
    assert ref_diff["normalized"] == 1.0  # the reference given on the command line was used
    assert rows["crashing"]["status"] == "failed" and "boom" in rows["crashing"]["errors"][0]
    assert rows["nosuchtrack"]["status"] == "failed" and "unknown track" in rows["nosuchtrack"]["errors"][0]
    assert "counting" in table and "ok" in table
    # --json - : only the JSON, so the output pipes into jq; --json FILE: the table here, the JSON there
    args = ["score", str(tmp_path / "gen.mp4"), "--case", str(case), "--tracks", "counting", "--work-dir",
            str(tmp_path / "w")]
    assert cli.main([*args, "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["track"] == "counting"
    assert cli.main([*args, "--json", str(tmp_path / "rows.json")]) == 0
    out = capsys.readouterr().out
    assert "counting" in out and "[" not in out
    assert json.loads((tmp_path / "rows.json").read_text())[0]["status"] == "ok"


def test_dispatchers_forward_argv_and_name_the_missing_provider(monkeypatch, capsys):
    seen = {}

    def fake(argv):
        seen["argv"] = argv
        return 3

    monkeypatch.setattr(wo_testlib, "fake_main", fake, raising=False)
    monkeypatch.setitem(cli.DISPATCH, "lvbench", ("wo_testlib:fake_main", "tracks"))
    assert cli.main(["lvbench", "--slice", "tiny"]) == 3 and seen["argv"] == ["--slice", "tiny"]
    monkeypatch.setitem(cli.DISPATCH, "scenarios", ("wo_testlib:fake_main", "scenarios"))
    assert cli.main(["scenarios", "render", "smoke", "out"]) == 3 and seen["argv"] == ["smoke", "out"]
    monkeypatch.setitem(cli.DISPATCH, "report", ("no_such_pkg.report:main", "leaderboard"))
    assert cli.main(["report", "runs/x"]) == 2
    err = capsys.readouterr().err
    assert "provided by leaderboard" in err and "no_such_pkg.report:main" in err


@pytest.mark.parametrize("entry", ["worldolympiad", "worldolympiad.cli.main", "worldolympiad.cli.evaluate"])
def test_help_has_runnable_examples(entry):
    r = subprocess.run([sys.executable, "-m", entry, "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "examples:" in r.stdout
    assert "torch" not in r.stderr


def test_usage_error_exits_2():
    r = subprocess.run([sys.executable, "-m", "worldolympiad.cli.main", "ls", "nonsense"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and "invalid choice" in r.stderr
