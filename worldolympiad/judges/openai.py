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
import hashlib
import http.client
import json
import os
import re
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from worldolympiad.judges import JudgeError
from worldolympiad.judges.base import (
    CachedJudge,
    Generation,
    TransientJudgeError,
    encode_png,
    judge_options,
    split_spec_options,
)


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

    def __init__(self, message: str) -> None:
        super().__init__(message, kind="timeout")


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
        raise TransientJudgeError(f"{type(e).__name__} talking to {parts.netloc}: {e}", kind="connection") from e
    finally:
        timer.cancel()
        conn.close()


def get_json(url: str, headers: Mapping[str, str], deadline: float) -> tuple[int, Any]:
    """GET ``url`` within ``deadline`` seconds → ``(HTTP status, parsed JSON or None)``.

    Raises:
        TransientJudgeError: the server could not be reached (refused, reset, timed out).
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"judge URL must be http(s)://HOST[:PORT]/PATH, got {url!r}")
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = cls(parts.hostname, parts.port, timeout=deadline)
    try:
        conn.request("GET", parts.path or "/", headers=dict(headers))
        resp = conn.getresponse()
        data = resp.read(MAX_RESPONSE_BYTES)
    except (OSError, http.client.HTTPException) as e:
        kind = "timeout" if isinstance(e, TimeoutError) else "connection"
        raise TransientJudgeError(f"{type(e).__name__} talking to {parts.netloc}: {e}", kind=kind) from e
    finally:
        conn.close()
    try:
        return resp.status, json.loads(data)
    except (ValueError, RecursionError):
        return resp.status, None


#: seconds a server's ``/v1/models`` answer is shared by the judges of one process
SERVER_INFO_TTL = 300.0
#: (base url, digest of the API key) -> (when asked, the answer)
_SERVER_INFO: dict[tuple[str, str], tuple[float, ServerInfo | None]] = {}

#: Fields of a ``/v1/models`` entry that hold the model's context in tokens, by server:
#: vLLM ``max_model_len``; OpenRouter / LM Studio / llama.cpp style ``context_length`` and friends.
CONTEXT_FIELDS = ("max_model_len", "context_length", "max_context_length", "context_window", "n_ctx")


@dataclass(frozen=True)
class ServerInfo:
    """What ``GET BASE_URL/models`` told: the served model ids and, where reported, each one's context."""

    ids: tuple[str, ...]
    contexts: Mapping[str, int]


