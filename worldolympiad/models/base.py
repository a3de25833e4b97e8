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

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from worldolympiad.options import OptionSpec
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
    # The ``--option model.KEY=VALUE`` keys this adapter reads (worldolympiad.options); none by default.
    OPTIONS: ClassVar[Mapping[str, OptionSpec]] = {}
    # What one copy of the model (a Ray actor, evaluate-model --executor ray) asks the cluster for:
    # ``num_gpus`` (only on a --device cuda run; unset: 1) and ``num_cpus`` (held only with a GPU; a CPU
    # model's actors hold no CPU, so scoring tasks always find one). See worldolympiad.ray_executor.
    RESOURCES: ClassVar[Mapping[str, float] | None] = None

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


class ModelSpecError(ValueError):
    """A ``--model`` SPEC that cannot work (unknown kind, missing folder, a hub id...); one line with the fix."""


def looks_like_hub_id(text: str) -> bool:
    """``owner/name`` that is no local path: a Hugging Face hub id (we never download weights)."""
    import re
    from pathlib import Path

    return bool(re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", text)) and not Path(text).expanduser().exists()


def hub_id_hint(text: str, kind: str = "diffusers") -> str:
    """How to use a hub id: download it once, then point the adapter at the folder."""
    return (f"{text!r} looks like a Hugging Face hub id, and weights are never downloaded: run "
            f"`huggingface-cli download {text} --local-dir DIR` and pass --model {kind}:DIR")


def check_model_spec(spec: str) -> None:
    """Resolve ``spec`` and check what can be checked without loading weights or generating anything.

    The kind must be registered (a misspelt prefix gets "did you mean"); a spec with no kind that is a
    folder or a hub id is named as such; the kind's ``check(arg)`` classmethod, when it has one, checks
    the argument (the ``videos:`` folder exists, the ``diffusers:`` folder holds a pipeline, the
    ``inferix:`` name is known, the perturbation exists...).

    Raises:
        ModelSpecError: one line saying what is wrong and how to fix it.
    """
    from pathlib import Path

    from worldolympiad.registries import MODELS, parse_spec
    from worldolympiad.registry import UnknownNameError

    try:
        prefix, arg = parse_spec(spec)
    except ValueError as e:
        raise ModelSpecError(f"--model: {e}") from e
    if prefix not in MODELS:
        whole = spec.strip()
        if arg is None and Path(whole).expanduser().is_dir():
            kind = "diffusers" if (Path(whole).expanduser() / "model_index.json").is_file() else "videos"
            raise ModelSpecError(f"--model {whole!r} is a folder, not a model kind; did you mean --model {kind}:{whole}?")
        if looks_like_hub_id(whole):
            raise ModelSpecError(f"--model {whole!r}: {hub_id_hint(whole)}")
    try:
        factory = MODELS.get(prefix)
    except UnknownNameError as e:
        raise ModelSpecError(f"--model {spec!r}: {e} Write KIND[:ARG], e.g. videos:DIR, reference, "
                             "perturbed:teleport@0.5, inferix:reference-world, py:my_model.py:MyModel, http:URL "
                             "(`worldolympiad ls models`).") from e
    except ImportError as e:
        raise ModelSpecError(f"--model {spec!r}: {e}") from e
    check = getattr(factory, "check", None)
    if callable(check):
        try:
            check(arg)
        except ModelSpecError:
            raise
        except (ModelError, ValueError, KeyError) as e:
            raise ModelSpecError(f"--model {spec!r}: {e}") from e


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
