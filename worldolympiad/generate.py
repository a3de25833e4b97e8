"""Generate a suite's videos with a model, without scoring them (``worldolympiad generate``).

Generation and scoring can then run on different machines: generate where the model runs fast (a GPU
box, perhaps without a video encoder), bring the folder back, and score it anywhere with
``evaluate-model --model videos:DIR --suite SUITE``. Files are named the way ``videos:DIR`` looks them
up (``<case_id>__s<seed>.<ext>``). Two formats:

* ``mp4`` (default): H.264 at the evaluator's storage settings (``video.pix_fmt`` / ``video.qp``;
  yuv444p at constant quantizer 18), with ``<case_id>__s<seed>_chunk_timestamps.json`` beside it.
  ``videos:DIR`` scores these files as they are: the frames an ``evaluate-model`` run of the model
  itself would have stored and scored.
* ``npz``: the raw frames (``frames`` uint8 ``[T, H, W, 3]``, ``fps``, ``chunk_frames`` ``[[start, end), ...]``).
  It needs no video encoder (PyAV). ``videos:DIR`` hands them to the evaluator as a model's fresh
  output, so the run stores them at its own video settings and scores the decode, as above.

A file already written is kept (``overwrite=True`` makes it again), so a stopped run resumes where it
stopped. One case failing does not stop the others. ``generate.json`` in the folder is rewritten after
every case: the model, the device, and each case's status, seconds and error.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from worldolympiad.types import Case, Chunk, Video

logger = logging.getLogger(__name__)

FORMATS = ("mp4", "npz")
MANIFEST = "generate.json"


def output_name(case_id: str, seed: int, fmt: str) -> str:
    """The file name ``videos:DIR`` looks up for ``case_id`` at ``seed``."""
    return f"{case_id}__s{seed}.{fmt}"


def save_frames(path: str | Path, video: Video) -> Path:
    """Write ``video``'s raw frames, fps and chunk boundaries to ``path`` (an ``.npz``), atomically."""
    path = Path(path)
    chunk_frames = np.array([[c.frame_start, c.frame_end] for c in video.chunks], dtype=np.int64).reshape(-1, 2)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as f:
        np.savez_compressed(f, frames=np.asarray(video.frames, dtype=np.uint8), fps=np.float64(video.fps),
                            chunk_frames=chunk_frames)
    os.replace(tmp, path)
    return path


def npz_shape(path: str | Path, name: str = "frames") -> tuple[int, ...] | None:
    """Shape of array ``name`` in an ``.npz`` from its header alone (nothing is decompressed past it);
    ``None`` when there is no such array. A compressed array of zeros can be a few KB that loads to GBs.

    Raises:
        OSError, ValueError, zipfile.BadZipFile: not a readable ``.npz``.
    """
    import zipfile

    with zipfile.ZipFile(path) as zf:
        member = f"{name}.npy"
        if member not in zf.namelist():
            return None
        with zf.open(member) as f:
            version = np.lib.format.read_magic(f)
            shape, _, _ = (np.lib.format.read_array_header_1_0(f) if version == (1, 0)
                           else np.lib.format.read_array_header_2_0(f))
    return tuple(int(x) for x in shape)


