"""``videos:DIR[#PREFIX]`` — pre-generated videos on disk, found by case id.

Two layouts are recognised, tried in this order for a case ``C`` and seed ``S``:

1. Flat: ``DIR/C__sS.<ext>`` (one file per seed), then ``DIR/C.<ext>`` (the same file
   for every seed), ``<ext>`` one of mp4, webm, avi, mkv, gif, npz; a ``<stem>_chunk_timestamps.json``
   beside the file gives its chunk boundaries (an ``evaluate-model`` run's ``videos/`` folder and
   ``worldolympiad generate`` write one).
2. The public WorldOlympiad layout (REFERENCE.md §A)::

       DIR/<general|gaming|embodied>/C/<PREFIX>_gen_C.mp4
       DIR/<general|gaming|embodied>/C/<PREFIX>_gen_C_chunk_timestamps.json   (optional)

   ``#PREFIX`` picks the model when a case folder holds several models' videos; without
   it the folder must hold exactly one ``*_gen_C.mp4``. Chunk timestamps, when present,
   give the chunk boundaries of the video (captions/actions come from the case).

Video files are scored as they are (the evaluator links them into the run). An ``.npz`` of raw frames
(``worldolympiad generate --format npz``, for machines without a video encoder) is instead treated as a
model's fresh output: the evaluator stores it at the run's video settings and scores the decode.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from worldolympiad.models.base import ModelError, WorldModel
from worldolympiad.types import Case, Chunk, Video

logger = logging.getLogger(__name__)

VIDEO_EXTS: tuple[str, ...] = (".mp4", ".webm", ".avi", ".mkv", ".gif", ".npz")
PUBLIC_DOMAINS: tuple[str, ...] = ("general", "gaming", "embodied")


class VideosModel(WorldModel):
    """Serve pre-generated video files as a model's output.

    Args:
        arg: ``DIR`` or ``DIR#PREFIX`` (the part after ``videos:``).
        **options: ignored (accepted so every adapter takes the same options).
    """

    interactive = False

    def __init__(self, arg: str | None, **options: Any) -> None:
        if not arg:
            raise ValueError("videos model needs a folder: --model videos:DIR (or videos:DIR#PREFIX for the public layout)")
        root, _, prefix = arg.partition("#")
        self.root = Path(root).expanduser()
        self.prefix = prefix or None
        if not self.root.is_dir():
            raise ModelError(f"videos:{arg}: folder {self.root} not found; pass the folder holding "
                             "<case_id>.mp4 files (or the public <domain>/<case_id>/ layout)")

    # ------------------------------------------------------------------ lookup
    def find(self, case: Case, seed: int = 0) -> tuple[Path, Path | None]:
        """Path of ``case``'s video for ``seed`` and of its chunk-timestamps file (or ``None``).

        Raises:
            ModelError: no file, or several candidate models (names the fix).
        """
        for name in (f"{case.id}__s{seed}", case.id):
            for ext in VIDEO_EXTS:
                p = self.root / f"{name}{ext}"
                if p.is_file():
                    return p, _timestamps_for(p)
        folders = [self.root / d / case.id for d in PUBLIC_DOMAINS] + [self.root / case.id]
        for folder in folders:
            if not folder.is_dir():
                continue
            if self.prefix:
                p = folder / f"{self.prefix}_gen_{case.id}.mp4"
                if p.is_file():
                    return p, _timestamps_for(p)
                continue
            found = sorted(folder.glob(f"*_gen_{case.id}.mp4"))
            if len(found) == 1:
                return found[0], _timestamps_for(found[0])
            if len(found) > 1:
                prefixes = [f.name[: -len(f"_gen_{case.id}.mp4")] for f in found]
                raise ModelError(f"{folder}: holds videos of several models ({', '.join(prefixes)}); "
                                 f"pick one with --model videos:{self.root}#PREFIX")
        expected = f"{self.root}/{case.id}.mp4 (or {case.id}__s{seed}.mp4, .webm/.avi/.mkv/.gif/.npz)"
        if self.prefix:
            expected += f" or {self.root}/<domain>/{case.id}/{self.prefix}_gen_{case.id}.mp4"
        raise ModelError(f"no video for case {case.id!r}: expected {expected}; generate it or fix the folder")

    def generate(self, case: Case, seed: int = 0) -> Video:
        from worldolympiad.video.io import read_chunk_timestamps, read_video

        path, ts = self.find(case, seed)
        chunks: tuple[Chunk, ...] = ()
        raw = path.suffix.lower() == ".npz"
        meta: dict[str, Any] = {"model": self.name, "path": str(path)}
        if not raw:
            # "stored_file": these frames are exactly the decode of that file, so the evaluator
            # links it into the run instead of re-encoding (lossless pass-through). Raw frames have
            # none, so the evaluator encodes them at the run's video settings.
            meta["stored_file"] = str(path)
        if ts is not None:
            captions = [c.caption for c in case.chunks]
            actions = [c.action for c in case.chunks]
            _, _, chunks = read_chunk_timestamps(ts, captions, actions)
            meta["chunk_timestamps"] = str(ts)
        if raw:
            from worldolympiad.generate import load_frames

            video = load_frames(path, case)
            chunks = chunks or video.chunks
        else:
            video = read_video(path)
        if not chunks:
            chunks = _clip_chunks(case.chunks, video.num_frames)
        else:
            chunks = _clip_chunks(chunks, video.num_frames)
        video.chunks = chunks
        video.metadata.update(meta)
        if video.num_frames != case.num_frames:
            video.metadata["frame_count_mismatch"] = {"case": case.num_frames, "video": video.num_frames}
            logger.info("%s: %d frames, case %s expects %d", path, video.num_frames, case.id, case.num_frames)
        return video


def _timestamps_for(video_path: Path) -> Path | None:
    p = video_path.with_name(video_path.stem + "_chunk_timestamps.json")
    return p if p.is_file() else None


def _clip_chunks(chunks: tuple[Chunk, ...], num_frames: int) -> tuple[Chunk, ...]:
    """Chunks restricted to ``[0, num_frames)``; chunks entirely past the end are dropped."""
    out = []
    for c in chunks:
        if c.frame_start >= num_frames:
            break
        out.append(Chunk(c.index, c.frame_start, min(c.frame_end, num_frames), c.caption, c.action))
    return tuple(out)
