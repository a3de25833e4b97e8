"""Validation of uploaded results archives (the site's submission tab).

An archive is a ``.zip`` holding one run: ``run_spec.json`` and ``results.jsonl`` (at the
top level or inside one folder), optionally ``videos/*.mp4`` and text files. Everything
is checked *before* anything touches the store:

* the archive: size, member count, total uncompressed size and per-member compression
  ratio (zip bombs), member names (absolute paths, ``..``, drive letters — zip-slip),
  symlinks, and suffixes (nothing executable or pickled: only the allowed list);
* the content: JSON that parses, required fields, a known schema major version,
  row count, statuses and scores in range, known tracks, model names without markup.

Nothing is extracted to disk; members are read into memory after the size checks.
"""

from __future__ import annotations

import io
import json
import math
import re
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from leaderboard.schema import Schema, load_schema

_NAME_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.:@/+\-#]*$")


class SubmissionError(ValueError):
    """The archive was rejected; ``problems`` lists every reason."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("submission rejected: " + "; ".join(problems))


@dataclass
class Submission:
    spec: dict[str, Any]
    rows: list[dict[str, Any]]
    files: list[str] = field(default_factory=list)


def _member_problems(info: zipfile.ZipInfo, limits: dict[str, Any]) -> list[str]:
    name = info.filename
    problems = []
    p = PurePosixPath(name.replace("\\", "/"))
    if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name) or ".." in p.parts:
        problems.append(f"{name!r}: path escapes the archive (absolute or '..'); use relative paths")
    mode = (info.external_attr >> 16) & 0xFFFF
    if stat.S_ISLNK(mode):
        problems.append(f"{name!r}: symbolic links are not accepted")
    if not name.endswith("/"):
        if p.suffix.lower() not in limits["allowed_suffixes"]:
            problems.append(f"{name!r}: file type {p.suffix or '(none)'} not accepted; allowed: "
                            f"{', '.join(limits['allowed_suffixes'])} (nothing executable or pickled)")
        if mode & 0o111 and stat.S_ISREG(mode):
            problems.append(f"{name!r}: executable files are not accepted")
        # Text compresses well (~10-100x); only large members with extreme ratios look like bombs.
        if (info.file_size > limits["ratio_check_min_bytes"] and info.compress_size > 0
                and info.file_size / info.compress_size > limits["max_compression_ratio"]):
            problems.append(f"{name!r}: compression ratio {info.file_size / info.compress_size:.0f}x exceeds "
                            f"{limits['max_compression_ratio']}x (zip bomb?)")
    return problems


def validate_archive(data: bytes, schema: Schema | None = None) -> Submission:
    """Validate an uploaded archive and return its parsed content.

    Raises:
        SubmissionError: with every problem found.
    """
    schema = schema or load_schema()
    limits: dict[str, Any] = {
        "max_archive_bytes": 50 * 2**20, "max_uncompressed_bytes": 200 * 2**20, "max_compression_ratio": 100,
        "ratio_check_min_bytes": 8 * 2**20, "max_members": 2000, "max_rows": 5000, "max_name_length": 80,
        "allowed_suffixes": [".jsonl", ".json", ".mp4", ".txt", ".md"],
    } | schema.submission
    if len(data) > limits["max_archive_bytes"]:
        raise SubmissionError([f"archive is {len(data)} bytes; the limit is {limits['max_archive_bytes']}"])
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as e:
        raise SubmissionError([f"not a zip archive ({e}); zip the run directory (run_spec.json + results.jsonl)"]) from e
    infos = zf.infolist()
    problems: list[str] = []
    if len(infos) > limits["max_members"]:
        problems.append(f"{len(infos)} files in the archive; the limit is {limits['max_members']}")
    total = sum(i.file_size for i in infos)
    if total > limits["max_uncompressed_bytes"]:
        problems.append(f"archive expands to {total} bytes; the limit is {limits['max_uncompressed_bytes']} (zip bomb?)")
    for info in infos:
        problems.extend(_member_problems(info, limits))
    if problems:
        raise SubmissionError(problems)

    names = [i.filename for i in infos if not i.filename.endswith("/")]
    spec_names = [n for n in names if PurePosixPath(n).name == "run_spec.json"]
    res_names = [n for n in names if PurePosixPath(n).name == "results.jsonl"]
    if len(spec_names) != 1 or len(res_names) != 1:
        raise SubmissionError([f"expected exactly one run_spec.json and one results.jsonl, found {len(spec_names)} and "
                               f"{len(res_names)}; zip a single run directory"])

    def read_limited(name: str) -> bytes:
        # The header sizes were checked, but a forged header could lie: read with a cap.
        with zf.open(name) as f:
            out = f.read(limits["max_uncompressed_bytes"] + 1)
        if len(out) > limits["max_uncompressed_bytes"]:
            raise SubmissionError([f"{name!r} expands beyond the size limit (zip bomb?)"])
        return out

    try:
        spec = json.loads(read_limited(spec_names[0]))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise SubmissionError([f"run_spec.json is not valid JSON ({e})"]) from e
    if not isinstance(spec, dict):
        raise SubmissionError(["run_spec.json must be a JSON object"])
    problems.extend(_spec_problems(spec, schema, limits))

    rows: list[dict[str, Any]] = []
    text = read_limited(res_names[0]).decode("utf-8", errors="replace")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) > limits["max_rows"]:
        problems.append(f"results.jsonl has {len(lines)} rows; the limit is {limits['max_rows']} — submit one suite per archive")
        raise SubmissionError(problems)
    if not lines:
        problems.append("results.jsonl is empty")
    for i, line in enumerate(lines, start=1):
        try:
            r = json.loads(line)
        except json.JSONDecodeError as e:
            problems.append(f"results.jsonl line {i}: not valid JSON ({e.msg})")
            continue
        problems.extend(f"results.jsonl line {i}: {p}" for p in _row_problems(r, schema, limits))
        rows.append(r)
        if len(problems) > 50:
            problems.append("... (stopped after 50 problems)")
            break
    models = {str(r.get("model")) for r in rows}
    if spec.get("model") is not None and models and models != {str(spec.get("model"))}:
        problems.append(f"rows name models {sorted(models)} but run_spec.json says {spec.get('model')!r}")
    if problems:
        raise SubmissionError(problems)
    return Submission(spec=spec, rows=rows, files=names)


def _name_problem(what: str, name: Any, limits: dict[str, Any]) -> str | None:
    if not isinstance(name, str) or not name:
        return f"{what} must be a non-empty string"
    if len(name) > limits["max_name_length"]:
        return f"{what} is {len(name)} characters; the limit is {limits['max_name_length']}"
    if not _NAME_OK.match(name):
        return f"{what} {name[:40]!r} has characters outside letters, digits and ' _.:@/+-#' (no markup)"
    return None


def _spec_problems(spec: dict[str, Any], schema: Schema, limits: dict[str, Any]) -> list[str]:
    problems = []
    v = str(spec.get("schema_version", schema.version))
    if v.split(".")[0] != schema.major:
        problems.append(f"run_spec.json schema_version {v!r} is not compatible with this leaderboard "
                        f"({schema.version}); re-run evaluate-model with the current release")
    for key in ("model", "suite", "tracks"):
        if key not in spec:
            problems.append(f"run_spec.json lacks {key!r}")
    if p := _name_problem("model name", spec.get("model"), limits):
        problems.append(p)
    return problems


def _row_problems(r: Any, schema: Schema, limits: dict[str, Any]) -> list[str]:
    if not isinstance(r, dict):
        return ["a row must be a JSON object"]
    problems = [f"missing field {k!r}" for k in ("case_id", "model", "seed", "track", "score") if k not in r]
    if problems:
        return problems
    if r["track"] not in schema.tracks:
        problems.append(f"unknown track {r['track']!r}; known: {', '.join(schema.tracks)}")
    if r.get("status", "ok") not in ("ok", "not_applicable", "failed"):
        problems.append(f"status {r.get('status')!r} is not ok / not_applicable / failed")
    s = r["score"]
    if s is not None and (not isinstance(s, (int, float)) or isinstance(s, bool) or not math.isfinite(s) or not 0 <= s <= 1):
        problems.append(f"score {s!r} must be null or a number in [0, 1]")
    if not isinstance(r["seed"], int) or isinstance(r["seed"], bool):
        problems.append(f"seed {r['seed']!r} must be an integer")
    for what, key in (("model name", "model"), ("case id", "case_id")):
        if p := _name_problem(what, r.get(key), limits):
            problems.append(p)
    return problems
