"""Shared machinery of the MLLM judge backends.

:class:`CachedJudge` implements :meth:`Judge.ask_json` once for every backend; a backend
only implements :meth:`CachedJudge._generate` (one request → one text answer). Around it:

* **strict JSON**: the answer must contain a JSON object with the requested keys. Common
  slips (code fences, prose around the object, single quotes, trailing commas, Python
  literals) are repaired; if that fails the question is asked **once more** with a
  correction prompt; if that fails too, the sample is a failure (never guessed);
* **k samples** per question (sample ``i`` is its own request, seeded/temperature-sampled),
  voted on with :func:`majority` (value + agreement);
* **on-disk cache** keyed by a SHA-256 of (backend, model, generation config, prompt,
  keys, sample index, frames' bytes): a rerun makes zero requests;
* **timeouts, retries with exponential backoff** on transient errors
  (:class:`TransientJudgeError`: timeouts, HTTP 5xx/429, dropped connections);
* **schema checks**: every answer's fields are checked for type and range
  (:data:`FIELD_RULES`: ``confidence`` a number in [0, 1], ``compliant`` a yes/no...) before it
  counts; an answer that fails gets the same single correction request as malformed JSON, then
  is a failed sample (``confidence: 7.5`` is never a vote);
* **per-run budget**: at most ``budget`` requests (retries included) in the whole run; with
  ``run_dir`` set (the evaluator does) the count is shared by every row and worker process
  through the run's judge ledger (:mod:`worldolympiad.judges.ledger`), otherwise it is this
  judge object's own. Beyond it :class:`~worldolympiad.judges.JudgeError` is raised, which
  tracks record as a failed judgement rather than a guess. The ledger also records how requests
  ended, so a judge that is down is a run-level failure in ``summary.json``.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import logging
import math
import re
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from worldolympiad.judges import Judge, JudgeAnswer, JudgeError
from worldolympiad.judges.ledger import RunLedger

logger = logging.getLogger(__name__)


class TransientJudgeError(RuntimeError):
    """A request failed in a way that may succeed when retried (timeout, 5xx, connection).

    ``kind`` says which (``timeout``, ``connection``, ``server``; see
    :data:`~worldolympiad.judges.FAILURE_KINDS`).
    """

    def __init__(self, message: str, kind: str = "server") -> None:
        super().__init__(message)
        self.kind = kind


@dataclass
class Generation:
    """What one request returned: the answer text(s) and the tokens the server reported.

    ``texts`` holds every choice of a request that asked for ``n > 1`` samples at once; ``text`` is
    the first. Token counts are 0 where the server reports none.
    """

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    texts: tuple[str, ...] = ()


#: Most characters of a bad answer quoted back in the correction request. A garbage answer of a
#: small model is easily a token per character: quoting 500 characters once pushed a 737-token
#: prompt past a 1,024-token server limit. The problem is named in words; the excerpt only helps.
REPAIR_EXCERPT_CHARS = 120


# ------------------------------------------------------------------ JSON answers

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S | re.I)


def _objects_in(text: str) -> list[str]:
    """Balanced ``{...}`` substrings of ``text``, outermost first (string-aware)."""
    out = []
    depth, start, in_str, esc, quote = 0, -1, False, False, ""
    for i, ch in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == quote:
                in_str = False
            continue
        if ch in "\"'" and depth > 0:
            in_str, quote = True, ch
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                out.append(text[start : i + 1])
    return out


def _loads_lenient(blob: str) -> Any:
    try:
        return json.loads(blob)
    except json.JSONDecodeError:
        pass
    fixed = re.sub(r",\s*([}\]])", r"\1", blob)  # trailing commas
    try:
        return json.loads(fixed)
    except json.JSONDecodeError:
        pass
    try:  # single quotes, True/False/None
        return ast.literal_eval(fixed)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        pass
    js = re.sub(r"\bTrue\b", "true", re.sub(r"\bFalse\b", "false", re.sub(r"\bNone\b", "null", fixed)))
    try:
        return json.loads(js)
    except json.JSONDecodeError:
        return None


def parse_json_answer(text: str, keys: Sequence[str]) -> dict[str, Any] | None:
    """The first JSON object in ``text`` that has every key in ``keys`` (repairing common slips).

    Returns ``None`` when no such object can be recovered.
    """
    candidates: list[str] = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for cand in candidates:
        for blob in _objects_in(cand):
            obj = _loads_lenient(blob)
            if isinstance(obj, dict) and all(k in obj for k in keys):
                return obj
    return None


def json_instruction(keys: Sequence[str]) -> str:
    return "Answer with only a JSON object with the keys " + ", ".join(f'"{k}"' for k in keys) + ", and nothing else."


def repair_prompt(prompt: str, bad: str, keys: Sequence[str], problem: str | None = None,
                  excerpt_chars: int = REPAIR_EXCERPT_CHARS) -> str:
    """The single correction request: the prompt, what was wrong, and at most ``excerpt_chars``
    characters of the bad answer (none with ``excerpt_chars=0``), so the request is never longer
    than the original prompt plus a bounded tail, whatever the model answered."""
    why = f" ({problem})" if problem else ""
    bad = " ".join(bad.split())
    quoted = ""
    if excerpt_chars > 0 and bad:
        quoted = bad[:excerpt_chars] + (" [...]" if len(bad) > excerpt_chars else "")
        quoted = f":\n{quoted}"
    return (f"{prompt}\n\nYour previous answer was not a valid JSON object with the keys {list(keys)}{why}{quoted}\n"
            f"{json_instruction(keys)}")


def as_bool(v: Any) -> bool | None:
    """Interpret a judge's yes/no field (``true``, ``"yes"``, ``1``...); ``None`` if unclear."""
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)) and v in (0, 1):
        return bool(v)
    if isinstance(v, str):
        s = v.strip().lower()
        if s in ("true", "yes", "y", "1", "compliant", "related"):
            return True
        if s in ("false", "no", "n", "0", "not compliant", "unrelated"):
            return False
    return None


