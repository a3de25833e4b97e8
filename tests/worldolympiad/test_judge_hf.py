"""hf: judge end to end with a tiny random-init Qwen2-VL built from a config.

The processor wraps a byte-level BPE tokenizer trained here, the model is trained for a few
steps to answer the test's question with a fixed JSON object, saved with
``save_pretrained`` to a temp dir and loaded back through ``hf:PATH`` exactly as a real
Qwen2-VL / Qwen2.5-VL snapshot would be.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
           "<|image_pad|>", "<|video_pad|>"]
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% if m['content'] is string %}{{ m['content'] }}"
    "{% else %}{% for c in m['content'] %}{% if c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% else %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
QUESTION = "Does the red ball fall down?"
KEYS = ("compliant", "confidence")
ANSWER = '{"compliant": true, "confidence": 0.9}'
FRAMES = [np.random.default_rng(i).integers(0, 255, (56, 56, 3), dtype=np.uint8) for i in range(2)]


def _processor():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2VLImageProcessor, Qwen2VLProcessor
    from transformers.models.qwen2_vl.video_processing_qwen2_vl import Qwen2VLVideoProcessor

    from worldolympiad.judges.base import json_instruction

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([ANSWER, QUESTION, json_instruction(KEYS)] * 10, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.chat_template = CHAT_TEMPLATE
    ip = Qwen2VLImageProcessor(min_pixels=28 * 28 * 4, max_pixels=28 * 28 * 4)
    return Qwen2VLProcessor(image_processor=ip, tokenizer=fast, video_processor=Qwen2VLVideoProcessor(),
                            chat_template=CHAT_TEMPLATE)


def _model(proc):
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

    ids = {s: proc.tokenizer.convert_tokens_to_ids(s) for s in SPECIAL}
    cfg = Qwen2VLConfig(
        text_config={"vocab_size": len(proc.tokenizer), "hidden_size": 32, "intermediate_size": 64,
                     "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
                     "rope_scaling": {"type": "mrope", "mrope_section": [2, 2, 4]},
                     "max_position_embeddings": 1024, "eos_token_id": ids["<|im_end|>"],
                     "pad_token_id": ids["<|endoftext|>"], "bos_token_id": ids["<|endoftext|>"]},
        vision_config={"depth": 1, "embed_dim": 32, "hidden_size": 32, "num_heads": 2, "mlp_ratio": 2,
                       "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2, "in_chans": 3},
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
    )
    torch.manual_seed(0)
    return Qwen2VLForConditionalGeneration(cfg)


def _teach(model, proc, steps=120):
    """Overfit the tiny model to answer the judge's exact prompt with ANSWER."""
    from PIL import Image

    from worldolympiad.judges.base import json_instruction

    prompt = f"{QUESTION}\n\n{json_instruction(KEYS)}"
    msgs = [{"role": "user", "content": [{"type": "image"}, {"type": "image"}, {"type": "text", "text": prompt}]}]
    text = proc.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
    pil = [Image.fromarray(f) for f in FRAMES]
    n_prompt = proc(text=[text], images=pil, return_tensors="pt")["input_ids"].shape[1]
    batch = proc(text=[text + ANSWER + "<|im_end|>"], images=pil, return_tensors="pt")
    labels = batch["input_ids"].clone()
    labels[:, :n_prompt] = -100
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(steps):
        loss = model(**batch, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    return float(loss.detach())


@pytest.fixture(scope="module")
def tiny_vlm_dir(tmp_path_factory):
    proc = _processor()
    model = _model(proc)
    loss = _teach(model, proc)
    assert loss < 0.05, f"tiny model did not learn the answer (loss {loss})"
    d = tmp_path_factory.mktemp("tiny-qwen2-vl")
    model.save_pretrained(d)
    proc.save_pretrained(d)
    return d


def test_hf_judge_answers_votes_and_caches(tiny_vlm_dir, tmp_path):
    from worldolympiad.judges import build_judge
    from worldolympiad.judges.base import majority

    judge = build_judge(f"hf:{tiny_vlm_dir}", cache_dir=tmp_path, max_new_tokens=24, temperature=0.01)
    assert json.loads((tiny_vlm_dir / "config.json").read_text())["model_type"] == "qwen2_vl"
    ans = judge.ask_json(QUESTION, FRAMES, keys=KEYS, samples=3)
    assert ans.answers == [json.loads(ANSWER)] * 3
    assert ans.calls == 3
    assert majority(ans.answers, "compliant") == (True, 1.0)
    assert judge.describe()["architecture"] == "Qwen2VLForConditionalGeneration"

    # second run: a fresh judge on the same cache makes zero model calls
    judge2 = build_judge(f"hf:{tiny_vlm_dir}", cache_dir=tmp_path, max_new_tokens=24, temperature=0.01)
    again = judge2.ask_json(QUESTION, FRAMES, keys=KEYS, samples=3)
    assert (again.calls, again.cached) == (0, 3)


def test_hf_judge_garbage_is_retried_once_then_reported(tiny_vlm_dir, tmp_path):
    from worldolympiad.judges import JudgeError, build_judge

    judge = build_judge(f"hf:{tiny_vlm_dir}", cache_dir=tmp_path, max_new_tokens=8, budget=10)
    # a question it was never taught: the random-ish answer is not JSON with these keys
    with pytest.raises(JudgeError, match="no usable answer"):
        judge.ask_json("Is the water boiling?", FRAMES[:1], keys=("related", "confidence"))
    assert judge.calls == 2  # the answer plus exactly one correction request
    assert judge.failures == 1


def test_hf_judge_missing_folder_says_what_to_pass(tmp_path):
    from worldolympiad.judges import build_judge

    with pytest.raises(FileNotFoundError, match="config.json"):
        build_judge(f"hf:{tmp_path / 'nope'}")
