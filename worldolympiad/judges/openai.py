"""``openai:BASE_URL#MODEL`` — any OpenAI-compatible chat-completions server (vLLM, SGLang...).

Frames travel as base64 PNG ``image_url`` parts. Each request has one **deadline**, the
``timeout`` option, covering connect, sending and every byte of the answer: a per-read timeout
(httpx's, or a socket's) is no deadline, since a server that trickles a byte every 2 s never
trips a 5 s read timeout. :func:`post_json` therefore talks :mod:`http.client` over a socket it
owns and a timer shuts that socket down when the deadline passes, which ends a blocked read at
once. Timeouts, connection errors, HTTP 429 and 5xx are retried with backoff (see
:mod:`worldolympiad.judges.base`); every retry is a new request with its own deadline and
counts against the run's budget. Proxies from the environment are not used (judges are local or
reached directly). The API key, if the server needs one, comes from the
``api_key`` option or the ``OPENAI_API_KEY`` environment variable and is never recorded.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import os
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

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


MAX_RESPONSE_BYTES = 16 * 2**20  # a chat completion is a few KB; anything far larger is not an answer


class DeadlineExceededError(TransientJudgeError):
    """The request did not complete within its deadline (connect + send + whole answer)."""


def post_json(url: str, payload: Mapping[str, Any], headers: Mapping[str, str], deadline: float,
              max_bytes: int = MAX_RESPONSE_BYTES) -> tuple[int, bytes]:
    """POST ``payload`` as JSON and read the whole answer within ``deadline`` seconds.

    Returns:
        ``(HTTP status, body)``.

    Raises:
        DeadlineExceededError: the deadline passed (at connect, send or any point of the answer).
        TransientJudgeError: the connection failed or broke, or the answer is over ``max_bytes``.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"judge URL must be http(s)://HOST[:PORT]/PATH, got {url!r}")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    body = json.dumps(payload).encode()
    t0 = time.monotonic()
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        conn = http.client.HTTPSConnection(parts.hostname, parts.port, timeout=deadline)
    else:
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=deadline)
    expired = threading.Event()

    def cut() -> None:  # on the timer's thread: unblock whatever the request thread is waiting on
        expired.set()
        sock = conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                socket.socket.shutdown(sock, socket.SHUT_RDWR)  # the plain socket's: keeps an SSL object intact

    timer = threading.Timer(deadline, cut)
    timer.daemon = True
    timer.start()
    try:
        conn.connect()  # its own timeout is the deadline; a cut before sock was set is caught below
        if expired.is_set():
            raise DeadlineExceededError(f"no connection to {parts.netloc} within the {deadline:g} s deadline")
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json", **headers})
        resp = conn.getresponse()
        data = resp.read(max_bytes + 1)
        if expired.is_set():  # the cut may look like a short, clean end of the answer
            raise DeadlineExceededError(f"answer from {parts.netloc} incomplete at the {deadline:g} s deadline")
        if len(data) > max_bytes:
            raise TransientJudgeError(f"answer from {parts.netloc} is over {max_bytes} bytes")
        return resp.status, data
    except (OSError, http.client.HTTPException) as e:
        if expired.is_set() or time.monotonic() - t0 >= deadline:
            raise DeadlineExceededError(f"request to {parts.netloc} cut at its {deadline:g} s deadline "
                                        f"({time.monotonic() - t0:.1f} s; {type(e).__name__})") from e
        raise TransientJudgeError(f"{type(e).__name__} talking to {parts.netloc}: {e}") from e
    finally:
        timer.cancel()
        conn.close()


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

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "base_url": self.base_url}

    def _generate(self, prompt: str, images: Sequence[np.ndarray], *, sample: int, greedy: bool) -> str:
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
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        status, raw = post_json(f"{self.base_url}/chat/completions", body, headers, self.timeout)
        text = raw.decode("utf-8", errors="replace")
        if status == 429 or status >= 500:
            raise TransientJudgeError(f"HTTP {status} from {self.base_url}: {text[:200]}")
        if status != 200:
            raise ValueError(f"HTTP {status} from {self.base_url}/chat/completions: {text[:300]} — check model name and URL")
        try:
            return str(json.loads(text)["choices"][0]["message"]["content"] or "")
        except (ValueError, KeyError, IndexError, TypeError, RecursionError):
            # The transport worked but the envelope is not chat-completions: the answer text is unusable.
            return text

    def close(self) -> None:
        """Nothing to release: every request opens and closes its own connection."""
