"""How big a case, or a video decoded for it, may be before anything is allocated.

A case asks for ``num_frames x H x W`` RGB pixels; every track holds them (and copies) in memory.
:func:`case_budget_problem` refuses a case past the budgets at validation, before any model or decoder
runs (a 100,000-frame case once grew past 6 GB in 44 s). :func:`decode_limits` bounds the decoder for a
case: it stops at the case's frame count, resamples every frame larger than the case's resolution down to it
as it is decoded (so memory never holds more than the case's pixels), and refuses a stream whose source frames
add up to more than :data:`DECODE_SLACK` times the case's pixels or, where that is more, the case's frame count
of 4K frames (:data:`LARGEST_FRAME`): a 75 KB mp4 of a solid colour can decode to gigabytes, while a model
that writes 832x480 for a 64x64 case is an ordinary user.

Both budgets can be raised for a machine that holds more, through the environment:

* ``WORLDOLYMPIAD_MAX_FRAMES`` (default 20,000: 13 minutes at 24 fps): frames of one case;
* ``WORLDOLYMPIAD_MAX_PIXELS`` (default 1,000,000,000: 3 GB of RGB frames): ``num_frames x H x W``
  of one case, and the most any one decode may hold.
"""

from __future__ import annotations

import os
from typing import Any, TypedDict

MAX_FRAMES_ENV = "WORLDOLYMPIAD_MAX_FRAMES"
MAX_PIXELS_ENV = "WORLDOLYMPIAD_MAX_PIXELS"
DEFAULT_MAX_FRAMES = 20_000
DEFAULT_MAX_PIXELS = 1_000_000_000
#: a video may hold this many times its case's pixels (a 4x larger side) before the decoder refuses it ...
DECODE_SLACK = 16
#: ... or, where that is more, this many pixels a frame (3840x2160): any model's own output size
LARGEST_FRAME = 3840 * 2160


class DecodeLimits(TypedDict):
    """Keyword arguments of :func:`worldolympiad.video.io.read_video` that bound a decode."""

    max_frames: int
    max_pixels: int
    max_size: tuple[int, int]
    clock: float


class BudgetError(ValueError):
    """A budget variable in the environment is not a positive integer."""


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip().replace("_", "")
    if not raw:
        return default
    try:
        value = int(float(raw)) if "e" in raw.lower() else int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise BudgetError(f"{name}={os.environ[name]!r} is not a positive integer; unset it (default {default:,}) "
                          f"or set e.g. {name}={default * 2}")
    return value


def max_frames() -> int:
    """Most frames one case may ask for (``WORLDOLYMPIAD_MAX_FRAMES``)."""
    return _env_int(MAX_FRAMES_ENV, DEFAULT_MAX_FRAMES)


def max_pixels() -> int:
    """Most ``num_frames x H x W`` one case (or one decode) may hold (``WORLDOLYMPIAD_MAX_PIXELS``)."""
    return _env_int(MAX_PIXELS_ENV, DEFAULT_MAX_PIXELS)


def case_budget_problem(num_frames: int, height: int, width: int) -> tuple[str, str] | None:
    """``(field, message)`` when a case of this size is past a budget, else ``None``."""
    frames_cap = max_frames()
    if num_frames > frames_cap:
        return "num_frames", (f"{num_frames:,} frames is past the frame budget of {frames_cap:,}; shorten the case, "
                              f"or raise the budget where the machine holds it: {MAX_FRAMES_ENV}={num_frames}")
    pixels, pixels_cap = num_frames * height * width, max_pixels()
    if pixels > pixels_cap:
        return "resolution", (f"num_frames x H x W = {num_frames:,} x {height:,} x {width:,} = {pixels:,} pixels "
                              f"({pixels * 3 / 1e9:.1f} GB of RGB frames) is past the pixel budget of {pixels_cap:,}; "
                              f"lower the resolution or the frame count, or raise the budget where the machine "
                              f"holds it: {MAX_PIXELS_ENV}={pixels}")
    return None


def decode_limits(case: Any) -> DecodeLimits:
    """``read_video`` keyword arguments that bound a decode for ``case``: at most its frame count, frames larger
    than its resolution resampled to it (``max_size``), on its timeline (``clock``: a file at another frame rate,
    :func:`worldolympiad.video.io.read_video`), and source frames of at most :data:`DECODE_SLACK` times its pixels
    or its frame count of :data:`LARGEST_FRAME` frames, whichever is more (never more than the pixel budget)."""
    n, (h, w) = int(case.num_frames), case.resolution
    source = n * max(DECODE_SLACK * int(h) * int(w), LARGEST_FRAME)
    return {"max_frames": n, "max_pixels": min(max_pixels(), source), "max_size": (int(h), int(w)),
            "clock": float(case.fps)}
