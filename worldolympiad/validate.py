"""Validation of case and suite files: every problem, each with its JSON path.

Two layers, reported together: the published JSON Schema (``schema/case.schema.json``) and
semantic checks the schema cannot express (chunks inside the video and non-overlapping, a
trajectory with one pose per frame, duplicate case ids...). A semantic check whose inputs
the schema already rejects is skipped rather than reported twice.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, TypeGuard


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
    return problems + _semantic_case_checks(d, prefix)


def _schema_message(e: Any) -> str:
    if e.validator == "required":
        return f"{e.message}; add it"
    if e.validator == "additionalProperties":
        return _extra_keys_message(e)
    if e.validator == "enum":
        return f"{e.instance!r} is not one of {e.validator_value}"
    return str(e.message)


def _extra_keys_message(e: Any) -> str:
    """Unknown keys: name them, suggest the key probably meant, and say where free-form data may go."""
    import difflib

    allowed = list((e.schema or {}).get("properties", {}))
    extra = sorted(k for k in (e.instance if isinstance(e.instance, Mapping) else {}) if k not in allowed)
    parts = []
    for k in extra:
        close = difflib.get_close_matches(k, allowed, n=1, cutoff=0.6)
        parts.append(f"{k!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    where = ("remove it or move it under 'metadata'" if "metadata" in allowed else
             f"remove it (this object takes only {', '.join(allowed)}; free-form data belongs in a case's "
             "top-level 'metadata')")
    return f"unknown key(s) {', '.join(parts)}; {where}"


def _is_int(x: Any) -> TypeGuard[int]:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_matrix(m: Any, rows: int, cols: int) -> TypeGuard[list[list[float]]]:
    return (isinstance(m, list) and len(m) == rows
            and all(isinstance(r, list) and len(r) == cols and all(isinstance(x, (int, float)) for x in r) for r in m))


def _semantic_case_checks(d: Mapping[str, Any], prefix: str) -> list[Problem]:
    """Checks the schema cannot express; each runs only on inputs of the right shape (the schema
    reports the rest), so schema and semantic problems come back together."""
    problems: list[Problem] = []
    num_frames = d.get("num_frames")
    n = num_frames if _is_int(num_frames) else None
    raw_chunks = d.get("chunks")
    chunks: list[Any] = raw_chunks if isinstance(raw_chunks, list) else []
    prev_end = 0
    for i, c in enumerate(chunks):
        p = f"{prefix}.chunks[{i}]"
        if not isinstance(c, Mapping):
            continue
        if _is_int(c.get("index")) and c["index"] != i:
            problems.append(Problem(f"{p}.index", f"chunks must be numbered 0..{len(chunks) - 1} in order, got {c['index']}"))
        start, end = c.get("frame_start"), c.get("frame_end")
        if not (_is_int(start) and _is_int(end)):
            continue
        if end <= start:
            problems.append(Problem(f"{p}.frame_end", f"frame_end ({end}) must be > frame_start ({start}); frame_end is exclusive"))
        if n is not None and end > n:
            problems.append(Problem(f"{p}.frame_end", f"frame_end ({end}) is past num_frames ({n}); frame_end is "
                                                      "exclusive, so the last chunk ends at num_frames"))
        if start < prev_end:
            problems.append(Problem(f"{p}.frame_start", f"chunk overlaps the previous one (starts at {start}, previous ends at {prev_end})"))
        prev_end = max(prev_end, end)
    cam = d.get("camera") if isinstance(d.get("camera"), Mapping) else None
    traj = cam.get("trajectory") if cam else None
    if isinstance(traj, list) and traj:
        if n is not None and len(traj) != n:
            problems.append(Problem(f"{prefix}.camera.trajectory", f"has {len(traj)} poses but num_frames is {n}; give one camera-to-world pose per frame"))
        for j, m in enumerate(traj):
            if _is_matrix(m, 4, 4) and [round(x, 6) for x in m[3]] != [0.0, 0.0, 0.0, 1.0]:
                problems.append(Problem(f"{prefix}.camera.trajectory[{j}][3]", f"last row of a pose must be [0, 0, 0, 1], got {m[3]}"))
                break
    K = cam.get("intrinsics") if cam else None
    if _is_matrix(K, 3, 3) and (K[0][0] <= 0 or K[1][1] <= 0):
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
    if not isinstance(d.get("cases"), list):
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


#: what a case or suite file looks like, for parse errors (docs/formats.md has the full story)
EXPECTED_SHAPE = ('a suite file is one JSON object {"name": "mine", "cases": [{case}, {case}, "cases/other.json"]}, '
                  'a case file one case object {"id": ..., "scenario": ..., "fps": ..., ...}; see docs/formats.md')


def json_error_hint(e: json.JSONDecodeError, path: str | Path = "") -> str:
    """What to do about a parse error: JSON lines (one case per line) get the expected shape."""
    lines = e.doc.strip().splitlines() if isinstance(e.doc, str) else []
    looks_jsonl = (e.msg == "Extra data" and len(lines) > 1 and lines[0].lstrip().startswith("{")) \
        or str(path).endswith(".jsonl")
    if looks_jsonl:
        return ("this looks like JSON lines (one object per line), which is not read; put the cases in one suite "
                f"object instead: {EXPECTED_SHAPE}")
    return f"fix the file; {EXPECTED_SHAPE}"


def validate_file(path: str | Path) -> list[Problem]:
    """Validate a case or suite JSON file (a suite has a ``cases`` key)."""
    path = Path(path)
    if not path.exists():
        return [Problem("$", f"{path} not found")]
    try:
        d = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        return [Problem("$", f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}; {json_error_hint(e, path)}")]
    if isinstance(d, Mapping) and "cases" in d:
        return validate_suite_dict(d, base_dir=path.parent)
    return validate_case_dict(d)


# ---------------------------------------------------------------------------- warnings
# Where a valid case will give weak or ambiguous evidence. Warnings never change validate's exit
# code; each says what it costs and how to fix it.

#: rules about a body that changes (the phase changes, dissolving, burning): their check follows
#: the case's ``role: subject`` object (tracks/physics/checks/phase_change.py).
SUBJECT_RULES = ("melting", "sublimation", "vaporization", "condensation", "deposition", "freezing",
                 "solubility", "combustibility")
#: bare directions that move an agent one way and, read as camera pans, the content the other.
AMBIGUOUS_DIRECTIONS = ("left", "right", "up", "down")


def case_warnings(d: Any, prefix: str = "$") -> list[Problem]:
    """Weak-evidence warnings for one (valid) case object; empty when there are none."""
    if not isinstance(d, Mapping):
        return []
    out: list[Problem] = []
    physics = d.get("physics") or {}
    objects = physics.get("objects") or [] if isinstance(physics, Mapping) else []
    for i, o in enumerate(objects):
        if isinstance(o, Mapping) and o.get("color") is None:
            out.append(Problem(f"{prefix}.physics.objects[{i}]",
                               f"object {o.get('name')!r} has no color: the physical track finds it by motion only "
                               "(a resting or slow object may be missed) and names what it tracked object1, object2...; "
                               "add \"color\": [r, g, b]"))
    rules = physics.get("rules") or [] if isinstance(physics, Mapping) else []
    changing = [r for r in rules if r in SUBJECT_RULES]
    if changing and objects and not any(isinstance(o, Mapping) and o.get("role") == "subject" for o in objects):
        out.append(Problem(f"{prefix}.physics.objects",
                           f"rules {changing} follow the body that changes, but no object has \"role\": \"subject\": it is "
                           "guessed from the object's name, else from the video itself (a phase change played backwards "
                           "can then pass); mark the melting/freezing/dissolving/burning body with \"role\": \"subject\""))
    meta = d.get("metadata") or {}
    has_space = isinstance(meta, Mapping) and any(meta.get(k) for k in ("action_space", "action_space_name", "game", "generator"))
    # Structured actions (a camera move, an end-effector delta) carry their own motion.
    acted = [(i, a) for i, c in enumerate(d.get("chunks") or []) if isinstance(c, Mapping) and (a := c.get("action"))
             and not (isinstance(a, Mapping) and any(k in a for k in ("translation", "delta", "yaw_deg")))]
    if acted and not has_space:
        names = sorted({a if isinstance(a, str) else str(a.get("name", "")) for _, a in acted if isinstance(a, (str, Mapping))})
        scenario = d.get("scenario")
        ambiguous = [n for n in names if n.lower() in AMBIGUOUS_DIRECTIONS]
        if scenario in ("gaming", "robotics") and ambiguous:
            what = (f"actions {ambiguous} could move an agent or the camera (opposite image directions), so the "
                    "interaction track reports action following as not applicable")
        else:
            vocab = "robotics end-effector commands, then camera moves" if scenario == "robotics" else "camera moves"
            what = f"actions {names} are read with the shipped default vocabulary ({vocab}, tracks/interaction/data/action_spaces.yaml)"
        out.append(Problem(f"{prefix}.metadata", f"no action space: {what}; add metadata.action_space (what each action "
                                                 "moves and which way) or metadata.action_space_name"))
    return out


def warnings_for_file(path: str | Path) -> list[Problem]:
    """Weak-evidence warnings for a case or suite file (nothing when it cannot be read: the
    problems say why)."""
    path = Path(path)
    try:
        d = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return []
    if not (isinstance(d, Mapping) and "cases" in d):
        return case_warnings(d)
    out: list[Problem] = []
    for i, item in enumerate(d.get("cases") or []):
        if isinstance(item, str):
            try:
                item = json.loads((path.parent / item).read_text())
            except (OSError, json.JSONDecodeError):
                continue
        out += case_warnings(item, prefix=f"$.cases[{i}]")
    return out