def majority(answers: Sequence[dict[str, Any]], key: str) -> tuple[bool | None, float]:
    """Majority vote of a boolean field over samples → (verdict, agreement in [0, 1]).

    Agreement is the share of usable votes for the winning value. A tie gives ``None``.
    """
    votes = [b for b in (as_bool(a.get(key)) for a in answers) if b is not None]
    if not votes:
        return None, 0.0
    c = Counter(votes)
    if c[True] == c[False]:
        return None, 0.5
    win = c[True] > c[False]
    return win, c[win] / len(votes)


# ---------------------------------------------------------------------- schema


@dataclass(frozen=True)
class FieldRule:
    """Type (and range) an answer field must have to count.

    Attributes:
        kind: ``bool`` (anything :func:`as_bool` reads as yes/no), ``number`` (a finite number, or
            a string holding one) or ``string``.
        lo, hi: inclusive range of a ``number``.
    """

    kind: Literal["bool", "number", "string"]
    lo: float | None = None
    hi: float | None = None

    def check(self, value: Any) -> tuple[Any, str | None]:
        """``(normalised value, None)`` when ``value`` fits, else ``(None, the problem)``."""
        if self.kind == "bool":
            b = as_bool(value)
            return (b, None) if b is not None else (None, f"must be true or false, got {value!r}")
        if self.kind == "string":
            return (value, None) if isinstance(value, str) else (None, f"must be a string, got {value!r}")
        x: float | None = None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            x = float(value)
        elif isinstance(value, str):
            with contextlib.suppress(ValueError):
                x = float(value.strip())
        span = f" in [{self.lo:g}, {self.hi:g}]" if self.lo is not None and self.hi is not None else ""
        if x is None or not math.isfinite(x):
            return None, f"must be a finite number{span}, got {value!r}"
        if (self.lo is not None and x < self.lo) or (self.hi is not None and x > self.hi):
            return None, f"must be a number{span}, got {value!r}"
        return x, None