def load_frames(path: str | Path, case: Case | None = None, *, max_frames: int | None = None,
                max_pixels: int | None = None, max_size: tuple[int, int] | None = None,
                clock: float | None = None) -> Video:
    """Read a :func:`save_frames` file back; chunk captions and actions come from ``case``.

    Args:
        max_frames: keep at most this many frames (a case's ``num_frames``).
        max_pixels: refuse a file whose frames hold more pixels (``T x H x W``), read from the array's
            header before anything is decompressed (:func:`worldolympiad.budgets.decode_limits`).
        max_size: ``(h, w)``: frames larger on either side are resampled to it
            (:func:`worldolympiad.video.io.fit_within`, as :func:`~worldolympiad.video.io.read_video` does);
            ``metadata["resized_from"]`` then holds the source ``[h, w]``.
        clock: a case's frame rate: frames at another rate are put on the case's timeline as
            :func:`~worldolympiad.video.io.read_video` puts a file's.

    Raises:
        VideoError: the file is not such an ``.npz`` (names the missing array), or is past ``max_pixels``.
    """
    import zipfile

    from worldolympiad.video.io import VideoError

    path = Path(path)
    try:
        shape = npz_shape(path) if max_pixels is not None else None
        if max_pixels is not None and shape is not None and len(shape) >= 3 and int(np.prod(shape[:3])) > max_pixels:
            raise VideoError(f"{path}: frames {list(shape)} hold {int(np.prod(shape[:3])):,} pixels, past the budget "
                             f"of {max_pixels:,} for its case; save the case's frames at its resolution (or raise "
                             "WORLDOLYMPIAD_MAX_PIXELS where the machine holds it)")
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError, zipfile.BadZipFile) as e:
        if isinstance(e, VideoError):
            raise
        raise VideoError(f"{path}: not a readable .npz of frames ({e})") from e
    missing = [k for k in ("frames", "fps") if k not in arrays]
    if missing:
        raise VideoError(f"{path}: no {' or '.join(map(repr, missing))} array (it has {sorted(arrays)}); write "
                         "frame files with `worldolympiad generate --format npz`")
    from worldolympiad.video.io import case_timeline, fit_within, on_clock

    frames, fps = arrays["frames"], float(arrays["fps"])
    bounds = arrays.get("chunk_frames", np.zeros((0, 2), dtype=np.int64))
    if frames.dtype != np.uint8 or frames.ndim != 4 or frames.shape[-1] != 3 or not len(frames):
        raise VideoError(f"{path}: frames must be uint8 [T, H, W, 3] with T > 0, got {frames.dtype} {frames.shape}")
    wanted = case_timeline(fps, clock, max_frames)
    retimed = wanted is not None and len(frames) > wanted[-1]
    if retimed:
        frames = frames[wanted]
        bounds = np.zeros((0, 2), dtype=np.int64)  # the file's chunk frames are not the case's: the case's chunks
    else:
        frames = frames[:max_frames] if max_frames is not None else frames
    fps, timing = on_clock(fps, clock, retimed)
    metadata: dict[str, object] = dict(timing)
    src = case.chunks if case is not None else ()
    chunks = tuple(Chunk(i, int(s), int(e), src[i].caption if i < len(src) else "",
                         src[i].action if i < len(src) else None) for i, (s, e) in enumerate(bounds))
    if max_size is not None and (frames.shape[1] > max_size[0] or frames.shape[2] > max_size[1]):
        metadata["resized_from"] = [int(frames.shape[1]), int(frames.shape[2])]
        frames = np.stack([fit_within(f, max_size) for f in frames])
    return Video(frames=frames, fps=fps, chunks=chunks, source=str(path), metadata=metadata)


def _write(path: Path, video: Video, fmt: str, pix_fmt: str, qp: int) -> None:
    if fmt == "npz":
        save_frames(path, video)
        return
    from worldolympiad.video.io import write_chunk_timestamps, write_video

    write_video(path, video.frames, video.fps, qp=qp, pix_fmt=pix_fmt)  # atomic: <path>.part, then renamed
    if video.chunks:
        write_chunk_timestamps(path.with_name(path.stem + "_chunk_timestamps.json"), path.name, video.fps,
                               len(video.frames), video.chunks)


def _selected(cases: Sequence[Case], tracks: Iterable[str] | None) -> list[Case]:
    if not tracks:
        return list(cases)
    wanted = set(tracks)
    return [c for c in cases if wanted & set(c.tracks)]


