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

import hashlib
import io
import json
import math
import re
import stat
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from leaderboard.schema import Schema, load_schema
from worldolympiad.validate import json_depth

_NAME_OK = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9 _.:@/+\-#]*\Z")
_METRIC_OK = re.compile(r"\A[A-Za-z0-9_.\-]{1,80}\Z")
_SUITE_OK = re.compile(r"\A[A-Za-z0-9_./:@+\-#~ ]+\Z")  # a suite name or the path of a suite file
_NONFINITE = ("inf", "-inf", "nan")  # how the evaluator writes raw values JSON cannot hold
STATUSES = ("ok", "not_applicable", "failed")
_LINE_PROBLEM = re.compile(r"\Aresults\.jsonl line (\d+): (.*)\Z", re.S)
RESERVED_PREFIX = "upload:"  # the store's namespace for uploaded runs (see leaderboard.store)


class SubmissionError(ValueError):
    """The archive was rejected; ``problems`` lists every reason."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("rejected: " + "; ".join(problems))


@dataclass
class Submission:
    """A validated upload. ``videos``: sha256 of each file under ``videos/`` (part of its identity)."""

    spec: dict[str, Any]
    rows: list[dict[str, Any]]
    files: list[str] = field(default_factory=list)
    videos: dict[str, str] = field(default_factory=dict)


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


DEFAULT_LIMITS: dict[str, Any] = {
    "max_archive_bytes": 50 * 2**20, "max_uncompressed_bytes": 200 * 2**20, "max_compression_ratio": 100,
    "ratio_check_min_bytes": 8 * 2**20, "max_members": 2000, "max_rows": 5000, "max_name_length": 80,
    "max_metrics_per_row": 64, "max_metric_rows": 20000, "max_row_bytes": 64 * 2**10, "max_json_depth": 32,
    "max_seed": 2**32 - 1, "max_store_upload_metric_rows": 2_000_000, "max_store_upload_bytes": 5 * 2**30,
    "allowed_suffixes": [".jsonl", ".json", ".mp4", ".txt", ".md"],
}


def submission_limits(schema: Schema | None = None) -> dict[str, Any]:
    """The upload limits: :data:`DEFAULT_LIMITS` overridden by ``schema.yaml``'s ``submission``."""
    return DEFAULT_LIMITS | (schema or load_schema()).submission


def local_run_limits(schema: Schema | None = None) -> dict[str, Any]:
    """Limits for a run directory the maintainers scored here (``leaderboard add``).

    Same content checks as an upload; only the sizes that a full suite legitimately exceeds
    (row count, metric rows, model names that are local paths) are relaxed.
    """
    return submission_limits(schema) | {"max_rows": 10**6, "max_metric_rows": 10**7, "max_name_length": 255}


def validate_archive(data: bytes, schema: Schema | None = None) -> Submission:
    """Validate an uploaded archive and return its parsed content.

    Raises:
        SubmissionError: with every problem found.
    """
    schema = schema or load_schema()
    limits = submission_limits(schema)
    if len(data) > limits["max_archive_bytes"]:
        raise SubmissionError([f"archive is {len(data)} bytes; the limit is {limits['max_archive_bytes']}"])
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as e:
        raise SubmissionError([f"not a zip archive ({e}); zip the run directory (run_spec.json + results.jsonl)"]) from e
    except Exception as e:  # noqa: BLE001 - a forged central directory can raise almost anything
        raise SubmissionError([_unreadable("the archive", e)]) from e
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

    def read_limited(name: str, n: int = limits["max_uncompressed_bytes"] + 1) -> bytes:
        # The header sizes were checked, but a forged header could lie: read with a cap.
        try:
            with zf.open(name) as f:
                out = f.read(n)
        except Exception as e:  # noqa: BLE001 - forged local headers raise BadZipFile, zlib.error, EOFError...
            raise SubmissionError([_unreadable(repr(name), e)]) from e
        if len(out) > limits["max_uncompressed_bytes"]:
            raise SubmissionError([f"{name!r} expands beyond the size limit (zip bomb?)"])
        return out

    spec = parse_spec(read_limited(spec_names[0]))
    rows: list[dict[str, Any]] = []
    line_numbers: list[int] = []
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
        except RecursionError:
            problems.append(f"results.jsonl line {i}: JSON nested too deeply (the limit is {limits['max_json_depth']})")
            continue
        rows.append(r)
        line_numbers.append(i)
        if len(problems) > 50:
            break
    problems.extend(run_problems(spec, rows, schema, limits, line_numbers))
    if not problems:
        problems.extend(_video_problems(rows, names, lambda n: read_limited(n, 12)))
    if problems:
        raise SubmissionError(_capped(problems))
    videos = {n: hashlib.sha256(read_limited(n)).hexdigest() for n in names if PurePosixPath(n).parent.name == "videos"}
    return Submission(spec=spec, rows=rows, files=names, videos=videos)


