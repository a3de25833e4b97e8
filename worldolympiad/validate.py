"""Validation of case and suite files: every problem, each with its JSON path.

Two layers, reported together: the published JSON Schema (``schema/case.schema.json``) and
semantic checks the schema cannot express (chunks inside the video and non-overlapping, a
trajectory with one pose per frame, duplicate case ids...). A semantic check whose inputs
the schema already rejects is skipped rather than reported twice.
"""

from __future__ import annotations

import json
import math
import re
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


#: deepest nesting a case or suite file may have (the formats need 6 levels; Python's parser gives up near 1,000)
MAX_JSON_DEPTH = 64
#: frame rates a case may declare (a time-lapse at 0.1 fps to a high-speed camera at 1,000 fps)
FPS_RANGE = (0.1, 1000.0)
#: a case id, matched whole (Python's ``$`` also matches before a final newline, which the schema's
#: ``^...$`` pattern lets through in ``jsonschema``)
CASE_ID = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.\-]*\Z")
#: how far ``R^T R`` of a camera pose may be from the identity (and ``det R`` from 1)
ROTATION_TOLERANCE = 1e-3


def json_depth(x: Any, stop_past: int | None = None) -> int:
    """Nesting depth of a parsed JSON value, without recursion (a hostile value may be deep); with
    ``stop_past``, the walk stops as soon as the depth exceeds it."""
    deepest, stack = 0, [(x, 1)]
    while stack:
        v, d = stack.pop()
        deepest = max(deepest, d)
        if stop_past is not None and deepest > stop_past:
            return deepest
        if isinstance(v, dict):
            stack.extend((c, d + 1) for c in v.values())
        elif isinstance(v, list):
            stack.extend((c, d + 1) for c in v)
    return deepest