def generate_suite(model: str, suite: str | Path, out: str | Path, *, seeds: Sequence[int] = (0,),
                   tracks: Iterable[str] | None = None, fmt: str = "mp4", options: Mapping[str, Any] | None = None,
                   device: str = "auto", limit: int | None = None, overwrite: bool = False,
                   progress: bool = True) -> dict[str, Any]:
    """Generate ``suite``'s videos with ``model`` into ``out``; returns the manifest (also ``out/generate.json``).

    Args:
        model: model SPEC, as ``evaluate-model --model`` takes it.
        suite: suite name or suite/case JSON file.
        seeds: seeds to generate each case at.
        tracks: only cases that list one of these tracks (all cases when empty).
        fmt: ``mp4`` or ``npz`` (see the module docstring).
        options: ``model.KEY`` entries go to the model; ``video.pix_fmt`` / ``video.qp`` set the mp4 storage.
        device: ``auto``, ``cpu`` or ``cuda``.
        limit: only the first N selected cases.
        overwrite: make files that already exist again.

    Raises:
        ValueError: an unknown format. EvaluationError / SuiteError: no device, no suite.
    """
    from worldolympiad.evaluator import resolve_device, video_storage
    from worldolympiad.models.base import build_model
    from worldolympiad.suites import load_suite_lenient

    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    options = dict(options or {})
    pix_fmt, qp = video_storage(options)
    device = resolve_device(device)
    loaded = load_suite_lenient(suite)
    cases = _selected(loaded.cases, tracks)[:limit]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / MANIFEST
    manifest: dict[str, Any] = {"model": model, "suite": str(suite), "device": device, "format": fmt,
                                "video": {"pix_fmt": pix_fmt, "qp": qp} if fmt == "mp4" else None,
                                "options": options, "cases": {}}
    if manifest_path.is_file() and not overwrite:
        try:
            manifest["cases"] = json.loads(manifest_path.read_text()).get("cases", {})
        except (json.JSONDecodeError, OSError):
            logger.warning("%s unreadable; starting a new one", manifest_path)
    for b in loaded.broken:
        manifest["cases"][b.case_id] = {"status": "failed", "error": b.error}

    def save_manifest() -> None:
        tmp = manifest_path.with_name(f".{MANIFEST}.tmp")
        tmp.write_text(json.dumps(manifest, indent=2, default=str))
        os.replace(tmp, manifest_path)

    model_options = {k[len("model."):]: v for k, v in options.items() if k.startswith("model.")}
    model_options.update(cache_dir=out / ".cache", device=device)
    todo = [(c, s) for c in cases for s in seeds]
    manifest["planned"] = len(todo) + len(loaded.broken)
    missing = {(c.id, s) for c, s in todo if overwrite or not (out / output_name(c.id, s, fmt)).is_file()}
    # built once, before the first case: a model that cannot load fails the command, not every case in turn
    built: Any = build_model(model, **model_options) if missing else None
    from tqdm.auto import tqdm

    bar = tqdm(todo, desc=f"{model} on {loaded.name}", unit="video", disable=not progress)
    try:
        for case, seed in bar:
            path = out / output_name(case.id, seed, fmt)
            key = path.stem
            if (case.id, seed) not in missing:
                manifest["cases"].setdefault(key, {"status": "ok"})
                continue
            t0 = time.perf_counter()
            try:
                video = built.generate(case, seed=seed)
                if not isinstance(video, Video):
                    raise TypeError(f"{type(built).__name__}.generate returned {type(video).__name__}, expected a Video")
                _write(path, video, fmt, pix_fmt, qp)
                manifest["cases"][key] = {"status": "ok", "seconds": round(time.perf_counter() - t0, 3),
                                          "frames": int(len(video.frames))}
            except Exception as e:  # noqa: BLE001 - one case failing never stops the others
                logger.warning("%s seed %d: %s", case.id, seed, e)
                manifest["cases"][key] = {"status": "failed", "seconds": round(time.perf_counter() - t0, 3),
                                          "error": f"{type(e).__name__}: {e}"}
            bar.set_postfix_str(f"{key}: {manifest['cases'][key]['status']}", refresh=False)
            save_manifest()
    finally:
        if built is not None:
            built.close()
        save_manifest()
    return manifest
