"""Validation of case and suite files: every problem, each with its JSON path.

Two layers: the published JSON Schema (``schema/case.schema.json``), then semantic
checks the schema cannot express (chunks inside the video and non-overlapping,
a trajectory with one pose per frame, duplicate case ids...).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Problem:
    """One validation problem: where (a JSON path like ``$.chunks[2].frame_end``) and what."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@cache
def load_schema(name: str = "case") -> dict[str, Any]:
    """The published JSON Schema (``"case"`` or ``"suite"``)."""
    text = resources.files("worldolympiad.schema").joinpath(f"{name}.schema.json").read_text()
    return json.loads(text)  # type: ignore[no-any-return]


def _json_path(parts: Any) -> str:
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def validate_case_dict(d: Any, prefix: str = "$") -> list[Problem]:
    """All problems with one case object (empty list = valid)."""
    import jsonschema

    if not isinstance(d, Mapping):
        return [Problem(prefix, f"a case must be a JSON object, got {type(d).__name__}")]
    validator = jsonschema.Draft202012Validator(load_schema("case"))
    problems = [
        Problem(prefix + _json_path(e.absolute_path)[1:], _schema_message(e))
        for e in sorted(validator.iter_errors(d), key=lambda e: list(map(str, e.absolute_path)))
    ]
    if problems:
        return problems
    return _semantic_case_checks(d, prefix)


def _schema_message(e: Any) -> str:
    if e.validator == "required":
        return f"{e.message}; add it"
    if e.validator == "additionalProperties":
        return f"{e.message}; remove it or move it under 'metadata'"
    if e.validator == "enum":
        return f"{e.instance!r} is not one of {e.validator_value}"
    return str(e.message)


def _semantic_case_checks(d: Mapping[str, Any], prefix: str) -> list[Problem]:
    problems: list[Problem] = []
    n = int(d["num_frames"])
    chunks = d.get("chunks") or []
    prev_end = 0
    for i, c in enumerate(chunks):
        p = f"{prefix}.chunks[{i}]"
        if c["index"] != i:
            problems.append(Problem(f"{p}.index", f"chunks must be numbered 0..{len(chunks) - 1} in order, got {c['index']}"))
        if c["frame_end"] <= c["frame_start"]:
            problems.append(Problem(f"{p}.frame_end", f"frame_end ({c['frame_end']}) must be > frame_start ({c['frame_start']}); frame_end is exclusive"))
        if c["frame_end"] > n:
            problems.append(Problem(f"{p}.frame_end", f"frame_end ({c['frame_end']}) is past num_frames ({n})"))
        if c["frame_start"] < prev_end:
            problems.append(Problem(f"{p}.frame_start", f"chunk overlaps the previous one (starts at {c['frame_start']}, previous ends at {prev_end})"))
        prev_end = max(prev_end, c["frame_end"])
    cam = d.get("camera")
    if cam and cam.get("trajectory"):
        t = len(cam["trajectory"])
        if t != n:
            problems.append(Problem(f"{prefix}.camera.trajectory", f"has {t} poses but num_frames is {n}; give one camera-to-world pose per frame"))
        for j, m in enumerate(cam["trajectory"]):
            if [round(x, 6) for x in m[3]] != [0.0, 0.0, 0.0, 1.0]:
                problems.append(Problem(f"{prefix}.camera.trajectory[{j}][3]", f"last row of a pose must be [0, 0, 0, 1], got {m[3]}"))
                break
    if cam:
        K = cam["intrinsics"]
        if K[0][0] <= 0 or K[1][1] <= 0:
            problems.append(Problem(f"{prefix}.camera.intrinsics", "focal lengths K[0][0], K[1][1] must be positive"))
    return problems


def validate_suite_dict(d: Any, base_dir: Path | None = None) -> list[Problem]:
    """All problems with a suite object, including each inline or referenced case and duplicate ids."""
    import jsonschema

    if not isinstance(d, Mapping):
        return [Problem("$", f"a suite must be a JSON object, got {type(d).__name__}")]
    shallow = dict(load_schema("suite"))
    shallow["properties"] = dict(shallow["properties"], cases={"type": "array", "minItems": 1})
    problems = [
        Problem(_json_path(e.absolute_path), _schema_message(e))
        for e in jsonschema.Draft202012Validator(shallow).iter_errors(d)
    ]
    if problems:
        return problems
    seen: dict[str, int] = {}
    for i, item in enumerate(d["cases"]):
        p = f"$.cases[{i}]"
        if isinstance(item, str):
            f = (base_dir or Path(".")) / item
            try:
                case_d = json.loads(f.read_text())
            except FileNotFoundError:
                problems.append(Problem(p, f"case file {f} not found"))
                continue
            except json.JSONDecodeError as e:
                problems.append(Problem(p, f"case file {f} is not valid JSON ({e.msg}, line {e.lineno})"))
                continue
        else:
            case_d = item
        sub = validate_case_dict(case_d, prefix=p)
        problems.extend(sub)
        cid = case_d.get("id") if isinstance(case_d, Mapping) else None
        if isinstance(cid, str):
            if cid in seen:
                problems.append(Problem(f"{p}.id", f"duplicate case id {cid!r} (also $.cases[{seen[cid]}]); ids must be unique"))
            else:
                seen[cid] = i
    return problems


def validate_file(path: str | Path) -> list[Problem]:
    """Validate a case or suite JSON file (a suite has a ``cases`` key)."""
    path = Path(path)
    if not path.exists():
        return [Problem("$", f"{path} not found")]
    try:
        d = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        return [Problem("$", f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}")]
    if isinstance(d, Mapping) and "cases" in d:
        return validate_suite_dict(d, base_dir=path.parent)
    return validate_case_dict(d)
