"""``hf:PATH`` — any transformers image-text-to-text model from a local folder.

Loaded with ``AutoProcessor`` + ``AutoModelForImageTextToText`` (safetensors weights; no
remote code), so Qwen2-VL, Qwen2.5-VL, Qwen3-VL, LLaVA-style models work unchanged. The
prompt goes through the processor's chat template with one image placeholder per frame.
A single sample decodes greedily; ``k > 1`` samples are drawn with temperature sampling,
sample ``i`` seeded with ``seed + i`` so reruns are reproducible.

Two parts: :class:`HFGenerator` holds the model and answers one request; :class:`HFJudge` is the
judge protocol around it (cache, JSON repair, retries, budget, accounting:
:class:`~worldolympiad.judges.base.CachedJudge`). In one process the judge loads its own
generator; on Ray the generator lives in a judge pool actor (``worldolympiad.ray_judge_pool``) and
the scoring task's judge is given an object with the same ``generate``/``info`` methods that
forwards to it, so the protocol, and so every row, is the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from worldolympiad.judges.base import CachedJudge, Generation, judge_options, split_spec_options


class Generator(Protocol):
    """What :class:`HFJudge` asks its model: one request → one :class:`Generation`."""

    def generate(self, prompt: str, images: Sequence[np.ndarray], *, seed: int, greedy: bool, max_new_tokens: int,
                 temperature: float, top_p: float | None) -> Generation: ...

    def info(self) -> dict[str, Any]: ...


def parse_hf_spec(arg: str | None, options: dict[str, Any]) -> tuple[Path, str, str | None, dict[str, Any]]:
    """``PATH?key=value...`` and keyword options → (model folder, device, dtype, the remaining options).

    Raises:
        ValueError: no folder given.
    """
    arg, spec_opts = split_spec_options(arg)
    options = {**options, **spec_opts}
    device = str(options.pop("device", "auto"))
    dtype = options.pop("dtype", None)
    if not arg:
        raise ValueError("hf judge needs a local model folder: --judge hf:/path/to/Qwen2.5-VL-7B-Instruct")
    return Path(arg).expanduser(), device, dtype, options


class HFGenerator:
    """A transformers vision-language model loaded once; :meth:`generate` answers one request.

    Args:
        path: local model folder (config.json, safetensors weights, processor files).
        device: ``cpu``, ``cuda`` or ``auto``.
        dtype: ``float32`` (CPU default) or ``bfloat16`` (GPU default).

    Raises:
        FileNotFoundError: ``path`` holds no ``config.json``.
    """

    #: what one judge pool actor (one model copy) asks a Ray cluster for; the GPU only on a cuda run
    RESOURCES = {"num_gpus": 1, "num_cpus": 1}

    def __init__(self, path: str | Path, device: str = "auto", dtype: str | None = None) -> None:
        path = Path(path)
        if not (path / "config.json").is_file():
            raise FileNotFoundError(
                f"hf judge: {path} has no config.json; pass a local folder holding a transformers "
                "image-text-to-text model (e.g. a downloaded Qwen2.5-VL snapshot)"
            )
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

    def info(self) -> dict[str, Any]:
        """Where the model runs and what it is (recorded in every row's judge description)."""
        return {"device": self.device, "architecture": type(self.hf_model).__name__}

    def generate(self, prompt: str, images: Sequence[np.ndarray], *, seed: int, greedy: bool, max_new_tokens: int,
                 temperature: float, top_p: float | None) -> Generation:
        """One answer to ``prompt`` about ``images`` (uint8 [H, W, 3] each); sampled answers seeded with ``seed``."""
        import torch
        from PIL import Image

        content: list[dict[str, Any]] = [{"type": "image"} for _ in images]
        content.append({"type": "text", "text": prompt})
        messages = [{"role": "user", "content": content}]
        text = self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        pil = [Image.fromarray(np.ascontiguousarray(im)) for im in images]
        inputs = self.processor(text=[text], images=pil or None, return_tensors="pt").to(self.device)
        gen_kw: dict[str, Any] = {"max_new_tokens": max_new_tokens, "do_sample": not greedy}
        if not greedy:
            gen_kw["temperature"] = temperature
            if top_p is not None:
                gen_kw["top_p"] = top_p
        torch.manual_seed(seed)
        with torch.inference_mode():
            out = self.hf_model.generate(**inputs, **gen_kw)
        n_prompt = int(inputs["input_ids"].shape[1])
        new = out[:, n_prompt:]
        text = str(self.processor.batch_decode(new, skip_special_tokens=True)[0])
        return Generation(text, n_prompt, int(new.shape[1]), (text,))


class HFJudge(CachedJudge):
    """Local transformers vision-language judge.

    Args:
        arg: path of a local model folder (config.json, safetensors weights, processor files),
            optionally followed by ``?key=value&...`` judge options.
        device: ``cpu``, ``cuda`` or ``auto``.
        dtype: ``float32`` (CPU default) or ``bfloat16`` (GPU default).
        generator: the model to ask, when it is not loaded here (a Ray judge pool's client); ``None``:
            load it in this process from ``arg``.
        **options: :class:`~worldolympiad.judges.base.CachedJudge` options.
    """

    name = "hf"
    #: the class that holds the model; a Ray judge pool builds one per actor (``worldolympiad.ray_judge_pool``)
    generator_class = HFGenerator

    def __init__(self, arg: str | None = None, *, device: str = "auto", dtype: str | None = None,
                 generator: Generator | None = None, **options: Any) -> None:
        path, device, dtype, options = parse_hf_spec(arg, {"device": device, "dtype": dtype, **options})
        super().__init__(str(path), **judge_options(options))
        self.generator: Generator = generator if generator is not None else HFGenerator(path, device, dtype)
        self.device = str(self.generator.info()["device"])

    @classmethod
    def load_generator(cls, arg: str | None) -> HFGenerator:
        """The model of the judge SPEC argument ``arg`` (``PATH?device=...&dtype=...``), loaded here."""
        path, device, dtype, _ = parse_hf_spec(arg, {})
        return HFGenerator(path, device, dtype)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), **self.generator.info()}

    def _generate(self, prompt: str, images: Sequence[np.ndarray], *, sample: int, greedy: bool) -> Generation:
        return self.generator.generate(prompt, images, seed=self.seed + sample, greedy=greedy,
                                       max_new_tokens=self.max_new_tokens, temperature=self.temperature,
                                       top_p=self.top_p)