# The fields the tracks ask for; a caller with another field or a narrower range passes ``schema``.
# ``score`` allows the widest scale a track asks for (geometry's 0-10; the interaction rubric's
# 0-5 is checked again by the rubric).
FIELD_RULES: dict[str, FieldRule] = {
    "related": FieldRule("bool"),
    "compliant": FieldRule("bool"),
    "confidence": FieldRule("number", 0.0, 1.0),
    "score": FieldRule("number", 0.0, 10.0),
    "explanation": FieldRule("string"),
    "reason": FieldRule("string"),
}


def validate_answer(answer: Mapping[str, Any], keys: Sequence[str],
                    schema: Mapping[str, FieldRule] | None = None) -> tuple[dict[str, Any] | None, str | None]:
    """Check ``answer``'s ``keys`` against ``schema`` (default :data:`FIELD_RULES`; a key with no
    rule only has to be present).

    Returns:
        ``(answer with checked fields normalised, None)``, or ``(None, the first problem)``.
    """
    rules = FIELD_RULES if schema is None else {**FIELD_RULES, **schema}
    out = dict(answer)
    for k in keys:
        if k not in answer:
            return None, f"missing field {k!r}"
        rule = rules.get(k)
        if rule is None:
            continue
        value, problem = rule.check(answer[k])
        if problem is not None:
            return None, f"field {k!r} {problem}"
        out[k] = value
    return out, None


# ----------------------------------------------------------------------- judge


def frames_digest(images: Sequence[np.ndarray]) -> str:
    h = hashlib.sha256()
    for im in images:
        a = np.ascontiguousarray(im)
        h.update(str((a.shape, a.dtype.str)).encode())
        h.update(a.tobytes())
    return h.hexdigest()