def video_name(case_id: str, seed: int) -> str:
    """The evaluator's name of a generated video: ``videos/<case>__s<seed>.mp4``."""
    return f"videos/{case_id}__s{seed}.mp4"


def _video_problems(rows: list[dict[str, Any]], names: list[str], head: Callable[[str], bytes]) -> list[str]:
    """An upload carries the video behind every scored row, so the maintainers can re-score it.

    Only the container signature is checked here (``ftyp`` box); decoding is the re-scoring's job.
    """
    by_tail = {"/".join(PurePosixPath(n).parts[-2:]): n for n in names}
    missing, bad = [], []
    for key in sorted({(str(r["case_id"]), int(r["seed"])) for r in rows if r.get("status", "ok") == "ok"}):
        member = by_tail.get(video_name(*key))
        if member is None:
            missing.append(video_name(*key))
        elif head(member)[4:8] != b"ftyp":
            bad.append(member)
    problems = []
    if missing:
        problems.append(f"no video for {len(missing)} scored case(s), e.g. {missing[0]!r}: include the run's videos/ "
                        "folder — an upload is verified only by re-scoring its videos here")
    if bad:
        problems.append(f"{bad[0]!r} is not an mp4 file (no 'ftyp' box); include the videos evaluate-model wrote")
    return problems


def _unreadable(what: str, e: BaseException) -> str:
    return (f"{what} cannot be read ({type(e).__name__}: {str(e)[:80]}); the zip headers look damaged or "
            "forged — re-create the archive with `zip -r run.zip RUN_DIR`")


def _capped(problems: list[str], n: int = 20) -> list[str]:
    """Problems for one status line: the same problem on many lines is said once, with the line numbers."""
    by_msg: dict[str, list[str]] = {}
    for p in problems:
        m = _LINE_PROBLEM.match(p)
        msg, line = (m.group(2), m.group(1)) if m else (p, "")
        by_msg.setdefault(msg, []).append(line)
    out = []
    for msg, lines in by_msg.items():
        lines = [x for x in lines if x]
        if not lines:
            out.append(msg)
        elif len(lines) == 1:
            out.append(f"results.jsonl line {lines[0]}: {msg}")
        else:
            out.append(f"results.jsonl lines {', '.join(lines[:5])}{', ...' if len(lines) > 5 else ''}: {msg}")
    return out[:n] + ([f"... ({len(out) - n} more problems)"] if len(out) > n else [])


def parse_spec(data: bytes | str) -> dict[str, Any]:
    """``run_spec.json`` as a dict, or :class:`SubmissionError` with one line saying why not."""
    try:
        spec = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise SubmissionError([f"run_spec.json is not valid JSON ({e})"]) from e
    except RecursionError as e:
        raise SubmissionError(["run_spec.json is nested too deeply to be a run spec"]) from e
    if not isinstance(spec, dict):
        raise SubmissionError([f"run_spec.json must be a JSON object, got a {type(spec).__name__}; "
                               "use the run_spec.json evaluate-model wrote"])
    return spec


