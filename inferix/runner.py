"""The model runner: one DiT forward over the rows the scheduler picked, with action guidance.

The engine's loop is split as vLLM splits it: :mod:`inferix.scheduler` decides which sessions' rows
share the next forward (bookkeeping, no tensors); :class:`inferix.engine.Engine` turns those rows
into :class:`RowInput` (each session's latents, timestep, text K/V, action and anchor) and applies
the results (x0, re-noising, commits, decoding); :class:`ModelRunner` owns the forward itself: it
stacks the rows, prepares the KV-cache backend, calls the model, runs the action-guidance pass
(:attr:`inferix.sampling.SamplingConfig.action_guidance`) and, when a batched forward raises,
retries row by row so only the failing row's session fails.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from inferix.kv_cache.backend import RowSpec
from inferix.sampling import SamplingConfig

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)


def guide(v_cond: torch.Tensor, v_uncond: torch.Tensor, scale: float, rescale: float = 0.0) -> torch.Tensor:
    """Classifier-free guidance ``v_uncond + scale (v_cond - v_uncond)``; with ``rescale`` = phi > 0,
    mixed with its copy scaled to the per-sample std of ``v_cond`` (guidance rescale)."""
    v = v_uncond + scale * (v_cond - v_uncond)
    if rescale > 0:
        dims = tuple(range(1, v.ndim))
        ratio = v_cond.float().std(dim=dims, keepdim=True) / v.float().std(dim=dims, keepdim=True).clamp_min(1e-8)
        v = rescale * (v * ratio.to(v.dtype)) + (1.0 - rescale) * v
    return v


@dataclass
class RowInput:
    """One row of a forward: a pass of one session's current block.

    Attributes:
        session_id: whose row (the KV-cache backend serves that session's past blocks).
        commit: the block's commit pass (writes its keys/values) rather than a denoising step.
        latents: ``[1, C, F, h, w]``.
        timestep: the pass's timestep in [0, 1000].
        context: the prompt's cross-attention K/V (:class:`inferix.models.causal_wan.CrossAttentionKV`).
        action: the action input ``[1, ...]``, or None for a model without one.
        anchor: ``[1, C, 1, h, w]``, the previous clean latent frame for a model conditioned on it.
    """

    session_id: str
    commit: bool
    latents: Any
    timestep: float
    context: Any
    action: Any = None
    anchor: Any = None


class ModelRunner:
    """Runs the DiT over a batch of :class:`RowInput`.

    Args:
        model: the DiT.
        backend: the KV-cache attention backend (:class:`inferix.kv_cache.backend.BlockPoolAttention`).
        sampling: the sampler's settings (action guidance, its rescale, joint caption guidance, the
            anchor level).
        block_frames: latent frames per block.
        device: the model's device.
        idle_action: ``() -> [1, ...]`` the model's default action (the unguided pass's action).
        null_context: ``() -> CrossAttentionKV`` of the empty prompt (joint caption guidance).
        sequence_parallel: split every forward over the ranks of the default ``torch.distributed`` group
            (Ulysses, :mod:`inferix.parallel`); every rank runs the same engine and gets the same output.
    """

    def __init__(self, model: Any, backend: Any, sampling: SamplingConfig, block_frames: int, device: Any,
                 idle_action: Callable[[], Any], null_context: Callable[[], Any],
                 sequence_parallel: bool = False) -> None:
        self.model = model
        self.backend = backend
        self.sampling = sampling
        self.block_frames = block_frames
        self.device = device
        self._idle_action = idle_action
        self._null_context = null_context
        self.sequence_parallel = sequence_parallel

    def call_model(self, latents: torch.Tensor, t: torch.Tensor, ctx: Any, positions: torch.Tensor, action: Any,
                   anchor: Any, level: Any) -> torch.Tensor:
        """One DiT forward through the KV-cache backend, split over the ranks under sequence parallel."""
        if self.sequence_parallel:
            from inferix.parallel import sequence_parallel_forward

            return sequence_parallel_forward(self.model, latents, t, ctx, self.backend, positions, action,
                                             anchor=anchor, anchor_level=level)
        return self.model(latents, t, ctx, backend=self.backend, frame_positions=positions, action=action,
                          anchor=anchor, anchor_level=level)

    def anchor_level(self, rows: int) -> torch.Tensor | None:
        """``[rows]`` of ``sampling.anchor_level`` for a model with an anchor-level input, else None."""
        import torch

        if not self.model.config.anchor_level:
            return None
        return torch.full((rows,), self.sampling.anchor_level, device=self.device)

    def execute(self, rows: Sequence[RowInput]) -> dict[str, Any]:
        """Forward all rows at once: ``{session_id: velocity [1, ...]}``; if that raises, each row alone,
        so only the culprit's entry is the exception it raised."""
        try:
            v = self.forward(rows)
            return {r.session_id: v[i : i + 1] for i, r in enumerate(rows)}
        except Exception as batch_error:
            if len(rows) == 1:
                return {rows[0].session_id: batch_error}
            logger.warning("batched forward of %d rows failed (%s); retrying row by row", len(rows), batch_error)
        out: dict[str, Any] = {}
        for r in rows:
            try:
                out[r.session_id] = self.forward([r])
            except Exception as e:
                out[r.session_id] = e
        return out

    def forward(self, rows: Sequence[RowInput]) -> torch.Tensor:
        """The velocity of every row ``[B, C, F, h, w]``, action-guided on the denoising rows."""
        import torch

        from inferix.models.causal_wan import CrossAttentionKV

        latents = torch.cat([r.latents for r in rows])  # [B, C, F, h, w]
        t = torch.tensor([r.timestep for r in rows], device=self.device)
        ctx = CrossAttentionKV.cat([r.context for r in rows]) if len(rows) > 1 else rows[0].context
        actions = [r.action for r in rows]
        action = None
        if any(a is not None for a in actions):
            if any(a is None for a in actions):
                raise ValueError("an action-conditioned model needs an action for every session; "
                                 + ", ".join(r.session_id for r in rows if r.action is None) + " have none")
            action = torch.cat(actions).to(self.device)
        anchor = torch.cat([r.anchor for r in rows]) if self.model.config.conditions_on_previous_frame else None
        self.backend.prepare([RowSpec(r.session_id, r.commit) for r in rows])
        positions = self.backend.frame_positions(self.block_frames)
        level = self.anchor_level(len(rows))
        v = self.call_model(latents, t, ctx, positions, action, anchor, level)
        g = self.sampling.action_guidance
        guided = [i for i, r in enumerate(rows) if not r.commit]
        if action is None or g == 1.0 or not guided:
            return v
        # the same denoising rows again with the default action; read-only (no commit row), so the
        # cache is untouched, then v_idle + g (v_action - v_idle)
        sub = [rows[i] for i in guided]
        idle = torch.cat([self._idle_action() for _ in sub]).to(self.device)
        if self.sampling.guidance_drops_caption:
            null = self._null_context()
            sub_ctx = null if len(guided) == 1 else CrossAttentionKV.cat([null] * len(guided))
        else:
            sub_ctx = ctx if len(guided) == len(rows) else CrossAttentionKV.cat([rows[i].context for i in guided])
        self.backend.prepare([RowSpec(r.session_id, False) for r in sub])
        v_idle = self.call_model(latents[guided], t[guided], sub_ctx, self.backend.frame_positions(self.block_frames),
                                 idle, None if anchor is None else anchor[guided],
                                 None if level is None else level[guided])
        v = v.clone()
        v[guided] = guide(v[guided], v_idle, g, self.sampling.action_guidance_rescale)
        return v
