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

Any ``P`` works: token rows are padded with zero rows up to a multiple of ``P`` (the padded rows are
dropped from the sequence before the inner backend attends, so they are never keys, and cropped from
the output), and heads are padded with zero heads up to a multiple of ``P`` (their attention output
is dropped). The inner backend therefore sees exactly the single-process sequence and grid.
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
        rows: token rows of the real (unpadded) grid; ``None`` = every gathered row is real.
    """

    def __init__(self, inner: AttentionBackend, group: Any = None, rows: int | None = None) -> None:
        self.inner = inner
        self.group = group
        self.rows = rows

    def self_attention(self, layer_idx: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                       rope: RopeApplier) -> torch.Tensor:
        import torch.nn.functional as F

        from inferix.models.attention import RopeApplier

        _, p = _world(self.group)
        f = rope.num_frames
        h = q.shape[2]
        pad_heads = -h % p
        if pad_heads:  # zero heads so every rank gets H/P of them; their output is dropped below
            q, k, v = (F.pad(t, (0, 0, 0, pad_heads)) for t in (q, k, v))
        padded_rows = rope.grid[0] * p
        rows = padded_rows if self.rows is None else self.rows
        qg, kg, vg = (seq_to_heads(t, f, self.group) for t in (q, k, v))  # [B, F * padded_rows * w, H/P, D]
        if rows != padded_rows:  # drop padding rows: the inner backend sees the real grid only
            qg, kg, vg = (_crop_rows(t, f, padded_rows, rows) for t in (qg, kg, vg))
        full = RopeApplier(rope.head_dim, (rows, rope.grid[1]), rope.frame_positions, rope.theta)
        out = self.inner.self_attention(layer_idx, qg, kg, vg, full)
        if rows != padded_rows:
            b, _, hp, d = out.shape
            out = F.pad(out.reshape(b, f, rows, -1, hp, d), (0, 0, 0, 0, 0, 0, 0, padded_rows - rows))
            out = out.reshape(b, -1, hp, d)
        out = heads_to_seq(out, f, self.group)
        return out[:, :, :h] if pad_heads else out


def _crop_rows(x: torch.Tensor, frames: int, padded_rows: int, rows: int) -> torch.Tensor:
    """``[B, F * padded_rows * w, H, D]`` frame-major -> the first ``rows`` token rows of every frame."""
    b, _, h, d = x.shape
    return x.reshape(b, frames, padded_rows, -1, h, d)[:, :, :rows].reshape(b, -1, h, d)


def sequence_parallel_forward(model: Any, latents: torch.Tensor, timestep: Any, context: Any,
                              backend: AttentionBackend | None = None, frame_positions: torch.Tensor | None = None,
                              action: torch.Tensor | None = None, group: Any = None,
                              anchor: torch.Tensor | None = None, anchor_level: torch.Tensor | None = None
                              ) -> torch.Tensor:
    """Run ``model.forward`` split over the ranks of ``group``; every rank gets the full output.

    Latent rows are padded with zeros so every rank gets the same number of token rows (module
    docstring); the padding never reaches attention and is cropped from the output.

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
    import torch.nn.functional as F

    from inferix.models.attention import FullAttention

    rank, p = _world(group)
    ph = model.config.patch_size[1]
    height = latents.shape[3]
    if height % ph:
        raise ValueError(f"latent height {height} is not a multiple of the patch height {ph}")
    rows = height // ph
    pad = (-rows % p) * ph  # latent rows of zeros so the token rows divide by the world size
    if pad:
        latents = F.pad(latents, (0, 0, 0, pad))
        anchor = None if anchor is None else F.pad(anchor, (0, 0, 0, pad))
    step = latents.shape[3] // p
    local = latents[:, :, :, rank * step : (rank + 1) * step].contiguous()
    wrapped = UlyssesAttention(backend if backend is not None else FullAttention(), group, rows=rows)
    if anchor is not None:  # per-token input: split like the latents
        anchor = anchor[:, :, :, rank * step : (rank + 1) * step].contiguous()
    out_local = model(local, timestep, context, backend=wrapped, frame_positions=frame_positions, action=action,
                      anchor=anchor, anchor_level=anchor_level)
    parts = [torch.empty_like(out_local) for _ in range(p)]
    dist.all_gather(parts, out_local.contiguous(), group=group)
    return torch.cat(parts, dim=3)[:, :, :, :height]