def run_problems(spec: dict[str, Any], rows: Sequence[Any], schema: Schema | None = None,
                 limits: dict[str, Any] | None = None, line_numbers: Sequence[int] | None = None) -> list[str]:
    """Every problem of a run's content: its spec, each row, and the run's size.

    The one validator for uploads (:func:`validate_archive`) and for ``leaderboard add``
    (with :func:`local_run_limits`): nothing reaches the store unchecked.
    """
    schema = schema or load_schema()
    limits = limits or submission_limits(schema)
    problems = list(_spec_problems(spec, schema, limits))
    if len(rows) > limits["max_rows"]:
        return problems + [f"results.jsonl has {len(rows)} rows; the limit is {limits['max_rows']} — "
                           "submit one suite per archive"]
    n_metrics = 0
    for i, r in zip(line_numbers or range(1, len(rows) + 1), rows, strict=True):
        problems.extend(f"results.jsonl line {i}: {p}" for p in _row_problems(r, schema, limits))
        if isinstance(r, dict) and isinstance(r.get("metrics"), list):
            n_metrics += len(r["metrics"])
        if len(problems) > 50:
            return problems
    if n_metrics > limits["max_metric_rows"]:
        problems.append(f"{n_metrics} metric values in all; the limit is {limits['max_metric_rows']} per run "
                        f"(at most {limits['max_metrics_per_row']} per row)")
    models = {str(r.get("model")) for r in rows if isinstance(r, dict)}
    if spec.get("model") is not None and models and models != {str(spec.get("model"))}:
        problems.append(f"rows name models {sorted(models)[:5]} but run_spec.json says {spec.get('model')!r}")
    return problems


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
    v = str(spec.get("schema_version", schema.version))[:20]
    if v.split(".")[0] != schema.major:
        problems.append(f"run_spec.json schema_version {v!r} is not compatible with this leaderboard "
                        f"({schema.version}); re-run evaluate-model with the current release")
    for key in ("model", "suite", "tracks"):
        if key not in spec:
            problems.append(f"run_spec.json lacks {key!r}")
    if p := _name_problem("model name", spec.get("model"), limits):
        problems.append(p)
    elif str(spec["model"]).startswith(RESERVED_PREFIX):
        problems.append(f"model name {spec['model']!r}: the prefix {RESERVED_PREFIX!r} is reserved for uploads")
    if "submitter" in spec and (p := _name_problem("submitter", spec["submitter"], limits)):
        problems.append(p)
    suite = spec.get("suite", "-")
    if not isinstance(suite, str) or not _SUITE_OK.match(suite) or len(suite) > limits["max_name_length"]:
        problems.append(f"run_spec.json 'suite' {str(suite)[:40]!r} must be a suite name or path "
                        f"(letters, digits, '_./:@+-#~', up to {limits['max_name_length']})")
    tracks = spec.get("tracks", [])
    if not isinstance(tracks, list) or not all(isinstance(t, str) for t in tracks):
        problems.append("run_spec.json 'tracks' must be a list of track names")
    if json_depth(spec) > limits["max_json_depth"]:
        problems.append(f"run_spec.json is nested deeper than {limits['max_json_depth']} levels")
    return problems


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _row_problems(r: Any, schema: Schema, limits: dict[str, Any]) -> list[str]:
    if not isinstance(r, dict):
        return ["a row must be a JSON object"]
    problems = [f"missing field {k!r}" for k in ("case_id", "model", "seed", "track", "score") if k not in r]
    if problems:
        return problems
    if json_depth(r) > limits["max_json_depth"]:
        return [f"nested deeper than {limits['max_json_depth']} levels"]
    if (n := len(json.dumps(r))) > limits["max_row_bytes"]:
        return [f"the row is {n} bytes; the limit is {limits['max_row_bytes']} (keep large details out of results)"]
    if not isinstance(r["track"], str) or r["track"] not in schema.tracks:
        problems.append(f"unknown track {str(r['track'])[:40]!r}; known: {', '.join(schema.tracks)}")
    if r.get("status", "ok") not in STATUSES:
        problems.append(f"status {str(r.get('status'))[:40]!r} is not ok / not_applicable / failed")
    s = r["score"]
    if s is not None and (not _is_number(s) or not math.isfinite(s) or not 0 <= s <= 1):
        problems.append(f"score {str(s)[:40]} must be null or a number in [0, 1]")
    if not isinstance(r["seed"], int) or isinstance(r["seed"], bool) or not 0 <= r["seed"] <= limits["max_seed"]:
        problems.append(f"seed {str(r['seed'])[:40]} must be an integer in [0, {limits['max_seed']}]")
    for key in ("track_version", "scenario", "suite"):
        if key in r and not (isinstance(r[key], (str, int)) and not isinstance(r[key], bool) and len(str(r[key])) <= 80):
            problems.append(f"{key} must be a short string")
    for what, key in (("model name", "model"), ("case id", "case_id")):
        if p := _name_problem(what, r.get(key), limits):
            problems.append(p)
    problems.extend(_metric_problems(r.get("metrics"), limits))
    return problems


def _metric_problems(metrics: Any, limits: dict[str, Any]) -> list[str]:
    """A row's ``metrics``: a list of named values (the store keeps one row per metric)."""
    if metrics is None:
        return []
    if not isinstance(metrics, list):
        return ["'metrics' must be a list"]
    if len(metrics) > limits["max_metrics_per_row"]:
        return [f"{len(metrics)} metrics in one row; the limit is {limits['max_metrics_per_row']}"]
    for j, m in enumerate(metrics):
        if not isinstance(m, dict):
            return [f"metrics[{j}] must be a JSON object"]
        name = m.get("name")
        if not isinstance(name, str) or not _METRIC_OK.match(name):
            return [f"metrics[{j}] needs a 'name' of letters, digits and '_.-' (up to 80), got {str(name)[:40]!r}"]
        if (raw := m.get("raw")) is not None and not _is_number(raw) and raw not in _NONFINITE:
            return [f"metric {name!r}: raw must be null, a number or one of {', '.join(_NONFINITE)}"]
        if (n := m.get("normalized")) is not None and not _is_number(n):
            return [f"metric {name!r}: normalized must be null or a number"]
        if n is not None and math.isfinite(n) and not 0 <= n <= 1:
            return [f"metric {name!r}: normalized {n} must be in [0, 1]"]
        if m.get("status", "ok") not in STATUSES:
            return [f"metric {name!r}: status must be ok / not_applicable / failed"]
        if not isinstance(m.get("version", "1"), (str, int)) or len(str(m.get("version", "1"))) > 20:
            return [f"metric {name!r}: version must be a short string"]
    return []
