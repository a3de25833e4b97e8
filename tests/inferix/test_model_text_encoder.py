"""umT5 text encoder from a local path (tiny random init + a locally trained tokenizer)."""

from __future__ import annotations

import pytest
import torch

from inferix.models.text_encoder import PrecomputedTextEncoder, PromptTooLongError, UMT5TextEncoder


@pytest.fixture(scope="module")
def umt5_dir(tmp_path_factory):
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast, UMT5Config, UMT5EncoderModel

    root = tmp_path_factory.mktemp("umt5")
    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(
        ["a red ball falls on the floor", "a robot arm pushes a cube"],
        trainers.WordLevelTrainer(special_tokens=["<pad>", "</s>", "<unk>"]),
    )
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>")
    fast.save_pretrained(root / "tokenizer")
    torch.manual_seed(0)
    cfg = UMT5Config(
        vocab_size=fast.vocab_size,
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=1,
        num_heads=2,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )
    UMT5EncoderModel(cfg).save_pretrained(root / "text_encoder")
    return root


def test_umt5_encodes_zero_padded_to_max_length(umt5_dir):
    enc = UMT5TextEncoder(umt5_dir, max_length=12)
    out = enc.encode(["a red ball falls", "a robot arm pushes a cube"])
    assert out.shape == (2, 12, 32)
    n0 = enc.num_tokens("a red ball falls")  # 4 words + </s>
    assert n0 == 5
    assert out[0, :n0].abs().sum(-1).min() > 0 and out[0, n0:].abs().max() == 0
    # The callable form (what the engine uses) gives the same row.
    torch.testing.assert_close(enc("a red ball falls"), out[:1])


def test_prompt_too_long_names_the_token_limit(umt5_dir):
    enc = UMT5TextEncoder(umt5_dir, max_length=6)
    with pytest.raises(PromptTooLongError, match=r"10 tokens long.*max_length=6"):
        enc("a red ball falls on the floor a ball")


def test_missing_text_encoder_path_is_clear(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        UMT5TextEncoder(tmp_path / "umt5-xxl")


def test_precomputed_embeddings_pad_and_reject(tmp_path):
    from safetensors.torch import save_file

    save_file({"a cat": torch.ones(3, 8), "a dog": torch.ones(1, 5, 8)}, str(tmp_path / "emb.safetensors"))
    enc = PrecomputedTextEncoder.from_file(tmp_path / "emb.safetensors", text_len=4)
    out = enc("a cat")
    assert out.shape == (1, 4, 8) and out[0, 3].abs().max() == 0 and out[0, :3].min() == 1
    with pytest.raises(PromptTooLongError, match="5 tokens; max_length=4"):
        enc("a dog")
    with pytest.raises(KeyError, match="no precomputed embedding for prompt 'a bird'"):
        enc("a bird")


def test_load_text_encoder_dispatches_on_path_kind(umt5_dir, tmp_path):
    from safetensors.torch import save_file

    from inferix.models import load_text_encoder

    assert isinstance(load_text_encoder(umt5_dir, max_length=8), UMT5TextEncoder)
    save_file({"a cat": torch.ones(2, 8)}, str(tmp_path / "e.safetensors"))
    enc = load_text_encoder(tmp_path / "e.safetensors", max_length=8)
    assert isinstance(enc, PrecomputedTextEncoder) and enc("a cat").shape == (1, 8, 8)
