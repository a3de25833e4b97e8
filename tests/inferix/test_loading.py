"""Loading diffusers and Self-Forcing / CausVid checkpoints; clear errors for bad ones."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import save_file

from inferix.models import build_model
from inferix.models.configs import UnknownConfigError
from inferix.models.loading import CheckpointError, detect_layout, load_model_weights, to_wan_layout


def _x():
    g = torch.Generator().manual_seed(3)
    return torch.randn(1, 4, 2, 8, 8, generator=g), torch.randn(1, 16, 32, generator=g)


def _same_output(model, ref_model):
    x, ctx = _x()
    with torch.no_grad():
        torch.testing.assert_close(model(x, 600.0, ctx), ref_model(x, 600.0, ctx), atol=1e-5, rtol=0)


def test_diffusers_save_pretrained_dir_loads_without_missing_or_unexpected(tmp_path, diffusers_wan, tiny_model):
    diffusers_wan.save_pretrained(tmp_path / "transformer")
    model = build_model(tmp_path)  # finds the transformer/ sub-folder, reads its config.json
    assert model.config.num_layers == 2 and model.config.text_dim == 32
    _same_output(model, tiny_model)


def test_sharded_diffusers_checkpoint_loads(tmp_path, diffusers_wan, tiny_model):
    diffusers_wan.save_pretrained(tmp_path, max_shard_size="20KB")
    assert list(tmp_path.glob("*.index.json")), "expected a sharded save"
    _same_output(build_model(tmp_path), tiny_model)


def test_single_safetensors_file_with_config_next_to_it(tmp_path, diffusers_wan, tiny_model, tiny_config):
    save_file(diffusers_wan.state_dict(), str(tmp_path / "w.safetensors"))
    with pytest.raises(CheckpointError, match="head_dim"):
        build_model(tmp_path / "w.safetensors")  # dim 64 is not a multiple of Wan's 128-wide heads
    (tmp_path / "config.json").write_text(json.dumps(dict(diffusers_wan.config)))
    _same_output(build_model(tmp_path / "w.safetensors"), tiny_model)
    _same_output(build_model(tmp_path / "w.safetensors", config=tiny_config), tiny_model)


@pytest.mark.parametrize("prefix,nest", [("model.", "generator"), ("", "generator_ema"), ("generator.model.", None)])
def test_self_forcing_causvid_pt_layout_loads(tmp_path, tiny_model, tiny_config, prefix, nest):
    wan_sd = to_wan_layout(tiny_model.state_dict(), prefix=prefix)
    assert any(".self_attn.q.weight" in k for k in wan_sd) and any(k.endswith("head.modulation") for k in wan_sd)
    obj = {nest: wan_sd, "step": torch.tensor(7)} if nest else wan_sd
    torch.save(obj, tmp_path / "ckpt.pt")
    assert detect_layout(wan_sd) == "wan"
    _same_output(build_model(tmp_path / "ckpt.pt", config=tiny_config), tiny_model)


def test_wan_layout_safetensors_loads(tmp_path, tiny_model, tiny_config):
    save_file(to_wan_layout(tiny_model.state_dict()), str(tmp_path / "sf.safetensors"))
    _same_output(build_model(tmp_path / "sf.safetensors", config=tiny_config), tiny_model)


def test_wrong_layout_names_the_keys(tiny_config):
    from inferix.models.causal_wan import CausalWanModel

    model = CausalWanModel(tiny_config)
    with pytest.raises(CheckpointError, match="neither a diffusers"):
        load_model_weights(model, {"encoder.layer.0.weight": torch.zeros(2)})
    sd = dict(model.state_dict())
    sd.pop("blocks.1.attn2.to_q.weight")
    sd["blocks.1.extra_gate"] = torch.zeros(1)
    with pytest.raises(CheckpointError) as err:
        load_model_weights(model, sd)
    assert "missing keys (1): blocks.1.attn2.to_q.weight" in str(err.value)
    assert "unexpected keys (1): blocks.1.extra_gate" in str(err.value)


def test_mismatched_shapes_name_key_expected_and_got(tiny_config, tiny_model):
    from inferix.models.causal_wan import CausalWanModel

    other = CausalWanModel(tiny_config.replace(ffn_dim=96))
    with pytest.raises(
        CheckpointError, match=r"blocks\.0\.ffn\.net\.0\.proj\.weight: expected \(96, 64\), got \(128, 64\)"
    ):
        load_model_weights(other, tiny_model.state_dict())


def test_unknown_config_name_lists_known_names():
    with pytest.raises(
        UnknownConfigError, match=r"unknown model config 'wan2.1-1.3B-x'.*Did you mean 'wan2.1-1.3b'.*tiny"
    ):
        build_model("wan2.1-1.3B-x")


def test_missing_path_and_unsafe_pickle_are_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        build_model(tmp_path / "nope.safetensors")

    import datetime

    # Any non-tensor object outside torch's allow-list stands for an arbitrary-code pickle.
    torch.save({"x": datetime.date(2020, 1, 1)}, tmp_path / "evil.pt")
    with pytest.raises(CheckpointError, match="weights_only=True"):
        build_model(tmp_path / "evil.pt")


def test_named_configs_build_with_seeded_random_weights():
    a, b = build_model("tiny", seed=0), build_model("tiny", seed=0)
    torch.testing.assert_close(a.state_dict()["proj_out.weight"], b.state_dict()["proj_out.weight"])
    big = __import__("inferix.models.configs", fromlist=["x"]).get_config("wan2.1-1.3b")
    assert (big.dim, big.num_layers, big.ffn_dim, big.num_attention_heads) == (1536, 30, 8960, 12)


def test_checkpoint_key_picks_ema_or_raw_generator(tmp_path, tiny_model, tiny_config):
    raw = to_wan_layout(tiny_model.state_dict(), prefix="model.")
    ema = {k: v + 1.0 for k, v in raw.items()}
    torch.save({"generator": raw, "generator_ema": ema}, tmp_path / "sf.pt")
    default = build_model(tmp_path / "sf.pt", config=tiny_config)  # EMA weights when present
    torch.testing.assert_close(default.proj_out.bias, tiny_model.proj_out.bias + 1.0)
    _same_output(build_model(tmp_path / "sf.pt", config=tiny_config, checkpoint_key="generator"), tiny_model)
    with pytest.raises(CheckpointError, match=r"checkpoint_key='critic'.*\['generator', 'generator_ema'\]"):
        build_model(tmp_path / "sf.pt", config=tiny_config, checkpoint_key="critic")


def test_bf16_model_keeps_precision_sensitive_parts_in_fp32(tmp_path, diffusers_wan):
    diffusers_wan.save_pretrained(tmp_path)
    model = build_model(tmp_path, dtype=torch.bfloat16)
    assert model.blocks[0].attn1.to_q.weight.dtype == torch.bfloat16
    assert model.blocks[0].scale_shift_table.dtype == torch.float32
    assert model.condition_embedder.time_embedder.linear_1.weight.dtype == torch.float32
    assert model.blocks[0].norm2.weight.dtype == torch.float32
    x, ctx = _x()
    with torch.no_grad():
        out = model(x, 600.0, ctx)
        ref = diffusers_wan(x, torch.tensor([600.0]), ctx, return_dict=False)[0]
    assert out.dtype == torch.bfloat16
    # bf16 is coarse (8 mantissa bits) but must track the fp32 reference.
    assert (out.float() - ref).abs().mean() < 0.05 * ref.abs().mean()


def test_our_wan_key_map_agrees_with_diffusers_own_converter(tiny_model):
    # Independent check of the documented key map: diffusers' single-file converter turns our
    # original-Wan names back into exactly the diffusers names.
    from diffusers.loaders.single_file_utils import convert_wan_transformer_to_diffusers

    ours = tiny_model.state_dict()
    converted = convert_wan_transformer_to_diffusers(to_wan_layout(ours))
    assert sorted(converted) == sorted(ours)
    for k, v in ours.items():
        assert converted[k] is v


@pytest.mark.parametrize("layout", ["diffusers", "wan"])
def test_save_pretrained_round_trips_and_diffusers_reads_it(tmp_path, tiny_model, layout):
    from diffusers import WanTransformer3DModel

    from inferix.models.loading import save_pretrained

    save_pretrained(tiny_model, tmp_path, layout=layout)
    _same_output(build_model(tmp_path), tiny_model)
    if layout == "diffusers":
        ref = WanTransformer3DModel.from_pretrained(tmp_path).eval()
        x, ctx = _x()
        with torch.no_grad():
            torch.testing.assert_close(
                ref(x, torch.tensor([600.0]), ctx, return_dict=False)[0], tiny_model(x, 600.0, ctx), atol=1e-4, rtol=0
            )
