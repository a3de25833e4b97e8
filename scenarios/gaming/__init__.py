"""Gaming family: real Atari games (ale-py) and a first-person textured maze.

Generators: ``gaming.atari_breakout``, ``gaming.atari_pong``, ``gaming.atari_freeway``
(:mod:`scenarios.gaming.atari`) and ``gaming.maze`` (:mod:`scenarios.gaming.maze`).
Action vocabularies with their expected motions live in ``games.yaml`` and are copied into
each case's ``metadata["action_space"]``. Import-light: ale-py loads on first render.
"""

from __future__ import annotations

from typing import Any

# name -> lazy "module:instance" target (module-level generator instances)
GENERATORS: dict[str, str] = {
    "gaming.atari_breakout": "scenarios.gaming.atari:breakout",
    "gaming.atari_pong": "scenarios.gaming.atari:pong",
    "gaming.atari_freeway": "scenarios.gaming.atari:freeway",
    "gaming.maze": "scenarios.gaming.maze:maze",
}


def register(generators: Any, perturbations: Any) -> None:
    """Register this family's generators (lazily) into ``generators``."""
    for name, target in GENERATORS.items():
        generators.register(name, target, description=f"gaming generator {name}")
