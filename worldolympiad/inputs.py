"""What a row was computed from: per-file fingerprints of a (case, seed)'s inputs.

Every row of ``results.jsonl`` records the inputs of its (case, seed) under ``inputs``::

    {"case":              {"sha256": "…"},                                   the case's JSON content
     "case.reference":    {"path": "/abs/ref.mp4", "size": 1234, "mtime_ns": …, "sha256": "…"},
     "model.video":       {"path": "/abs/videos/c.mp4", "size": …, "mtime_ns": …, "sha256": "…"},
     "model.video":       {"missing": true}}                                 (no video for the case yet)

A rerun of the same command recomputes exactly the rows whose inputs changed: a file's size and
mtime are the fast path (equal → the recorded hash is reused, nothing is read); when either changed
the content is hashed, so a file that was only touched keeps its rows. A file that appeared,
vanished or moved (another path found for the case) is a change too, which is how a row that failed
because its video was missing is computed again once the video exists.

Which files feed a case: the case's own ``conditioning``, ``reference`` and string
``physics.ground_truth`` paths, plus whatever the model reads for it (a model factory's
``input_files(arg, case, seed)`` classmethod, e.g. :meth:`worldolympiad.models.videos.VideosModel.input_files`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from worldolympiad.types import Case

Stamp = dict[str, Any]
Inputs = dict[str, Stamp]

_CHUNK = 1 << 20


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(_CHUNK):
            h.update(block)
    return h.hexdigest()


def stamp_file(path: Path, known: Mapping[str, Stamp] | None = None) -> Stamp:
    """Fingerprint of one file: path, size, mtime and content hash (``missing`` when there is none).

    Args:
        path: the file (symlinks followed).
        known: stamps recorded earlier, by path; one with the same size and mtime lends its hash
            (nothing is read), otherwise the content is hashed.
    """
    path = Path(path).expanduser().resolve()
    key = str(path)
    try:
        st = path.stat()
    except OSError:
        return {"path": key, "missing": True}
    if not path.is_file():
        return {"path": key, "missing": True}
    old = (known or {}).get(key)
    if old and old.get("size") == st.st_size and old.get("mtime_ns") == st.st_mtime_ns and old.get("sha256"):
        sha = str(old["sha256"])
    else:
        sha = file_sha256(path)
    return {"path": key, "size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha}


#: suffixes of the files that make a model folder's numbers (weights and configs; not READMEs)
WEIGHT_SUFFIXES: tuple[str, ...] = (".json", ".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".yaml", ".yml",
                                    ".model", ".txt")
_WHOLE_FILE = 64 << 20


def folder_fingerprint(root: Path) -> str | None:
    """12 hex digits over a model folder's weight and config files (relative path, size, content), or
    ``None`` when there are none. Files over 64 MiB are keyed by size and their first and last MiB, so a
    multi-GB checkpoint is not read whole on every run."""
    root = Path(root).expanduser()
    if not root.is_dir():
        return None
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in WEIGHT_SUFFIXES)
    if not files:
        return None
    h = hashlib.sha256()
    for p in files:
        size = p.stat().st_size
        h.update(f"{p.relative_to(root).as_posix()}:{size}\n".encode())
        with open(p, "rb") as f:
            if size <= _WHOLE_FILE:
                while block := f.read(_CHUNK):
                    h.update(block)
            else:
                h.update(f.read(_CHUNK))
                f.seek(-_CHUNK, 2)
                h.update(f.read(_CHUNK))
    return h.hexdigest()[:12]


def case_stamp(case: Case) -> Stamp:
    """The case's content (every field, the suite name included; not where its file lives)."""
    blob = json.dumps(case.to_dict(), sort_keys=True, separators=(",", ":"), default=str)
    return {"sha256": hashlib.sha256(blob.encode()).hexdigest()}


#: the inputs recorded on rows of a case that could not be loaded (a later, valid case differs)
BROKEN_CASE: Inputs = {"case": {"sha256": None, "invalid": True}}


def case_inputs(case: Case, model_files: Mapping[str, Path | None] | None = None,
                known: Mapping[str, Stamp] | None = None) -> Inputs:
    """Stamps of everything a (case, seed) is computed from.

    Args:
        case: the case.
        model_files: ``label -> path`` of the files the model reads for this case and seed
            (``None``: the model finds no such file; recorded as missing, so its appearance is a change).
        known: earlier stamps by path (the size + mtime fast path).
    """
    out: Inputs = {"case": case_stamp(case)}
    paths: dict[str, Any] = {"case.conditioning": case.conditioning, "case.reference": case.reference}
    gt = case.physics.ground_truth if case.physics is not None else None
    if isinstance(gt, str):
        paths["case.ground_truth"] = gt
    for label, p in paths.items():
        resolved = case.resolve(p) if p else None
        if resolved is not None:
            out[label] = stamp_file(resolved, known)
    for label, fp in (model_files or {}).items():
        out[f"model.{label}"] = stamp_file(Path(fp), known) if fp is not None else {"missing": True}
    return out


def changed_inputs(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """Labels whose file or content differs between two input records (appeared, vanished, moved, edited)."""
    out = []
    for label in sorted(set(recorded) | set(current)):
        a, b = recorded.get(label), current.get(label)
        if not isinstance(a, Mapping) or not isinstance(b, Mapping):
            if a != b:
                out.append(label)
            continue
        if (a.get("path"), bool(a.get("missing")), a.get("sha256")) != (b.get("path"), bool(b.get("missing")),
                                                                        b.get("sha256")):
            out.append(label)
    return out


def known_stamps(rows: Sequence[Mapping[str, Any]]) -> dict[str, Stamp]:
    """Every file stamp recorded on ``rows``, by path (the last one wins), for :func:`stamp_file`'s fast path."""
    out: dict[str, Stamp] = {}
    for r in rows:
        inputs = r.get("inputs")
        if not isinstance(inputs, Mapping):
            continue
        for stamp in inputs.values():
            if isinstance(stamp, Mapping) and stamp.get("path") and stamp.get("sha256"):
                out[str(stamp["path"])] = dict(stamp)
    return out


def model_input_files(factory: Any, arg: str | None, case: Case, seed: int) -> dict[str, Path | None]:
    """``factory.input_files(arg, case, seed)`` when the model kind declares its input files, else ``{}``."""
    hook = getattr(factory, "input_files", None)
    if not callable(hook):
        return {}
    try:
        return dict(hook(arg, case, seed))
    except Exception:  # noqa: BLE001 - a model that cannot say fails its rows later, with the real message
        return {}

