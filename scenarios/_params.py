"""Parameters every generator shares: resolution, frame count, fps, chunk count; a named choice."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def choice_param(params: dict[str, Any], key: str, default: Any, choices: Sequence[str], note: str = "") -> str:
    """``params[key]`` (else ``default``) as a string, refused unless it is one of ``choices``.

    A seeded default is drawn by the caller before the call, whether or not ``key`` is given, so a
    case's other draws do not move when one choice is named. ``note`` follows the choices in the
    error (where they come from)."""
    value = str(params.get(key, default))
    if value not in choices:
        raise ValueError(f"{key} must be one of {choices}{note}, got {value!r}")
    return value


def video_params(params: dict[str, Any], *, min_side: int = 16,
                 default_fps: float = 12.0) -> tuple[tuple[int, int], int, float, int]:
    """``(resolution (H, W), num_frames, fps, num_chunks)`` from a case's params, with clear errors.

    Args:
        params: the case's ``metadata["params"]`` (``resolution`` may be ``[H, W]`` or one int).
        min_side: smallest height/width the generator can draw.
        default_fps: fps when the params give none.
    """
    res = params.get("resolution", (64, 64))
    if isinstance(res, int):
        res = (res, res)
    if len(res) != 2 or min(int(res[0]), int(res[1])) < min_side:
        raise ValueError(f"resolution must be [H, W] with both >= {min_side}, got {res!r}")
    T = int(params.get("num_frames", 32))
    fps = float(params.get("fps", default_fps))
    nc = int(params.get("num_chunks", 2))
    if T < 2:
        raise ValueError(f"num_frames must be >= 2, got {T}")
    if fps <= 0:
        raise ValueError(f"fps must be positive, got {fps}")
    if not 1 <= nc <= T:
        raise ValueError(f"num_chunks must be in [1, num_frames={T}], got {nc}")
    return (int(res[0]), int(res[1])), T, fps, nc
