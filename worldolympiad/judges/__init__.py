"""MLLM judges behind one interface.

A judge answers a question about a few frames with a JSON object. Backends:
``none`` (no judge), ``hf:PATH`` (local transformers image-text-to-text model) and
``openai:BASE_URL#MODEL`` (any OpenAI-compatible server). Every backend:

* returns parsed JSON dicts with the requested ``keys`` (malformed output is repaired or
  retried once, then reported as a failure — never guessed);
* checks every answer's fields (types, ranges) before it counts;
* draws ``samples`` answers for voting, and says how many of them were independent (a server
  that ignores the sampling settings returns the same text k times: one vote, not k);
* turns every failure (HTTP 4xx/5xx, context length, timeout, refused connection, malformed
  answer, spent budget) into a :class:`JudgeError` with a ``kind``, which tracks record as a
  failed judgement of that one question — never a lost row;
* counts requests, failures by kind and tokens (per judge object, i.e. per row, and per run);
* caches every call on disk keyed by a hash of (model, prompt, frames).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: How a judge request or answer failed (``JudgeError.kind``, the ledger's ``failed_by_kind``):
#: ``http`` (a 4xx the server will answer again the same way), ``context_length`` (prompt over the
#: server's context), ``model_not_served``, ``server`` (5xx / 429 after retries), ``timeout``,
#: ``connection`` (refused, reset), ``malformed`` (no answer passed JSON repair and the schema),
#: ``budget`` (the run's request budget is spent), ``error`` (anything else the backend raised).
FAILURE_KINDS = ("http", "context_length", "model_not_served", "server", "timeout", "connection", "malformed",
                 "budget", "error")


class JudgeError(RuntimeError):
    """The judge could not give a usable answer (after repair and retries, or over budget).

    Attributes:
        kind: one of :data:`FAILURE_KINDS`.
        calls: requests sent for the question before it failed (retries and repairs included).
        prompt_tokens, completion_tokens: tokens the server reported for those requests.
        context: for ``context_length``, ``(prompt tokens, context limit)`` as the server named them
            (either ``None`` where it did not).
    """

    def __init__(self, message: str, *, kind: str = "error", calls: int = 0, prompt_tokens: int = 0,
                 completion_tokens: int = 0, context: tuple[int | None, int | None] | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.calls = calls
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.context = context


@dataclass
class JudgeAnswer:
    """``samples`` parsed answers to one question, plus how they were obtained.

    Attributes:
        answers: the usable answers, one per answered sample, in sample order.
        raw: the raw text of each sample that got an answer (usable or not).
        texts: the raw text behind each of ``answers`` (same order).
        calls: requests sent (retries and repairs included); ``cached``: samples from the cache.
        prompt_tokens, completion_tokens: as reported by the server (0 where it reports none).
        failures: failed samples by kind (:data:`FAILURE_KINDS`); ``errors``: what happened to them.
        frames_sent: how many of the question's frames the judge was shown (fewer than given when
            the server's context could not hold them all; ``notes`` then says so).
    """

    answers: list[dict[str, Any]]
    cached: int = 0
    calls: int = 0
    raw: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    frames_sent: int | None = None
    notes: list[str] = field(default_factory=list)

    def distinct(self) -> list[dict[str, Any]]:
        """The usable answers whose raw text differs from every earlier one.

        Samples that come back byte for byte identical (whitespace aside) are one vote: a server that
        keeps the model's greedy generation config returns the same text for every seed, and k copies
        of one answer are not k independent judgements.
        """
        if len(self.texts) != len(self.answers):
            return list(self.answers)  # a judge that keeps no raw text: nothing to compare
        seen: set[str] = set()
        out: list[dict[str, Any]] = []
        for ans, text in zip(self.answers, self.texts, strict=True):
            norm = " ".join(text.split())
            if norm not in seen:
                seen.add(norm)
                out.append(ans)
        return out


class Judge:
    """Base class of judges. Subclasses implement :meth:`ask_json`."""

    name: str = "judge"

    def ask_json(
        self,
        prompt: str,
        images: Sequence[np.ndarray],
        *,
        keys: Sequence[str],
        samples: int = 1,
        schema: Mapping[str, Any] | None = None,
    ) -> JudgeAnswer:
        """Ask ``prompt`` about ``images`` (uint8 [H, W, 3] each); each answer has ``keys``.

        ``schema`` maps a key to a :class:`~worldolympiad.judges.base.FieldRule` (type, range); an
        answer that breaks it never counts. Keys without a rule follow
        :data:`~worldolympiad.judges.base.FIELD_RULES` (``confidence`` in [0, 1]...).
        """
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        """Judge config recorded in results (backend, model, sampling)."""
        return {"name": self.name}


class NoJudge(Judge):
    """No MLLM configured: tracks use model-free evidence only and say so in their results."""

    name = "none"

    def __init__(self, arg: str | None = None, **_: Any) -> None:
        pass

    def ask_json(self, prompt: str, images: Sequence[np.ndarray], *, keys: Sequence[str], samples: int = 1,
                 schema: Mapping[str, Any] | None = None) -> JudgeAnswer:
        raise JudgeError("no judge configured (--judge none); use model-free evidence")


def build_judge(spec: str, **options: Any) -> Judge:
    """Resolve a judge SPEC (``none``, ``hf:PATH``, ``openai:BASE_URL#MODEL``)."""
    from worldolympiad.registries import JUDGES, parse_spec

    prefix, arg = parse_spec(spec)
    judge: Judge = JUDGES.get(prefix)(arg, **options)
    return judge


def preflight_judge(spec: str) -> str | None:
    """Check a judge SPEC against its server before a run starts.

    For ``openai:`` judges the server's ``/v1/models`` is read: a model it does not serve fails here,
    with the served ids, instead of failing every question of the run. A server that cannot be
    reached is no error here (the run goes on, each judge question is recorded as failed and the
    outage is a run-level failure); the returned note says so.

    Returns:
        A line for the terminal (what the server serves, its context, or that it is unreachable),
        ``None`` for judges without a server.

    Raises:
        ValueError: the server lists its models and the judge's model is not one of them.
    """
    from worldolympiad.registries import parse_spec

    prefix, _ = parse_spec(spec)
    if prefix != "openai":
        return None
    from worldolympiad.judges.base import TransientJudgeError
    from worldolympiad.judges.openai import OpenAIJudge

    judge = build_judge(spec)
    assert isinstance(judge, OpenAIJudge)
    try:
        info = judge.check_served()
    except TransientJudgeError as e:
        return (f"judge server {judge.base_url} not reachable before the run ({e}); the run goes on without "
                "judge verdicts and reports the outage")
    except JudgeError as e:
        raise ValueError(f"--judge {spec}: {e}") from e
    if info is None:
        return f"judge server {judge.base_url} publishes no model list (/v1/models); model {judge.model!r} not checked"
    ctx = f", context {judge.max_context:,} tokens" if judge.max_context else ", context not reported"
    return f"judge {judge.model!r} served by {judge.base_url}{ctx}"
