"""GPU checks of the model side (deselected by default; run with ``-m gpu`` on a CUDA machine)."""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.gpu


def test_cached_equals_recompute_on_cuda_fp32(cuda):
    from inferix.models import build_model
    from inferix.pipeline import generate_blocks
    from inferix.schedulers import FlowMatchSampler

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = build_model("tiny", device=cuda)
    ctx = torch.randn(1, 16, 32)
    s = FlowMatchSampler.from_preset("self_forcing")
    runs = [
        generate_blocks(
            model, None, ctx, 3, 3, s, latent_hw=(16, 16), generator=torch.Generator().manual_seed(0), recompute=r
        )
        for r in (False, True)
    ]
    torch.testing.assert_close(runs[0].latents, runs[1].latents, atol=1e-4, rtol=0)


def test_wan_1_3b_size_bf16_block_runs_finite(cuda):
    from inferix.models import build_model
    from inferix.models.attention import ContiguousKVCache

    model = build_model("wan2.1-1.3b", device=cuda, dtype=torch.bfloat16)
    ctx = model.cross_attention_kv(torch.randn(1, 512, 4096, device=cuda))
    cache = ContiguousKVCache()
    x = torch.randn(1, 16, 3, 60, 104, device=cuda, dtype=torch.bfloat16)  # one 3-frame block at 480x832
    with torch.no_grad():
        v = model(x, torch.tensor([1000.0], device=cuda), ctx, cache, torch.arange(3, device=cuda)[None])
    assert v.shape == x.shape and torch.isfinite(v.float()).all()


