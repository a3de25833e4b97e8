"""Mechanics scenarios rendered with MuJoCo (RK4): free fall, projectile, bounce,
collision, sliding, buoyancy and stacking. Import-light: MuJoCo loads on first use."""

from __future__ import annotations

from typing import Any

NAMES: tuple[tuple[str, str], ...] = (
    ("mechanics.free_fall", "FREE_FALL"),
    ("mechanics.projectile", "PROJECTILE"),
    ("mechanics.bounce", "BOUNCE"),
    ("mechanics.collision", "COLLISION"),
    ("mechanics.sliding", "SLIDING"),
    ("mechanics.buoyancy", "BUOYANCY"),
    ("mechanics.stacking", "STACKING"),
)


def register(generators: Any, perturbations: Any) -> None:
    """Register every mechanics generator lazily (``scenarios.mechanics.instances:NAME``)."""
    for name, attr in NAMES:
        generators.register(name, f"scenarios.mechanics.instances:{attr}", description=f"MuJoCo {name.split('.')[1].replace('_', ' ')}")
