"""The recipe's ``init_from`` loading (:func:`reference_world_lab.recipe.load_init_weights`): a stage that
adds inputs to an earlier stage's model starts as exactly that model. Moved here from the engine's
model tests (issue 57: tests/inferix tests the engine only)."""

from __future__ import annotations

import pytest
import torch

from inferix.models.causal_wan import CausalWanModel


def _inputs(b=1, f=3, hw=8, seed=1):
    """Latents ``[b, 4, f, hw, hw]`` and a text context ``[b, 16, 32]`` for the tiny model (seeded)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(b, 4, f, hw, hw, generator=g), torch.randn(b, 16, 32, generator=g)


@torch.no_grad()
def test_previous_frame_conditioning_starts_as_the_base_model_and_then_reads_the_anchor(tiny_config, tiny_model):
    """``in_channels == 2 * out_channels``: the previous clean frame is concatenated to the input.
    Zero-padded init weights (``load_init_weights``) reproduce the unconditioned model for any
    anchor; once the new input weights move, the anchor changes the output."""
    from reference_world_lab.recipe import load_init_weights

    cfg = tiny_config.replace(in_channels=2 * tiny_config.out_channels)
    assert cfg.conditions_on_previous_frame and not tiny_config.conditions_on_previous_frame
    model = CausalWanModel(cfg).eval()
    load_init_weights(model, tiny_model.state_dict())
    x, ctx = _inputs()
    anchor = torch.randn(1, 4, 1, 8, 8)
    base = tiny_model(x, 300.0, ctx)
    torch.testing.assert_close(model(x, 300.0, ctx, anchor=anchor), base, atol=1e-6, rtol=0)
    torch.nn.init.normal_(model.patch_embedding.weight, std=0.1)
    one = model(x, 300.0, ctx, anchor=anchor)
    # a [B, C, 1, H, W] anchor is broadcast over the call's frames
    torch.testing.assert_close(model(x, 300.0, ctx, anchor=anchor.expand(-1, -1, 3, -1, -1)), one, atol=1e-6, rtol=0)
    assert (model(x, 300.0, ctx, anchor=torch.zeros_like(anchor)) - one).abs().max() > 1e-3
    with pytest.raises(ValueError, match="pass anchor="):
        model(x, 300.0, ctx)
    with pytest.raises(ValueError, match="anchor must be"):
        model(x, 300.0, ctx, anchor=torch.randn(1, 4, 2, 8, 8))
    with pytest.raises(ValueError, match="not conditioned on the previous frame"):
        tiny_model(x, 300.0, ctx, anchor=anchor)
    with pytest.raises(ValueError, match="do not fit"):
        load_init_weights(CausalWanModel(tiny_config.replace(in_channels=12, out_channels=12)), tiny_model.state_dict())


@torch.no_grad()
def test_anchor_level_input_starts_with_no_effect_and_then_tells_levels_apart(tiny_config):
    """``anchor_level``: the std of the noise on the anchor and context, embedded into the time
    embedding. A model that gains it from weights without it computes exactly what they did, at any
    level; once its output layer moves, a clean anchor (level 0, the default) and a noisy one
    (0.1) give different predictions, and a per-frame level equals the same level broadcast."""
    from reference_world_lab.recipe import load_init_weights

    base = CausalWanModel(tiny_config.replace(in_channels=8)).eval()
    model = CausalWanModel(tiny_config.replace(in_channels=8, anchor_level=True)).eval()
    load_init_weights(model, base.state_dict())
    x, ctx = _inputs()
    anchor = torch.randn(1, 4, 1, 8, 8)
    ref = base(x, 300.0, ctx, anchor=anchor)
    for level in (None, 0.0, 0.1, torch.tensor([[0.0, 0.05, 0.1]])):
        # (a per-frame level runs the modulation per frame: equal up to matmul rounding)
        torch.testing.assert_close(model(x, 300.0, ctx, anchor=anchor, anchor_level=level), ref, atol=1e-6, rtol=0)
    torch.nn.init.normal_(model.anchor_level_embedder.linear_2.weight, std=0.2)
    clean = model(x, 300.0, ctx, anchor=anchor)
    torch.testing.assert_close(model(x, 300.0, ctx, anchor=anchor, anchor_level=0.0), clean, atol=0, rtol=0)
    noisy = model(x, 300.0, ctx, anchor=anchor, anchor_level=0.1)
    assert (noisy - clean).abs().max() > 1e-3
    per_frame = model(x, 300.0, ctx, anchor=anchor, anchor_level=torch.full((1, 3), 0.1))
    torch.testing.assert_close(per_frame, noisy, atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match="anchor_level must be"):
        model(x, 300.0, ctx, anchor=anchor, anchor_level=torch.zeros(2))
    with pytest.raises(ValueError, match="no anchor-level input"):
        base(x, 300.0, ctx, anchor=anchor, anchor_level=0.0)
    with pytest.raises(ValueError, match="anchor_level needs the previous-frame input"):
        tiny_config.replace(anchor_level=True)
    # the config round-trips through config.json; a file written before the field reads as False
    from inferix.models.configs import WanConfig

    assert WanConfig.from_dict(model.config.to_dict()).anchor_level is True
    assert WanConfig.from_dict({k: v for k, v in model.config.to_dict().items() if k != "anchor_level"}).anchor_level \
        is False


@pytest.mark.gpu
def test_training_noise_is_drawn_on_the_device_and_follows_the_cpu_generator(cuda):
    """The step's big noise draws happen on CUDA (no host-to-device copy of [B, C, F, h, w]), and two
    runs from the same CPU generator state draw the same noise, so a resumed run stays exact."""
    from reference_world_lab.recipe import device_generator

    draws = []
    for _ in range(2):
        cpu = torch.Generator().manual_seed(7)
        g = device_generator(cpu, cuda)
        assert g.device.type == "cuda"
        draws.append((torch.randn((2, 3, 5, 8, 8), generator=g, device=cuda), cpu.get_state()))
    torch.testing.assert_close(draws[0][0], draws[1][0], rtol=0, atol=0)
    assert torch.equal(draws[0][1], draws[1][1])  # the CPU generator moved the same way

