"""The README's "Bring your own model" example is complete: its code block, saved as the README says,
runs through ``evaluate-model --model py:pan.py:PanningModel`` to a scored row (issue 58 item 3)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from worldolympiad.cli.evaluate import main as evaluate_main

README = Path(__file__).resolve().parents[2] / "README.md"


def _section(title: str) -> str:
    text = README.read_text()
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start: end if end > 0 else None]


def test_the_readme_example_model_scores_a_case(tmp_path, monkeypatch):
    section = _section("Bring your own model")
    code = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(code) == 1, "one complete python example"
    assert len(code[0].splitlines()) <= 25, "the example stays short"
    saved_as, cls = re.search(r"--model py:(\w+\.py):(\w+)", section).groups()  # type: ignore[union-attr]
    (tmp_path / saved_as).write_text(code[0])
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "runs"
    assert evaluate_main(["--model", f"py:{saved_as}:{cls}", "--suite", "smoke", "--limit", "1",
                          "--tracks", "interaction", "--option", "model.speed=2", "--out", str(out),
                          "--no-progress", "--no-report"]) == 0
    rows = [json.loads(line) for p in out.glob("*/results.jsonl") for line in p.read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["status"] == "ok" and rows[0]["score"] is not None, rows
