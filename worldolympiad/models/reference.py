"""Reference videos: the loader tracks use, and the ``reference`` / ``perturbed`` models.

A case's reference video comes from, in order:

1. ``case.reference`` — a video file (path relative to the case file), e.g. imported
   public data;
2. the case's generator — ``GENERATORS[case.metadata["generator"]]`` renders it with a
   simulator. Renders are cached on disk, keyed by (generator, generator_version,
   hash of the case JSON), under ``<cache_dir>/references/<generator>/<version>/<hash>/``:

   ============  ==============================================================
   video.mp4     the frames, bit-exact (``libx264rgb`` at quantizer 0: lossless RGB, so
                 a cached reference equals a fresh render byte for byte)
   gt.npz        masks ``int32 [T, H, W]`` and depth ``float32 [T, H, W]`` if any
   gt.json       fps, chunks, object_ids, camera, states (arrays as lists)
   ============  ==============================================================

Models:

* ``reference`` — the reference video itself (upper bound of every track).
* ``perturbed:NAME[@STRENGTH]`` — the reference passed through
  ``PERTURBATIONS[NAME](video, case, strength, rng(seed), rendered)``: a known defect.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from worldolympiad.models.base import ModelError, WorldModel
from worldolympiad.types import CameraSpec, Case, Chunk, Video, jsonable

logger = logging.getLogger(__name__)


def default_cache_dir() -> Path:
    """``$WORLDOLYMPIAD_CACHE`` or ``~/.cache/worldolympiad``."""
    env = os.environ.get("WORLDOLYMPIAD_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "worldolympiad"


def case_hash(case: Case) -> str:
    """Hash of the case content that determines its render (the suite name does not)."""
    d = case.to_dict()
    d.pop("suite", None)
    blob = json.dumps(d, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


class ReferenceStore:
    """Loads (and caches) reference videos and ground truth for cases.

    Args:
        cache_dir: root of the on-disk cache (``default_cache_dir()`` when ``None``).
    """

    def __init__(self, cache_dir: str | Path | None = None) -> None:
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()

    # ---------------------------------------------------------------- public
    def has_reference(self, case: Case) -> bool:
        return bool(case.reference) or bool(case.metadata.get("generator"))

    def load(self, case: Case) -> Video | None:
        """The reference video of ``case``; ``None`` when it has neither a file nor a generator.

        Raises:
            VideoError: the reference file is broken.
            ModelError: the generator is unknown or its render failed.
        """
        if case.reference:
            from worldolympiad.budgets import decode_limits
            from worldolympiad.video.io import read_video

            path = case.resolve(case.reference)
            assert path is not None
            video = read_video(path, max_pixels=decode_limits(case)["max_pixels"])  # a decode bomb is refused
            video.chunks = _clip(case.chunks, video.num_frames)
            return video
        if case.metadata.get("generator"):
            return self.rendered(case).video
        return None

    def rendered(self, case: Case) -> Any:
        """The generator's :class:`~worldolympiad.scenario.Rendered` for ``case`` (cached).

        Raises:
            ModelError: the case has no generator, or it is unknown, or rendering failed.
        """
        name = case.metadata.get("generator")
        if not name:
            raise ModelError(f"case {case.id!r} has no metadata.generator; a reference render needs one "
                             "(or give the case a 'reference' video file)")
        gen = self._generator(str(name))
        version = str(case.metadata.get("generator_version") or getattr(gen, "version", "1"))
        folder = self.cache_dir / "references" / _slug(str(name)) / _slug(version) / case_hash(case)
        if (folder / "gt.json").is_file() and (folder / "video.mp4").is_file():
            try:
                return _read_rendered(folder, case)
            except Exception as e:  # noqa: BLE001 - a broken cache entry is re-rendered, not fatal
                logger.warning("reference cache %s unreadable (%s); rendering again", folder, e)
        try:
            rendered = gen.render(case) if hasattr(gen, "render") else gen(case)
        except Exception as e:  # noqa: BLE001
            raise ModelError(f"generator {name!r} failed to render case {case.id!r}: {type(e).__name__}: {e}") from e
        try:
            _write_rendered(folder, rendered)
            # Serve the cached copy even on a miss, so a first run and a cached run hand out
            # identical objects (same frames, same source file).
            return _read_rendered(folder, case)
        except Exception as e:  # noqa: BLE001 - a cache we cannot write only costs time
            logger.warning("could not cache reference of %s in %s: %s", case.id, folder, e)
        return rendered

    # --------------------------------------------------------------- helpers
    @staticmethod
    def _generator(name: str) -> Any:
        from worldolympiad.registries import GENERATORS
        from worldolympiad.registry import UnknownNameError

        try:
            gen = GENERATORS.get(name)
        except UnknownNameError as e:
            raise ModelError(f"{e} The case's metadata.generator must name a registered generator "
                             "(is the scenarios package installed?)") from e
        return gen() if isinstance(gen, type) else gen


def _slug(s: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in s)


def _clip(chunks: tuple[Chunk, ...], n: int) -> tuple[Chunk, ...]:
    return tuple(Chunk(c.index, c.frame_start, min(c.frame_end, n), c.caption, c.action)
                 for c in chunks if c.frame_start < n)


def _write_rendered(folder: Path, rendered: Any) -> None:
    """Write a Rendered into ``folder`` atomically (a temp folder renamed into place)."""
    from worldolympiad.video.io import write_video

    tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        video: Video = rendered.video
        write_video(tmp / "video.mp4", video.frames, video.fps, lossless=True)
        arrays: dict[str, Any] = {}
        if getattr(rendered, "masks", None) is not None:
            arrays["masks"] = np.asarray(rendered.masks)
        if getattr(rendered, "depth", None) is not None:
            arrays["depth"] = np.asarray(rendered.depth)
        if arrays:
            np.savez_compressed(tmp / "gt.npz", **arrays)
        meta = {
            "fps": video.fps,
            "num_frames": video.num_frames,
            "chunks": [c.to_dict() for c in video.chunks],
            "object_ids": dict(getattr(rendered, "object_ids", {}) or {}),
            "camera": rendered.camera.to_dict() if getattr(rendered, "camera", None) is not None else None,
            "states": jsonable(getattr(rendered, "states", {}) or {}),
            "video_metadata": jsonable(video.metadata),
        }
        (tmp / "gt.json").write_text(json.dumps(meta))
        if folder.exists():
            shutil.rmtree(folder, ignore_errors=True)
        # If another worker finished the same render first, theirs is identical: keep it.
        with contextlib.suppress(OSError):
            tmp.rename(folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _read_rendered(folder: Path, case: Case) -> Any:
    from worldolympiad.scenario import Rendered
    from worldolympiad.video.io import read_video

    meta = json.loads((folder / "gt.json").read_text())
    video = read_video(folder / "video.mp4")
    if video.num_frames != meta["num_frames"]:
        raise ValueError(f"cached video has {video.num_frames} frames, expected {meta['num_frames']}")
    video = Video(frames=video.frames, fps=float(meta["fps"]),
                  chunks=tuple(Chunk.from_dict(c) for c in meta["chunks"]),
                  source=str(folder / "video.mp4"), metadata=dict(meta.get("video_metadata") or {}))
    masks = depth = None
    if (folder / "gt.npz").is_file():
        with np.load(folder / "gt.npz") as z:
            masks = z["masks"] if "masks" in z.files else None
            depth = z["depth"] if "depth" in z.files else None
    camera = CameraSpec.from_dict(meta["camera"]) if meta.get("camera") else None
    return Rendered(video=video, masks=masks, object_ids=dict(meta.get("object_ids") or {}), depth=depth,
                    camera=camera, states=dict(meta.get("states") or {}))


# ---------------------------------------------------------------------- models


class ReferenceModel(WorldModel):
    """``reference``: the case's reference video (a file, or the simulator's render).

    Args:
        arg: unused (``reference`` takes no argument).
        cache_dir: reference cache root (the evaluator passes ``<out>/cache``).
    """

    interactive = False
    RESOURCES = {"num_gpus": 0}  # no GPU: simulators render on the CPU

    @classmethod
    def check(cls, arg: str | None) -> None:
        """Raises ValueError when given an argument (``reference`` takes none)."""
        cls(arg)

    def __init__(self, arg: str | None = None, *, cache_dir: str | Path | None = None, **options: Any) -> None:
        if arg:
            raise ValueError(f"the reference model takes no argument, got 'reference:{arg}'; use --model reference")
        self.store = ReferenceStore(cache_dir)

    def generate(self, case: Case, seed: int = 0) -> Video:
        video = self.store.load(case)
        if video is None:
            raise ModelError(f"case {case.id!r} has no reference: set its 'reference' video path or "
                             "metadata.generator (a registered scenario generator)")
        meta: dict[str, Any] = {"model": self.name, "reference": True}
        if video.source and Path(video.source).is_file():
            meta["stored_file"] = video.source  # frames are the exact decode of this file
        return Video(frames=video.frames, fps=video.fps, chunks=video.chunks or case.chunks,
                     source=video.source, metadata=meta)


class PerturbedModel(WorldModel):
    """``perturbed:NAME[@STRENGTH]``: the reference with a known defect.

    Args:
        arg: ``NAME`` or ``NAME@STRENGTH`` (strength defaults to 1.0; 0 is the identity).
        cache_dir: reference cache root.
    """

    interactive = False
    RESOURCES = {"num_gpus": 0}  # no GPU: simulators render on the CPU

    @classmethod
    def check(cls, arg: str | None) -> None:
        """Raises ValueError / UnknownNameError (with "did you mean") for a bad ``NAME[@STRENGTH]``."""
        cls(arg)

    def __init__(self, arg: str | None = None, *, cache_dir: str | Path | None = None, **options: Any) -> None:
        if not arg:
            raise ValueError("perturbed needs a perturbation name: --model perturbed:NAME[@STRENGTH] "
                             "(see `worldolympiad ls models`)")
        name, _, strength = arg.partition("@")
        try:
            self.strength = float(strength) if strength else 1.0
        except ValueError as e:
            raise ValueError(f"perturbed:{arg}: strength must be a number, got {strength!r} "
                             "(e.g. perturbed:teleport@0.5)") from e
        from worldolympiad.registries import PERTURBATIONS

        self.perturbation_name = name
        self.perturb = PERTURBATIONS.get(name)  # unknown name → UnknownNameError with suggestions
        self.store = ReferenceStore(cache_dir)

    def generate(self, case: Case, seed: int = 0) -> Video:
        rendered = None
        if case.metadata.get("generator") and not case.reference:
            rendered = self.store.rendered(case)
            ref = rendered.video
        else:
            ref = self.store.load(case)
        if ref is None:
            raise ModelError(f"case {case.id!r} has no reference to perturb: set its 'reference' video path "
                             "or metadata.generator")
        ref = Video(frames=ref.frames.copy(), fps=ref.fps, chunks=ref.chunks or case.chunks,
                    source=ref.source, metadata=dict(ref.metadata))
        rng = np.random.default_rng(seed)
        out = self.perturb(ref, case, self.strength, rng, rendered)
        if not isinstance(out, Video):
            raise ModelError(f"perturbation {self.perturbation_name!r} returned {type(out).__name__}, expected a Video")
        out.metadata = {k: v for k, v in out.metadata.items() if k != "stored_file"}
        out.metadata = {**out.metadata, "model": self.name, "perturbation": self.perturbation_name,
                        "strength": self.strength}
        return out
