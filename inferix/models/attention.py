"""The attention boundary between the model and the KV cache.

The model never owns a cache. Each transformer block computes ``q, k, v`` for the
tokens of the *current call* (un-roped) and hands them to an
:class:`AttentionBackend`::

    out = backend.self_attention(layer_idx, q, k, v, rope)   # q, k, v, out: [B, L, H, D]

``L`` = frames_in_call x h_tokens x w_tokens, tokens in frame-major order
(frame, row, column), exactly the order of the patch embedding.

:class:`RopeApplier` knows the (h, w) token grid and computes Wan's 3-axis RoPE on
the fly for any temporal positions (no table cap: positions are unbounded ints).
``rope.frame_positions`` (``LongTensor [B, F]``) holds the temporal index of each
latent frame of the current call, per batch row, so sessions at different positions
can be batched in one forward.

Keys are cached **un-roped**: a backend may re-index temporal positions (rolling
window / attention sink) and rotate cached keys at read time with
``rope.apply(k_cached, positions_of_cached_frames)``.

Backends here:

* :class:`FullAttention` — no cache; all tokens of the call attend to each other,
  optionally through a mask (e.g. :func:`block_causal_mask`, the reference for the
  cached computation).
* :class:`BlockCausalAttention` — no cache; the result of :class:`FullAttention` with
  :func:`block_causal_mask_from_sizes`, computed block by block without a mask (training's
  layout: the masked-out upper triangle is never computed).
* :class:`ContiguousKVCache` — one session, ``torch.cat`` growth; the simplest cache,
  used by the equivalence tests and :func:`inferix.pipeline.generate_blocks`.

The block-pool backend of ``inferix/kv_cache`` implements the same protocol for many
sessions and eviction policies.

Block-causal layout (block_frames = 2, tokens_per_frame = S, window = None)::

    key frames ->   f0 f1 | f2 f3 | f4 f5
    query f0,f1      x  x |       |
    query f2,f3      x  x | x  x  |
    query f4,f5      x  x | x  x  | x  x
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

__all__ = [
    "AttentionBackend",
    "BlockCausalAttention",
    "ContiguousKVCache",
    "FullAttention",
    "RopeApplier",
    "attend",
    "block_causal_mask",
    "block_causal_mask_from_sizes",
    "rope_axis_dims",
]


def rope_axis_dims(head_dim: int) -> tuple[int, int, int]:
    """Split a head dimension into Wan's (temporal, height, width) RoPE sub-dimensions.

    Wan gives height and width ``2 * (head_dim // 6)`` channels each and the rest to time
    (head_dim 128 -> 44, 42, 42).
    """
    hw = 2 * (head_dim // 6)
    t = head_dim - 2 * hw
    if t <= 0 or t % 2 or hw <= 0:
        raise ValueError(f"head_dim must be even and >= 6 for 3-axis RoPE, got {head_dim}")
    return t, hw, hw


def _axis_cos_sin(positions: torch.Tensor, dim: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin of ``positions * inv_freq`` for one axis, each pair of channels sharing a frequency.

    Computed in float64 and cast to float32 like Wan/diffusers, so long positions keep their precision.

    Args:
        positions: integer positions, any shape ``[...]``.
        dim: channels of this axis (even).
        theta: RoPE base.

    Returns:
        ``(cos, sin)``, each float32 ``[..., dim]`` with every value repeated twice (interleaved pairs).
    """
    import torch

    inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=positions.device) / dim))
    angles = positions.to(torch.float64).unsqueeze(-1) * inv_freq  # [..., dim/2]
    cos = angles.cos().repeat_interleave(2, dim=-1).float()
    sin = angles.sin().repeat_interleave(2, dim=-1).float()
    return cos, sin


