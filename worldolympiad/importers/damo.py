"""Import the public WorldOlympiad layout (REFERENCE.md §A) into a suite file.

Layout::

    <root>/<general|gaming|embodied>/<case_id>/
        prompt.json          list of chunks, or {"chunks"|"prompts": [...]}; each chunk a string or
                             {caption|prompt|text|description, action?, interval?, chunk_index?}
        ref_<case_id>.mp4    reference video → case.reference
        <prefix>_gen_<case_id>.mp4 (+ _chunk_timestamps.json)   generated videos (scored with
                             ``--model videos:<root>#<prefix>``)

fps, frame count and resolution come from probing the reference (or, without one, the
first generated video). Chunk frame ranges:

* with a reference, each chunk's ``interval``, read as the layout writes it: a half-open time
  range on the reference's clock, ``"[00:00, 00:15)"`` or ``"00:00-00:04"`` (``SS``, ``MM:SS`` or
  ``HH:MM:SS``, fractions allowed; ``,`` or ``-`` between), or our own ``[start, end]`` /
  ``{"start", "end"}`` in seconds; ``[a, b)`` → frames ``round(a*fps)`` .. ``round(b*fps)``
  (exclusive). An interval that cannot be read, that only some chunks have, that overlaps
  the previous one or that runs past the reference refuses the case (naming the chunk);
  it is never replaced by a guess.
* without a reference, the first generated video's ``*_chunk_timestamps.json`` when it has one
  (the frames are that video's; ``frame_end`` exclusive, see
  :func:`worldolympiad.video.io.read_chunk_timestamps`), else the intervals;
* one chunk → the whole video; several chunks without any timing → an even split, recorded
  as such in ``metadata["chunk_boundaries"]`` and reported by ``worldolympiad import``.

Domains map to scenarios: general → realworld, gaming → gaming, embodied → robotics.
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
    chunks: tuple[Chunk, ...] | None = None
    boundaries = ""
    ts = gens[0].with_name(gens[0].stem + "_chunk_timestamps.json") if gens else None
    if ts is not None and probe_src == gens[0] and ts.is_file():
        # No reference: the frames are the generated video's, and its timestamps say where each chunk
        # lies in it (prompt.json's intervals are times on the source video, which may differ).
        _, _, tchunks = read_chunk_timestamps(ts)
        if len(tchunks) != len(prompts):
            raise CaseError(f"{ts.name} has {len(tchunks)} chunks but prompt.json has {len(prompts)}; "
                            "make them match")
        chunks = tuple(Chunk(i, c.frame_start, c.frame_end, prompts[i]["caption"], prompts[i]["action"])
                       for i, c in enumerate(tchunks))
        boundaries = f"chunk timestamps ({ts.name})"
    else:
        chunks = _chunks_from_intervals(prompts, fps, n, case_dir / "prompt.json")
        boundaries = "prompt.json intervals"
    if chunks is None and prompts:
        if len(prompts) > n:
            raise CaseError(f"prompt.json has {len(prompts)} chunks but the video has only {n} frames")
        chunks = even_chunks(n, len(prompts), [p["caption"] for p in prompts], [p["action"] for p in prompts])
        boundaries = ("whole video" if len(prompts) == 1 else
                      "even split (prompt.json gives no intervals; add \"interval\": \"[MM:SS, MM:SS)\" per chunk)")
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
                     "models": [g.name[: -len(f"_gen_{raw_id}.mp4")] for g in gens],
                     "chunk_boundaries": boundaries},
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


_TIME_RANGE = re.compile(r"^[\[(]?\s*([0-9:.]+)\s*(?:,|-)\s*([0-9:.]+)\s*[\])]?$")
INTERVAL_FORMS = "'[MM:SS, MM:SS)', 'MM:SS-MM:SS' (SS or HH:MM:SS also), [start_s, end_s] or {\"start\", \"end\"}"


def parse_time(text: str) -> float:
    """``"SS[.f]"``, ``"MM:SS[.f]"`` or ``"HH:MM:SS[.f]"`` → seconds (ValueError otherwise)."""
    parts = text.strip().split(":")
    if not 1 <= len(parts) <= 3 or any(not p for p in parts):
        raise ValueError(f"not a time: {text!r}")
    seconds = 0.0
    for p in parts[:-1]:
        if not p.isdigit():
            raise ValueError(f"not a time: {text!r}")
        seconds = seconds * 60 + int(p)
    last = float(parts[-1])
    if len(parts) > 1 and last >= 60:
        raise ValueError(f"not a time: {text!r} (seconds >= 60)")
    return seconds * 60 + last if len(parts) > 1 else last


def parse_interval(iv: Any) -> tuple[float, float]:
    """An ``interval`` of prompt.json → ``(start_s, end_s)``, half-open.

    Raises:
        ValueError: not one of :data:`INTERVAL_FORMS`, or ``end <= start``.
    """
    if isinstance(iv, str):
        m = _TIME_RANGE.match(iv.strip())
        if not m:
            raise ValueError(f"{iv!r} is not a time range")
        a, b = parse_time(m.group(1)), parse_time(m.group(2))
    elif isinstance(iv, Mapping) and "start" in iv and "end" in iv:
        a, b = float(iv["start"]), float(iv["end"])
    elif isinstance(iv, Sequence) and not isinstance(iv, (str, bytes)) and len(iv) == 2:
        a, b = float(iv[0]), float(iv[1])
    else:
        raise ValueError(f"{iv!r} is not a time range")
    if not b > a >= 0:
        raise ValueError(f"{iv!r} ends at or before it starts")
    return a, b


def _chunks_from_intervals(prompts: list[dict[str, Any]], fps: float, n: int, path: Path) -> tuple[Chunk, ...] | None:
    """Chunks from per-chunk ``interval``; ``None`` when no chunk has one; CaseError when unusable."""
    have = [p["interval"] is not None for p in prompts]
    if not any(have):
        return None
    if not all(have):
        missing = [i for i, h in enumerate(have) if not h]
        raise CaseError(f"{path.name}: chunk(s) {missing} have no interval while others do; give every chunk "
                        f"an interval ({INTERVAL_FORMS}) or none")
    chunks: list[Chunk] = []
    for i, p in enumerate(prompts):
        try:
            a, b = parse_interval(p["interval"])
        except (TypeError, ValueError) as e:
            raise CaseError(f"{path.name}: chunk {i} interval cannot be read ({e}); expected {INTERVAL_FORMS}") from e
        start, end = int(round(a * fps)), int(round(b * fps))
        if end > n + 1:
            raise CaseError(f"{path.name}: chunk {i} interval {p['interval']!r} ends at {b:g} s (frame {end}) but "
                            f"the reference has {n} frames ({n / fps:.3f} s at {fps:g} fps); intervals are times "
                            "on the reference video")
        end = min(end, n)
        if chunks and start < chunks[-1].frame_end:
            raise CaseError(f"{path.name}: chunk {i} interval {p['interval']!r} starts at frame {start}, inside "
                            f"chunk {i - 1} (frames {chunks[-1].frame_start}-{chunks[-1].frame_end - 1}); "
                            "intervals are half-open [start, end) and must not overlap")
        if end <= start:
            raise CaseError(f"{path.name}: chunk {i} interval {p['interval']!r} is shorter than one frame "
                            f"at {fps:g} fps")
        chunks.append(Chunk(i, start, end, p["caption"], p["action"]))
    return tuple(chunks)
