"""Per-chunk and global consistency: text alignment (CLIP, when local weights exist) and identity.

* **Text alignment**: mean cosine similarity between each chunk's caption and its frames in
  CLIP space (``interaction.clip_path`` = a local ``transformers`` CLIP folder). Without
  weights the metric is *not applicable* — there is no honest model-free stand-in.
* **Identity consistency**: does the tracked thing keep its appearance across chunks? The
  agent (when tracked: its pixels that differ from the temporal-median background, inside a
  patch around its centroid) or, for camera scenes, the whole frame is described per chunk
  (HSV histogram, or CLIP image features when weights are given); consistency is the mean
  similarity of every later chunk's descriptor to the first chunk's.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from worldolympiad.types import Chunk

logger = logging.getLogger(__name__)


class ClipScorer:
    """CLIP image/text embeddings from a local folder (``CLIPModel`` + ``CLIPProcessor``)."""

    def __init__(self, path: str | Path, device: str = "cpu") -> None:
        import torch
        from transformers import CLIPModel, CLIPProcessor

        p = Path(path)
        if not p.exists():
            raise FileNotFoundError(f"CLIP weights folder {p} does not exist; pass interaction.clip_path=<local CLIP dir>")
        self.torch = torch
        self.model = CLIPModel.from_pretrained(str(p)).to(device).eval()
        self.processor = CLIPProcessor.from_pretrained(str(p))
        self.device = device

    def image_features(self, frames: np.ndarray) -> np.ndarray:
        """``uint8 [T, H, W, 3]`` → unit-norm ``float [T, D]``."""
        with self.torch.no_grad():
            inputs = self.processor(images=list(frames), return_tensors="pt").to(self.device)
            f = self.model.get_image_features(**inputs)
            f = getattr(f, "pooler_output", f)
        f = f.float().cpu().numpy()
        return f / (np.linalg.norm(f, axis=1, keepdims=True) + 1e-12)

    def text_features(self, texts: Sequence[str]) -> np.ndarray:
        with self.torch.no_grad():
            inputs = self.processor(text=list(texts), return_tensors="pt", padding=True, truncation=True).to(self.device)
            f = self.model.get_text_features(**inputs)
            f = getattr(f, "pooler_output", f)
        f = f.float().cpu().numpy()
        return f / (np.linalg.norm(f, axis=1, keepdims=True) + 1e-12)


def text_alignment(frames: np.ndarray, chunks: Sequence[Chunk], scorer: ClipScorer, frames_per_chunk: int = 4) -> dict[str, Any]:
    """Per-chunk caption-frame cosine similarity (chunks without caption are skipped)."""
    per = {}
    for c in chunks:
        if not c.caption:
            continue
        idx = np.linspace(c.frame_start, c.frame_end - 1, min(frames_per_chunk, c.num_frames)).round().astype(int)
        img = scorer.image_features(frames[idx])
        txt = scorer.text_features([c.caption])
        per[c.index] = float((img @ txt[0]).mean())
    return {"per_chunk": per, "mean": float(np.mean(list(per.values()))) if per else None}


def _hist(rgb: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    import cv2

    hsv = cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2HSV)
    m = None if mask is None else mask.astype(np.uint8)
    h = cv2.calcHist([hsv], [0, 1, 2], m, [8, 4, 4], [0, 180, 0, 256, 0, 256]).ravel()
    return h / max(h.sum(), 1.0)


def identity_consistency(frames: np.ndarray, chunks: Sequence[Chunk], positions: np.ndarray | None = None,
                         patch: int = 0, scorer: ClipScorer | None = None) -> dict[str, Any]:
    """Similarity of each later chunk's appearance descriptor to the first chunk's (1 = identical).

    Args:
        frames: ``uint8 [T, H, W, 3]``.
        chunks: the chunks (at least two needed).
        positions: ``[T, 2]`` agent centroids (pixels); with ``patch > 0`` the descriptor is the
            agent patch of that half-size around the centroid, else the whole frame.
        scorer: CLIP features instead of HSV histograms.
    """
    if len(chunks) < 2:
        raise ValueError("identity consistency needs at least two chunks")
    H, W = frames.shape[1:3]
    # the agent's own pixels = those that differ from the static background (temporal median)
    background = np.median(frames, axis=0) if positions is not None and patch > 0 else None
    descs = []
    for c in chunks:
        mid = (c.frame_start + c.frame_end - 1) // 2
        img = frames[mid]
        if positions is not None and patch > 0:
            seg = positions[c.frame_start : c.frame_end]
            ok = np.isfinite(seg).all(axis=1)
            if not ok.any():
                descs.append(None)
                continue
            x, y = np.median(seg[ok], axis=0)
            ys = slice(max(0, int(y) - patch), min(H, int(y) + patch + 1))
            xs = slice(max(0, int(x) - patch), min(W, int(x) + patch + 1))
            img = frames[mid][ys, xs]
            assert background is not None
            fg = np.abs(img.astype(np.float32) - background[ys, xs]).max(axis=-1) > 25
        else:
            fg = None
        if scorer is not None:
            descs.append(("clip", scorer.image_features(img[None])[0]))
        else:
            descs.append(("hist", _hist(img, fg if fg is not None and fg.sum() >= 3 else None)))
    first = descs[0]
    sims = []
    for d in descs[1:]:
        if first is None or d is None:
            sims.append(0.0)  # the tracked identity vanished in this chunk
        elif d[0] == "clip":
            sims.append(float(max(0.0, first[1] @ d[1])))
        else:
            sims.append(float(np.minimum(first[1], d[1]).sum()))
    return {"per_chunk": sims, "mean": float(np.mean(sims)), "descriptor": descs[0][0] if descs[0] else "none",
            "region": "agent" if positions is not None and patch > 0 else "frame"}
