"""Camera fly-throughs of textured MuJoCo scenes with exact K and poses (geometry ground truth).
Import-light: MuJoCo loads on first render."""

from __future__ import annotations

from typing import Any


def register(generators: Any, perturbations: Any) -> None:
    """Register the fly-through generators lazily."""
    generators.register("flythrough.room", "scenarios.flythrough.room:ROOM_FLYTHROUGH",
                        description="camera walks through a textured room (MuJoCo), exact K and poses")
