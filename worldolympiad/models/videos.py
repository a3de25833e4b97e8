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

:func:`video_input_warnings` checks such a folder before scoring (``worldolympiad validate SUITE --videos DIR``,
and ``evaluate-model --model videos:DIR`` prints a summary): 4:2:0 chroma, lossy coding, another size, frame
rate or fewer frames than the case make the evidence weaker, and each warning says what it costs and the fix.

Video files are scored as they are (the evaluator links them into the run). An ``.npz`` of raw frames
(``worldolympiad generate --format npz``, for machines without a video encoder) is instead treated as a
model's fresh output: the evaluator stores it at the run's video settings and scores the decode.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
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
    RESOURCES = {"num_gpus": 0}  # no GPU: it reads files

    def __init__(self, arg: str | None, **options: Any) -> None:
        if not arg:
            raise ValueError("videos model needs a folder: --model videos:DIR (or videos:DIR#PREFIX for the public layout)")
        root, _, prefix = arg.partition("#")
        self.root = Path(root).expanduser()
        self.prefix = prefix or None
        if not self.root.is_dir():
            raise ModelError(f"videos:{arg}: folder {self.root} not found; pass the folder holding "
                             "<case_id>.mp4 files (or the public <domain>/<case_id>/ layout)")

    @classmethod
    def check(cls, arg: str | None) -> None:
        """Fail fast on a folder that is not there (before any run directory is made).

        Raises:
            ModelSpecError: no folder, a file instead of a folder, or a hub id.
        """
        from worldolympiad.models.base import ModelSpecError, looks_like_hub_id

        root = Path((arg or "").partition("#")[0]).expanduser()
        if not arg:
            raise ModelSpecError("--model videos: needs a folder: --model videos:DIR (or videos:DIR#PREFIX for the "
                                 "public layout)")
        if root.is_file():
            raise ModelSpecError(f"--model videos:{arg}: {root} is a file; pass the folder that holds the videos "
                                 f"(--model videos:{root.parent})")
        if not root.is_dir():
            if looks_like_hub_id(str(root)):
                raise ModelSpecError(f"--model videos:{arg}: {str(root)!r} looks like a Hugging Face hub id; videos: "
                                     "reads a local folder of <case_id>.mp4 files")
            raise ModelSpecError(f"--model videos:{arg}: folder {root.resolve()} not found; pass the folder holding "
                                 "<case_id>.mp4 files (or the public <domain>/<case_id>/ layout)")

    @classmethod
    def input_files(cls, arg: str | None, case: Case, seed: int = 0) -> dict[str, Path | None]:
        """The files this model reads for ``case`` and ``seed`` (fingerprinted on every row, so a replaced
        video recomputes its rows): ``video`` (``None`` when there is none yet) and ``chunk_timestamps``."""
        root, _, prefix = (arg or "").partition("#")
        try:
            video, ts = find_video(Path(root).expanduser(), prefix or None, case, seed)
        except ModelError:
            return {"video": None}
        return {"video": video, "chunk_timestamps": ts} if ts is not None else {"video": video}

    # ------------------------------------------------------------------ lookup
    def find(self, case: Case, seed: int = 0) -> tuple[Path, Path | None]:
        """Path of ``case``'s video for ``seed`` and of its chunk-timestamps file (or ``None``).

        Raises:
            ModelError: no file, or several candidate models (names the fix).
        """
        return find_video(self.root, self.prefix, case, seed)

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
            from worldolympiad.budgets import decode_limits
            from worldolympiad.generate import load_frames

            video = load_frames(path, case, **decode_limits(case))
            chunks = chunks or video.chunks
        else:
            from worldolympiad.budgets import decode_limits

            video = read_video(path, **decode_limits(case))  # the case's frames at most, within the pixel budget
        src_fps = video.metadata.get("retimed_from_fps")
        if chunks and src_fps:  # the timestamps count the file's frames; the video now holds the case's
            k = float(case.fps) / float(src_fps)
            chunks = tuple(Chunk(c.index, int(round(c.frame_start * k)), int(round(c.frame_end * k)), c.caption, c.action)
                           for c in chunks)
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


