"""Held-out generators: scenes no track was tuned on, for the validity harness (``bench/validity.py``).

Issue 56 asks every track's validity to be reported on generators and settings that played no part in
tuning it. Two kinds of held-out cases exist:

* **new generators** (this package): ``heldout.shape_drop`` — a law-based 2-D render of a star, triangle,
  ring, cross or hexagon in colours outside the mechanics palette, falling and bouncing over textures
  the MuJoCo scenes never use; ``heldout.photo_camera`` — real photographs from scikit-image (none of
  them the test fixtures' astronaut) seen by a virtual pinhole camera making large yaw sweeps and
  moving forward, with exact poses and camera actions.
* **held-out settings of the existing generators** (``suite/*.yaml`` here): other sizes (64-512 px),
  frame rates (8-30), fields of view, camera placements, agents (action plans) and clip windows.

:mod:`scenarios.heldout.splits` declares which is which (``SPLITS``), and a test holds the two splits
apart. The package is not in :data:`scenarios.SUBPACKAGES` (so ``ls generators`` and the tuning suites
never see it); the harness calls :func:`register` itself.
"""

from __future__ import annotations

from typing import Any

GENERATORS: dict[str, tuple[str, str]] = {
    "heldout.shape_drop": ("scenarios.heldout.shapes:SHAPE_DROP",
                           "a coloured 2-D shape falls and bounces over a texture (law-based, held out)"),
    "heldout.photo_camera": ("scenarios.heldout.photo:PHOTO_CAMERA",
                             "a real photo seen by a camera that yaws and moves forward (held out)"),
}


def register(generators: Any, perturbations: Any = None) -> None:
    """Register the held-out generators lazily into ``generators`` (skipping names already there)."""
    for name, (target, desc) in GENERATORS.items():
        if name not in generators:
            generators.register(name, target, description=desc)
