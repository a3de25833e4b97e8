"""Learned VDE signals from local weights: tiny random-init models saved and reloaded."""

from __future__ import annotations

import numpy as np
import pytest

from tracks.longvideo.learned import build_learned_signals, load_linear_stack
from worldolympiad.track import EvalContext
from worldolympiad.types import Case, Video, even_chunks


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    import torch
    from safetensors.torch import save_file
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (
        BitImageProcessor,
        CLIPConfig,
        CLIPImageProcessor,
        CLIPModel,
        CLIPProcessor,
        Dinov2Config,
        Dinov2Model,
        PreTrainedTokenizerFast,
    )

    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("weights")
    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, "a": 4}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    cfg = CLIPConfig(text_config={"vocab_size": 5, "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
                                  "num_attention_heads": 2, "max_position_embeddings": 8, "eos_token_id": 2},
                     vision_config={"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
                                    "num_attention_heads": 2, "image_size": 32, "patch_size": 8}, projection_dim=8)
    CLIPModel(cfg).save_pretrained(root / "clip")
    CLIPProcessor(image_processor=CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}),
                  tokenizer=tokenizer).save_pretrained(root / "clip")
    Dinov2Model(Dinov2Config(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                             image_size=32, patch_size=8)).save_pretrained(root / "dino")
    BitImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}).save_pretrained(root / "dino")
    save_file({"layers.0.weight": torch.randn(4, 8), "layers.0.bias": torch.randn(4),
               "layers.2.weight": torch.randn(1, 4), "layers.2.bias": torch.randn(1)}, str(root / "head.safetensors"))
    return root


def test_linear_stack_matches_hand_composition(tiny_models):
    from safetensors.torch import load_file

    sd = load_file(str(tiny_models / "head.safetensors"))
    x = np.random.default_rng(0).normal(size=(3, 8)).astype(np.float32)
    want = (x @ sd["layers.0.weight"].numpy().T + sd["layers.0.bias"].numpy()) @ sd["layers.2.weight"].numpy().T + sd["layers.2.bias"].numpy()
    assert load_linear_stack(tiny_models / "head.safetensors")(x) == pytest.approx(want[:, 0], rel=1e-5)


def test_track_uses_learned_signals_when_weights_are_given(tiny_models, synth, tmp_path):
    from tracks.longvideo import LongVideoTrack

    opts = {"longvideo.clip_path": str(tiny_models / "clip"), "longvideo.dino_path": str(tiny_models / "dino"),
            "longvideo.aesthetic_head": str(tiny_models / "head.safetensors")}
    frames = synth.pan_video(40, size=32, oscillate=True)
    case = Case(id="p", scenario="realworld", fps=10.0, num_frames=40, resolution=(32, 32),
                chunks=even_chunks(40, 2), tracks=("longvideo",))
    out = LongVideoTrack().evaluate(Video(frames, 10.0), case, EvalContext(work_dir=tmp_path, options=opts))
    src = {m.name: m.details.get("source") for m in out.metrics if m.name.startswith("vde_")}
    assert src["vde_background"] == src["vde_subject"] == src["vde_aesthetic"] == "learned"
    assert src["vde_clarity"] == "model-free"
    assert all(m.status == "ok" for m in out.metrics), out.errors


def test_missing_weights_are_reported_and_fall_back(tmp_path):
    signals, errors = build_learned_signals({"longvideo.dino_path": str(tmp_path / "none"),
                                             "longvideo.aesthetic_head": str(tmp_path / "h.pt")})
    assert signals == {}
    assert any("dino_path" in e and "does not exist" in e for e in errors)
    assert any("needs longvideo.clip_path" in e for e in errors)