def find_video(root: Path, prefix: str | None, case: Case, seed: int = 0) -> tuple[Path, Path | None]:
    """Path of ``case``'s video for ``seed`` under ``root`` and of its chunk-timestamps file (or ``None``).

    Raises:
        ModelError: no file, or several candidate models (names the fix).
    """
    for name in (f"{case.id}__s{seed}", case.id):
        for ext in VIDEO_EXTS:
            p = root / f"{name}{ext}"
            if p.is_file():
                return p, _timestamps_for(p)
    folders = [root / d / case.id for d in PUBLIC_DOMAINS] + [root / case.id]
    for folder in folders:
        if not folder.is_dir():
            continue
        if prefix:
            p = folder / f"{prefix}_gen_{case.id}.mp4"
            if p.is_file():
                return p, _timestamps_for(p)
            continue
        found = sorted(folder.glob(f"*_gen_{case.id}.mp4"))
        if len(found) == 1:
            return found[0], _timestamps_for(found[0])
        if len(found) > 1:
            prefixes = [f.name[: -len(f"_gen_{case.id}.mp4")] for f in found]
            raise ModelError(f"{folder}: holds videos of several models ({', '.join(prefixes)}); "
                             f"pick one with --model videos:{root}#PREFIX")
    expected = f"{root}/{case.id}.mp4 (or {case.id}__s{seed}.mp4, .webm/.avi/.mkv/.gif/.npz)"
    if prefix:
        expected += f" or {root}/<domain>/{case.id}/{prefix}_gen_{case.id}.mp4"
    raise ModelError(f"no video for case {case.id!r}: expected {expected}; generate it or fix the folder")


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


# --------------------------------------------------------------- input checks


@dataclass(frozen=True)
class Coverage:
    """Which cases a ``videos:`` folder has a video for (checked before a run starts).

    Attributes:
        found: ids of cases with a video for every seed.
        missing: ids of cases without one (for some seed).
        renames: ``file name -> case id`` for files whose name is close to a case that lacks a video
            (a likely misnaming).
        files: how many video files the folder holds at its top level.
    """

    found: tuple[str, ...]
    missing: tuple[str, ...]
    renames: dict[str, str]
    files: int


def video_coverage(root: str | Path, cases: Sequence[Case], seeds: Sequence[int] = (0,),
                   prefix: str | None = None) -> Coverage:
    """Which of ``cases`` a ``videos:ROOT[#PREFIX]`` model finds a file for, without reading any."""
    import difflib

    root = Path(root).expanduser()
    found: list[str] = []
    missing: list[str] = []
    for case in cases:
        ok = True
        for seed in seeds:
            try:
                find_video(root, prefix, case, seed)
            except ModelError:
                ok = False
                break
        (found if ok else missing).append(case.id)
    files = sorted(p for p in root.iterdir() if p.is_file() and p.suffix.lower() in VIDEO_EXTS) if root.is_dir() else []
    ids = {c.id for c in cases}
    unmatched = {p.stem.split("__s")[0]: p.name for p in files if p.stem.split("__s")[0] not in ids}
    renames: dict[str, str] = {}
    for cid in missing:
        close = difflib.get_close_matches(cid, list(unmatched), n=1, cutoff=0.6)
        if close:
            renames[unmatched.pop(close[0])] = cid
    return Coverage(tuple(found), tuple(missing), renames, len(files))


