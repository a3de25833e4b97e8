"""``openai:BASE_URL#MODEL`` — any OpenAI-compatible chat-completions server (vLLM, SGLang...).

Frames travel as base64 PNG ``image_url`` parts. Requests go over :mod:`httpx` with a
timeout; timeouts, connection errors, HTTP 429 and 5xx are retried with backoff (see
:mod:`worldolympiad.judges.base`). The API key, if the server needs one, comes from the
``api_key`` option or the ``OPENAI_API_KEY`` environment variable and is never recorded.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from worldolympiad.judges.base import CachedJudge, TransientJudgeError, encode_png, judge_options, split_spec_options


def parse_openai_spec(arg: str | None) -> tuple[str, str]:
    """``"http://host:8000/v1#Qwen/Qwen2.5-VL-7B"`` → (base URL, model)."""
    if not arg or "#" not in arg:
        raise ValueError(
            f"openai judge spec must be 'openai:BASE_URL#MODEL' (e.g. openai:http://127.0.0.1:8000/v1#Qwen2.5-VL-7B), got {arg!r}"
        )
    base, model = arg.rsplit("#", 1)
    if not base.startswith(("http://", "https://")) or not model:
        raise ValueError(f"openai judge spec needs an http(s) BASE_URL and a MODEL after '#', got {arg!r}")
    return base.rstrip("/"), model


class OpenAIJudge(CachedJudge):
    """Judge over an OpenAI-compatible ``/chat/completions`` endpoint.

    Args:
        arg: ``BASE_URL#MODEL``, optionally followed by ``?key=value&...`` judge options.
        api_key: bearer token (default: ``$OPENAI_API_KEY``; none sent when unset).
        **options: :class:`~worldolympiad.judges.base.CachedJudge` options (cache_dir, timeout,
            retries, backoff, budget, temperature, max_new_tokens, seed).
    """

    name = "openai"

    def __init__(self, arg: str | None = None, *, api_key: str | None = None, **options: Any) -> None:
        arg, spec_opts = split_spec_options(arg)
        self.base_url, model = parse_openai_spec(arg)
        super().__init__(model, **judge_options({**options, **spec_opts}))
        self._api_key = api_key or os.environ.get("OPENAI_API_KEY")
        self._client: Any = None

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "base_url": self.base_url}

    def _http(self) -> Any:
        import httpx

        if self._client is None:
            headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
            self._client = httpx.Client(timeout=self.timeout, headers=headers)
        return self._client

    def _generate(self, prompt: str, images: Sequence[np.ndarray], *, sample: int, greedy: bool) -> str:
        import httpx

        content: list[dict[str, Any]] = [
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(encode_png(im)).decode()}}
            for im in images
        ]
        content.append({"type": "text", "text": prompt})
        body = {
            "model": self.model,
            "messages": [{"role": "user", "content": content}],
            "max_tokens": self.max_new_tokens,
            "temperature": 0.0 if greedy else self.temperature,
            "seed": self.seed + sample,
        }
        try:
            r = self._http().post(f"{self.base_url}/chat/completions", json=body)
        except (httpx.TimeoutException, httpx.TransportError) as e:
            raise TransientJudgeError(f"{type(e).__name__} talking to {self.base_url}: {e}") from e
        if r.status_code == 429 or r.status_code >= 500:
            raise TransientJudgeError(f"HTTP {r.status_code} from {self.base_url}: {r.text[:200]}")
        if r.status_code != 200:
            raise ValueError(f"HTTP {r.status_code} from {self.base_url}/chat/completions: {r.text[:300]} — check model name and URL")
        try:
            return str(r.json()["choices"][0]["message"]["content"] or "")
        except (ValueError, KeyError, IndexError, TypeError):
            # The transport worked but the envelope is not chat-completions: the answer text is unusable.
            return r.text

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
