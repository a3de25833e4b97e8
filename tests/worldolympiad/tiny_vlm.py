"""A tiny random-init Qwen2-VL built offline from a config, for the judge tests.

The processor wraps a byte-level BPE tokenizer trained here, the model is trained for a few
steps to answer :data:`QUESTION` about :data:`FRAMES` with :data:`ANSWER`, and
:func:`build_tiny_vlm` saves both with ``save_pretrained``, so the folder loads through
``hf:PATH`` and ``transformers serve PATH`` exactly as a real Qwen2-VL snapshot would.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

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


def build_tiny_vlm(folder: Path) -> Path:
    """Build, teach and save the tiny model and its processor into ``folder``; returns ``folder``."""
    proc = _processor()
    model = _model(proc)
    loss = _teach(model, proc)
    assert loss < 0.05, f"tiny model did not learn the answer (loss {loss})"
    model.save_pretrained(folder)
    proc.save_pretrained(folder)
    return folder
