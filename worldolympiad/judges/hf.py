"""``hf:PATH`` — any transformers image-text-to-text model from a local folder.

Loaded with ``AutoProcessor`` + ``AutoModelForImageTextToText`` (safetensors weights; no
remote code), so Qwen2-VL, Qwen2.5-VL, Qwen3-VL, LLaVA-style models work unchanged. The
prompt goes through the processor's chat template with one image placeholder per frame.
A single sample decodes greedily; ``k > 1`` samples are drawn with temperature sampling,
sample ``i`` seeded with ``seed + i`` so reruns are reproducible.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from worldolympiad.judges.base import CachedJudge, Generation, judge_options, split_spec_options


class HFJudge(CachedJudge):
    """Local transformers vision-language judge.

    Args:
        arg: path of a local model folder (config.json, safetensors weights, processor files),
            optionally followed by ``?key=value&...`` judge options.
        device: ``cpu``, ``cuda`` or ``auto``.
        dtype: ``float32`` (CPU default) or ``bfloat16`` (GPU default).
        **options: :class:`~worldolympiad.judges.base.CachedJudge` options.
    """

    name = "hf"

    def __init__(self, arg: str | None = None, *, device: str = "auto", dtype: str | None = None, **options: Any) -> None:
        arg, spec_opts = split_spec_options(arg)
        options = {**options, **spec_opts}
        device = str(options.pop("device", device))
        dtype = options.pop("dtype", dtype)
        if not arg:
            raise ValueError("hf judge needs a local model folder: --judge hf:/path/to/Qwen2.5-VL-7B-Instruct")
        path = Path(arg).expanduser()
        if not (path / "config.json").is_file():
            raise FileNotFoundError(
                f"hf judge: {path} has no config.json; pass a local folder holding a transformers "
                "image-text-to-text model (e.g. a downloaded Qwen2.5-VL snapshot)"
            )
        super().__init__(str(path), **judge_options(options))
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor

        from worldolympiad.evaluator import resolve_device

        device = resolve_device(device)
        # bf16 only where the hardware has it; fp32 on CPU (bf16 matmuls crawl there).
        torch_dtype = getattr(torch, dtype) if dtype else (torch.bfloat16 if device == "cuda" else torch.float32)
        self.device = device
        self.processor = AutoProcessor.from_pretrained(str(path), local_files_only=True)
        self.hf_model = AutoModelForImageTextToText.from_pretrained(str(path), local_files_only=True, dtype=torch_dtype)
        self.hf_model.eval().to(device)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "device": self.device, "architecture": type(self.hf_model).__name__}

    def _generate(self, prompt: str, images: Sequence[np.ndarray], *, sample: int, greedy: bool) -> Generation:
        import torch
        from PIL import Image

        content: list[dict[str, Any]] = [{"type": "image"} for _ in images]
        content.append({"type": "text", "text": prompt})
        messages = [{"role": "user", "content": content}]
        text = self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        pil = [Image.fromarray(np.ascontiguousarray(im)) for im in images]
        inputs = self.processor(text=[text], images=pil or None, return_tensors="pt").to(self.device)
        gen_kw: dict[str, Any] = {"max_new_tokens": self.max_new_tokens, "do_sample": not greedy}
        if not greedy:
            gen_kw["temperature"] = self.temperature
            if self.top_p is not None:
                gen_kw["top_p"] = self.top_p
        torch.manual_seed(self.seed + sample)
        with torch.inference_mode():
            out = self.hf_model.generate(**inputs, **gen_kw)
        n_prompt = int(inputs["input_ids"].shape[1])
        new = out[:, n_prompt:]
        text = str(self.processor.batch_decode(new, skip_special_tokens=True)[0])
        return Generation(text, n_prompt, int(new.shape[1]), (text,))
