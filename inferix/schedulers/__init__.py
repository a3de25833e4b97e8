"""Few-step samplers for block diffusion."""

from inferix.schedulers.flow_matching import PRESETS, FlowMatchSampler, shift_timesteps, timesteps

__all__ = ["PRESETS", "FlowMatchSampler", "shift_timesteps", "timesteps"]