@dataclass(frozen=True)
class InputWarning:
    """Evidence in a ``videos:`` folder will be weaker than it could be (a warning, never an error).

    Attributes:
        kind: ``chroma_420`` | ``lossy`` | ``size`` | ``resized`` | ``short`` | ``long`` | ``fps`` | ``missing``.
        case_id: the case the file belongs to.
        path: the video file (empty for ``missing``).
        message: what was found, what it costs and how to fix it.
    """

    kind: str
    case_id: str
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path or self.case_id}: {self.message}"

    @property
    def brief(self) -> str:
        """``kind: what was found`` (recorded on rows; the cost and the fix are in :data:`WARNING_TEXT`)."""
        return f"{self.kind}: {self.message.split(';')[0]}"


#: kind -> (what it costs, how to fix it); shared by the per-file and the summarised messages
WARNING_TEXT: dict[str, tuple[str, str]] = {
    "chroma_420": ("4:2:0 halves colour resolution in both directions, so 1-2 px objects and sprites lose their hue "
                   "and trackers that find agents and objects by colour lose them",
                   "write 4:4:4 (ffmpeg -pix_fmt yuv444p; imageio/diffusers: output_params=['-pix_fmt', 'yuv444p']) "
                   "or lossless (-qp 0, or libx264rgb), or hand over raw frames (.npz)"),
    "lossy": ("lossy compression blurs edges and adds blocking that optical flow, segmentation and drift signals "
              "read as motion or change",
              "encode at -qp 0 (lossless) or at least -crf 18, or hand over raw frames (.npz)"),
    "size": ("object boxes and camera intrinsics of the case are in the case's pixels, and small objects shrink "
             "further when the video is smaller",
             "render at the case's resolution"),
    "resized": ("it is scored at the case's resolution, area-resampled as it is decoded (the tracks' pixel "
                "tolerances are set there); another aspect ratio is stretched to the case's, as a pipeline that "
                "resizes the case's first frame to its own size stretches it",
                "nothing, if the model renders only at its own size; render at the case's resolution to be scored "
                "on exactly your frames"),
    "short": ("chunks past the video's end are dropped, their actions and captions go unjudged and the "
              "long-video track splits fewer frames",
              "generate the case's num_frames frames"),
    "long": ("frames past the case's num_frames are not decoded or scored",
             "generate the case's num_frames frames (trim the rest)"),
    "fps": ("it is scored on the case's clock: a faster video that lasts the case's duration gives the frames nearest "
            "to the case's frame times, any other one's frames are read as the case's frames one to one (its rate "
            "taken for an exporter's label: diffusers' export_to_video writes 10 fps unless told)",
            "write the case's num_frames frames at the case's fps"),
    "missing": ("the case gets a failed row for this model", "generate it, or fix the file name (<case_id>.mp4)"),
}


def _warn(kind: str, case_id: str, path: str, found: str) -> InputWarning:
    cost, fix = WARNING_TEXT[kind]
    return InputWarning(kind, case_id, path, f"{found}; {cost}. Fix: {fix}.")


def video_input_warnings(root: str | Path, cases: Sequence[Case], *, seed: int = 0,
                         prefix: str | None = None) -> list[InputWarning]:
    """Check the files a ``videos:ROOT[#PREFIX]`` model would serve for ``cases`` without decoding them whole.

    Reads each file's stream header (PyAV: codec, pixel format, x264 settings, size, frame count, fps) and
    warns about 4:2:0 chroma, lossy coding, a size other than the case's resolution, fewer frames than the
    case's ``num_frames`` and another frame rate. Raw ``.npz`` frames are exact by construction; only their
    shape is checked.

    Returns:
        one :class:`InputWarning` per finding, in case order.
    """
    model = VideosModel(f"{root}#{prefix}" if prefix else str(root))
    out: list[InputWarning] = []
    for case in cases:
        try:
            path, _ = model.find(case, seed)
        except ModelError as e:
            out.append(_warn("missing", case.id, "", str(e)))
            continue
        out.extend(check_video_file(path, case))
    return out