@dataclass
class RopeApplier:
    """Wan 3-axis rotary embedding for one forward call.

    Attributes:
        head_dim: channels per attention head.
        grid: ``(h_tokens, w_tokens)`` spatial token grid of every latent frame.
        frame_positions: ``LongTensor [B, F]`` temporal position of each latent frame of the
            current call's tokens (``L = F * h * w``).
        theta: RoPE base (10,000 for Wan).
    """

    head_dim: int
    grid: tuple[int, int]
    frame_positions: torch.Tensor  # [B, F]
    theta: float = 10000.0
    _spatial: tuple[torch.Tensor, torch.Tensor] | None = field(default=None, repr=False)
    _memo: dict = field(default_factory=dict, repr=False)

    @property
    def tokens_per_frame(self) -> int:
        return self.grid[0] * self.grid[1]

    @property
    def num_frames(self) -> int:
        """Latent frames in the current call."""
        return int(self.frame_positions.shape[1])

    def _spatial_cos_sin(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        import torch

        if self._spatial is None or self._spatial[0].device != device:
            _, h_dim, w_dim = rope_axis_dims(self.head_dim)
            h, w = self.grid
            rows = torch.arange(h, device=device)
            cols = torch.arange(w, device=device)
            cos_h, sin_h = _axis_cos_sin(rows, h_dim, self.theta)  # [h, h_dim]
            cos_w, sin_w = _axis_cos_sin(cols, w_dim, self.theta)  # [w, w_dim]
            cos = torch.cat([cos_h[:, None].expand(h, w, h_dim), cos_w[None].expand(h, w, w_dim)], -1)
            sin = torch.cat([sin_h[:, None].expand(h, w, h_dim), sin_w[None].expand(h, w, w_dim)], -1)
            self._spatial = (cos.reshape(h * w, -1), sin.reshape(h * w, -1))  # [S, h_dim + w_dim]
        return self._spatial

    def cos_sin(self, frame_positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """RoPE tables for tokens of frames at ``frame_positions``.

        Args:
            frame_positions: ``LongTensor [B, F]``.

        Returns:
            ``(cos, sin)`` float32 ``[B, F * h * w, 1, head_dim]``.
        """
        # Memo by tensor identity: within one forward the same positions tensor is rotated once per
        # layer for q and k. (No version counter: inference-mode tensors have none.)
        key = id(frame_positions)
        hit = self._memo.get(key)
        if hit is not None and hit[0] is frame_positions:
            return hit[1]
        import torch

        t_dim, _, _ = rope_axis_dims(self.head_dim)
        b, f = frame_positions.shape
        s = self.tokens_per_frame
        cos_t, sin_t = _axis_cos_sin(frame_positions, t_dim, self.theta)  # [B, F, t_dim]
        cos_s, sin_s = self._spatial_cos_sin(frame_positions.device)  # [S, hw_dim]
        cos = torch.cat([cos_t[:, :, None].expand(b, f, s, t_dim), cos_s.expand(b, f, s, cos_s.shape[-1])], -1)
        sin = torch.cat([sin_t[:, :, None].expand(b, f, s, t_dim), sin_s.expand(b, f, s, sin_s.shape[-1])], -1)
        out = (cos.reshape(b, f * s, 1, self.head_dim), sin.reshape(b, f * s, 1, self.head_dim))
        if len(self._memo) > 8:  # per-forward object; a handful of distinct position sets at most
            self._memo.clear()
        self._memo[key] = (frame_positions, out)
        return out

    def apply(self, x: torch.Tensor, frame_positions: torch.Tensor | None = None) -> torch.Tensor:
        """Rotate ``x`` by RoPE.

        Args:
            x: ``[B, L, H, D]`` queries or keys, ``L = F * h * w`` in frame-major order.
            frame_positions: ``LongTensor [B, F]`` temporal positions of x's frames; defaults to
                ``self.frame_positions`` (the current call's frames).

        Returns:
            Rotated tensor, same shape and dtype as ``x``.
        """
        import torch

        pos = self.frame_positions if frame_positions is None else frame_positions
        if x.shape[1] != pos.shape[1] * self.tokens_per_frame:
            raise ValueError(
                f"RoPE: x has {x.shape[1]} tokens but frame_positions {tuple(pos.shape)} x grid {self.grid} "
                f"gives {pos.shape[1] * self.tokens_per_frame}"
            )
        cos, sin = self.cos_sin(pos)  # [B, L, 1, D]
        x1, x2 = x.unflatten(-1, (-1, 2)).unbind(-1)  # [B, L, H, D/2] each: interleaved channel pairs
        c, s = cos[..., 0::2], sin[..., 0::2]
        out = torch.empty_like(x)  # products are float32; written back in x's dtype (as Wan does)
        out[..., 0::2] = x1 * c - x2 * s
        out[..., 1::2] = x1 * s + x2 * c
        return out


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Scaled dot-product attention in the ``[B, L, H, D]`` layout.

    Args:
        q: ``[B, Lq, H, D]``.
        k: ``[B, Lk, H, D]``.
        v: ``[B, Lk, H, D]``.
        mask: optional boolean ``[Lq, Lk]`` or ``[B, 1, Lq, Lk]``, True = may attend.

    Returns:
        ``[B, Lq, H, D]``.
    """
    import torch.nn.functional as F

    out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), attn_mask=mask)
    return out.transpose(1, 2)


def block_causal_mask(
    num_frames: int,
    block_frames: int,
    tokens_per_frame: int,
    window: int | None = None,
    sink: int = 0,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """Boolean attention mask for block-causal generation over frame blocks.

    A query in block ``b`` (frames ``[b*block_frames, (b+1)*block_frames)``) may attend to
    every key frame ``< (b+1)*block_frames`` (its own block and the past), restricted by
    ``window`` and ``sink``.

    Args:
        num_frames: latent frames in the sequence.
        block_frames: latent frames per block.
        tokens_per_frame: tokens per latent frame (h_tokens * w_tokens).
        window: if set, a query block sees only the last ``window`` latent frames ending at the
            end of its own block (its own block included), i.e. key frames
            ``>= (b+1)*block_frames - window``.
        sink: the first ``sink`` latent frames stay visible to every later block (attention sink),
            on top of the window.
        device: where to build it.

    Returns:
        ``BoolTensor [num_frames * tokens_per_frame, num_frames * tokens_per_frame]``, True = attend.
    """
    import torch

    if num_frames <= 0 or block_frames <= 0 or tokens_per_frame <= 0:
        raise ValueError(
            f"block_causal_mask: num_frames, block_frames, tokens_per_frame must be positive, got "
            f"{num_frames}, {block_frames}, {tokens_per_frame}"
        )
    if window is not None and window < block_frames:
        raise ValueError(f"block_causal_mask: window ({window}) must be >= block_frames ({block_frames})")
    frame = torch.arange(num_frames, device=device)
    block_end = (frame // block_frames + 1) * block_frames  # [F] exclusive end of each frame's block
    q_end = block_end[:, None]  # [F, 1]
    k = frame[None, :]  # [1, F]
    allowed = k < q_end
    if window is not None:
        in_window = k >= q_end - window
        if sink > 0:
            in_window = in_window | (k < sink)
        allowed = allowed & in_window
    # Expand frame-level mask to tokens (frame-major token order).
    return allowed.repeat_interleave(tokens_per_frame, 0).repeat_interleave(tokens_per_frame, 1)


def block_causal_mask_from_sizes(
    block_sizes: list[int], tokens_per_frame: int, device: torch.device | str | None = None
) -> torch.Tensor:
    """Block-causal mask for blocks of different lengths (e.g. a 1-frame image prefix, then 3-frame blocks).

    Args:
        block_sizes: latent frames of each block, in order.
        tokens_per_frame: tokens per latent frame.
        device: where to build it.

    Returns:
        ``BoolTensor [L, L]`` with ``L = sum(block_sizes) * tokens_per_frame``; a token sees its own
        block and every earlier one.
    """
    import torch

    if not block_sizes or min(block_sizes) <= 0:
        raise ValueError(f"block_sizes must be positive, got {block_sizes}")
    block_of_frame = torch.repeat_interleave(
        torch.arange(len(block_sizes), device=device), torch.tensor(block_sizes, device=device)
    )
    allowed = block_of_frame[None, :] <= block_of_frame[:, None]  # [F, F]
    return allowed.repeat_interleave(tokens_per_frame, 0).repeat_interleave(tokens_per_frame, 1)


@runtime_checkable
class AttentionBackend(Protocol):
    """What the model calls for self-attention (see the module docstring)."""

    def self_attention(
        self, layer_idx: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, rope: RopeApplier
    ) -> torch.Tensor:
        """Attend the current call's queries to the visible keys.

        Args:
            layer_idx: transformer block index (a cache keeps one entry per layer).
            q: ``[B, L, H, D]`` un-roped queries of the current call.
            k: ``[B, L, H, D]`` un-roped keys of the current call.
            v: ``[B, L, H, D]`` values of the current call.
            rope: RoPE for this call; ``rope.frame_positions`` ``[B, F]`` are the call's frames.

        Returns:
            ``[B, L, H, D]``.
        """
        ...


class FullAttention:
    """No cache: every token of the call attends to every token of the call (optionally masked).

    Args:
        mask: optional boolean ``[L, L]`` mask (True = attend), e.g. from :func:`block_causal_mask`;
            applied to every layer.
    """

    def __init__(self, mask: torch.Tensor | None = None) -> None:
        self.mask = mask

    @classmethod
    def block_causal(
        cls,
        num_frames: int,
        block_frames: int,
        tokens_per_frame: int,
        window: int | None = None,
        sink: int = 0,
        device: torch.device | str | None = None,
    ) -> FullAttention:
        """A full-sequence backend with :func:`block_causal_mask` (the reference for cached decoding)."""
        return cls(block_causal_mask(num_frames, block_frames, tokens_per_frame, window, sink, device))

    def self_attention(
        self, layer_idx: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, rope: RopeApplier
    ) -> torch.Tensor:
        mask = self.mask
        if mask is not None:
            if mask.shape[-2:] != (q.shape[1], k.shape[1]):
                raise ValueError(f"FullAttention mask {tuple(mask.shape)} does not fit {q.shape[1]} tokens")
            mask = mask.to(q.device)
        return attend(rope.apply(q), rope.apply(k), v, mask)


class BlockCausalAttention:
    """No cache: :class:`FullAttention` under :func:`block_causal_mask_from_sizes`, block by block.

    Each block's queries attend, unmasked, to the keys of every token up to the end of their own
    block, so a sequence of ``K`` equal blocks computes about ``(K + 1) / 2K`` of the masked score
    matrix (0.63 for training's 1-frame prefix + 3 two-frame blocks) and each call can use the
    unmasked (flash) kernels. Equal to the masked computation up to float rounding, gradients included
    (``tests/inferix/test_attention.py``); ``bench/bench_inferix.py attention`` times the two.

    Args:
        block_sizes: latent frames of each block, in order (after temporal patching).
        tokens_per_frame: tokens per latent frame.
    """

    def __init__(self, block_sizes: list[int], tokens_per_frame: int) -> None:
        if not block_sizes or min(block_sizes) <= 0 or tokens_per_frame <= 0:
            raise ValueError(f"block_sizes and tokens_per_frame must be positive, got {block_sizes}, "
                             f"{tokens_per_frame}")
        self.ends: list[int] = []
        total = 0
        for n in block_sizes:
            total += n * tokens_per_frame
            self.ends.append(total)

    def self_attention(
        self, layer_idx: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, rope: RopeApplier
    ) -> torch.Tensor:
        import torch

        if q.shape[1] != self.ends[-1] or k.shape[1] != self.ends[-1]:
            raise ValueError(f"BlockCausalAttention covers {self.ends[-1]} tokens, the call has {q.shape[1]}")
        q, k = rope.apply(q), rope.apply(k)
        outs, start = [], 0
        for end in self.ends:
            outs.append(attend(q[:, start:end], k[:, :end], v[:, :end]))
            start = end
        return torch.cat(outs, 1)


class ContiguousKVCache:
    """One session's KV cache, grown by ``torch.cat`` (reference implementation).

    Stores un-roped keys, values and the temporal position of every cached frame per layer.
    Each call attends to ``cache + current call``. When :attr:`commit` is True, the call's
    ``k, v`` are appended after attending (the t = 0 clean pass); denoising steps run with
    ``commit = False`` and leave the cache untouched.

    Layout per layer::

        k: [B, F_cached * S, H, D]   v: same   positions: [B, F_cached]
    """

    def __init__(self) -> None:
        self.commit: bool = False  # write this call's k/v after attending (the t = 0 clean pass)
        self._k: dict[int, torch.Tensor] = {}
        self._v: dict[int, torch.Tensor] = {}
        self._pos: dict[int, torch.Tensor] = {}

    def set_commit(self, commit: bool) -> None:
        """Whether the next calls append their k/v (see :attr:`commit`)."""
        self.commit = bool(commit)

    def num_frames(self, layer_idx: int = 0) -> int:
        """Cached latent frames in ``layer_idx``."""
        pos = self._pos.get(layer_idx)
        return 0 if pos is None else int(pos.shape[1])

    def reset(self) -> None:
        """Drop everything (a new video)."""
        self._k.clear()
        self._v.clear()
        self._pos.clear()

    def nbytes(self) -> int:
        """Bytes held by cached keys and values."""
        return sum(t.numel() * t.element_size() for d in (self._k, self._v) for t in d.values())

    def self_attention(
        self, layer_idx: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, rope: RopeApplier
    ) -> torch.Tensor:
        import torch

        pos = rope.frame_positions
        if layer_idx in self._k:
            k_all = torch.cat([self._k[layer_idx], k], 1)
            v_all = torch.cat([self._v[layer_idx], v], 1)
            pos_all = torch.cat([self._pos[layer_idx], pos], 1)
        else:
            k_all, v_all, pos_all = k, v, pos
        out = attend(rope.apply(q), rope.apply(k_all, pos_all), v_all)
        if self.commit:
            self._k[layer_idx], self._v[layer_idx], self._pos[layer_idx] = k_all, v_all, pos_all
        return out
