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
    """A request failed in a way that may succeed when retried (timeout, 5xx, connection)."""


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


def repair_prompt(prompt: str, bad: str, keys: Sequence[str], problem: str | None = None) -> str:
    why = f" ({problem})" if problem else ""
    return (
        f"{prompt}\n\nYour previous answer was not a valid JSON object with the keys {list(keys)}{why}:\n"
        f"{bad[:500]}\n{json_instruction(keys)}"
    )


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
    """Base of the real backends: caching, JSON repair, sampling, retries, budget.

    Args:
        model: the model id recorded in results and cache keys.
        cache_dir: where answers are cached (``None``: in memory only).
        temperature: sampling temperature for ``samples > 1`` (a single sample is greedy).
        max_new_tokens: answer length cap.
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
        max_new_tokens: int = 256,
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
        self.max_new_tokens = int(max_new_tokens)
        self.timeout = float(timeout)
        self.retries = int(retries)
        self.backoff = float(backoff)
        self.budget = None if budget in (None, "", 0) else int(budget)  # type: ignore[arg-type]
        self.seed = int(seed)
        self.ledger = RunLedger(run_dir) if run_dir else None
        self.calls = 0  # requests made by this judge (retries included)
        self.cache_hits = 0
        self.failures = 0
        self._memory: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------ to implement
    def _generate(self, prompt: str, images: Sequence[np.ndarray], *, sample: int, greedy: bool) -> str:
        """One request: the model's raw text answer. Raise :class:`TransientJudgeError` to retry."""
        raise NotImplementedError

    # ------------------------------------------------------------------ public
    def describe(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "model": self.model,
            "temperature": self.temperature,
            "max_new_tokens": self.max_new_tokens,
            "timeout": self.timeout,
            "retries": self.retries,
            "budget": self.budget,
            "seed": self.seed,
        }

    def stats(self) -> dict[str, int]:
        return {"calls": self.calls, "cache_hits": self.cache_hits, "failures": self.failures}

    def ask_json(self, prompt: str, images: Sequence[np.ndarray], *, keys: Sequence[str], samples: int = 1,
                 schema: Mapping[str, FieldRule] | None = None) -> JudgeAnswer:
        """Ask ``samples`` times; each answer is a dict with ``keys`` whose fields passed ``schema``
        (default :data:`FIELD_RULES`), normalised (yes/no fields to ``bool``, numbers to ``float``).

        Raises:
            JudgeError: no sample gave a usable answer, or the budget ran out.
        """
        if samples < 1:
            raise ValueError(f"samples must be >= 1, got {samples}")
        full = f"{prompt}\n\n{json_instruction(keys)}"
        digest = frames_digest(images)
        out = JudgeAnswer(answers=[])
        errors: list[str] = []
        for i in range(samples):
            key = self._key(full, keys, digest, i, samples)
            hit = self._cache_get(key)
            if hit is not None and validate_answer(hit.get("answer") or {}, keys, schema)[0] is None:
                hit = None  # cached before the schema checks existed, and it fails them: ask again
            if hit is not None:
                out.answers.append(hit["answer"])
                out.raw.append(hit["text"])
                out.cached += 1
                with self._lock:
                    self.cache_hits += 1
                continue
            greedy = samples == 1 or self.temperature <= 0
            text = self._request(full, images, sample=i, greedy=greedy, out=out)
            ans, problem = self._checked(text, keys, schema)
            if ans is None:  # one retry with a correction prompt
                logger.info("judge %s: %s in %r; asking once more", self.model, problem, text[:120])
                text = self._request(repair_prompt(full, text, keys, problem), images, sample=i, greedy=greedy,
                                     out=out)
                ans, problem = self._checked(text, keys, schema)
            out.raw.append(text)
            if self.ledger is not None:
                self.ledger.record_answer(ans is not None, problem)
            if ans is None:
                with self._lock:
                    self.failures += 1
                errors.append(f"sample {i}: {problem} in {text[:200]!r}")
                continue
            out.answers.append(ans)
            self._cache_put(key, {"text": text, "answer": ans})
        if not out.answers:
            raise JudgeError(f"judge {self.model} gave no usable answer: " + "; ".join(errors))
        return out

    # ----------------------------------------------------------------- helpers
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

    def _request(self, prompt: str, images: Sequence[np.ndarray], *, sample: int, greedy: bool, out: JudgeAnswer) -> str:
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            with self._lock:
                if self.ledger is not None:
                    allowed = self.ledger.reserve(self.budget)  # counted before it is sent, across workers
                else:
                    allowed = self.budget is None or self.calls < self.budget
                if not allowed:
                    raise JudgeError(f"judge budget of {self.budget} requests for this run exhausted; "
                                     "raise it with the judge option 'budget'")
                self.calls += 1
            out.calls += 1
            try:
                text = self._generate(prompt, images, sample=sample, greedy=greedy)
            except TransientJudgeError as e:
                last = e
                if self.ledger is not None:
                    self.ledger.record_request(False, f"{type(e).__name__}: {e}")
                if attempt < self.retries:
                    delay = self.backoff * (2**attempt)
                    logger.warning("judge %s: %s; retry %d/%d in %.2fs", self.model, e, attempt + 1, self.retries, delay)
                    time.sleep(delay)
                continue
            except Exception as e:
                if self.ledger is not None:
                    self.ledger.record_request(False, f"{type(e).__name__}: {e}")
                raise
            if self.ledger is not None:
                self.ledger.record_request(True)
            return text
        raise JudgeError(f"judge {self.model} failed after {self.retries + 1} attempts: {last}")


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


def judge_options(options: dict[str, Any]) -> dict[str, Any]:
    """Keep the options :class:`CachedJudge` understands, coercing strings from the CLI."""
    casts = {"temperature": float, "max_new_tokens": int, "timeout": float, "retries": int, "backoff": float,
             "budget": int, "seed": int}
    out: dict[str, Any] = {}
    for k, cast in casts.items():
        if options.get(k) is not None:
            out[k] = cast(options[k])
    for k in ("cache_dir", "run_dir"):
        if options.get(k) is not None:
            out[k] = options[k]
    return out
