"""The perturbation library: known-bad controls made from reference videos.

Every perturbation is ``fn(video, case, strength, rng, rendered) -> Video`` with strength
0 the exact identity and a documented knob (see each function's docstring, or
``scenarios.perturb.base.TABLE[name].knob``). Physics ones move/erase/warp objects using
the reference's masks (``rendered``); without a reference they estimate one moving object
from motion (documented degraded mode).

Import-light: the implementations (OpenCV) load on first lookup.
"""

from __future__ import annotations

from typing import Any

#: name → (module, one-line description)
NAMES: dict[str, tuple[str, str]] = {
    # physics
    "gravity_reversed": ("physics", "main object's vertical motion mirrored: falling objects accelerate upward"),
    "gravity_scaled": ("physics", "main object's vertical displacement multiplied by 1 + strength"),
    "teleport": ("physics", "main object jumps sideways at the middle frame"),
    "vanish": ("physics", "main object erased for the last strength/2 of the video"),
    "appear": ("physics", "a copy of the main object pops into view mid-video (opacity = strength)"),
    "shape_morph": ("physics", "main object stretched/squeezed progressively (aspect drifts to (1+s)^2)"),
    "time_reversal": ("physics", "the last strength fraction of the video plays backwards"),
    "frozen": ("physics", "motion stops; the last strength fraction repeats one frame"),
    "interpenetration": ("physics", "main object pushed into its neighbour (or the floor)"),
    # geometry
    "homography_jitter": ("geometry", "per-frame random homography, corner sigma = strength * 3% of the image"),
    "content_drift": ("geometry", "smooth non-rigid displacement growing to strength * 5% of the width"),
    "frame_shuffle": ("geometry", "a strength fraction of the frames shuffled"),
    "scale_pumping": ("geometry", "zoom oscillating up to 1 + strength / 4"),
    # interaction / long video
    "action_ignored": ("interaction", "chosen chunks hold their first frame (no response to the action)"),
    "action_inverted": ("interaction", "chosen chunks play backwards (motion opposite to the action)"),
    "delayed_response": ("interaction", "video lags by strength * chunk length frames"),
    "seam_cut": ("interaction", "every other chunk shifted sideways: jumps at chunk boundaries"),
    "color_jump": ("interaction", "every other chunk tinted: colour jumps at chunk boundaries"),
    "identity_swap": ("interaction", "objects exchange colours (or one object changes hue) mid-video"),
    "blur_drift": ("interaction", "blur growing with time (LV-Bench drift control)"),
    "color_drift": ("interaction", "colour cast growing with time (LV-Bench drift control)"),
}


def register(generators: Any, perturbations: Any) -> None:
    """Register every perturbation lazily as ``scenarios.perturb.<module>:<name>``."""
    for name, (module, desc) in NAMES.items():
        perturbations.register(name, f"scenarios.perturb.{module}:{name}", description=desc)


def table() -> dict[str, Any]:
    """Import all implementations and return ``{name: PerturbationInfo}`` (with knob docs)."""
    from scenarios.perturb import geometry, interaction, physics  # noqa: F401 - registers into TABLE
    from scenarios.perturb.base import TABLE

    return dict(TABLE)
