"""The two-stage MLLM protocol over the 14 rules, with set-of-mark frames.

Stage 1 (*applicability*), per rule, on the **reference** video: ``{"related", "confidence"}``.
Skipped when the case declares its rules. Stage 2 (*compliance*), per applicable rule, on
the **generated** video: ``{"compliant", "confidence", "explanation"}``. Each question is
asked ``k`` times and majority-voted (agreement reported). Frames are sampled evenly and
drawn with the tracked objects' boxes, mask outlines and numbered labels (set-of-mark),
so the judge and the model-free evidence talk about the same objects.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tracks.physics.rules import Rule
from tracks.physics.segmentation import Segmentation
from tracks.physics.tracking import ObjectTrack

logger = logging.getLogger(__name__)

_PALETTE = [(255, 255, 0), (0, 255, 255), (255, 0, 255), (255, 128, 0), (0, 255, 0), (255, 255, 255)]


@dataclass
class JudgeVerdict:
    """A voted answer to one question.

    Attributes:
        value: the majority over the *independent* samples (``None`` when failed or tied).
        agreement: share of those samples voting for ``value``.
        votes: one vote per independent sample: samples whose raw text repeats an earlier one's
            are dropped (a server that ignores the sampling settings answers k times the same).
        samples: samples that gave a usable answer (``identical``: how many of them were copies).
        calls: requests sent (retries and repairs included, also when the question failed).
        failures: failed samples by kind (``http``, ``context_length``, ``timeout``, ``malformed``...).
        error: why the question has no verdict (or what failed next to the votes it got).
        frames: frames the judge was shown (fewer than asked when the server's context could not
            hold them all; ``notes`` says so).
    """

    value: bool | None
    agreement: float = 0.0
    votes: list[bool | None] = field(default_factory=list)
    confidence: float | None = None
    explanation: str = ""
    calls: int = 0
    cached: int = 0
    error: str | None = None
    samples: int = 0
    identical: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    frames: int | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "agreement": self.agreement, "votes": self.votes, "confidence": self.confidence,
                "explanation": self.explanation, "calls": self.calls, "cached": self.cached, "error": self.error,
                "samples": self.samples, "independent_votes": len(self.votes), "identical_samples": self.identical,
                "failures": self.failures, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "frames": self.frames, "notes": self.notes}


def sample_indices(T: int, n: int) -> np.ndarray:
    return np.unique(np.linspace(0, T - 1, min(n, T)).round().astype(int))


def draw_marks(frame: np.ndarray, labels: np.ndarray | None, tracks: Sequence[ObjectTrack], t: int) -> np.ndarray:
    """Set-of-mark overlay of frame ``t``: each tracked object's mask outline, box and number."""
    import cv2

    out = np.ascontiguousarray(frame.copy())
    H = out.shape[0]
    thick = max(1, H // 128)
    for k, tr in enumerate(tracks):
        if not tr.visible[t]:
            continue
        col = _PALETTE[k % len(_PALETTE)]
        x0, y0, x1, y1 = (int(v) for v in tr.bbox[t])
        cv2.rectangle(out, (x0, y0), (x1 - 1, y1 - 1), col, thick)
        if labels is not None:
            cx, cy = tr.centroid[t]
            lab = labels[int(np.clip(round(cy), 0, H - 1)), int(np.clip(round(cx), 0, out.shape[1] - 1))]
            if lab:
                m = (labels == lab).astype(np.uint8)
                cnts, _ = cv2.findContours(m, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
                cv2.drawContours(out, cnts, -1, col, thick)
        cv2.putText(out, str(k + 1), (x0, max(y0 - 2, 8)), cv2.FONT_HERSHEY_SIMPLEX, max(0.3, H / 400), col, thick)
    return out


def marked_frames(frames: np.ndarray, seg: Segmentation | None, tracks: Sequence[ObjectTrack], n: int = 8) -> list[np.ndarray]:
    """``n`` evenly sampled frames with set-of-mark overlays."""
    return [draw_marks(frames[t], seg.labels[t] if seg is not None else None, tracks, int(t))
            for t in sample_indices(len(frames), n)]


def legend(tracks: Sequence[ObjectTrack]) -> str:
    names = [f"{k + 1}: {tr.name or 'object'}" for k, tr in enumerate(tracks)]
    return ("Marked objects: " + ", ".join(names) + ".") if names else ""


def applicability_prompt(rule: Rule, case_prompt: str, tracks: Sequence[ObjectTrack]) -> str:
    return (
        f"These are {{n}} frames, in order, of a video. Scene description: {case_prompt or 'none'}. {legend(tracks)}\n"
        f"Physical rule '{rule.id}' ({rule.dimension}): {rule.description}\n"
        f"Question: {rule.applicability}\n"
        'Set "related" to true if the rule is relevant to what happens in this video, and "confidence" to a number in [0, 1].'
    )


def compliance_prompt(rule: Rule, case_prompt: str, tracks: Sequence[ObjectTrack]) -> str:
    return (
        f"These are {{n}} frames, in order, of a generated video. Scene description: {case_prompt or 'none'}. {legend(tracks)}\n"
        f"Physical rule '{rule.id}' ({rule.dimension}): {rule.description} Expected: {rule.expected}\n"
        f"Question: {rule.compliance}\n"
        'Set "compliant" to true if the video obeys the rule, "confidence" to a number in [0, 1], and "explanation" '
        "to one sentence naming the evidence."
    )


def ask(judge: Any, prompt: str, images: list[np.ndarray], keys: Sequence[str], vote_key: str, samples: int) -> JudgeVerdict:
    """Ask ``samples`` times and vote on ``vote_key`` over the distinct samples.

    Every judge failure becomes a verdict with ``error`` (and what it cost): a judge error of any
    kind — HTTP 4xx/5xx, context length, timeout, malformed answers, or an exception the backend
    did not foresee — never takes the row's model-free evidence with it.
    """
    from worldolympiad.judges import JudgeError
    from worldolympiad.judges.base import as_bool, majority

    try:
        ans = judge.ask_json(prompt.format(n=len(images)), images, keys=keys, samples=samples)
    except JudgeError as e:
        return JudgeVerdict(None, error=str(e), calls=e.calls, failures={e.kind: 1}, prompt_tokens=e.prompt_tokens,
                            completion_tokens=e.completion_tokens)
    except Exception as e:  # a judge outside worldolympiad.judges: still one failed question, not a lost row
        logger.exception("judge %s raised", type(judge).__name__)
        return JudgeVerdict(None, error=f"{type(e).__name__}: {e}", failures={"error": 1})
    distinct = ans.distinct() if hasattr(ans, "distinct") else list(ans.answers)
    value, agreement = majority(distinct, vote_key)
    confs = [float(a["confidence"]) for a in distinct if isinstance(a.get("confidence"), (int, float))]
    expl = next((str(a.get("explanation", "")) for a in distinct if as_bool(a.get(vote_key)) == value), "")
    errors = list(getattr(ans, "errors", []))
    return JudgeVerdict(value, agreement, [as_bool(a.get(vote_key)) for a in distinct],
                        float(np.mean(confs)) if confs else None, expl, ans.calls, ans.cached,
                        error="; ".join(errors) or None, samples=len(ans.answers),
                        identical=len(ans.answers) - len(distinct), failures=dict(getattr(ans, "failures", {})),
                        prompt_tokens=getattr(ans, "prompt_tokens", 0), completion_tokens=getattr(ans, "completion_tokens", 0),
                        frames=getattr(ans, "frames_sent", None) or len(images), notes=list(getattr(ans, "notes", [])))
