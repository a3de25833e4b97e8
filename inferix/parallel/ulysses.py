"""Ulysses sequence parallelism over ``torch.distributed``.

Each of ``P`` ranks holds a slice of the token sequence for *all* heads. Around
self-attention two all-to-alls swap that for the *whole* sequence and ``H/P`` heads, so
attention (and any KV cache behind it) runs unchanged on full sequences; everything else
in a DiT block (modulation, cross-attention, FFN, patch embedding, output projection) is
per token and needs no communication.

How the sequence is split: by rows of the latent token grid. Rank ``r`` runs the model on
latent rows ``[r H/P, (r+1) H/P)`` of every frame, so its tokens stay frame-major
(``f, row, col``) and per-frame modulation works as is::

    rank 0: f0 rows 0-1 | f1 rows 0-1 | ...        all-to-all        all ranks' rows, frame-major,
    rank 1: f0 rows 2-3 | f1 rows 2-3 | ...   ------------------->   heads [r H/P, (r+1) H/P)

RoPE: the model builds its rotary table for the local rows; the Ulysses backend rebuilds
it for the full grid (same temporal positions), so spatial positions are global.

Requirements: ``num_heads % P == 0`` and token rows ``% P == 0``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from inferix.models.attention import AttentionBackend, RopeApplier

logger = logging.getLogger(__name__)


def _world(group: Any) -> tuple[int, int]:
    import torch.distributed as dist

    return dist.get_rank(group), dist.get_world_size(group)


def seq_to_heads(x: torch.Tensor, frames: int, group: Any = None) -> torch.Tensor:
    """``[B, L/P, H, D]`` local rows, all heads -> ``[B, L, H/P, D]`` all rows (frame-major), local heads."""
    import torch
    import torch.distributed as dist

    _, p = _world(group)
    b, ls, h, d = x.shape
    if h % p:
        raise ValueError(f"Ulysses needs num_heads ({h}) divisible by the world size ({p})")
    send = x.reshape(b, ls, p, h // p, d).permute(2, 0, 1, 3, 4).contiguous()  # [P(dst), B, Ls, H/P, D]
    recv = torch.empty_like(send)  # [P(src), B, Ls, H/P, D]
    dist.all_to_all_single(recv, send, group=group)
    # rank-major (src, f, local tokens) -> frame-major (f, src, local tokens)
    per_frame = ls // frames
    y = recv.reshape(p, b, frames, per_frame, h // p, d).permute(1, 2, 0, 3, 4, 5)
    return y.reshape(b, frames * p * per_frame, h // p, d)


def heads_to_seq(y: torch.Tensor, frames: int, group: Any = None) -> torch.Tensor:
    """Inverse of :func:`seq_to_heads`: ``[B, L, H/P, D]`` -> ``[B, L/P, H, D]``."""
    import torch
    import torch.distributed as dist

    _, p = _world(group)
    b, l_full, hp, d = y.shape
    per_frame = l_full // frames // p
    send = y.reshape(b, frames, p, per_frame, hp, d).permute(2, 0, 1, 3, 4, 5).contiguous()  # [P(dst rows), ...]
    recv = torch.empty_like(send)  # [P(src heads), B, F, per_frame, H/P, D]
    dist.all_to_all_single(recv, send, group=group)
    return recv.permute(1, 2, 3, 0, 4, 5).reshape(b, frames * per_frame, p * hp, d)


class UlyssesAttention:
    """Wraps any attention backend so it sees whole sequences with this rank's heads.

    Args:
        inner: the backend doing the attention (``FullAttention``, a KV cache...). With a KV
            cache each rank caches its own heads: bookkeeping is identical on every rank.
        group: process group (default: the world).
    """

    def __init__(self, inner: AttentionBackend, group: Any = None) -> None:
        self.inner = inner
        self.group = group

    def self_attention(self, layer_idx: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                       rope: RopeApplier) -> torch.Tensor:
        from inferix.models.attention import RopeApplier

        _, p = _world(self.group)
        f = rope.num_frames
        full = RopeApplier(rope.head_dim, (rope.grid[0] * p, rope.grid[1]), rope.frame_positions, rope.theta)
        qg, kg, vg = (seq_to_heads(t, f, self.group) for t in (q, k, v))
        out = self.inner.self_attention(layer_idx, qg, kg, vg, full)
        return heads_to_seq(out, f, self.group)


def sequence_parallel_forward(model: Any, latents: torch.Tensor, timestep: Any, context: Any,
                              backend: AttentionBackend | None = None, frame_positions: torch.Tensor | None = None,
                              action: torch.Tensor | None = None, group: Any = None,
                              anchor: torch.Tensor | None = None) -> torch.Tensor:
    """Run ``model.forward`` split over the ranks of ``group``; every rank gets the full output.

    Args:
        model: a ``CausalWanModel`` (same weights on every rank).
        latents: ``[B, C, F, H, W]`` full latents (every rank passes the same tensor).
        backend: attention backend behind the all-to-all (default: full attention).
        Other arguments as ``CausalWanModel.forward``.

    Returns:
        ``[B, C, F, H, W]`` prediction, identical to a single-process forward up to float rounding.
    """
    import torch
    import torch.distributed as dist

    from inferix.models.attention import FullAttention

    rank, p = _world(group)
    ph = model.config.patch_size[1]
    rows = latents.shape[3] // ph
    if rows % p:
        raise ValueError(f"sequence parallel needs latent token rows ({rows}) divisible by the world size ({p})")
    step = latents.shape[3] // p
    local = latents[:, :, :, rank * step : (rank + 1) * step].contiguous()
    wrapped = UlyssesAttention(backend if backend is not None else FullAttention(), group)
    if anchor is not None:  # per-token input: split like the latents
        anchor = anchor[:, :, :, rank * step : (rank + 1) * step].contiguous()
    out_local = model(local, timestep, context, backend=wrapped, frame_positions=frame_positions, action=action,
                      anchor=anchor)
    parts = [torch.empty_like(out_local) for _ in range(p)]
    dist.all_gather(parts, out_local.contiguous(), group=group)
    return torch.cat(parts, dim=3)
