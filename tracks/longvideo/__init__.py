"""Long-video track (LV-Bench): Video Drift Error over quality signals.

Import-light: the :class:`LongVideoTrack` class is imported on first attribute access.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LongVideoTrack"]


def __getattr__(name: str) -> Any:
    if name == "LongVideoTrack":
        from tracks.longvideo.track import LongVideoTrack

        return LongVideoTrack
    raise AttributeError(f"module 'tracks.longvideo' has no attribute {name!r}")