def check_video_file(path: Path, case: Case) -> list[InputWarning]:
    """:func:`video_input_warnings` for one file of ``case`` (its stream header only)."""
    if path.suffix.lower() == ".npz":
        from worldolympiad.generate import npz_shape

        try:
            shape = npz_shape(path)  # the header only: the frames may be GBs once decompressed
        except Exception as e:  # noqa: BLE001 - zipfile and numpy raise several types
            return [_warn("missing", case.id, str(path), f"cannot be read ({type(e).__name__}: {e})")]
        if shape is None or len(shape) < 3:
            return [_warn("missing", case.id, str(path), f"has no frames array [T, H, W, 3] (got {shape})")]
        n, h, w = int(shape[0]), int(shape[1]), int(shape[2])
        fps, chroma, lossless, codec, settings = float(case.fps), "4:4:4", True, "raw", ""
    else:
        from worldolympiad.video.io import VideoError, probe_encoding

        try:
            info = probe_encoding(path)
        except VideoError as e:
            return [_warn("missing", case.id, str(path), f"cannot be read ({e})")]
        n, h, w, fps = int(info["num_frames"]), int(info["height"]), int(info["width"]), float(info["fps"])
        chroma, lossless, codec, settings = info["chroma"], info["lossless"], info["codec"], info["settings"]
    out: list[InputWarning] = []
    if chroma == "4:2:0":
        out.append(_warn("chroma_420", case.id, str(path), f"{codec} with 4:2:0 chroma"))
    if lossless is False:
        import re

        rc = re.search(r"(?:^| )(crf=[\d.]+|qp=\d+)", settings)
        out.append(_warn("lossy", case.id, str(path), f"lossy {codec}" + (f" ({rc.group(1)})" if rc else "")))
    if n > case.num_frames:
        out.append(_warn("long", case.id, str(path), f"{n} frames, the case has {case.num_frames}"))
    return out + check_frames(case, str(path), n, (h, w), fps)


def check_frames(case: Case, path: str, num_frames: int, hw: tuple[int, int], fps: float) -> list[InputWarning]:
    """Size, length and frame rate of a video against its case (any model's output, not only files).

    ``hw`` is the size the model wrote: a video larger than its case on either side is ``resized`` to the case's
    resolution when it is read (:func:`worldolympiad.video.io.fit_within`), a smaller one is scored at its ``size``.
    """
    out: list[InputWarning] = []
    h, w = hw
    want_h, want_w = int(case.resolution[0]), int(case.resolution[1])
    if h > want_h or w > want_w:
        aspect = "" if abs(w / h - want_w / want_h) <= 0.01 * want_w / want_h else \
            f", its aspect ratio {w / h:.2f} stretched to {want_w / want_h:.2f}"
        out.append(_warn("resized", case.id, path, f"the video is {w}x{h} px, scored at the case's "
                                                   f"{want_w}x{want_h}{aspect}"))
    elif (h, w) != (want_h, want_w):
        out.append(_warn("size", case.id, path, f"the video is {w}x{h} px, the case asks for {want_w}x{want_h}"))
    if num_frames and num_frames < case.num_frames:
        out.append(_warn("short", case.id, path, f"{num_frames} frames, the case has {case.num_frames}"))
    if fps and abs(fps - float(case.fps)) > 0.01 * float(case.fps):
        out.append(_warn("fps", case.id, path, f"{fps:g} fps, the case runs at {float(case.fps):g}"))
    return out


def summarize_warnings(warnings: Sequence[InputWarning], total: int, examples: int = 3) -> list[str]:
    """One line per kind of finding: how many of ``total`` videos, a few file names, the cost and the fix."""
    lines = []
    for kind, (cost, fix) in WARNING_TEXT.items():
        hits = [w for w in warnings if w.kind == kind]
        if not hits:
            continue
        names = ", ".join(Path(w.path).name or w.case_id for w in hits[:examples]) + (", ..." if len(hits) > examples else "")
        detail = hits[0].message.split(";")[0]
        lines.append(f"{kind}: {len(hits)} of {total} video(s) ({names}; e.g. {detail}): {cost}. Fix: {fix}.")
    return lines
