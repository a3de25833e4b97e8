"""Text conditioning: umT5 from a local path, or precomputed embeddings.

Both are callables ``prompt -> [1, text_len, text_dim]`` (what the pipeline and the engine
call) with a batched :meth:`encode`.

Wan conditions on umT5-XXL encoder states: each prompt is tokenised (with the EOS token),
encoded, its states past the true length are set to zero and the sequence is zero-padded
to ``text_len = 512``. A prompt longer than ``text_len`` tokens is an error here rather
than a silent truncation (the tail of a long prompt would be dropped unseen).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

__all__ = ["PrecomputedTextEncoder", "PromptTooLongError", "UMT5TextEncoder", "load_text_encoder"]


class PromptTooLongError(ValueError):
    """A prompt has more tokens than the text encoder's ``max_length``."""


class UMT5TextEncoder:
    """umT5 encoder + tokenizer loaded from a local directory via transformers.

    Args:
        path: a directory with the tokenizer files and the ``UMT5EncoderModel`` weights (a Wan
            pipeline directory with ``text_encoder/`` and ``tokenizer/`` sub-folders works too).
        max_length: tokens per prompt after padding (Wan: 512).
        device: where the encoder runs.
        dtype: encoder dtype (bf16 on GPU; float32 on CPU).
    """

    def __init__(
        self,
        path: str | Path,
        max_length: int = 512,
        device: str | torch.device = "cpu",
        dtype: torch.dtype | None = None,
    ) -> None:
        import torch
        from transformers import AutoTokenizer, UMT5EncoderModel

        root = Path(path).expanduser()
        if not root.exists():
            raise FileNotFoundError(f"text encoder path {str(root)!r} does not exist")
        enc_dir = root / "text_encoder" if (root / "text_encoder").is_dir() else root
        tok_dir = root / "tokenizer" if (root / "tokenizer").is_dir() else root
        self.tokenizer = AutoTokenizer.from_pretrained(str(tok_dir))
        self.model = UMT5EncoderModel.from_pretrained(str(enc_dir), dtype=dtype or torch.float32).to(device).eval()  # type: ignore[arg-type]  # transformers types .to oddly
        self.max_length = int(max_length)
        self.device = torch.device(device)

    @property
    def text_dim(self) -> int:
        return int(self.model.config.d_model)

    def num_tokens(self, prompt: str) -> int:
        """Tokens of ``prompt`` including special tokens."""
        return len(self.tokenizer(prompt, add_special_tokens=True)["input_ids"])

    def encode(self, prompts: Sequence[str]) -> torch.Tensor:
        """Encode prompts.

        Args:
            prompts: strings.

        Returns:
            ``[B, max_length, text_dim]``, zero after each prompt's last token.

        Raises:
            PromptTooLongError: a prompt has more than ``max_length`` tokens (the message names both).
        """
        import torch

        if isinstance(prompts, str):
            prompts = [prompts]
        for i, p in enumerate(prompts):
            if not isinstance(p, str):
                raise TypeError(f"prompt {i} must be a string, got {type(p).__name__}")
            n = self.num_tokens(p)
            if n > self.max_length:
                raise PromptTooLongError(
                    f"prompt {i} is {n} tokens long; the text encoder takes at most max_length={self.max_length} "
                    "tokens. Shorten the prompt."
                )
        batch = self.tokenizer(
            list(prompts), padding="max_length", max_length=self.max_length, truncation=False, return_tensors="pt"
        )
        ids = batch["input_ids"].to(self.device)  # [B, max_length]
        mask = batch["attention_mask"].to(self.device)
        with torch.no_grad():
            states = self.model(input_ids=ids, attention_mask=mask).last_hidden_state  # [B, L, D]
        return states * mask[..., None].to(states.dtype)

    def __call__(self, prompt: str) -> torch.Tensor:
        """``prompt`` -> ``[1, max_length, text_dim]``."""
        return self.encode([prompt])


class PrecomputedTextEncoder:
    """Embeddings computed elsewhere (e.g. on another machine with the 11 GB umT5-XXL).

    Args:
        embeddings: prompt -> ``[L, D]`` or ``[1, L, D]`` tensor.
        text_len: pad (with zeros) every embedding to this many tokens; longer ones are an error.
    """

    def __init__(self, embeddings: Mapping[str, torch.Tensor], text_len: int | None = None) -> None:
        self.embeddings = {k: (v if v.ndim == 3 else v[None]) for k, v in embeddings.items()}
        dims = {v.shape[-1] for v in self.embeddings.values()}
        if len(dims) > 1:
            raise ValueError(f"precomputed embeddings have different widths {sorted(dims)}")
        self.text_len = text_len

    @classmethod
    def from_file(cls, path: str | Path, text_len: int | None = None) -> PrecomputedTextEncoder:
        """A ``.safetensors`` file (or ``.pt`` dict, loaded with ``weights_only=True``) keyed by prompt."""
        import torch

        path = Path(path).expanduser()
        if not path.exists():
            raise FileNotFoundError(f"embeddings file {str(path)!r} does not exist")
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            data: Any = load_file(str(path))
        else:
            data = torch.load(str(path), map_location="cpu", weights_only=True)
        if not isinstance(data, Mapping):
            raise ValueError(f"{path}: expected a dict prompt -> tensor, got {type(data).__name__}")
        return cls(data, text_len)

    def encode(self, prompts: Sequence[str]) -> torch.Tensor:
        import torch

        if isinstance(prompts, str):
            prompts = [prompts]
        return torch.cat([self(p) for p in prompts])

    def __call__(self, prompt: str) -> torch.Tensor:
        import torch

        emb = self.embeddings.get(prompt)
        if emb is None:
            known = list(self.embeddings)[:3]
            raise KeyError(
                f"no precomputed embedding for prompt {prompt!r} ({len(self.embeddings)} known, e.g. {known})"
            )
        if self.text_len is None:
            return emb
        n = emb.shape[1]
        if n > self.text_len:
            raise PromptTooLongError(f"precomputed embedding for {prompt!r} has {n} tokens; max_length={self.text_len}")
        return torch.cat([emb, emb.new_zeros(1, self.text_len - n, emb.shape[-1])], 1)


def load_text_encoder(
    path: str | Path,
    device: str | torch.device = "cpu",
    dtype: torch.dtype | None = None,
    max_length: int = 512,
) -> UMT5TextEncoder | PrecomputedTextEncoder:
    """A text encoder from a local path: a umT5 directory, or a file of precomputed embeddings.

    Args:
        path: directory (tokenizer + ``UMT5EncoderModel``; a Wan pipeline directory works) or a
            ``.safetensors`` / ``.pt`` file mapping prompt -> embedding.
        device: where umT5 runs.
        dtype: umT5 dtype.
        max_length: tokens per prompt (embeddings are zero-padded to it).
    """
    p = Path(path).expanduser()
    if p.is_file():
        return PrecomputedTextEncoder.from_file(p, text_len=max_length)
    return UMT5TextEncoder(p, max_length=max_length, device=device, dtype=dtype)
