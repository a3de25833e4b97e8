"""Block-pool attention backend == full forward with a (windowed) block-causal mask."""

from __future__ import annotations

import pytest
import torch

from inferix.kv_cache import CachePolicy, KVCacheManager
from inferix.kv_cache.backend import BlockPoolAttention, RowSpec
from inferix.kv_cache.storage import KVStorage
from inferix.models.attention import FullAttention

S = 4  # tokens per latent frame (2 x 2 grid)
BF = 2  # latent frames per generated block


class AttnStack:
    """A few attention layers with random projections that call an AttentionBackend.

    Enough to test the KV cache semantics (multi-layer, RoPE, block-causal) without the DiT.
    Input/output: ``[B, F * S, C]`` tokens in frame-major order.
    """

    def __init__(self, dim: int = 24, heads: int = 2, layers: int = 2, grid=(2, 2), seed: int = 0):
        g = torch.Generator().manual_seed(seed)
        self.dim, self.heads, self.grid = dim, heads, grid
        self.w = [torch.randn(4, dim, dim, generator=g) / dim**0.5 for _ in range(layers)]

    def __call__(self, x, frame_positions, backend):
        from inferix.models.attention import RopeApplier

        b, n, c = x.shape
        hd = c // self.heads
        rope = RopeApplier(hd, self.grid, frame_positions)
        for i, w in enumerate(self.w):
            q, k, v = (x @ w[j] for j in range(3))
            q, k, v = (t.reshape(b, n, self.heads, hd) for t in (q, k, v))
            out = backend.self_attention(i, q, k, v, rope)
            x = x + out.reshape(b, n, c) @ w[3]
        return x


@pytest.fixture
def attn_stack():
    return AttnStack()


def _reference(stack, x, window, sink):
    f = x.shape[1] // S
    backend = FullAttention.block_causal(f, BF, S, window=window, sink=sink)
    return stack(x, torch.arange(f)[None], backend)


def _blockwise(stack, x, policy, num_device_blocks=16, num_host_blocks=0, block_size=BF, noisy_passes=1):
    """Generate block by block: a few non-committing passes (like denoising steps), then a commit."""
    f = x.shape[1] // S
    m = KVCacheManager(block_size, num_device_blocks, num_host_blocks, policy)
    st = KVStorage(num_device_blocks, num_host_blocks, block_size)
    be = BlockPoolAttention(m, st)
    m.add_session("s")
    outs = []
    for b0 in range(0, f, BF):
        xb = x[:, b0 * S : (b0 + BF) * S]
        for _ in range(noisy_passes):  # read-only passes with other inputs must not touch the cache
            be.prepare([RowSpec("s", commit=False)])
            stack(torch.randn_like(xb), be.frame_positions(BF), be)
        assert m.reserve("s", BF) is not None
        be.prepare([RowSpec("s", commit=True)])
        outs.append(stack(xb, be.frame_positions(BF), be))
        m.commit("s", BF)
    return torch.cat(outs, 1), m


@pytest.mark.parametrize(
    "policy,window,sink",
    [
        (CachePolicy("full"), None, 0),
        # mask window counts the query's own block: past window 4 frames + block of 2 = 6
        (CachePolicy("rolling", window=4), 6, 0),
        (CachePolicy("rolling", window=4, positions="reindex"), 6, 0),
        (CachePolicy("sink", sink=2, window=2), 4, 2),
    ],
)
def test_blockwise_cached_equals_masked_full_forward(attn_stack, policy, window, sink):
    torch.manual_seed(0)
    x = torch.randn(1, 8 * BF * S, attn_stack.dim)  # 8 blocks
    ref = _reference(attn_stack, x, window, sink)
    got, m = _blockwise(attn_stack, x, policy)
    torch.testing.assert_close(got, ref, atol=1e-4, rtol=0)
    if policy.kind != "full":
        assert m.num_blocks("s") <= policy.max_visible_frames() // BF + 1


def test_reindexed_sink_differs_from_absolute_positions(attn_stack):
    """Re-indexing with a sink is a real choice (positions shift), not a no-op."""
    torch.manual_seed(0)
    x = torch.randn(1, 8 * BF * S, attn_stack.dim)
    a, _ = _blockwise(attn_stack, x, CachePolicy("sink", sink=2, window=2))
    r, _ = _blockwise(attn_stack, x, CachePolicy("sink", sink=2, window=2, positions="reindex"))
    torch.testing.assert_close(a[:, : 3 * BF * S], r[:, : 3 * BF * S], atol=1e-5, rtol=0)  # before eviction
    assert (a - r).abs().max() > 1e-3


