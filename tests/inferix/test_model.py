"""The block-causal Wan DiT equals diffusers' WanTransformer3DModel and its cache equals the masked forward."""

from __future__ import annotations

import pytest
import torch

from inferix.models.attention import ContiguousKVCache, FullAttention
from inferix.models.causal_wan import CausalWanModel, CrossAttentionKV, velocity_to_x0


def _inputs(b=1, f=3, hw=8, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(b, 4, f, hw, hw, generator=g), torch.randn(b, 16, 32, generator=g)


@torch.no_grad()
def test_single_block_full_attention_equals_diffusers(diffusers_wan, tiny_model):
    x, ctx = _inputs(b=2)
    t = torch.tensor([999.0, 321.0])
    ref = diffusers_wan(x, t, ctx, return_dict=False)[0]
    out = tiny_model(x, t, ctx)
    assert out.shape == ref.shape == x.shape
    torch.testing.assert_close(out, ref, atol=1e-4, rtol=0)


@torch.no_grad()
def test_per_frame_timesteps_equal_diffusers_per_token_timesteps(diffusers_wan, tiny_model):
    # diffusers accepts one timestep per token (Wan 2.2 path); ours takes one per latent frame.
    x, ctx = _inputs(f=3)
    t_frames = torch.tensor([[0.0, 500.0, 900.0]])
    tokens_per_frame = (8 // 2) * (8 // 2)
    ref = diffusers_wan(x, t_frames.repeat_interleave(tokens_per_frame, 1), ctx, return_dict=False)[0]
    torch.testing.assert_close(tiny_model(x, t_frames, ctx), ref, atol=1e-4, rtol=0)


@torch.no_grad()
def test_precomputed_cross_attention_kv_equals_raw_context(tiny_model):
    x, ctx = _inputs()
    kv = tiny_model.cross_attention_kv(ctx)
    assert isinstance(kv, CrossAttentionKV) and len(kv.k) == tiny_model.config.num_layers
    torch.testing.assert_close(tiny_model(x, 400.0, kv), tiny_model(x, 400.0, ctx), atol=0, rtol=0)


@torch.no_grad()
def test_blockwise_cached_forward_equals_block_causal_masked_forward(tiny_model):
    # Teacher-forced: every frame has its own timestep; the cache is filled block by block at the
    # same timesteps, so each block's output must equal the one-pass block-causal forward.
    frames, block, hw = 6, 2, 8
    x, ctx = _inputs(f=frames)
    t = torch.tensor([[0.0, 0.0, 250.0, 250.0, 900.0, 900.0]])
    s = (hw // 2) ** 2
    ref = tiny_model(x, t, ctx, backend=FullAttention.block_causal(frames, block, s))
    cache = ContiguousKVCache()
    cache.commit = True
    outs = []
    for b0 in range(0, frames, block):
        pos = torch.arange(b0, b0 + block)[None]
        outs.append(
            tiny_model(x[:, :, b0 : b0 + block], t[:, b0 : b0 + block], ctx, backend=cache, frame_positions=pos)
        )
    torch.testing.assert_close(torch.cat(outs, 2), ref, atol=1e-4, rtol=0)
    # Without the mask the first block would see the future: the cache must not agree with that.
    full = tiny_model(x, t, ctx)
    assert (full[:, :, :block] - ref[:, :, :block]).abs().max() > 1e-3


@torch.no_grad()
def test_frame_positions_shift_rope_time_axis(tiny_model):
    # The same block placed at frame 500 instead of 0 must change the output (temporal RoPE is used)
    # while a relative shift of query and cached keys together keeps it (relative positions).
    x, ctx = _inputs(f=2)
    a = tiny_model(x, 500.0, ctx, frame_positions=torch.tensor([[0, 1]]))
    b = tiny_model(x, 500.0, ctx, frame_positions=torch.tensor([[500, 501]]))
    torch.testing.assert_close(a, b, atol=1e-4, rtol=0)
    c = tiny_model(x, 500.0, ctx, frame_positions=torch.tensor([[0, 7]]))
    assert (a - c).abs().max() > 1e-4


def test_velocity_to_x0_inverts_flow_interpolation():
    x0, noise = torch.randn(1, 4, 2, 4, 4), torch.randn(1, 4, 2, 4, 4)
    sigma = 0.7
    x_t = (1 - sigma) * x0 + sigma * noise
    torch.testing.assert_close(velocity_to_x0(x_t, noise - x0, 700.0), x0, atol=1e-5, rtol=0)


@torch.no_grad()
def test_action_embedding_starts_neutral_and_conditions_when_trained(tiny_config, tiny_model):
    cfg = tiny_config.replace(num_actions=5)
    model = CausalWanModel(cfg).eval()
    model.load_state_dict(tiny_model.state_dict(), strict=False)  # everything except the action table
    x, ctx = _inputs()
    base = tiny_model(x, 300.0, ctx)
    torch.testing.assert_close(model(x, 300.0, ctx, action=torch.tensor([3])), base, atol=1e-6, rtol=0)
    torch.nn.init.normal_(model.action_embedder.table.weight)
    assert (
        model(x, 300.0, ctx, action=torch.tensor([3])) - model(x, 300.0, ctx, action=torch.tensor([1]))
    ).abs().max() > 1e-3
    with pytest.raises(ValueError, match="unknown action id 7"):
        model(x, 300.0, ctx, action=torch.tensor([7]))
    with pytest.raises(ValueError, match="action-conditioned"):
        model(x, 300.0, ctx)


@torch.no_grad()
def test_bad_inputs_name_the_argument(tiny_model):
    x, ctx = _inputs()
    with pytest.raises(ValueError, match="C=4"):
        tiny_model(torch.randn(1, 3, 3, 8, 8), 1.0, ctx)
    with pytest.raises(ValueError, match="height"):
        tiny_model(torch.randn(1, 4, 3, 7, 8), 1.0, ctx)
    with pytest.raises(ValueError, match="text_dim=32"):
        tiny_model(x, 1.0, torch.randn(1, 16, 31))
    with pytest.raises(ValueError, match="frame_positions"):
        tiny_model(x, 1.0, ctx, frame_positions=torch.tensor([[0, 1]]))
    with pytest.raises(ValueError, match="timestep"):
        tiny_model(x, torch.ones(1, 2), ctx)


@torch.no_grad()
def test_continuous_per_frame_actions_modulate_only_their_frames(tiny_config, tiny_model):
    cfg = tiny_config.replace(action_dim=3)
    model = CausalWanModel(cfg).eval()
    model.load_state_dict(tiny_model.state_dict(), strict=False)
    torch.nn.init.normal_(model.action_embedder.linear_2.weight, std=0.2)
    x, ctx = _inputs(f=2)
    a = torch.zeros(1, 2, 3)
    b = a.clone()
    b[0, 1] = 1.0  # change only frame 1's action
    out_a, out_b = model(x, 300.0, ctx, action=a), model(x, 300.0, ctx, action=b)
    # Frame 0 differs only through attention to frame 1 (full attention here); under a causal mask it
    # would be untouched, frame 1 is modulated directly.
    assert (out_a[:, :, 1] - out_b[:, :, 1]).abs().max() > 1e-3
    causal = FullAttention.block_causal(2, 1, 16)
    ca, cb = model(x, 300.0, ctx, backend=causal, action=a), model(x, 300.0, ctx, backend=causal, action=b)
    torch.testing.assert_close(ca[:, :, 0], cb[:, :, 0], atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match="action_dim=3"):
        model(x, 300.0, ctx, action=torch.zeros(1, 4))


def test_forward_works_under_inference_mode(tiny_model):
    x, ctx = _inputs()
    with torch.no_grad():
        ref = tiny_model(x, 250.0, ctx)
    with torch.inference_mode():
        out = tiny_model(x, 250.0, ctx)
    torch.testing.assert_close(out, ref, atol=0, rtol=0)


@torch.no_grad()
def test_anchor_residual_head_predicts_the_change_from_the_previous_frame(tiny_config):
    """``prediction: anchor_residual``: the forward returns the velocity of ``x0 = anchor + head``, so
    a zero head is exactly "repeat the last frame" at every noise level and per-frame timestep."""
    cfg = tiny_config.replace(in_channels=8, prediction="anchor_residual")
    model = CausalWanModel(cfg).eval()
    x, ctx = _inputs()
    anchor = torch.randn(1, 4, 1, 8, 8)
    t = torch.tensor([[900.0, 500.0, 200.0]])
    head = model(x, t, ctx, anchor=anchor)
    model.proj_out.weight.zero_()
    model.proj_out.bias.zero_()
    v = model(x, t, ctx, anchor=anchor)
    torch.testing.assert_close(velocity_to_x0(x, v, t), anchor.expand(-1, -1, 3, -1, -1), atol=1e-5, rtol=0)
    # the head's output is the x0 change: its difference to the zero head is -head / sigma in velocity
    assert (head - v).abs().max() > 1e-3
    with pytest.raises(ValueError, match="needs the previous-frame input"):
        tiny_config.replace(prediction="anchor_residual")
    with pytest.raises(ValueError, match="prediction must be"):
        tiny_config.replace(prediction="eps")
