"""Declared ``--option`` keys (issue 57, item 3 and acceptance 3)."""

from __future__ import annotations

from typing import Any

import pytest
import wo_testlib

import worldolympiad.cli.evaluate as ev
from worldolympiad.cli.main import main as wo_main
from worldolympiad.options import OptionError, OptionSpec, check_options, declared_options
from worldolympiad.registries import TRACKS
from worldolympiad.track import EvalContext
from worldolympiad.types import Case, Video
from worldolympiad.video import write_video


class _Recording(dict):
    """Options that remember every key a track reads and the default it reads it with."""

    def __init__(self) -> None:
        super().__init__()
        self.read: dict[str, Any] = {}

    def get(self, key: str, default: Any = None) -> Any:
        self.read.setdefault(key, default)
        return super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        self.read.setdefault(key, None)
        return super().__getitem__(key)


@pytest.mark.parametrize("track", ["physics", "geometry", "interaction", "longvideo"])
def test_every_key_a_track_reads_is_declared_with_the_default_it_uses(track, tmp_path):
    case = Case.from_dict(wo_testlib.case_dict("case0", num_frames=20, res=(32, 32)))
    frames = wo_testlib.frames_for("case0", 20, (32, 32))
    options = _Recording()
    ctx = EvalContext(work_dir=tmp_path, options=options,
                      reference_loader=lambda: Video(frames, 8.0, chunks=case.chunks))
    TRACKS.get(track)().evaluate(Video(frames, 8.0, chunks=case.chunks), case, ctx)
    declared = declared_options()
    assert options.read, "the track read no option at all: the recorder missed it"
    for key, default in options.read.items():
        assert key in declared, f"{track} reads --option {key}, which nobody declares"
        want = declared[key].default
        assert (list(default) if isinstance(default, tuple) else default) == want, key


def test_unknown_keys_are_refused_with_the_valid_keys_and_a_did_you_mean():
    with pytest.raises(OptionError) as e:
        check_options({"physics.judge_sample": 3})
    msg = str(e.value)
    assert "unknown --option physics.judge_sample (did you mean physics.judge_samples" in msg
    assert "valid keys: physics.judge_frames, physics.judge_samples, physics.max_frames" in msg
    assert "geometry." not in msg  # the keys of the component the user meant, not all 40
    with pytest.raises(OptionError, match=r"phisics.max_frames \(did you mean physics.max_frames[ ?].*"
                                          r"valid keys: physics.judge_frames, .*physics.segmenter \("):
        check_options({"phisics.max_frames": 3})
    check_options({"physics.judge_samples": 3, "geometry.densify": "auto", "longvideo.signals": "motion,clarity",
                   "video.pix_fmt": "yuv420p", "model.steps": 4}, model="inferix:tiny")


@pytest.mark.parametrize("options, match", [
    ({"physics.max_frames": "many"}, "physics.max_frames: expected int, got 'many'"),
    ({"geometry.sfm_method": "colmap"}, "expected one of auto, pycolmap, opencv"),
    ({"geometry.densify": "maybe"}, "expected bool or one of auto"),
    ({"model.steps": 4}, r"unknown --option model.steps; valid keys: model.\S*$|valid keys:"),
    ({"model.stepz": 4, "model.size": "96x72"}, "did you mean model.steps"),
])
def test_bad_values_and_keys_of_models_are_refused(options, match):
    model = "repeat-first-frame" if "model.steps" in options else "inferix:tiny"
    with pytest.raises(OptionError, match=match):
        check_options(options, model=model)


def test_a_plugin_model_that_declares_nothing_takes_any_model_key():
    from worldolympiad.registries import MODELS

    class Plugin:
        def __init__(self, arg: str | None, **options: Any) -> None:
            self.options = options

    MODELS.register("test-plugin", Plugin, description="a plugin without OPTIONS")
    try:
        check_options({"model.anything": 1}, model="test-plugin")
    finally:
        MODELS.unregister("test-plugin")


def test_option_spec_reads_values_as_the_cli_gives_them():
    assert OptionSpec("int", 1, "").problem("3") is None and OptionSpec("int", 1, "").problem(2.5)
    assert OptionSpec("bool", True, "").problem("off") is None and OptionSpec("bool", True, "").problem("2")
    assert OptionSpec("float", 1.0, "").problem(True)
    assert OptionSpec("list", [], "").problem(["a"]) is None and OptionSpec("list", [], "").problem(3)


def _tiny_suite(tmp_path):
    vids = tmp_path / "videos"
    vids.mkdir()
    write_video(vids / "case0.mp4", wo_testlib.frames_for("case0", 20, (32, 32)), 8)
    return vids, wo_testlib.write_suite(tmp_path / "suite.json", [wo_testlib.case_dict("case0", 20, (32, 32))])


def test_evaluate_model_with_a_bogus_option_exits_2_naming_the_valid_keys(tmp_path, capsys):
    vids, suite = _tiny_suite(tmp_path)
    out = tmp_path / "runs"
    code = ev.main(["--model", f"videos:{vids}", "--suite", str(suite), "--out", str(out), "--no-progress",
                    "--option", "physics.bogus=1"])
    err = capsys.readouterr().err
    assert code == 2
    assert "unknown --option physics.bogus; valid keys" in err  # no physics key is close to "bogus"
    assert "valid keys: physics.judge_frames, physics.judge_samples, physics.max_frames, physics.max_objects, " \
           "physics.segmenter" in err
    assert not out.exists(), "the run must not start"


def test_help_example_options_are_declared():
    import re

    for line in ev.EPILOG.splitlines():
        model = re.search(r"--model (\S+)", line)
        model_spec = model.group(1) if model else "inferix:tiny"
        for key in re.findall(r"--option (\S+)=", line):
            if key.startswith("model.") and not model_spec.startswith("inferix:"):
                continue  # a user's class (py:pan.py) declares its own: test_readme_model.py runs it
            assert key in declared_options("inferix:tiny"), key


def test_ls_options_lists_every_declared_key_with_type_default_and_help(capsys):
    assert wo_main(["ls", "options"]) == 0
    out = capsys.readouterr().out
    for key in declared_options():
        assert key in out
    assert "physics.judge_samples" in out and "int" in out and "judge samples per rule question" in out
    assert "model.steps" in out  # every registered model's keys


def test_a_bool_option_reads_the_text_the_command_line_passes():
    """``--option`` values arrive as text: ``longvideo.aesthetic_parts=false`` must turn the parts off (a bare
    ``bool("false")`` is true), and a YAML default arrives as a bool."""
    from worldolympiad.options import as_bool

    assert [as_bool(v) for v in ("1", "true", " Yes ", "ON")] == [True] * 4
    assert [as_bool(v) for v in ("0", "false", "off", "no", "")] == [False] * 5
    assert as_bool(True) is True and as_bool(False) is False
