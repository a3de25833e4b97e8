"""Shared fixtures for the Inferix engine-side tests (B)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")


class AttnStack:
    """A few attention layers with random projections that call an AttentionBackend.

    Enough to test the KV cache semantics (multi-layer, RoPE, block-causal) without the DiT.
    Input/output: ``[B, F * S, C]`` tokens in frame-major order.
    """

    def __init__(self, dim: int = 24, heads: int = 2, layers: int = 2, grid=(2, 2), seed: int = 0):
        import torch

        g = torch.Generator().manual_seed(seed)
        self.dim, self.heads, self.grid = dim, heads, grid
        self.w = [torch.randn(4, dim, dim, generator=g) / dim**0.5 for _ in range(layers)]

    def __call__(self, x, frame_positions, backend):
        from inferix.models.attention import RopeApplier

        b, l, c = x.shape
        hd = c // self.heads
        rope = RopeApplier(hd, self.grid, frame_positions)
        for i, w in enumerate(self.w):
            q, k, v = (x @ w[j] for j in range(3))
            q, k, v = (t.reshape(b, l, self.heads, hd) for t in (q, k, v))
            out = backend.self_attention(i, q, k, v, rope)
            x = x + out.reshape(b, l, c) @ w[3]
        return x


@pytest.fixture
def attn_stack():
    return AttnStack()