def parse_models(payload: Any) -> ServerInfo | None:
    """A ``/v1/models`` answer (``{"data": [{"id": ..., "max_model_len": ...}]}``) → :class:`ServerInfo`."""
    if not isinstance(payload, dict) or not isinstance(payload.get("data"), list):
        return None
    ids: list[str] = []
    contexts: dict[str, int] = {}
    for entry in payload["data"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            continue
        ids.append(entry["id"])
        for f in CONTEXT_FIELDS:
            v = entry.get(f)
            if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                contexts[entry["id"]] = v
                break
    return ServerInfo(tuple(ids), contexts)


_CONTEXT_HINT = re.compile(r"context[ _]length|maximum context|max[-_]model[-_]len|takes at most \d+|too long", re.I)
_LIMIT = re.compile(r"(?:maximum context length is|takes at most|context length(?: is| of)?\s*\(?)\s*(\d+)", re.I)
_PROMPT = [re.compile(p, re.I) for p in (r"(\d+) in the messages", r"request has (\d+) input tokens",
                                         r"prompt has (\d+) tokens", r"resulted in (\d+) tokens", r"input \((\d+) tokens",
                                         r"you requested (\d+) tokens")]


def parse_context_error(text: str) -> tuple[int | None, int | None] | None:
    """``(prompt tokens, context limit)`` named by a server's context-length error, ``None`` when
    ``text`` is no such error. Knows the wordings of vLLM, SGLang, ``transformers serve`` and the
    OpenAI API; a number it cannot find is ``None``."""
    if not _CONTEXT_HINT.search(text):
        return None
    lim = _LIMIT.search(text)
    prompt = next((int(m.group(1)) for m in (p.search(text) for p in _PROMPT) if m), None)
    return prompt, int(lim.group(1)) if lim else None


class OpenAIJudge(CachedJudge):
    """Judge over an OpenAI-compatible ``/chat/completions`` endpoint.

    Sampled requests (``samples > 1``) carry ``temperature``, ``top_p`` and ``seed + i``; with
    ``use_n`` the samples of a question share one request with ``n`` choices. Servers differ in
    what they honour (see ``docs/judges.md``): identical samples are detected and counted as one
    vote whatever the server does. ``extra_body`` (a JSON object, or a dict from Python) is merged
    into every request for server-specific knobs, e.g. ``{"top_k": -1}`` for vLLM or
    ``{"generation_config": "{\\"do_sample\\": true}"}`` for ``transformers serve``.

    Args:
        arg: ``BASE_URL#MODEL``, optionally followed by ``?key=value&...`` judge options.
        api_key: bearer token (default: ``$OPENAI_API_KEY``; none sent when unset).
        extra_body: extra request fields (see above).
        **options: :class:`~worldolympiad.judges.base.CachedJudge` options (cache_dir, timeout,
            retries, backoff, budget, temperature, top_p, use_n, max_new_tokens, max_context, seed).
    """

    name = "openai"

    def __init__(self, arg: str | None = None, *, api_key: str | None = None,
                 extra_body: Mapping[str, Any] | str | None = None, **options: Any) -> None:
        arg, spec_opts = split_spec_options(arg)
        self.base_url, model = parse_openai_spec(arg)
        options = {**options, **spec_opts}
        extra = options.pop("extra_body", extra_body)
        if isinstance(extra, str):
            try:
                extra = json.loads(extra)
            except ValueError as e:
                raise ValueError(f"openai judge option extra_body must be a JSON object, got {extra!r}: {e}") from e
        if extra is not None and not isinstance(extra, Mapping):
            raise ValueError(f"openai judge option extra_body must be a JSON object, got {extra!r}")
        self.extra_body: dict[str, Any] = dict(extra or {})
        super().__init__(model, **judge_options(options))
        self._api_key = api_key or os.environ.get("OPENAI_API_KEY")
        self._context_from_server = self.max_context is None
        self._server: ServerInfo | None = None
        self._server_asked = False

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "base_url": self.base_url, "extra_body": self.extra_body or None}

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def server_info(self, refresh: bool = False) -> ServerInfo | None:
        """The server's ``/v1/models``, ``None`` when it does not answer one. Asked once per judge, and answers
        are shared by every judge of this process for :data:`SERVER_INFO_TTL` seconds (each row builds its own
        judge: a run of 500 rows asked 500 times).

        Fills ``max_context`` from the server's report unless the ``max_context`` option set it.

        Raises:
            TransientJudgeError: the server could not be reached.
        """
        if self._server_asked and not refresh:
            return self._server
        key = (self.base_url, hashlib.sha256((self._api_key or "").encode()).hexdigest()[:16])
        cached = _SERVER_INFO.get(key)
        if cached is not None and not refresh and time.monotonic() - cached[0] < SERVER_INFO_TTL:
            self._server = cached[1]
        else:
            status, payload = get_json(f"{self.base_url}/models", self._headers(), min(self.timeout, 10.0))
            self._server = parse_models(payload) if status == 200 else None
            _SERVER_INFO[key] = (time.monotonic(), self._server)
        self._server_asked = True
        if self._server is not None and self._context_from_server:
            self.max_context = self._server.contexts.get(self.model, self.max_context)
        return self._server

    def check_served(self) -> ServerInfo | None:
        """Fail early when the server lists its models and this judge's model is not among them.

        Returns:
            The server's model list (``None`` when it publishes none).

        Raises:
            JudgeError: ``kind="model_not_served"``, naming the served ids and the spec to use.
            TransientJudgeError: the server could not be reached.
        """
        info = self.server_info()
        if info is not None and info.ids and self.model not in info.ids:
            fix = f"openai:{self.base_url}#{info.ids[0]}"
            raise JudgeError(f"model {self.model!r} is not served by {self.base_url}; it serves {list(info.ids)}: "
                             f"use --judge {fix}", kind="model_not_served")
        return info

    def _body(self, prompt: str, images: Sequence[np.ndarray], *, sample: int, greedy: bool, n: int,
              max_tokens: int) -> dict[str, Any]:
        content: list[dict[str, Any]] = [
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(encode_png(im)).decode()}}
            for im in images
        ]
        content.append({"type": "text", "text": prompt})
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": content}],
            "max_tokens": max_tokens,
            "temperature": 0.0 if greedy else self.temperature,
            "seed": self.seed + sample,
        }
        if not greedy and self.top_p is not None:
            body["top_p"] = self.top_p
        if n > 1:
            body["n"] = n
        return {**body, **self.extra_body}

    def _generate_request(self, prompt: str, images: Sequence[np.ndarray], *, sample: int, greedy: bool, n: int = 1,
                          max_tokens: int | None = None) -> Generation:
        if not self._server_asked:
            with contextlib.suppress(TransientJudgeError):  # a server that is down fails the request below
                self.server_info()
        cap = max_tokens or self.max_new_tokens
        body = self._body(prompt, images, sample=sample, greedy=greedy, n=n, max_tokens=cap)
        url = f"{self.base_url}/chat/completions"
        status, raw = post_json(url, body, self._headers(), self.timeout)
        text = raw.decode("utf-8", errors="replace")
        if status == 429 or status >= 500:
            raise TransientJudgeError(f"HTTP {status} from {url}: {text[:200]}", kind="server")
        if status != 200:
            ctx = parse_context_error(text)
            if ctx is not None:
                prompt_tokens, limit = ctx
                if limit is not None and self._context_from_server:
                    self.max_context = limit
                if prompt_tokens is not None and limit is not None and prompt_tokens < limit and cap > limit - prompt_tokens:
                    # the prompt fits, the answer cap does not: ask again with the room that is left
                    return self._generate_request(prompt, images, sample=sample, greedy=greedy, n=n,
                                                  max_tokens=limit - prompt_tokens)
                raise JudgeError(self._context_message(prompt_tokens, limit, len(images), text), kind="context_length",
                                 context=(prompt_tokens, limit))
            served = self._served_ids_if_missing()
            if served is not None:
                raise JudgeError(f"HTTP {status} from {url}: model {self.model!r} is not served there; it serves "
                                 f"{list(served)}: use --judge openai:{self.base_url}#{served[0] if served else 'MODEL'}",
                                 kind="model_not_served")
            hint = ("check the API key (OPENAI_API_KEY or the api_key option)" if status in (401, 403) else
                    "the server refuses this request and will refuse it again: check the judge options "
                    "(extra_body, top_p, use_n) against what the server accepts")
            raise JudgeError(f"HTTP {status} from {url}: {text[:300]}; {hint}", kind="http")
        try:
            data = json.loads(text)
            texts = tuple(str(c["message"]["content"] or "") for c in data["choices"])
            if not texts:
                raise IndexError("no choices")
        except (ValueError, KeyError, IndexError, TypeError, RecursionError):
            # The transport worked but the envelope is not chat-completions: the answer text is unusable.
            return Generation(text)
        usage = data.get("usage") if isinstance(data, dict) else None
        usage = usage if isinstance(usage, dict) else {}
        return Generation(texts[0], _int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens")), texts)

    def _served_ids_if_missing(self) -> tuple[str, ...] | None:
        """The served ids when the server lists some and this model is not one of them, else ``None``."""
        try:
            info = self.server_info(refresh=True)
        except TransientJudgeError:
            return None
        if info is None or not info.ids or self.model in info.ids:
            return None
        return info.ids

    def _context_message(self, prompt_tokens: int | None, limit: int | None, frames: int, text: str) -> str:
        p = f"{prompt_tokens:,} tokens" if prompt_tokens is not None else "the prompt"
        lim = f"the server's {limit:,}-token context" if limit is not None else "the server's context"
        return (f"prompt of {p} ({frames} frame(s)) exceeds {lim} (prompt and answer); lower `physics.judge_frames` "
                f"(frames per question) or the judge option max_new_tokens ({self.max_new_tokens}), or serve the model "
                f"with a longer context (vLLM / transformers serve: --max-model-len). Server said: {text[:200]}")

    def close(self) -> None:
        """Nothing to release: every request opens and closes its own connection."""


def _int(v: Any) -> int:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0
