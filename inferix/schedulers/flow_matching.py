"""Few-step flow-matching sampler (Self-Forcing / CausVid style).

Flow matching interpolates ``x_t = (1 - sigma) * x0 + sigma * noise`` with ``sigma = t / 1000``
and the model predicts the velocity ``v = noise - x0``. A few-step sampler visits a short
list of timesteps; at each it predicts ``x0 = x_t - sigma * v`` and, unless it is the last
step, re-noises ``x0`` with fresh noise to the next level.

Step lists are given on the training scale [0, 1000] and warped by the usual shift
``sigma' = shift * sigma / (1 + (shift - 1) * sigma)``::

    self_forcing: [1000, 750, 500, 250], shift 5 -> [1000, 937.5, 833.3, 625.0]
    causvid:      [1000, 757, 522],      shift 8 -> [1000, 961.4, 897.3]
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

__all__ = ["PRESETS", "FlowMatchSampler", "shift_timesteps", "timesteps"]

# name -> (step list on the [0, 1000] scale, shift)
PRESETS: dict[str, tuple[tuple[float, ...], float]] = {
    "self_forcing": ((1000.0, 750.0, 500.0, 250.0), 5.0),
    "causvid": ((1000.0, 757.0, 522.0), 8.0),
}


def shift_timesteps(steps: Sequence[float], shift: float) -> list[float]:
    """Warp timesteps with the flow-matching shift (``shift = 1`` leaves them unchanged)."""
    if shift <= 0:
        raise ValueError(f"shift must be > 0, got {shift}")
    out = []
    for t in steps:
        if not 0.0 <= float(t) <= 1000.0:
            raise ValueError(f"timesteps must lie in [0, 1000], got {t}")
        s = float(t) / 1000.0
        out.append(1000.0 * shift * s / (1.0 + (shift - 1.0) * s))
    return out


def timesteps(preset: str | Sequence[float], shift: float | None = None) -> list[float]:
    """The warped timesteps of a preset name or an explicit list.

    Args:
        preset: ``"self_forcing"``, ``"causvid"`` or a list on the [0, 1000] scale (descending).
        shift: overrides the preset's shift; for a list, default 1 (no warp).

    Raises:
        ValueError: unknown preset (with the known names) or a list that is empty / not descending.
    """
    if isinstance(preset, str):
        if preset not in PRESETS:
            close = difflib.get_close_matches(preset, list(PRESETS), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"unknown sampler preset {preset!r}.{hint} Known presets: {', '.join(PRESETS)}")
        steps, preset_shift = PRESETS[preset]
        return shift_timesteps(steps, preset_shift if shift is None else shift)
    given = [float(t) for t in preset]
    if not given:
        raise ValueError("timestep list is empty")
    if any(b >= a for a, b in zip(given, given[1:], strict=False)):
        raise ValueError(f"timesteps must be strictly descending, got {given}")
    return shift_timesteps(given, 1.0 if shift is None else shift)


@dataclass(frozen=True)
class FlowMatchSampler:
    """A few-step flow-matching schedule.

    Attributes:
        timesteps: warped timesteps in [0, 1000], descending; one model call each.
        guidance_scale: classifier-free guidance scale (1 = off); the pipeline runs the
            unconditional branch only when it is != 1.
    """

    timesteps: tuple[float, ...]
    guidance_scale: float = 1.0

    @classmethod
    def from_preset(
        cls, preset: str | Sequence[float], shift: float | None = None, guidance_scale: float = 1.0
    ) -> FlowMatchSampler:
        """Build from a preset name or step list (see :func:`timesteps`)."""
        return cls(tuple(timesteps(preset, shift)), guidance_scale)

    @property
    def num_steps(self) -> int:
        return len(self.timesteps)

    @staticmethod
    def sigma(t: float) -> float:
        return float(t) / 1000.0

    def to_x0(self, x_t: torch.Tensor, velocity: torch.Tensor, t: float) -> torch.Tensor:
        """``x0 = x_t - sigma(t) * v`` (computed in float32)."""
        return (x_t.float() - self.sigma(t) * velocity.float()).to(x_t.dtype)

    def renoise(self, x0: torch.Tensor, t: float, noise: torch.Tensor) -> torch.Tensor:
        """``x_t = (1 - sigma) * x0 + sigma * noise`` at level ``t``."""
        s = self.sigma(t)
        return ((1.0 - s) * x0.float() + s * noise.float()).to(x0.dtype)

    def guide(self, v_cond: torch.Tensor, v_uncond: torch.Tensor) -> torch.Tensor:
        """Classifier-free guidance ``v_u + g * (v_c - v_u)``."""
        return v_uncond + self.guidance_scale * (v_cond - v_uncond)

    def step(self, x_t: torch.Tensor, velocity: torch.Tensor, index: int, noise: torch.Tensor | None) -> torch.Tensor:
        """Advance from step ``index``: the next level's noisy sample, or ``x0`` after the last step.

        Args:
            x_t: ``[B, C, F, H, W]`` sample at ``timesteps[index]``.
            velocity: model prediction for it.
            index: step index.
            noise: fresh noise for the re-noise (unused at the last step).
        """
        x0 = self.to_x0(x_t, velocity, self.timesteps[index])
        if index + 1 >= len(self.timesteps):
            return x0
        if noise is None:
            raise ValueError("step(): noise is needed to re-noise before the next step")
        return self.renoise(x0, self.timesteps[index + 1], noise)
