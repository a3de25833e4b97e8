"""The attention boundary: RoPE equals diffusers' Wan RoPE; cached attention equals the masked reference."""

from __future__ import annotations

import pytest
import torch

from inferix.models.attention import ContiguousKVCache, FullAttention, RopeApplier, block_causal_mask


def test_rope_tables_equal_diffusers_wan_rope():
    from diffusers.models.transformers.transformer_wan import WanRotaryPosEmbed

    head_dim, frames, h, w = 24, 5, 3, 4
    ref = WanRotaryPosEmbed(head_dim, (1, 2, 2), max_seq_len=64)
    cos_ref, sin_ref = ref(torch.zeros(1, 1, frames, 2 * h, 2 * w))  # [1, L, 1, D]
    rope = RopeApplier(head_dim, (h, w), torch.arange(frames)[None])
    cos, sin = rope.cos_sin(rope.frame_positions)
    torch.testing.assert_close(cos, cos_ref, atol=1e-6, rtol=0)
    torch.testing.assert_close(sin, sin_ref, atol=1e-6, rtol=0)


def test_rope_has_no_position_cap_and_is_relative():
    # Positions far past Wan's 1,024-entry table still work, and a shift of every position leaves
    # q.k unchanged (what lets a rolling cache re-index positions).
    torch.manual_seed(0)
    rope = RopeApplier(12, (1, 1), torch.tensor([[0, 1]]))
    q, k = torch.randn(1, 2, 1, 12), torch.randn(1, 2, 1, 12)
    far = torch.tensor([[5000, 5001]])
    s0 = (rope.apply(q) * rope.apply(k)).sum(-1)
    s1 = (rope.apply(q, far) * rope.apply(k, far)).sum(-1)
    torch.testing.assert_close(s0, s1, atol=1e-4, rtol=1e-4)


def test_rope_rejects_token_count_mismatch():
    rope = RopeApplier(12, (2, 2), torch.arange(3)[None])
    with pytest.raises(ValueError, match="frame_positions"):
        rope.apply(torch.randn(1, 10, 1, 12))


@pytest.mark.parametrize("window,sink", [(None, 0), (4, 0), (4, 1)])
def test_block_causal_mask_visibility(window, sink):
    m = block_causal_mask(6, 2, 1, window=window, sink=sink)
    # Own block and the past are visible, never the future.
    assert m[0, 1] and not m[1, 2] and m[3, 0]
    if window is not None:
        assert not m[5, 1]  # frame 1 is outside block 2's 4-frame window
        assert m[5, 0] == (sink > 0)  # the sink frame stays visible
        assert m[5, 2]


def test_block_causal_mask_rejects_window_smaller_than_block():
    with pytest.raises(ValueError, match="window"):
        block_causal_mask(6, 2, 1, window=1)


def test_contiguous_cache_equals_block_causal_full_attention():
    torch.manual_seed(0)
    b, heads, d, frames, bf, grid = 2, 2, 12, 6, 2, (2, 1)
    s = grid[0] * grid[1]
    q, k, v = (torch.randn(b, frames * s, heads, d) for _ in range(3))
    rope_all = RopeApplier(d, grid, torch.arange(frames).expand(b, frames))
    ref = FullAttention.block_causal(frames, bf, s).self_attention(0, q, k, v, rope_all)

    cache = ContiguousKVCache()
    outs = []
    for blk in range(frames // bf):
        sl = slice(blk * bf * s, (blk + 1) * bf * s)
        rope = RopeApplier(d, grid, torch.arange(blk * bf, (blk + 1) * bf).expand(b, bf))
        cache.commit = False  # a denoising step reads the cache but leaves it unchanged
        cache.self_attention(0, q[:, sl], k[:, sl], v[:, sl], rope)
        assert cache.num_frames() == blk * bf
        cache.commit = True
        outs.append(cache.self_attention(0, q[:, sl], k[:, sl], v[:, sl], rope))
    torch.testing.assert_close(torch.cat(outs, 1), ref, atol=1e-5, rtol=1e-5)
    assert cache.num_frames() == frames


def test_block_causal_attention_equals_the_masked_reference_with_its_gradients():
    """Training's backend (block by block, no mask) computes what the masked full attention does,
    for unequal blocks (a 1-frame prefix, then 2-frame blocks), and back-propagates the same."""
    from inferix.models.attention import BlockCausalAttention, block_causal_mask_from_sizes

    torch.manual_seed(0)
    b, heads, d, sizes, grid = 2, 2, 12, [1, 2, 2, 2], (2, 3)
    s, frames = grid[0] * grid[1], sum(sizes)
    q, k, v = (torch.randn(b, frames * s, heads, d, requires_grad=True) for _ in range(3))
    rope = RopeApplier(d, grid, torch.arange(frames).expand(b, frames))
    ref = FullAttention(block_causal_mask_from_sizes(sizes, s)).self_attention(0, q, k, v, rope)
    ref_grads = torch.autograd.grad((ref * ref.detach().sin()).sum(), (q, k, v))
    out = BlockCausalAttention(sizes, s).self_attention(0, q, k, v, rope)
    grads = torch.autograd.grad((out * out.detach().sin()).sum(), (q, k, v))
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    for g, r in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(g, r, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="covers 42 tokens, the call has 36"):
        BlockCausalAttention(sizes, s).self_attention(0, q[:, :36], k[:, :36], v[:, :36], rope)
