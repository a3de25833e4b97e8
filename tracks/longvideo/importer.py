"""Import an LV-Bench-style dataset folder into a suite JSON file.

The upstream LV-Bench release documents its layout as "TODO", so three common shapes are read
(one item = one video with its 2-3 s captioned segments):

1. **Metadata file(s)** at the root: ``*.json`` (a list, or ``{"videos"|"items"|"data": [...]}``)
   or ``*.jsonl``; each item ``{id|video_id|vid|name, video|video_path|path|file?,
   captions|segments|chunks|clips|prompts: [str | {caption|text|prompt|description,
   start|start_sec|start_time, end|end_sec|end_time | interval: [a, b]}]}``.
2. **A folder per video**: ``<root>/<id>/`` with one video file and ``captions.json`` (or
   ``prompt.json`` / ``meta.json``) holding the caption list or an item.
3. **Parallel folders**: ``<root>/videos/<id>.mp4`` with ``<root>/captions/<id>.json`` or
   ``<id>.txt`` (one caption per line, optionally ``start end<TAB>caption``).

fps, frame count and resolution come from probing each video; items without a video get the
bundled slice defaults (16 fps, 128 px, duration = last segment end) so a model can generate them.
"""

from __future__ import annotations

import contextlib
import json
import logging
from pathlib import Path
from typing import Any

from tracks.longvideo.lvbench import LVItem, cases_from_items, item_from_dict
from worldolympiad.types import Case

logger = logging.getLogger(__name__)

VIDEO_EXTS = (".mp4", ".webm", ".avi", ".mkv", ".mov")
CAPTION_FILES = ("captions.json", "prompt.json", "prompts.json", "meta.json")


class LVBenchImportError(ValueError):
    """The folder does not look like any supported LV-Bench layout."""


def _items_from_json(obj: Any, where: Path) -> list[dict[str, Any]]:
    if isinstance(obj, dict):
        for k in ("videos", "items", "data"):
            if isinstance(obj.get(k), list):
                return list(obj[k])
        if isinstance(obj.get("captions") or obj.get("segments"), list):
            return [obj]
        # {id: item-or-caption-list}
        if obj and all(isinstance(v, (dict, list)) for v in obj.values()):
            return [{"id": k, **v} if isinstance(v, dict) else {"id": k, "captions": v} for k, v in obj.items()]
    if isinstance(obj, list):
        return list(obj)
    raise LVBenchImportError(f"{where}: expected a list of items or {{'videos': [...]}}")


def _read_txt_captions(path: Path) -> list[Any]:
    caps: list[Any] = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        if "\t" in line:
            times, text = line.split("\t", 1)
            parts = times.replace("-", " ").split()
            if len(parts) == 2:
                caps.append({"start": float(parts[0]), "end": float(parts[1]), "caption": text.strip()})
                continue
        caps.append(line.strip())
    return caps


def _find_video(folder: Path, stem: str | None = None) -> Path | None:
    for ext in VIDEO_EXTS:
        if stem is not None and (folder / f"{stem}{ext}").exists():
            return folder / f"{stem}{ext}"
    vids = sorted(p for p in folder.iterdir() if p.suffix.lower() in VIDEO_EXTS) if stem is None else []
    return vids[0] if len(vids) == 1 else None


