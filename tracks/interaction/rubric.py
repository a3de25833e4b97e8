"""The published VLM rubric (REFERENCE.md §A) through the judge interface.

Scores 0-5: per chunk (visual quality, text alignment), per adjacent chunk pair (the last 1 s
of chunk k and the first 1 s of chunk k+1: transition smoothness — identity resets,
impossible camera jumps, seams) and global (long-range consistency, global text alignment).
The rubric score is the mean of every answered item divided by 5. Items the judge fails on
are listed, never guessed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from worldolympiad.judges.base import FieldRule
from worldolympiad.types import Chunk

logger = logging.getLogger(__name__)

KEYS = ("score", "reason")
#: the rubric's own answer schema: the judge checks it before an answer counts (a 7 on this 0-5
#: scale gets the judge's correction request, then is no vote; the default schema allows 0-10)
SCHEMA = {"score": FieldRule("number", 0.0, 5.0), "reason": FieldRule("string")}

CHUNK_QUALITY = ("These frames come from one segment of a generated video. Rate its visual quality from 0 (broken, "
                 "unrecognisable) to 5 (sharp, artefact-free, realistic). Answer JSON {\"score\": 0-5, \"reason\": str}.")
CHUNK_TEXT = ("These frames come from one segment of a generated video whose caption is: \"{caption}\". Rate from 0 (unrelated) "
              "to 5 (exactly as described) how well the frames match the caption. Answer JSON {{\"score\": 0-5, \"reason\": str}}.")
TRANSITION = ("The first frames are the last second of one generated video segment and the rest the first second of the "
              "next. Rate the transition from 0 (hard seam: identities reset, the camera jumps impossibly, colours or "
              "layout change abruptly) to 5 (perfectly continuous). Answer JSON {\"score\": 0-5, \"reason\": str}.")
GLOBAL_CONSISTENCY = ("These frames are sampled over a whole generated video. Rate from 0 to 5 how consistent the world, "
                      "objects and identities stay over time. Answer JSON {\"score\": 0-5, \"reason\": str}.")
GLOBAL_TEXT = ("These frames are sampled over a whole generated video with the prompt: \"{prompt}\". Rate from 0 to 5 how "
               "well the video follows the prompt. Answer JSON {{\"score\": 0-5, \"reason\": str}}.")


def _sample(frames: np.ndarray, start: int, end: int, n: int) -> list[np.ndarray]:
    end = max(start + 1, end)
    idx = np.linspace(start, end - 1, min(n, end - start)).round().astype(int)
    return [frames[i] for i in idx]


def _ask(judge: Any, prompt: str, images: list[np.ndarray], samples: int) -> float:
    ans = judge.ask_json(prompt, images, keys=KEYS, samples=samples, schema=SCHEMA)
    scores = [float(a["score"]) for a in ans.answers]
    if not scores or not all(0.0 <= s <= 5.0 for s in scores):
        raise ValueError(f"judge scores {scores} are not in [0, 5]")
    return float(np.mean(scores))


def rubric_scores(judge: Any, frames: np.ndarray, fps: float, chunks: Sequence[Chunk], prompt: str,
                  frames_per_item: int = 4, samples: int = 1) -> dict[str, Any]:
    """Ask the judge every rubric item; returns the item scores (0-5), failures and the 0-1 mean."""
    items: dict[str, float] = {}
    failures: dict[str, str] = {}
    one_s = max(1, int(round(fps)))

    def run(key: str, p: str, imgs: list[np.ndarray]) -> None:
        try:
            items[key] = _ask(judge, p, imgs, samples)
        except Exception as e:  # noqa: BLE001 - a judge failure is recorded per item
            failures[key] = f"{type(e).__name__}: {e}"

    for c in chunks:
        imgs = _sample(frames, c.frame_start, c.frame_end, frames_per_item)
        run(f"chunk{c.index}.quality", CHUNK_QUALITY, imgs)
        if c.caption:
            run(f"chunk{c.index}.text", CHUNK_TEXT.format(caption=c.caption), imgs)
    for a, b in zip(chunks[:-1], chunks[1:], strict=False):
        imgs = _sample(frames, max(a.frame_start, a.frame_end - one_s), a.frame_end, frames_per_item // 2 or 1)
        imgs += _sample(frames, b.frame_start, min(b.frame_end, b.frame_start + one_s), frames_per_item // 2 or 1)
        run(f"transition{a.index}-{b.index}", TRANSITION, imgs)
    glob = _sample(frames, 0, len(frames), 2 * frames_per_item)
    run("global.consistency", GLOBAL_CONSISTENCY, glob)
    if prompt:
        run("global.text", GLOBAL_TEXT.format(prompt=prompt), glob)
    mean = float(np.mean(list(items.values()))) / 5.0 if items else None
    return {"items": items, "failures": failures, "score": mean}
