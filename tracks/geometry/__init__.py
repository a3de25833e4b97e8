"""Geometry track: camera recovery, Gaussian-splat reconstruction, ATE/RPE, cross-view consistency.

Import-light: the track class (and torch, pycolmap, gsplat) load only when
``tracks.geometry.GeometryTrack`` is first accessed.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FAILURE_FLOOR", "GeometryTrack"]

#: normalized value given to the reconstruction-dependent metrics of a video that cannot be
#: reconstructed, so it never outscores a reconstructable one (documented in track.yaml)
FAILURE_FLOOR = 0.0


def __getattr__(name: str) -> Any:
    if name == "GeometryTrack":
        from tracks.geometry.track import GeometryTrack

        return GeometryTrack
    raise AttributeError(f"module 'tracks.geometry' has no attribute {name!r}")
