"""LV-Bench-style items (captioned 2-3 s segments of minute-long videos) → :class:`Case` objects.

An *item* is ``{"id", "captions": [{"start", "end", "caption"}...], "video"?: path, "category"?}``
(times in seconds). Bundled slices live in ``data/slices/<name>.json``::

    {"name", "version", "description", "fps", "resolution": [H, W], "duration_sec",
     "videos": [item, ...]}

and :func:`cases_from_items` turns items into cases whose chunks are the caption segments, so
a model that switches prompts per chunk (Inferix) sees the LV-Bench captions in order.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from worldolympiad.types import Case, Chunk

SLICES = Path(__file__).with_name("data") / "slices"


@dataclass(frozen=True)
class Segment:
    start: float
    end: float
    caption: str


@dataclass(frozen=True)
class LVItem:
    """One LV-Bench video: id, captioned segments, optional source video path."""

    id: str
    segments: tuple[Segment, ...]
    video: str | None = None
    category: str = ""


@dataclass(frozen=True)
class LVSlice:
    name: str
    version: str
    description: str
    fps: float
    resolution: tuple[int, int]
    duration_sec: float
    items: tuple[LVItem, ...]


def slice_names() -> list[str]:
    return sorted(p.stem for p in SLICES.glob("*.json"))


def load_slice(name_or_path: str | Path) -> LVSlice:
    """A bundled slice by name (``ci``, ``mini``) or any slice/prompts JSON file.

    Raises:
        ValueError: unknown name (lists the bundled ones) or malformed file (names the field).
    """
    p = Path(name_or_path)
    if not p.suffix and not p.exists():
        p = SLICES / f"{name_or_path}.json"
        if not p.exists():
            raise ValueError(f"unknown LV-Bench slice {str(name_or_path)!r}; bundled: {', '.join(slice_names())} "
                             "(or pass a slice JSON file with --prompts)")
    try:
        d = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"{p}: cannot read LV-Bench slice ({e})") from e
    if isinstance(d, list):
        d = {"videos": d}
    try:
        items = tuple(item_from_dict(v) for v in d["videos"])
    except KeyError as e:
        raise ValueError(f"{p}: missing key {e}; a slice is {{'videos': [{{'id', 'captions': [...]}}]}}") from e
    if not items:
        raise ValueError(f"{p}: the slice has no videos")
    dur = float(d.get("duration_sec") or max(s.end for it in items for s in it.segments))
    res = d.get("resolution", [128, 128])
    return LVSlice(str(d.get("name", p.stem)), str(d.get("version", "1")), str(d.get("description", "")),
                   float(d.get("fps", 16)), (int(res[0]), int(res[1])), dur, items)


CAPTION_KEYS = ("caption", "text", "prompt", "description")
START_KEYS = ("start", "start_sec", "start_time", "begin")
END_KEYS = ("end", "end_sec", "end_time", "stop")


def _first(d: Mapping[str, Any], keys: Sequence[str]) -> Any:
    for k in keys:
        if k in d and d[k] is not None:
            return d[k]
    return None


def segments_from_list(caps: Sequence[Any], default_len: float = 2.5) -> tuple[Segment, ...]:
    """Caption entries (strings or dicts with times / ``interval``) → segments; missing times are
    laid end to end ``default_len`` seconds each (LV-Bench segments are 2-3 s)."""
    out: list[Segment] = []
    t = 0.0
    for i, c in enumerate(caps):
        if isinstance(c, str):
            out.append(Segment(t, t + default_len, c))
            t += default_len
            continue
        if not isinstance(c, Mapping):
            raise ValueError(f"caption {i}: expected a string or an object, got {type(c).__name__}")
        text = _first(c, CAPTION_KEYS)
        if text is None:
            raise ValueError(f"caption {i}: no caption text (one of {CAPTION_KEYS})")
        start, end = _first(c, START_KEYS), _first(c, END_KEYS)
        iv = c.get("interval") or c.get("timestamp")
        if (start is None or end is None) and isinstance(iv, (list, tuple)) and len(iv) == 2:
            start, end = iv
        start = t if start is None else float(start)
        end = start + default_len if end is None else float(end)
        if end <= start:
            raise ValueError(f"caption {i}: end {end} <= start {start}")
        out.append(Segment(start, end, str(text)))
        t = end
    return tuple(out)


def item_from_dict(d: Mapping[str, Any]) -> LVItem:
    vid = _first(d, ("id", "video_id", "vid", "name"))
    if vid is None:
        raise KeyError("id")
    caps = _first(d, ("captions", "segments", "chunks", "clips", "prompts"))
    if caps is None:
        raise KeyError("captions")
    return LVItem(str(vid), segments_from_list(caps), _first(d, ("video", "video_path", "path", "file")),
                  str(d.get("category", "")))


def cases_from_items(items: Sequence[LVItem], *, fps: float, resolution: tuple[int, int], duration_sec: float | None = None,
                     suite: str = "", tracks: tuple[str, ...] = ("longvideo",)) -> list[Case]:
    """One case per item; chunks = caption segments clipped to the duration (frames at ``fps``)."""
    cases = []
    for it in items:
        dur = duration_sec or max(s.end for s in it.segments)
        n = int(round(dur * fps))
        chunks: list[Chunk] = []
        for s in it.segments:
            a, b = int(round(s.start * fps)), min(n, int(round(s.end * fps)))
            if b > a and a < n:
                chunks.append(Chunk(len(chunks), a, b, s.caption, None))
        if not chunks:
            raise ValueError(f"LV-Bench item {it.id!r}: no caption segment falls inside {dur} s")
        # the segments must tile the video: stretch the last one to the end
        last = chunks[-1]
        chunks[-1] = Chunk(last.index, last.frame_start, n, last.caption, None)
        cases.append(Case(id=it.id, scenario="realworld", fps=float(fps), num_frames=n, resolution=resolution,
                          prompt=chunks[0].caption, suite=suite, chunks=tuple(chunks), reference=it.video,
                          tracks=tracks, metadata={"lvbench": {"category": it.category, "segments": len(it.segments)}}))
    return cases
