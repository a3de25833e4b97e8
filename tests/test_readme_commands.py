"""The README's "Commands" block stays true (issue 58: its `leaderboard add runs/* && ... serve`
failed after `make demo`). Every line names a command whose parser accepts `--help`, and the lines
that read what a run leaves behind (`report`, `leaderboard add runs/*`, `build`) run on a small
stand-in for the demo's `runs/`."""

from __future__ import annotations

import glob
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PROGRAMS = {"evaluate-model": "worldolympiad.cli.evaluate", "worldolympiad": "worldolympiad",
            "inferix": "inferix.cli", "reference-world-lab": "reference_world_lab"}


def _command_lines() -> list[str]:
    text = (REPO / "README.md").read_text()
    block = text.split("## Commands", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    lines = []
    for raw in block.splitlines():
        line = raw.split("  #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        for part in re.split(r"\s*&&\s*", line):
            if part.split()[0] in PROGRAMS:
                lines.append(part)
    return lines


def _run(argv: list[str], cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    prog, rest = argv[0], argv[1:]
    return subprocess.run([sys.executable, "-m", PROGRAMS[prog], *rest], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**__import__("os").environ, "OMP_NUM_THREADS": "1"})


def _words(line: str) -> list[str]:
    """The command and its subcommand words (up to the first option or argument that is not a word)."""
    words = []
    for w in shlex.split(line):
        if w.startswith("-") or "/" in w or "." in w or "<" in w or w.isupper():
            break
        words.append(w)
    return words


@pytest.mark.parametrize("line", _command_lines())
def test_every_readme_command_exists(line, tmp_path):
    words = _words(line)
    if "{" in line:  # `worldolympiad ls {models,tracks,...}`: each choice
        choices = re.search(r"\{([^}]*)\}", line).group(1).split(",")  # type: ignore[union-attr]
        argvs = [words[:2] + [c] for c in choices]
    elif " | " in line:  # `inferix stream | serve | profile | bench`
        first, *others = [p.strip() for p in line.split("|")]
        argvs = [_words(first)] + [[words[0], o] for o in others]
    else:
        argvs = [words]
    for argv in argvs:
        out = _run([*argv, "--help"], tmp_path, timeout=120)
        assert out.returncode == 0, (argv, out.stderr[-800:])


def test_the_lines_that_read_a_demo_run_work_on_its_runs_folder(tmp_path):
    """A small stand-in for `make demo`'s `runs/` (one run and the `runs/leaderboard` folder the
    default run writes), then the README's `report`, `leaderboard add runs/*` and `build` lines."""
    out = _run(["evaluate-model", "--model", "reference", "--suite", "smoke", "--limit", "2", "--tracks",
                "longvideo", "--out", "runs", "--no-progress", "--no-report"], tmp_path)
    assert out.returncode == 0, out.stderr[-1500:]
    (tmp_path / "runs" / "leaderboard").mkdir(exist_ok=True)  # what the default run leaves beside the runs
    run = next(p for p in (tmp_path / "runs").iterdir() if (p / "results.jsonl").exists())
    lines = [ln for ln in _command_lines() if ln.startswith(("worldolympiad report", "worldolympiad leaderboard"))]
    assert any("leaderboard add runs/*" in ln for ln in lines) and any("report runs/<run>" in ln for ln in lines)
    for line in lines:
        if line.endswith(" serve"):
            continue  # a server: covered by tests/leaderboard/test_site.py
        argv = []
        for w in shlex.split(line.replace("runs/<run>", f"runs/{run.name}")):
            argv += sorted(glob.glob(str(tmp_path / w))) and [str(Path(p).relative_to(tmp_path))
                                                             for p in sorted(glob.glob(str(tmp_path / w)))] \
                if "*" in w else [w]
        res = _run(argv, tmp_path)
        assert res.returncode == 0, (line, res.stdout[-800:], res.stderr[-800:])
    assert (run / "report.html").exists()
    built = _run(["worldolympiad", "leaderboard", "build"], tmp_path)
    assert built.returncode == 0 and "reference" in built.stdout, built.stdout[-800:]