def parse_json(text: str | bytes) -> Any:
    """``json.loads`` that turns nesting past :data:`MAX_JSON_DEPTH` (or past what Python's parser can
    recurse into) into a :class:`json.JSONDecodeError`, so every reader reports it as one line."""
    try:
        d = json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError(f"nested deeper than Python's JSON parser can read (the limit is "
                                   f"{MAX_JSON_DEPTH} levels); flatten the file", str(text)[:200], 0) from None
    if json_depth(d, stop_past=MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise json.JSONDecodeError(f"nested more than {MAX_JSON_DEPTH} levels deep; flatten the file",
                                   str(text)[:200], 0)
    return d


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
    problems += _scalar_checks(d, n, prefix)
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
        problems += _rotation_checks(traj, f"{prefix}.camera.trajectory")
    K = cam.get("intrinsics") if cam else None
    if _is_matrix(K, 3, 3) and not all(math.isfinite(x) for r in K for x in r):
        problems.append(Problem(f"{prefix}.camera.intrinsics", f"must hold finite numbers, got {K}"))
    elif _is_matrix(K, 3, 3) and (K[0][0] <= 0 or K[1][1] <= 0):
        problems.append(Problem(f"{prefix}.camera.intrinsics", "focal lengths K[0][0], K[1][1] must be positive"))
    return problems


def _scalar_checks(d: Mapping[str, Any], n: int | None, prefix: str) -> list[Problem]:
    """The id matched whole, a frame rate that is a real one, the case within the frame and pixel budgets."""
    from worldolympiad.budgets import BudgetError, case_budget_problem

    out: list[Problem] = []
    cid = d.get("id")
    schema_id = load_schema("case")["properties"]["id"]["pattern"]
    if isinstance(cid, str) and re.search(schema_id, cid) and not CASE_ID.match(cid):
        out.append(Problem(f"{prefix}.id", f"{cid!r} has a character ids may not hold (a trailing newline?); "
                                           "an id is letters, digits, '_', '.', '-' and names files"))
    fps = d.get("fps")
    if isinstance(fps, (int, float)) and not isinstance(fps, bool):
        lo, hi = FPS_RANGE
        if not math.isfinite(fps):
            out.append(Problem(f"{prefix}.fps", f"must be a finite number of frames per second, got {fps!r}"))
        elif fps > 0 and not lo <= fps <= hi:  # <= 0 is the schema's
            out.append(Problem(f"{prefix}.fps", f"{fps!r} frames per second is outside {lo:g}..{hi:g}; "
                                                "write the video's real frame rate"))
    res = d.get("resolution")
    if n is not None and isinstance(res, list) and len(res) == 2 and all(_is_int(x) and x > 0 for x in res):
        try:
            over = case_budget_problem(n, res[0], res[1])
        except BudgetError as e:
            return [*out, Problem(prefix, str(e))]
        if over is not None:
            out.append(Problem(f"{prefix}.{over[0]}", over[1]))
    return out


def _rotation_checks(traj: list[Any], where: str) -> list[Problem]:
    """The first pose whose 3x3 block is not a rotation (orthonormal, det +1, within
    :data:`ROTATION_TOLERANCE`) or that holds a non-finite number; poses of another shape are the schema's."""
    import numpy as np

    index = [j for j, m in enumerate(traj) if _is_matrix(m, 4, 4)]
    if not index:
        return []
    poses = np.asarray([traj[j] for j in index], dtype=np.float64)  # [T, 4, 4]
    finite = np.isfinite(poses).all(axis=(1, 2))
    if not finite.all():
        j = index[int(np.argmin(finite))]
        return [Problem(f"{where}[{j}]", "holds a number that is not finite (NaN or Infinity)")]
    R = poses[:, :3, :3]
    err = np.abs(np.einsum("tji,tjk->tik", R, R) - np.eye(3)).max(axis=(1, 2))
    det = np.linalg.det(R)
    bad = (err > ROTATION_TOLERANCE) | (np.abs(det - 1.0) > ROTATION_TOLERANCE)
    if bad.any():
        k = int(np.argmax(bad))
        return [Problem(f"{where}[{index[k]}]", f"its 3x3 block is not a rotation (max |R^T R - I| = {err[k]:.3g}, "
                                                f"det R = {det[k]:.3g}; tolerance {ROTATION_TOLERANCE:g}); give "
                                                "camera-to-world poses [R | t] with R orthonormal and det +1 "
                                                "(no scale or mirror)")]
    return []


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
                case_d = parse_json(f.read_text())
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
        d = parse_json(path.read_text())
    except json.JSONDecodeError as e:
        return [Problem("$", f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}; {json_error_hint(e, path)}")]
    if isinstance(d, Mapping) and "cases" in d:
        return validate_suite_dict(d, base_dir=path.parent)
    return validate_case_dict(d)


def track_case_problems(d: Any, prefix: str = "$") -> list[Problem]:
    """What the case's tracks can tell they cannot score from a valid case alone: each registered track class
    may define ``case_problems(case) -> [(path, message)]`` (the interaction track: an action its vocabulary
    does not know, with the known names). Reported as warnings (imported public data carries such names);
    the track's row for the case fails. A track that cannot be loaded is skipped (scoring says why)."""
    from worldolympiad.registries import TRACKS
    from worldolympiad.types import Case

    try:
        case = Case.from_dict(d)
    except Exception:  # noqa: BLE001 - the case's own problems are reported by validate_case_dict
        return []
    out: list[Problem] = []
    for name in case.tracks:
        try:
            check = getattr(TRACKS.get(name), "case_problems", None)
        except Exception:  # noqa: BLE001
            continue
        if check is not None:
            out += [Problem(f"{prefix}.{path}", f"{message}; the {name} track cannot score this case (its row "
                                                "fails): rename the action or describe it in metadata.action_space")
                    for path, message in check(case)]
    return out


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
    moves = [i for i, c in enumerate(d.get("chunks") or []) if isinstance(c, Mapping)
             and isinstance(c.get("action"), Mapping) and "delta" in c["action"]]
    # (without a camera the track cannot project a delta at all: track_case_problems says so)
    if moves and d.get("camera") and not (isinstance(meta, Mapping) and meta.get("start_ee")):
        out.append(Problem(f"{prefix}.chunks[{moves[0]}].action",
                           "end-effector deltas without metadata.start_ee: the interaction track cannot say where the "
                           "end effector is, so it follows the largest moving blob against the background (which jumps "
                           "between pieces of an arm) and expects each delta's direction with its depth dropped and no "
                           "speed; add metadata.start_ee ([x, y, z], world metres, the end effector at frame 0)"))
    return out + track_case_problems(d, prefix)


def warnings_for_file(path: str | Path) -> list[Problem]:
    """Weak-evidence warnings for a case or suite file (nothing when it cannot be read: the
    problems say why)."""
    path = Path(path)
    try:
        d = parse_json(path.read_text())
    except (OSError, json.JSONDecodeError):
        return []
    if not (isinstance(d, Mapping) and "cases" in d):
        return case_warnings(d)
    out: list[Problem] = []
    for i, item in enumerate(d.get("cases") or []):
        if isinstance(item, str):
            try:
                item = parse_json((path.parent / item).read_text())
            except (OSError, json.JSONDecodeError):
                continue
        out += case_warnings(item, prefix=f"$.cases[{i}]")
    return out
