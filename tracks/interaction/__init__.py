"""Interaction track: action following, chunk-transition smoothness and consistency.

Import-light: the :class:`InteractionTrack` class is imported on first attribute access.
"""

from __future__ import annotations

from typing import Any

__all__ = ["InteractionTrack"]


def __getattr__(name: str) -> Any:
    if name == "InteractionTrack":
        from tracks.interaction.track import InteractionTrack

        return InteractionTrack
    raise AttributeError(f"module 'tracks.interaction' has no attribute {name!r}")
