"""The ``WorldModel`` interface every model adapter implements.

A world model turns a :class:`~worldolympiad.types.Case` (first frame, prompt, per-chunk
captions and actions) into a :class:`~worldolympiad.types.Video`. Two ways to ask:

* :meth:`WorldModel.generate` — the whole video at once.
* :meth:`WorldModel.rollout` — chunk by chunk. The model pulls each
  :class:`ChunkControl` from ``controls`` only when it is about to generate that chunk,
  so an interactive model never sees a future action (the controls may come from a live
  user). Non-interactive adapters (pre-generated files, the simulator reference) set
  ``interactive = False`` and are free to produce everything up front.

The default implementations define each in terms of the other, so an adapter overrides
at least one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from worldolympiad.types import Action, Case, Chunk, Video


class ModelError(RuntimeError):
    """A model could not produce a video for a case (missing file, bad weights...).

    The evaluator records it as the case's error and goes on with the next case.
    """


@dataclass(frozen=True)
class ChunkControl:
    """What the model is told before it generates one chunk."""

    index: int
    num_frames: int
    caption: str = ""
    action: Action = None

    @classmethod
    def from_chunk(cls, chunk: Chunk) -> ChunkControl:
        return cls(chunk.index, chunk.num_frames, chunk.caption, chunk.action)


@dataclass
class VideoChunk:
    """Frames a model produced for one chunk: ``uint8 [T, H, W, 3]``."""

    index: int
    frames: np.ndarray
    metadata: dict[str, Any] = field(default_factory=dict)


def controls_for(case: Case) -> list[ChunkControl]:
    """The case's chunks as controls (one control for the whole video if it has no chunks)."""
    if not case.chunks:
        return [ChunkControl(0, case.num_frames, case.prompt, None)]
    return [ChunkControl.from_chunk(c) for c in case.chunks]


class WorldModel:
    """Base class of model adapters.

    Attributes:
        name: the spec string this model was built from (shown in results).
        interactive: ``True`` when :meth:`rollout` really consumes controls one at a time.
    """

    name: str = "model"
    interactive: ClassVar[bool] = False

    def generate(self, case: Case, seed: int = 0) -> Video:
        """Generate the whole video for ``case``. Default: concatenate :meth:`rollout`."""
        chunks = list(self.rollout(case, controls_for(case), seed=seed))
        if not chunks:
            raise ModelError(f"{self.name}: rollout produced no chunks for case {case.id!r}")
        frames = np.concatenate([c.frames for c in chunks], axis=0)
        return Video(frames=frames, fps=case.fps, chunks=case.chunks, metadata={"model": self.name})

    def rollout(self, case: Case, controls: Iterable[ChunkControl], seed: int = 0) -> Iterator[VideoChunk]:
        """Yield one :class:`VideoChunk` per control, pulling each control just in time.

        Default (non-interactive): generate the whole video, then cut it at the case's chunk
        boundaries.
        """
        video = self.generate(case, seed=seed)
        start = 0
        for ctl in controls:
            end = min(start + ctl.num_frames, video.num_frames)
            yield VideoChunk(ctl.index, video.frames[start:end])
            start = end

    def close(self) -> None:
        """Release resources (GPU memory, subprocesses)."""


def model_fingerprint(spec: str) -> str | None:
    """A short digest of the files behind a model SPEC (weights, configs), or None when its kind
    cannot tell (its factory has no ``fingerprint(arg)`` classmethod) or the spec is unknown.
    Part of the run hash, so a resumed run never mixes rows from other weights."""
    from worldolympiad.registries import MODELS, parse_spec

    try:
        prefix, arg = parse_spec(spec)
        factory = MODELS.get(prefix)
    except Exception:  # noqa: BLE001 - an unknown spec fails later, at build_model, with the real message
        return None
    fingerprint = getattr(factory, "fingerprint", None)
    return fingerprint(arg) if callable(fingerprint) else None


def build_model(spec: str, **options: Any) -> WorldModel:
    """Resolve a model SPEC (``videos:DIR``, ``reference``, ``perturbed:NAME@S``...) to a model.

    Raises:
        UnknownNameError: unknown prefix (lists the known ones).
    """
    from worldolympiad.registries import MODELS, parse_spec

    prefix, arg = parse_spec(spec)
    factory = MODELS.get(prefix)
    model: WorldModel = factory(arg, **options)
    model.name = spec
    return model
