"""Flat 2-D cartoon scenes (numpy + OpenCV): ``cartoon.flat_bounce``, a tuning-split generator of
flat shapes that fall and bounce over busy procedural walls (``scenarios/cartoon/flat.py``)."""

from __future__ import annotations

from typing import Any


def register(generators: Any, perturbations: Any) -> None:
    """Register the cartoon generators lazily (``scenarios.cartoon.flat:FLAT_BOUNCE``)."""
    generators.register("cartoon.flat_bounce", "scenarios.cartoon.flat:FLAT_BOUNCE",
                        description="a flat cartoon shape (ring, cross, crescent...) drops and bounces")
