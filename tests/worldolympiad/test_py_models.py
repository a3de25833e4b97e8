"""Bring your own model (issue 58 item 3): ``--model py:package.module:Class`` and ``py:FILE.py:Class``
load a user's WorldModel with its ``--option model.*`` keys; every wrong spec exits 2 with one line and
the fix; a ``worldolympiad.plugins`` entry point may name a plain WorldModel subclass."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from worldolympiad.cli.evaluate import main as evaluate_main

GREY = textwrap.dedent('''
    import numpy as np

    from worldolympiad.models.base import WorldModel
    from worldolympiad.types import Video


    class Grey(WorldModel):
        """Every frame one grey level."""

        def __init__(self, level: int = 128, cache_dir=None):
            self.level = level

        def generate(self, case, seed=0):
            h, w = case.resolution
            return Video(frames=np.full((case.num_frames, h, w, 3), self.level, np.uint8), fps=case.fps)


    class Declared(Grey):
        from worldolympiad.options import OptionSpec

        OPTIONS = {"level": OptionSpec("int", 128, "grey level")}


    class Lazy(WorldModel):
        """Overrides neither generate nor rollout."""


    def not_a_class():
        return None
''')


def _run(model: str, suite: Path, out: Path, *extra: str) -> int:
    return evaluate_main(["--model", model, "--suite", str(suite), "--tracks", "counting", "--out", str(out),
                          "--no-progress", "--no-report", *extra])


def _brightness(out: Path) -> list[float]:
    rows = [json.loads(line) for p in out.glob("*/results.jsonl") for line in p.read_text().splitlines()]
    assert rows and all(r["status"] == "ok" for r in rows), rows
    return [next(m["raw"] for m in r["metrics"] if m["name"] == "brightness") for r in rows]


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "usermodels" / "grey_models.py"
    path.parent.mkdir()
    path.write_text(GREY)
    return path


def test_a_class_in_a_file_runs_with_its_options_converted(videos_suite, model_file, tmp_path):
    suite, _ = videos_suite
    out = tmp_path / "runs"
    assert _run(f"py:{model_file}:Grey", suite, out, "--option", "model.level=204") == 0
    assert _brightness(out) == pytest.approx([0.8] * 3, abs=0.01)


def test_a_class_in_a_module_runs_and_the_class_may_be_left_out_when_it_is_the_only_one(videos_suite, tmp_path,
                                                                                         monkeypatch):
    suite, _ = videos_suite
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "only.py").write_text(GREY.split("class Declared")[0])
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _run("py:mypkg.only:Grey", suite, tmp_path / "a", "--option", "model.level=51") == 0
    assert _brightness(tmp_path / "a") == pytest.approx([0.2] * 3, abs=0.01)
    assert _run("py:mypkg.only", suite, tmp_path / "b") == 0
    assert _brightness(tmp_path / "b") == pytest.approx([128 / 255] * 3, abs=0.01)


@pytest.mark.parametrize(("model", "says"), [
    ("py:no_such_pkg_xyz.models:Mine", "no module named 'no_such_pkg_xyz'; install the package"),
    ("py:{dir}/missing.py:Mine", "no file"),
    ("py:{file}:Gray", "has no 'Gray'. Did you mean 'Grey'?"),
    ("py:{file}:not_a_class", "not_a_class is a function, not a WorldModel; subclass"),
    ("py:{file}:Lazy", "Lazy overrides neither generate(case, seed) nor rollout"),
    ("py:{file}", "name the class (it defines Declared, Grey, Lazy)"),
    ("py:", "name the class: --model py:package.module:Class or py:path/to/file.py:Class"),
], ids=["module", "file", "class", "not-a-model", "no-generate", "which-class", "empty"])
def test_a_wrong_py_spec_exits_2_with_one_line_and_the_fix(videos_suite, model_file, tmp_path, capsys, model, says):
    suite, _ = videos_suite
    out = tmp_path / "runs"
    assert _run(model.format(dir=model_file.parent, file=model_file), suite, out) == 2
    err = capsys.readouterr().err
    assert says in err and err.startswith("evaluate-model: error: --model py:"), err
    assert len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_a_file_that_fails_to_import_names_the_error(videos_suite, tmp_path, capsys):
    suite, _ = videos_suite
    bad = tmp_path / "broken.py"
    bad.write_text("import numpy as np\nraise RuntimeError('weights not found at /nowhere')\n")
    assert _run(f"py:{bad}:Mine", suite, tmp_path / "runs") == 2
    err = capsys.readouterr().err
    assert "RuntimeError: weights not found at /nowhere; fix the file" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(("cls", "option", "says"), [
    ("Grey", "model.levle=3", "unknown --option model.levle (did you mean model.level?)"),
    ("Grey", "model.level=bright", "--option model.level: expected int, got 'bright'"),
    ("Declared", "model.colour=3", "unknown --option model.colour"),
])
def test_options_are_checked_against_the_class_before_the_run(videos_suite, model_file, tmp_path, capsys, cls,
                                                               option, says):
    suite, _ = videos_suite
    assert _run(f"py:{model_file}:{cls}", suite, tmp_path / "runs", "--option", option) == 2
    assert says in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_a_class_with_kwargs_takes_any_option(tmp_path):
    from worldolympiad.models.python_class import PY

    path = tmp_path / "kw.py"
    path.write_text(GREY.replace("level: int = 128, cache_dir=None", "level: int = 128, **options") + textwrap.dedent('''
        class Open(Grey):
            def __init__(self, **options):
                self.options = options
    '''))
    assert PY.options_for(f"{path}:Open") is None
    model = PY(f"{path}:Open", cache_dir="c", device="cpu", anything="1")
    assert model.options == {"cache_dir": "c", "device": "cpu", "anything": "1"}  # type: ignore[attr-defined]


def test_a_changed_model_file_changes_the_run(model_file):
    from worldolympiad.models.base import model_fingerprint

    before = model_fingerprint(f"py:{model_file}:Grey")
    model_file.write_text(GREY.replace("level: int = 128", "level: int = 127"))
    assert before and model_fingerprint(f"py:{model_file}:Grey") not in (None, before)


def test_a_plugin_entry_point_may_name_a_plain_world_model(videos_suite, model_file, tmp_path, monkeypatch):
    """``[project.entry-points."worldolympiad.plugins"] "models.grey" = "grey_models:Grey"`` works like py:."""
    import importlib.metadata

    from worldolympiad.registries import MODELS

    suite, _ = videos_suite
    monkeypatch.syspath_prepend(str(model_file.parent))
    ep = importlib.metadata.EntryPoint("models.greyplugin", "grey_models:Grey", "worldolympiad.plugins")
    real = importlib.metadata.entry_points
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda **kw: [ep] if kw.get("group") == "worldolympiad.plugins" else real(**kw))
    monkeypatch.setattr(MODELS, "_plugins_loaded", False)
    try:
        assert _run("greyplugin", suite, tmp_path / "runs", "--option", "model.level=102") == 0
        assert _brightness(tmp_path / "runs") == pytest.approx([0.4] * 3, abs=0.01)
    finally:
        MODELS.unregister("greyplugin")


def test_help_and_the_unknown_kind_error_name_py_and_http(videos_suite, tmp_path, capsys):
    from worldolympiad.cli.evaluate import build_parser

    text = build_parser().format_help()
    assert "--model py:pan.py:PanningModel" in text and "--model http:http://127.0.0.1:8000" in text
    suite, _ = videos_suite
    assert _run("pyy:x.py:Mine", suite, tmp_path / "runs") == 2
    err = capsys.readouterr().err
    assert "Did you mean 'py'?" in err and "py:my_model.py:MyModel, http:URL" in err


def test_a_class_from_a_file_runs_in_worker_processes(videos_suite, model_file, tmp_path):
    """The class is loaded where the model is built, so a class no pickle can name still runs with --workers 2."""
    suite, _ = videos_suite
    out = tmp_path / "runs"
    assert _run(f"py:{model_file}:Grey", suite, out, "--workers", "2", "--option", "model.level=153") == 0
    assert _brightness(out) == pytest.approx([0.6] * 3, abs=0.01)
