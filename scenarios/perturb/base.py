"""The perturbation contract and the table every perturbation registers into.

A perturbation is ``fn(video, case, strength, rng, rendered) -> Video``. The
:func:`perturbation` decorator adds what all of them share: ``strength`` is validated
(finite, >= 0), ``strength == 0`` returns the input frames bit-exactly (a copy), and the
output carries ``metadata["perturbation"] = {"name", "strength", "knob", **details}``.
The wrapped function returns ``(frames, details)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from worldolympiad.scenario import Rendered
from worldolympiad.types import Case, Video

Impl = Callable[[Video, Case, float, np.random.Generator, "Rendered | None"], tuple[np.ndarray, dict[str, Any]]]


@dataclass(frozen=True)
class PerturbationInfo:
    """What a perturbation breaks and what its strength knob means."""

    name: str
    family: str  # physics | geometry | interaction
    knob: str
    fn: Callable[..., Video]


TABLE: dict[str, PerturbationInfo] = {}


def perturbation(name: str, family: str, knob: str) -> Callable[[Impl], Callable[..., Video]]:
    """Decorator: register ``fn`` in :data:`TABLE` under ``name`` with its documented ``knob``."""

    def deco(impl: Impl) -> Callable[..., Video]:
        def fn(video: Video, case: Case, strength: float, rng: np.random.Generator | None = None,
               rendered: Rendered | None = None) -> Video:
            s = float(strength)
            if not math.isfinite(s) or s < 0:
                raise ValueError(f"perturbation {name!r}: strength must be a finite number >= 0, got {strength!r} ({knob})")
            if rng is None:
                rng = np.random.default_rng(0)
            details: dict[str, Any]
            if s == 0:
                frames, details = video.frames.copy(), {}
            else:
                frames, details = impl(video, case, s, rng, rendered)
                frames = np.ascontiguousarray(frames, dtype=np.uint8)
            meta = dict(video.metadata)
            meta["perturbation"] = {"name": name, "strength": s, "knob": knob, **details}
            return Video(frames=frames, fps=video.fps, chunks=video.chunks, source=None, metadata=meta)

        fn.__name__ = impl.__name__
        fn.__qualname__ = impl.__qualname__
        fn.__doc__ = (impl.__doc__ or "").strip() + f"\n\nStrength knob: {knob}."
        TABLE[name] = PerturbationInfo(name, family, knob, fn)
        return fn

    return deco


def chunk_spans(video: Video, case: Case | None) -> list[tuple[int, int]]:
    """``[(start, end)]`` chunk spans of the video (video chunks, else the case's, else halves)."""
    chunks = video.chunks or (case.chunks if case is not None else ())
    T = video.num_frames
    spans = [(c.frame_start, min(c.frame_end, T)) for c in chunks if c.frame_start < T]
    if len(spans) < 2:
        spans = [(0, T // 2), (T // 2, T)]
    return spans