def discover(root: Path) -> tuple[list[LVItem], list[str]]:
    """Every item found under ``root`` and the problems met (one string per skipped entry)."""
    items: list[LVItem] = []
    problems: list[str] = []

    def add(d: dict[str, Any], where: str, base: Path) -> None:
        try:
            it = item_from_dict(d)
        except (KeyError, ValueError) as e:
            problems.append(f"{where}: {e}")
            return
        video = it.video
        if video is None:
            found = _find_video(base / "videos", it.id) if (base / "videos").is_dir() else None
            found = found or _find_video(base, it.id)
            video = str(found) if found else None
        elif not Path(video).is_absolute():
            video = str(base / video)
        items.append(LVItem(it.id, it.segments, video, it.category))

    meta = sorted(p for p in root.glob("*.json*") if p.suffix in (".json", ".jsonl"))
    for m in meta:
        try:
            if m.suffix == ".jsonl":
                rows = [json.loads(line) for line in m.read_text().splitlines() if line.strip()]
            else:
                rows = _items_from_json(json.loads(m.read_text()), m)
        except (json.JSONDecodeError, LVBenchImportError) as e:
            problems.append(f"{m}: {e}")
            continue
        for i, r in enumerate(rows):
            if isinstance(r, dict):
                add(r, f"{m.name}[{i}]", root)
    if not items and (root / "captions").is_dir():
        for cap in sorted((root / "captions").iterdir()):
            if cap.suffix == ".json":
                obj = json.loads(cap.read_text())
                caps = obj if isinstance(obj, list) else obj.get("captions") or obj.get("segments") or []
            elif cap.suffix == ".txt":
                caps = _read_txt_captions(cap)
            else:
                continue
            add({"id": cap.stem, "captions": caps}, str(cap), root)
    if not items:
        for folder in sorted(p for p in root.iterdir() if p.is_dir()):
            caption_file = next((folder / n for n in CAPTION_FILES if (folder / n).exists()), None)
            if caption_file is None:
                continue
            obj = json.loads(caption_file.read_text())
            d = obj if isinstance(obj, dict) and ("captions" in obj or "segments" in obj) else {"captions": obj}
            if isinstance(d.get("captions"), dict):
                d = {"captions": d["captions"].get("chunks") or d["captions"].get("prompts") or []}
            d = {"id": folder.name, **d}
            if "video" not in d:
                v = _find_video(folder)
                if v is not None:
                    d["video"] = str(v)
            add(d, str(caption_file), folder)
    return items, problems


def import_lvbench(root: str | Path, out: str | Path | None = None, *, fps: float = 16.0,
                   resolution: tuple[int, int] = (128, 128)) -> Path:
    """Convert an LV-Bench-style folder into a suite JSON (cases with chunks = caption segments).

    Args:
        root: dataset folder (see the module docstring for the layouts).
        out: suite file to write (default ``<root>/lvbench_suite.json``).
        fps, resolution: used for items without a video file.

    Returns:
        The suite file path. Skipped items are listed in the suite's ``description`` and logged.

    Raises:
        LVBenchImportError: nothing importable was found (names the layouts looked for).
    """
    from worldolympiad.suites import write_suite
    from worldolympiad.video.io import probe_video

    root = Path(root)
    if not root.is_dir():
        raise LVBenchImportError(f"{root} is not a folder; pass the LV-Bench dataset root")
    items, problems = discover(root)
    if not items:
        raise LVBenchImportError(
            f"{root}: no LV-Bench items found. Expected metadata *.json/*.jsonl at the root, "
            f"<id>/{{video, captions.json}} folders, or videos/ + captions/ folders. Problems: {problems or 'none'}")
    out = Path(out) if out is not None else root / "lvbench_suite.json"
    cases: list[Case] = []
    for it in items:
        try:
            if it.video and Path(it.video).exists():
                info = probe_video(it.video)
                f = info["fps"] or fps
                dur = info["num_frames"] / f if info["num_frames"] else None
                rel = Path(it.video).resolve()
                with contextlib.suppress(ValueError):  # outside the suite's folder: keep it absolute
                    rel = rel.relative_to(out.parent.resolve())
                item = LVItem(it.id, it.segments, str(rel), it.category)
                cases += cases_from_items([item], fps=f, resolution=(info["height"], info["width"]), duration_sec=dur,
                                          suite=out.stem, tracks=("longvideo", "interaction"))
            else:
                if it.video:
                    problems.append(f"{it.id}: video {it.video} not found; imported without a reference")
                item = LVItem(it.id, it.segments, None, it.category)
                cases += cases_from_items([item], fps=fps, resolution=resolution, suite=out.stem,
                                          tracks=("longvideo", "interaction"))
        except Exception as e:  # noqa: BLE001 - one bad item never stops the import
            problems.append(f"{it.id}: {type(e).__name__}: {e}")
    for p in problems:
        logger.warning("lvbench import: %s", p)
    desc = f"LV-Bench import of {root} ({len(cases)} videos)" + (f"; skipped: {'; '.join(problems)}" if problems else "")
    return write_suite(out, out.stem, cases, description=desc)
