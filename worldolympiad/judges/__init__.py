"""MLLM judges behind one interface.

A judge answers a question about a few frames with a JSON object. Backends:
``none`` (no judge), ``hf:PATH`` (local transformers image-text-to-text model) and
``openai:BASE_URL#MODEL`` (any OpenAI-compatible server). Every backend:

* returns parsed JSON dicts with the requested ``keys`` (malformed output is repaired or
  retried once, then reported as a failure — never guessed);
* checks every answer's fields (types, ranges) before it counts;
* draws ``samples`` answers for voting;
* caches every call on disk keyed by a hash of (model, prompt, frames).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


class JudgeError(RuntimeError):
    """The judge could not give a usable answer (after repair and retries, or over budget)."""


@dataclass
class JudgeAnswer:
    """``samples`` parsed answers to one question, plus how they were obtained."""

    answers: list[dict[str, Any]]
    cached: int = 0
    calls: int = 0
    raw: list[str] = field(default_factory=list)


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