class CachedJudge(Judge):
    """Base of the real backends: caching, JSON repair, sampling, retries, budget, accounting.

    Args:
        model: the model id recorded in results and cache keys.
        cache_dir: where answers are cached (``None``: in memory only).
        temperature: sampling temperature for ``samples > 1`` (a single sample is greedy).
        top_p: nucleus mass sent with sampled requests. 1.0 (the default) asks for plain
            temperature sampling, overriding a model's own ``generation_config`` (Qwen2-VL ships
            ``top_p=0.001``, which servers that apply it turn into greedy decoding: k samples, one
            answer). ``None``: not sent.
        use_n: draw the ``samples`` of a question in one request with ``n`` choices (vLLM, hosted
            APIs; the prompt and its images are then paid once). A server that returns fewer
            choices (``transformers serve`` ignores ``n``) gets the rest as requests of their own.
        max_new_tokens: answer length cap.
        max_context: the server's context in tokens, prompt and answer (``None``: unknown; the
            ``openai`` backend reads it from ``/v1/models`` where the server reports it, or from a
            context error). With it, the correction request quotes no more of a bad answer than
            the context has room for.
        timeout: seconds per request: a deadline for the whole request where the backend can
            enforce one (``openai``: connect + send + every byte of the answer).
        retries: extra attempts after a transient error.
        backoff: first retry delay in seconds (doubles each retry).
        budget: most requests of the run (``None``: unlimited); shared through ``run_dir``.
        seed: base seed; sample ``i`` uses ``seed + i``.
        run_dir: the run directory whose judge ledger holds the budget and the request outcomes
            (:mod:`worldolympiad.judges.ledger`); ``None``: this object counts on its own.
    """

    name = "cached"

    def __init__(
        self,
        model: str,
        *,
        cache_dir: str | Path | None = None,
        temperature: float = 0.7,
        top_p: float | None = 1.0,
        use_n: bool = False,
        max_new_tokens: int = 256,
        max_context: int | None = None,
        timeout: float = 60.0,
        retries: int = 2,
        backoff: float = 0.5,
        budget: int | None = None,
        seed: int = 0,
        run_dir: str | Path | None = None,
    ) -> None:
        self.model = model
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.temperature = float(temperature)
        self.top_p = None if top_p is None else float(top_p)
        self.use_n = bool(use_n)
        self.max_new_tokens = int(max_new_tokens)
        self.max_context = None if max_context in (None, "", 0) else int(max_context)  # type: ignore[arg-type]
        self.timeout = float(timeout)
        self.retries = int(retries)
        self.backoff = float(backoff)
        self.budget = None if budget in (None, "", 0) else int(budget)  # type: ignore[arg-type]
        self.seed = int(seed)
        self.ledger = RunLedger(run_dir) if run_dir else None
        self.calls = 0  # requests made by this judge (retries included)
        self.cache_hits = 0
        self.failures = 0  # failed samples (any kind)
        self.failures_by_kind: Counter[str] = Counter()
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.samples_answered = 0
        self.samples_independent = 0
        self._memory: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._frames_fit: dict[int, int] = {}  # frames given -> frames that fit the server's context (learnt)

    # ------------------------------------------------------------ to implement
    def _generate(self, prompt: str, images: Sequence[np.ndarray], *, sample: int, greedy: bool) -> str | Generation:
        """One request: the model's raw text answer. Raise :class:`TransientJudgeError` to retry,
        :class:`~worldolympiad.judges.JudgeError` (with its ``kind``) for a failure retrying won't fix."""
        raise NotImplementedError

    def _generate_request(self, prompt: str, images: Sequence[np.ndarray], *, sample: int, greedy: bool, n: int = 1,
                          max_tokens: int | None = None) -> str | Generation:
        """One request with ``n`` choices and an answer cap of ``max_tokens`` (default
        ``max_new_tokens``); backends that can do either override this, the others answer one choice."""
        return self._generate(prompt, images, sample=sample, greedy=greedy)

    # ------------------------------------------------------------------ public
    def describe(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "model": self.model,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "use_n": self.use_n,
            "max_new_tokens": self.max_new_tokens,
            "max_context": self.max_context,
            "timeout": self.timeout,
            "retries": self.retries,
            "budget": self.budget,
            "seed": self.seed,
        }

    def stats(self) -> dict[str, Any]:
        """What this judge object (one per row in a run) spent and how it failed.

        ``calls``: requests sent (retries and repairs included); ``failures``: samples that gave no
        usable answer, with ``failures_by_kind``; ``independent_samples`` of ``answered_samples``:
        answers that were not a byte-for-byte copy of an earlier sample of the same question.
        """
        return {"calls": self.calls, "cache_hits": self.cache_hits, "failures": self.failures,
                "failures_by_kind": dict(self.failures_by_kind), "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "answered_samples": self.samples_answered,
                "independent_samples": self.samples_independent}

    def ask_json(self, prompt: str, images: Sequence[np.ndarray], *, keys: Sequence[str], samples: int = 1,
                 schema: Mapping[str, FieldRule] | None = None) -> JudgeAnswer:
        """Ask ``samples`` times; each answer is a dict with ``keys`` whose fields passed ``schema``
        (default :data:`FIELD_RULES`), normalised (yes/no fields to ``bool``, numbers to ``float``).

        A sample whose request fails (HTTP error, context length, timeout after retries, budget)
        ends the question: the same request would fail the same way for the next sample. Answers
        already obtained are kept; the failure is in ``JudgeAnswer.failures`` / ``errors``.

        Raises:
            JudgeError: no sample gave a usable answer (its ``kind`` says why; ``calls`` and tokens
                say what was spent).
        """
        if samples < 1:
            raise ValueError(f"samples must be >= 1, got {samples}")
        full = f"{prompt}\n\n{json_instruction(keys)}"
        sent = self._fitted(images)
        digest = frames_digest(sent)
        out = JudgeAnswer(answers=[], frames_sent=len(sent))
        if len(sent) < len(images):
            out.notes.append(self._frames_note(len(sent), len(images)))
        greedy = samples == 1 or self.temperature <= 0
        pending: list[tuple[int, str]] = []
        for i in range(samples):
            key = self._key(full, keys, digest, i, samples)
            hit = self._cache_get(key)
            if hit is not None and validate_answer(hit.get("answer") or {}, keys, schema)[0] is None:
                hit = None  # cached before the schema checks existed, and it fails them: ask again
            if hit is not None:
                out.answers.append(hit["answer"])
                out.texts.append(hit["text"])
                out.raw.append(hit["text"])
                out.cached += 1
                with self._lock:
                    self.cache_hits += 1
                continue
            pending.append((i, key))
        first: dict[int, Generation] = {}
        try:
            if self.use_n and not greedy and len(pending) > 1:  # one request, n choices; the rest one by one
                gen, sent = self._fitting_request(full, images, sent, sample=pending[0][0], greedy=greedy, out=out,
                                                  n=len(pending))
                for (i, _), text in zip(pending, gen.texts or (gen.text,), strict=False):
                    first[i] = Generation(text)
            for i, key in pending:
                drawn = first.get(i)
                if drawn is None:
                    gen, sent = self._fitting_request(full, images, sent, sample=i, greedy=greedy, out=out)
                else:
                    gen = drawn
                if len(sent) != out.frames_sent:  # fitted to the context just now: cache under what was shown
                    out.frames_sent, digest = len(sent), frames_digest(sent)
                if len(sent) < len(images):
                    key = self._key(full, keys, digest, i, samples)
                text = gen.text
                ans, problem = self._checked(text, keys, schema)
                if ans is None:  # one retry with a correction prompt
                    logger.info("judge %s: %s in %r; asking once more", self.model, problem, text[:120])
                    fix = repair_prompt(full, text, keys, problem, self._excerpt_room(gen))
                    text = self._request(fix, sent, sample=i, greedy=greedy, out=out).text
                    ans, problem = self._checked(text, keys, schema)
                out.raw.append(text)
                if self.ledger is not None:
                    self.ledger.record_answer(ans is not None, problem)
                if ans is None:
                    self._fail(out, "malformed", f"sample {i}: {problem} in {text[:200]!r}")
                    continue
                out.answers.append(ans)
                out.texts.append(text)
                self._cache_put(key, {"text": text, "answer": ans})
        except JudgeError as e:  # a request failed: the next sample would fail the same way
            self._fail(out, e.kind, f"sample {len(out.raw)}: {e}")
        with self._lock:
            self.samples_answered += len(out.answers)
            self.samples_independent += len(out.distinct())
        if self.ledger is not None and samples > 1 and out.answers:
            self.ledger.record_votes(len(out.answers), len(out.distinct()))
        if not out.answers:
            kind = next(iter(out.failures), "error")
            if "malformed" in out.failures and len(out.failures) > 1:
                kind = next(k for k in out.failures if k != "malformed")  # the request failure says more
            raise JudgeError(f"judge {self.model} gave no usable answer: " + "; ".join(out.errors), kind=kind,
                             calls=out.calls, prompt_tokens=out.prompt_tokens, completion_tokens=out.completion_tokens)
        return out

    # ----------------------------------------------------------------- helpers
    def _fitted(self, images: Sequence[np.ndarray]) -> list[np.ndarray]:
        """``images``, evenly thinned to the number a context error taught this judge to fit."""
        k = self._frames_fit.get(len(images))
        if k is None or k >= len(images):
            return list(images)
        idx = np.unique(np.linspace(0, len(images) - 1, k).round().astype(int))
        return [images[int(i)] for i in idx]

    def _frames_note(self, sent: int, given: int) -> str:
        ctx = f"{self.max_context:,}-token " if self.max_context else ""
        return (f"asked on {sent} of {given} frames, evenly spaced, to fit the server's {ctx}context "
                "(lower physics.judge_frames, or serve a longer context, to choose yourself)")

    def _fitting_request(self, prompt: str, images: Sequence[np.ndarray], sent: list[np.ndarray], *, sample: int,
                         greedy: bool, out: JudgeAnswer, n: int = 1) -> tuple[Generation, list[np.ndarray]]:
        """A question's first request; when the server says the prompt is over its context and names
        the numbers, once more on as many evenly spaced frames as should fit.

        The estimate assumes the prompt's tokens grow with its frames (the text is counted as if it
        were frames, so it cuts more frames than needed, never fewer); the answer keeps a quarter of
        the context or ``max_new_tokens``, whichever is less. A prompt whose text alone is too long
        fails as it was.
        """
        try:
            return self._request(prompt, sent, sample=sample, greedy=greedy, out=out, n=n), sent
        except JudgeError as e:
            if e.kind != "context_length" or e.context is None or len(sent) <= 1:
                raise
            needed, limit = e.context
            if needed is None or limit is None or needed <= 0:
                raise
            fit = int(len(sent) * (limit - min(self.max_new_tokens, limit // 4)) / needed)
            if not 1 <= fit < len(sent):
                raise
            self._frames_fit[len(images)] = fit
            if self.max_context is None:
                self.max_context = limit
            fewer = self._fitted(images)
            logger.warning("judge %s: a prompt with %d frames has %d tokens, over the server's %d; asking on %d",
                           self.model, len(sent), needed, limit, len(fewer))
            out.notes.append(self._frames_note(len(fewer), len(images)))
            return self._request(prompt, fewer, sample=sample, greedy=greedy, out=out, n=n), fewer

    def _fail(self, out: JudgeAnswer, kind: str, error: str) -> None:
        out.failures[kind] = out.failures.get(kind, 0) + 1
        out.errors.append(error)
        with self._lock:
            self.failures += 1
            self.failures_by_kind[kind] += 1

    def _excerpt_room(self, gen: Generation) -> int:
        """How many characters of a bad answer the correction request may quote: at most
        :data:`REPAIR_EXCERPT_CHARS`, fewer when a known context leaves less room (a character of
        garbage can be a token: the quote is counted at one token per byte)."""
        if self.max_context is None or not gen.prompt_tokens:
            return REPAIR_EXCERPT_CHARS
        room = self.max_context - gen.prompt_tokens - self.max_new_tokens - 48  # 48: the correction sentence
        return max(0, min(REPAIR_EXCERPT_CHARS, room))

    @staticmethod
    def _checked(text: str, keys: Sequence[str], schema: Mapping[str, FieldRule] | None
                 ) -> tuple[dict[str, Any] | None, str | None]:
        """The answer in ``text`` if it parses and passes the schema, else ``(None, the problem)``."""
        obj = parse_json_answer(text, keys)
        if obj is None:
            return None, f"no JSON object with keys {list(keys)}"
        return validate_answer(obj, keys, schema)

    def _key(self, prompt: str, keys: Sequence[str], digest: str, sample: int, samples: int) -> str:
        # samples==1 is greedy, so its answer differs from sample 0 of a sampled set.
        cfg = {
            "backend": self.name,
            "model": self.model,
            "temperature": self.temperature if samples > 1 else 0.0,
            "max_new_tokens": self.max_new_tokens,
            "seed": self.seed,
            "sample": sample,
            "keys": list(keys),
            "prompt": prompt,
            "frames": digest,
        }
        return hashlib.sha256(json.dumps(cfg, sort_keys=True).encode()).hexdigest()

    def _cache_path(self, key: str) -> Path | None:
        return self.cache_dir / key[:2] / f"{key}.json" if self.cache_dir else None

    def _cache_get(self, key: str) -> dict[str, Any] | None:
        if key in self._memory:
            return self._memory[key]
        p = self._cache_path(key)
        if p is not None and p.is_file():
            try:
                hit = json.loads(p.read_text())
            except (OSError, json.JSONDecodeError):
                return None  # a torn write: ask again
            self._memory[key] = hit
            return hit  # type: ignore[no-any-return]
        return None

    def _cache_put(self, key: str, value: dict[str, Any]) -> None:
        self._memory[key] = value
        p = self._cache_path(key)
        if p is None:
            return
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_suffix(f".tmp{threading.get_ident()}")
        tmp.write_text(json.dumps(value))
        tmp.replace(p)  # atomic: a killed run never leaves half an entry

    def _request(self, prompt: str, images: Sequence[np.ndarray], *, sample: int, greedy: bool, out: JudgeAnswer,
                 n: int = 1) -> Generation:
        """Send one request (retrying transient failures with backoff) and count what it cost.

        Raises:
            JudgeError: budget spent (``budget``), a failure retrying won't fix (the backend's kind,
                ``error`` for anything unexpected it raised), or every attempt failed transiently
                (the last attempt's kind: ``timeout``, ``connection``, ``server``).
        """
        last: TransientJudgeError | None = None
        for attempt in range(self.retries + 1):
            with self._lock:
                if self.ledger is not None:
                    allowed = self.ledger.reserve(self.budget)  # counted before it is sent, across workers
                else:
                    allowed = self.budget is None or self.calls < self.budget
                if not allowed:
                    raise JudgeError(f"judge budget of {self.budget} requests for this run exhausted; "
                                     "raise it with the judge option 'budget'", kind="budget")
                self.calls += 1
            out.calls += 1
            try:
                got = self._generate_request(prompt, images, sample=sample, greedy=greedy, n=n)
            except TransientJudgeError as e:
                last = e
                self._record_request(False, f"{type(e).__name__}: {e}", e.kind)
                if attempt < self.retries:
                    delay = self.backoff * (2**attempt)
                    logger.warning("judge %s: %s; retry %d/%d in %.2fs", self.model, e, attempt + 1, self.retries, delay)
                    time.sleep(delay)
                continue
            except JudgeError as e:  # the backend knows retrying won't help (HTTP 400, context length...)
                self._record_request(False, str(e), e.kind)
                raise
            except Exception as e:  # anything else the backend raised is a failed judgement, not a lost row
                logger.exception("judge %s: request failed", self.model)
                self._record_request(False, f"{type(e).__name__}: {e}", "error")
                raise JudgeError(f"judge {self.model} request failed: {type(e).__name__}: {e}", kind="error") from e
            gen = got if isinstance(got, Generation) else Generation(str(got))
            out.prompt_tokens += gen.prompt_tokens
            out.completion_tokens += gen.completion_tokens
            with self._lock:
                self.prompt_tokens += gen.prompt_tokens
                self.completion_tokens += gen.completion_tokens
            if self.ledger is not None:
                self.ledger.record_request(True, tokens=(gen.prompt_tokens, gen.completion_tokens))
            return gen
        assert last is not None
        raise JudgeError(f"judge {self.model} failed after {self.retries + 1} attempts: {last}", kind=last.kind)

    def _record_request(self, ok: bool, error: str | None, kind: str | None) -> None:
        if self.ledger is not None:
            self.ledger.record_request(ok, error, kind=kind)


def encode_png(image: np.ndarray) -> bytes:
    """``uint8 [H, W, 3]`` → PNG bytes."""
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(image)).save(buf, format="PNG")
    return buf.getvalue()


def split_spec_options(arg: str | None) -> tuple[str | None, dict[str, str]]:
    """``"PATH?budget=200&timeout=30"`` → ``("PATH", {"budget": "200", "timeout": "30"})``.

    Lets a judge SPEC carry its options on the command line
    (``--judge "openai:http://127.0.0.1:8000/v1#qwen?budget=500&temperature=0.7"``).
    """
    if not arg or "?" not in arg:
        return arg, {}
    from urllib.parse import parse_qsl

    base, query = arg.rsplit("?", 1)
    return base, dict(parse_qsl(query, keep_blank_values=False, strict_parsing=False))


def _as_flag(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    s = str(v).strip().lower()
    if s in ("1", "true", "yes", "on"):
        return True
    if s in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"judge option must be true or false, got {v!r}")


def judge_options(options: dict[str, Any]) -> dict[str, Any]:
    """Keep the options :class:`CachedJudge` understands, coercing strings from the CLI."""
    casts: dict[str, Any] = {"temperature": float, "max_new_tokens": int, "timeout": float, "retries": int,
                             "backoff": float, "budget": int, "seed": int, "max_context": int, "use_n": _as_flag}
    out: dict[str, Any] = {}
    for k, cast in casts.items():
        if options.get(k) is not None:
            out[k] = cast(options[k])
    if "top_p" in options:  # "none" (or empty): not sent
        tp = options["top_p"]
        out["top_p"] = None if tp is None or str(tp).strip().lower() in ("", "none") else float(tp)
    for k in ("cache_dir", "run_dir"):
        if options.get(k) is not None:
            out[k] = options[k]
    return out
