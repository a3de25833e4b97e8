"""Import the public WorldOlympiad layout (REFERENCE.md §A) into a suite file.

Layout::

    <root>/<general|gaming|embodied>/<case_id>/
        prompt.json          list of chunks, or {"chunks"|"prompts": [...]}; each chunk a string or
                             {caption|prompt|text|description, action?, interval?, chunk_index?}
        ref_<case_id>.mp4    reference video → case.reference
        <prefix>_gen_<case_id>.mp4 (+ _chunk_timestamps.json)   generated videos (scored with
                             ``--model videos:<root>#<prefix>``)

fps, frame count and resolution come from probing the reference (or, without one, the
first generated video). Chunk frame ranges come from each chunk's ``interval`` (seconds,
``[start, end]``, ``{"start", "end"}`` or ``"a-b"``) when given, else from the first
generated video's chunk timestamps, else an even split. Domains map to scenarios:
general → realworld, gaming → gaming, embodied → robotics.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from worldolympiad.suites import BrokenItem, Suite, write_suite
from worldolympiad.types import Case, CaseError, Chunk, even_chunks

logger = logging.getLogger(__name__)

DOMAIN_TO_SCENARIO: dict[str, str] = {"general": "realworld", "gaming": "gaming", "embodied": "robotics"}
CAPTION_KEYS: tuple[str, ...] = ("caption", "prompt", "text", "description")


def import_damo(root: str | Path, out: str | Path | None = None, *, name: str | None = None) -> tuple[Path, Suite]:
    """Convert ``root`` into a suite JSON file.

    Args:
        root: dataset root holding ``general/``, ``gaming/`` and/or ``embodied/``.
        out: suite file to write (default ``<root>/suite.json``); reference paths are
            written relative to its folder.
        name: suite name (default: the root folder's name).

    Returns:
        The written path and the :class:`Suite` (``suite.broken`` lists skipped case folders
        with the reason).

    Raises:
        CaseError: ``root`` has none of the domain folders.
    """
    root = Path(root)
    out = Path(out) if out else root / "suite.json"
    name = name or root.resolve().name or "imported"
    domains = [d for d in sorted(root.iterdir()) if d.is_dir() and d.name in DOMAIN_TO_SCENARIO] if root.is_dir() else []
    if not domains:
        raise CaseError(f"{root}: no {'/'.join(DOMAIN_TO_SCENARIO)} folders; expected the public WorldOlympiad "
                        "layout <root>/<general|gaming|embodied>/<case_id>/prompt.json")
    suite = Suite(name=name, version="1", cases=[], description=f"imported from {root} (worldolympiad-damo layout)",
                  source=str(out))
    seen: set[str] = set()
    for domain in domains:
        for case_dir in sorted(p for p in domain.iterdir() if p.is_dir()):
            try:
                case = import_case(case_dir, DOMAIN_TO_SCENARIO[domain.name], suite=name, relative_to=out.parent)
            except (CaseError, ValueError, OSError) as e:
                suite.broken.append(BrokenItem(case_dir.name, f"{case_dir}: {e}"))
                continue
            if case.id in seen:
                suite.broken.append(BrokenItem(case.id, f"{case_dir}: duplicate case id {case.id!r}; rename the folder"))
                continue
            seen.add(case.id)
            suite.cases.append(case)
    if not suite.cases:
        raise CaseError(f"{root}: no importable case folders ({len(suite.broken)} skipped: "
                        + "; ".join(b.error for b in suite.broken[:3]) + ")")
    write_suite(out, name, suite.cases, description=suite.description)
    return out, suite


def import_case(case_dir: Path, scenario: str, *, suite: str = "", relative_to: Path | None = None) -> Case:
    """One ``<domain>/<case_id>/`` folder → a :class:`Case` (raises CaseError naming the problem)."""
    from worldolympiad.video.io import probe_video, read_chunk_timestamps

    raw_id = case_dir.name
    cid = re.sub(r"[^A-Za-z0-9_.\-]", "_", raw_id)
    if not cid[0].isalnum():
        cid = "c" + cid
    prompts = _read_prompts(case_dir / "prompt.json")
    ref = case_dir / f"ref_{raw_id}.mp4"
    gens = sorted(case_dir.glob(f"*_gen_{raw_id}.mp4"))
    probe_src = ref if ref.is_file() else (gens[0] if gens else None)
    if probe_src is None:
        raise CaseError(f"no ref_{raw_id}.mp4 and no *_gen_{raw_id}.mp4 to read fps/frames/size from; add the reference video")
    info = probe_video(probe_src)
    fps, n, h, w = float(info["fps"] or 0), int(info["num_frames"] or 0), int(info["height"]), int(info["width"])
    if n <= 0 or fps <= 0:  # some containers lack counts: decode to count
        from worldolympiad.video.io import read_video

        v = read_video(probe_src)
        n, fps = v.num_frames, v.fps
    chunks = _chunks_from_intervals(prompts, fps, n)
    if chunks is None and gens:
        ts = gens[0].with_name(gens[0].stem + "_chunk_timestamps.json")
        if ts.is_file():
            _, _, tchunks = read_chunk_timestamps(ts)
            if len(tchunks) == len(prompts) and probe_src == gens[0]:
                chunks = tuple(Chunk(i, c.frame_start, c.frame_end, prompts[i]["caption"], prompts[i]["action"])
                               for i, c in enumerate(tchunks))
    if chunks is None and prompts:
        k = min(len(prompts), n)
        chunks = even_chunks(n, k, [p["caption"] for p in prompts[:k]], [p["action"] for p in prompts[:k]])
    reference = None
    if ref.is_file():
        reference = os.path.relpath(ref.resolve(), (relative_to or case_dir).resolve())
    d = {
        "id": cid,
        "scenario": scenario,
        "suite": suite,
        "fps": fps,
        "num_frames": n,
        "resolution": [h, w],
        "prompt": " ".join(p["caption"] for p in prompts if p["caption"]).strip(),
        "chunks": [c.to_dict() for c in chunks or ()],
        "reference": reference,
        "metadata": {"source_layout": "worldolympiad-damo", "domain": case_dir.parent.name, "source_id": raw_id,
                     "models": [g.name[: -len(f"_gen_{raw_id}.mp4")] for g in gens]},
    }
    return Case.from_dict(d, base_dir=(relative_to or case_dir).resolve())


def _read_prompts(path: Path) -> list[dict[str, Any]]:
    """prompt.json → ``[{"caption", "action", "interval", "chunk_index"}]`` in chunk order."""
    if not path.is_file():
        raise CaseError(f"{path.name} not found; each case folder needs a prompt.json")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise CaseError(f"{path}: not valid JSON ({e.msg}, line {e.lineno}); fix the file") from e
    if isinstance(data, Mapping):
        for key in ("chunks", "prompts"):
            if isinstance(data.get(key), list):
                data = data[key]
                break
        else:
            if any(k in data for k in CAPTION_KEYS):
                data = [data]
            else:
                raise CaseError(f"{path}: expected a list of chunks or an object with 'chunks' or 'prompts', "
                                f"got keys {sorted(data)}")
    if not isinstance(data, list):
        raise CaseError(f"{path}: expected a list of chunks, got {type(data).__name__}")
    items: list[dict[str, Any]] = []
    for i, c in enumerate(data):
        if isinstance(c, str):
            items.append({"caption": c, "action": None, "interval": None, "chunk_index": i})
        elif isinstance(c, Mapping):
            caption = next((str(c[k]) for k in CAPTION_KEYS if isinstance(c.get(k), str)), "")
            items.append({"caption": caption, "action": _action(c.get("action")), "interval": c.get("interval"),
                          "chunk_index": int(c.get("chunk_index", i))})
        else:
            raise CaseError(f"{path}: chunk {i} must be a string or an object, got {type(c).__name__}")
    items.sort(key=lambda x: x["chunk_index"])
    return items


def _action(a: Any) -> str | dict[str, Any] | None:
    if a is None or isinstance(a, (str, dict)):
        return a
    if isinstance(a, (list, tuple)):
        return {"sequence": list(a)}
    return str(a)


def _interval_seconds(iv: Any) -> tuple[float, float] | None:
    if isinstance(iv, Sequence) and not isinstance(iv, str) and len(iv) == 2:
        return float(iv[0]), float(iv[1])
    if isinstance(iv, Mapping) and "start" in iv and "end" in iv:
        return float(iv["start"]), float(iv["end"])
    if isinstance(iv, str):
        m = re.match(r"^\s*([0-9.]+)\s*[-,:~]\s*([0-9.]+)\s*$", iv)
        if m:
            return float(m.group(1)), float(m.group(2))
    return None


def _chunks_from_intervals(prompts: list[dict[str, Any]], fps: float, n: int) -> tuple[Chunk, ...] | None:
    """Chunks from per-chunk ``interval`` seconds; ``None`` unless every chunk has a usable one."""
    if not prompts:
        return None
    spans = [_interval_seconds(p["interval"]) for p in prompts]
    if any(s is None for s in spans):
        return None
    chunks = []
    prev = 0
    for i, (p, (a, b)) in enumerate(zip(prompts, spans, strict=True)):  # type: ignore[misc]
        start = max(prev, min(n - 1, int(round(a * fps))))
        end = min(n, int(round(b * fps)))
        if end <= start:
            return None  # inconsistent intervals: fall back to timestamps / an even split
        chunks.append(Chunk(i, start, end, p["caption"], p["action"]))
        prev = end
    return tuple(chunks)
