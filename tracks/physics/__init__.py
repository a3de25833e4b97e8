"""Physical track: segmentation + tracking → kinematic rule checks, plus a two-stage MLLM judge.

Import-light: :class:`PhysicsTrack` is loaded on first attribute access so that the
registry entry ``tracks.physics:PhysicsTrack`` can be listed without importing numpy-heavy
or torch code.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PhysicsTrack"]


def __getattr__(name: str) -> Any:
    if name == "PhysicsTrack":
        from tracks.physics.track import PhysicsTrack

        return PhysicsTrack
    raise AttributeError(f"module 'tracks.physics' has no attribute {name!r}")
