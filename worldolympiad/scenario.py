"""Contracts between the evaluator and the scenario packages (DESIGN.md §6).

A :class:`CaseGenerator` makes cases (cheap: no rendering) and renders the reference
video of one case with a real simulator or a law-based procedure, exporting ground
truth. Generators register in ``worldolympiad.registries.GENERATORS`` under the name
stored in each case's ``metadata["generator"]``; the ``reference`` model spec looks
them up there. Perturbations (``perturbed:NAME@STRENGTH``) register in
``PERTURBATIONS`` as :data:`Perturbation` callables.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from worldolympiad.types import CameraSpec, Case, Video


@dataclass
class Rendered:
    """A reference rendering and its ground truth.

    Attributes:
        video: the frames (``uint8 [T, H, W, 3]``) with the case's fps and chunks.
        masks: per-pixel object ids ``int32 [T, H, W]`` (0 = background), ids as in ``object_ids``.
        object_ids: object name → id used in ``masks``.
        depth: metric depth ``float32 [T, H, W]`` (``inf`` = nothing hit), when the renderer has it.
        camera: exact intrinsics and camera-to-world poses per frame (OpenCV convention).
        states: per-frame ground-truth quantities, e.g.
            ``{"objects": {"red_ball": {"position": [T x 3], "velocity": [T x 3]}},
            "closed_form": {...}, "solid_area": [T]}`` — arrays as lists or numpy arrays.
    """

    video: Video
    masks: np.ndarray | None = None
    object_ids: dict[str, int] = field(default_factory=dict)
    depth: np.ndarray | None = None
    camera: CameraSpec | None = None
    states: dict[str, Any] = field(default_factory=dict)


class CaseGenerator:
    """Base class of scenario generators.

    Subclasses set ``name``/``version`` and implement :meth:`make_case` and
    :meth:`render`. Everything is deterministic given the case (its ``metadata["seed"]``
    and ``metadata["params"]``).
    """

    name: ClassVar[str] = "generator"
    version: ClassVar[str] = "1"

    def make_case(self, case_id: str, *, seed: int = 0, **params: Any) -> Case:
        """Build a case (prompt, chunks with captions and actions, rules, tracks) without rendering."""
        raise NotImplementedError

    def render(self, case: Case) -> Rendered:
        """Render the reference video of ``case`` and its ground truth."""
        raise NotImplementedError


# perturbation(video, case, strength, rng, rendered) -> Video
# strength 0 must return the input unchanged; larger is more defective.
Perturbation = Callable[[Video, Case, float, np.random.Generator, "Rendered | None"], Video]
