"""Baselines that place a trained world model between noise and ground truth on the leaderboard.

=========================  ===============================================================
``repeat-first-frame``     the case's first frame (its conditioning image, else the
                           reference's first frame) held for the whole video: perfectly
                           stable, follows no action, obeys no dynamics
``inferix:reference-world-random``
                           the reference world model's architecture with random weights
                           (Inferix's named model; noise in the trained model's shape)
``reference``              the simulator ground truth (:mod:`worldolympiad.models.reference`)
``inferix:reference-world`` the trained reference world model itself
=========================  ===============================================================

:data:`LEADERBOARD_BASELINES` lists the four specs in that order (lowest expectation first).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from worldolympiad.models.base import ModelError, WorldModel
from worldolympiad.types import Case, Video

logger = logging.getLogger(__name__)

__all__ = ["LEADERBOARD_BASELINES", "RepeatFirstFrameModel", "first_frame", "first_frame_or_none"]

# spec -> what it shows on the leaderboard
LEADERBOARD_BASELINES: dict[str, str] = {
    "repeat-first-frame": "the first frame held still (no motion, no action following)",
    "inferix:reference-world-random": "the reference world model's architecture with random weights",
    "inferix:reference-world": "the trained reference world model (Inferix, shipped weights)",
    "reference": "the scenario's simulator ground truth (upper bound)",
}


def _resize(image: np.ndarray, hw: tuple[int, int]) -> np.ndarray:
    h, w = hw
    if image.shape[:2] == (h, w):
        return image
    import cv2

    interp = cv2.INTER_AREA if image.shape[0] >= h else cv2.INTER_LINEAR
    return np.ascontiguousarray(cv2.resize(image, (w, h), interpolation=interp))


def first_frame(case: Case, cache_dir: str | Path | None = None) -> np.ndarray:
    """The image a world model starts ``case`` from: ``uint8 [H, W, 3]`` at the case resolution.

    The conditioning image when the case has one, else frame 0 of its reference video (a file,
    or the simulator's render through the reference cache).

    Raises:
        ModelError: the case has neither (or the image file is missing).
    """
    path = case.resolve(case.conditioning)
    if path is not None:
        if not Path(path).is_file():
            raise ModelError(f"case {case.id}: conditioning image {path} not found")
        from PIL import Image

        return _resize(np.asarray(Image.open(path).convert("RGB")), case.resolution)
    from worldolympiad.models.reference import ReferenceStore

    video = ReferenceStore(cache_dir).load(case)
    if video is None:
        raise ModelError(f"case {case.id!r} has no first frame: give it a 'conditioning' image or a reference "
                         "(a 'reference' video or metadata.generator)")
    return _resize(video.frames[0], case.resolution)


def first_frame_or_none(case: Case, cache_dir: str | Path | None = None) -> np.ndarray | None:
    """:func:`first_frame` for image-to-video bridges: None (logged) for a case with neither a
    conditioning image nor a reference, which such a model then generates from text alone.

    Raises:
        ModelError: the case names a conditioning image that is missing.
    """
    try:
        return first_frame(case, cache_dir)
    except ModelError:
        if case.conditioning is not None:
            raise  # a named image that is missing is an error, not a silent text-to-video run
        logger.info("case %s has no first frame (no conditioning image, no reference)", case.id)
        return None


class RepeatFirstFrameModel(WorldModel):
    """``repeat-first-frame``: the case's first frame repeated ``num_frames`` times.

    Args:
        arg: unused (the spec takes no argument).
        cache_dir: reference cache root, for cases without a conditioning image.
    """

    interactive = False
    RESOURCES = {"num_gpus": 0}  # no GPU: the first frame, held

    @classmethod
    def check(cls, arg: str | None) -> None:
        """Raises ValueError when given an argument (the spec takes none)."""
        cls(arg)

    def __init__(self, arg: str | None = None, *, cache_dir: str | Path | None = None, **options: Any) -> None:
        if arg:
            raise ValueError(f"repeat-first-frame takes no argument, got 'repeat-first-frame:{arg}'")
        self.cache_dir = cache_dir
        self.ignored_options = sorted(options)

    def generate(self, case: Case, seed: int = 0) -> Video:
        img = first_frame(case, self.cache_dir)
        frames = np.repeat(img[None], case.num_frames, axis=0)  # [T, H, W, 3]
        return Video(frames=frames, fps=case.fps, chunks=case.chunks,
                     metadata={"model": self.name, "baseline": "repeat-first-frame"})