def test_offloaded_cold_blocks_give_the_same_output(attn_stack):
    """Full policy with a device pool too small: cold blocks live on the host and are read per block."""
    torch.manual_seed(0)
    x = torch.randn(1, 6 * BF * S, attn_stack.dim)
    ref = _reference(attn_stack, x, None, 0)
    got, m = _blockwise(attn_stack, x, CachePolicy("full"), num_device_blocks=2, num_host_blocks=8)
    torch.testing.assert_close(got, ref, atol=1e-4, rtol=0)
    assert m.num_blocks("s", "host") == 4 and m.num_blocks("s", "device") == 2


def test_two_sessions_batched_with_different_cache_lengths(attn_stack):
    """Rows of different sessions (one with a longer cache) batch in one forward, padded and masked."""
    torch.manual_seed(0)
    xa = torch.randn(1, 3 * BF * S, attn_stack.dim)
    xb = torch.randn(1, 3 * BF * S, attn_stack.dim)
    ref_a, _ = _blockwise(attn_stack, xa, CachePolicy("full"), noisy_passes=0)
    ref_b, _ = _blockwise(attn_stack, xb, CachePolicy("full"), noisy_passes=0)
    m = KVCacheManager(BF, 16)
    be = BlockPoolAttention(m, KVStorage(16, 0, BF))
    m.add_session("a")
    m.add_session("b")

    # a runs its first block alone, then a's blocks 2-3 batch with b's blocks 1-2
    def step(rows, xs):
        for sid, _ in rows:
            m.reserve(sid, BF)
        be.prepare([RowSpec(sid, True) for sid, _ in rows])
        out = attn_stack(torch.cat(xs), be.frame_positions(BF), be)
        for sid, _ in rows:
            m.commit(sid, BF)
        return out

    blk = lambda x, i: x[:, i * BF * S : (i + 1) * BF * S]  # noqa: E731
    outs_a = [step([("a", 0)], [blk(xa, 0)])[0]]
    outs_b = []
    for i in (1, 2):
        o = step([("a", i), ("b", i - 1)], [blk(xa, i), blk(xb, i - 1)])
        outs_a.append(o[0])
        outs_b.append(o[1])
    torch.testing.assert_close(torch.cat(outs_a)[None], ref_a, atol=1e-5, rtol=0)
    torch.testing.assert_close(torch.cat(outs_b)[None], ref_b[:, : 2 * BF * S], atol=1e-5, rtol=0)


@pytest.mark.parametrize(
    "policy,window,sink",
    [
        (CachePolicy("rolling", window=3, positions="reindex"), 6, 0),
        (CachePolicy("sink", sink=3, window=3), 6, 3),
    ],
)
def test_dit_blockwise_with_window_policy_equals_windowed_mask_reference(policy, window, sink):
    """The Wan DiT, block by block through the block pool (denoise reads + clean commit), equals one
    full forward with the windowed block-causal mask over [clean past | noisy current] (per-frame t)."""
    from inferix.models.causal_wan import CausalWanModel
    from inferix.models.configs import get_config

    torch.manual_seed(0)
    model = CausalWanModel(get_config("tiny")).eval()
    bf, hw, nblocks = 3, (4, 4), 5
    s = (hw[0] // 2) * (hw[1] // 2)
    ctx = model.cross_attention_kv(torch.randn(1, 16, 32))
    clean = torch.randn(1, 4, bf * nblocks, *hw)
    noisy = torch.randn(1, 4, bf * nblocks, *hw)
    m = KVCacheManager(bf, 8, 0, policy)
    be = BlockPoolAttention(m, KVStorage(8, 0, bf))
    m.add_session("s")
    with torch.no_grad():
        for b in range(nblocks):
            sl = slice(b * bf, (b + 1) * bf)
            be.prepare([RowSpec("s", commit=False)])
            got = model(noisy[:, :, sl], torch.tensor([500.0]), ctx, be, be.frame_positions(bf))
            f = (b + 1) * bf
            seq = torch.cat([clean[:, :, : b * bf], noisy[:, :, sl]], 2)
            t = torch.cat([torch.zeros(b * bf), torch.full((bf,), 500.0)])[None]
            ref = model(
                seq, t, ctx, FullAttention.block_causal(f, bf, s, window=window, sink=sink), torch.arange(f)[None]
            )[:, :, -bf:]
            torch.testing.assert_close(got, ref, atol=1e-4, rtol=0)
            m.reserve("s", bf)
            be.prepare([RowSpec("s", commit=True)])
            model(clean[:, :, sl], torch.tensor([0.0]), ctx, be, be.frame_positions(bf))
            m.commit("s", bf)
    assert m.num_blocks("s") == policy.max_visible_frames() // bf
