"""Thermal and material phenomena as procedural, law-based renders (numpy + OpenCV).

Thermal: melting, freezing, vaporization, condensation, sublimation, deposition.
Material: color_mixing, dissolving, hardness, combustion. Each module's docstring states
the law its quantities follow. Import-light: OpenCV loads on first render.
"""

from __future__ import annotations

from typing import Any

#: registry name → (module, instance attribute, description)
NAMES: dict[str, tuple[str, str, str]] = {
    "thermal.melting": ("thermal", "MELTING", "an ice cube melts into a spreading puddle"),
    "thermal.freezing": ("thermal", "FREEZING", "water freezes from the rim inward (Stefan law)"),
    "thermal.vaporization": ("thermal", "VAPORIZATION", "water heats, boils and boils away"),
    "thermal.condensation": ("thermal", "CONDENSATION", "droplets condense on a cold glass"),
    "thermal.sublimation": ("thermal", "SUBLIMATION", "dry ice shrinks into fog with no liquid"),
    "thermal.deposition": ("thermal", "DEPOSITION", "frost grows on a cold window (JMAK kinetics)"),
    "material.color_mixing": ("material", "COLOR_MIXING", "blue and yellow dyes diffuse and mix to green"),
    "material.dissolving": ("material", "DISSOLVING", "a crystal dissolves up to the solubility limit"),
    "material.hardness": ("material", "HARDNESS", "presses flatten clay but not steel"),
    "material.combustion": ("material", "COMBUSTION", "a log burns down; a stone does not burn"),
}


def register(generators: Any, perturbations: Any) -> None:
    """Register every procedural generator lazily (``scenarios.procedural.instances:NAME``)."""
    for name, (_, attr, desc) in NAMES.items():
        generators.register(name, f"scenarios.procedural.instances:{attr}", description=desc)
