"""Robotics family: a Franka Panda (pybullet) pushing, picking, placing and stacking cubes.

Generators ``robotics.push``, ``robotics.pick``, ``robotics.place``, ``robotics.stack``
(:mod:`scenarios.robotics.arm`); action vocabulary in ``tasks.yaml``. Import-light:
pybullet loads on first render.
"""

from __future__ import annotations

from typing import Any

GENERATORS: dict[str, str] = {
    "robotics.push": "scenarios.robotics.arm:push",
    "robotics.pick": "scenarios.robotics.arm:pick",
    "robotics.place": "scenarios.robotics.arm:place",
    "robotics.stack": "scenarios.robotics.arm:stack",
}


def register(generators: Any, perturbations: Any) -> None:
    """Register this family's generators (lazily) into ``generators``."""
    for name, target in GENERATORS.items():
        generators.register(name, target, description=f"robotics generator {name}")
