"""The published (learned) VDE signals, used when local weights are given.

=====================  ======================================  =====================================
option                 what it loads                           signal it replaces
=====================  ======================================  =====================================
longvideo.clip_path    a local transformers CLIP folder        background: CLIP image-feature
                                                               similarity to the chunk's first and
                                                               previous frame (VBench background)
longvideo.aesthetic_   LAION aesthetic predictor weights        aesthetic: the head applied to
head                   (.safetensors / .pt state dict of        unit-norm CLIP image embeddings
                       stacked Linear layers); needs clip_path  (VBench aesthetic quality)
longvideo.dino_path    a local transformers DINO / DINOv2 /     subject: CLS-feature similarity to
                       ViT folder (AutoModel)                   the first and previous frame
=====================  ======================================  =====================================

MUSIQ (clarity), AMT (motion) and RAFT (dynamic) have no loader here; those signals stay
model-free and the results say so (``details.source``). Weights are only read from local
paths (``weights_only=True`` for torch files); nothing is downloaded.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

FRAMES_PER_CHUNK = 8  # frames sampled per chunk for the learned signals (they cost a forward each)


def _sample(frames: np.ndarray, n: int = FRAMES_PER_CHUNK) -> np.ndarray:
    idx = np.linspace(0, len(frames) - 1, min(n, len(frames))).round().astype(int)
    return frames[idx]


def _first_prev(feats: np.ndarray) -> float:
    """VBench consistency over unit-norm features ``[T, D]``: mean of (cos to first + cos to previous) / 2."""
    if len(feats) < 2:
        return 1.0
    to_first = feats[1:] @ feats[0]
    to_prev = (feats[1:] * feats[:-1]).sum(axis=1)
    return float(np.mean(0.5 * (np.clip(to_first, 0, None) + np.clip(to_prev, 0, None))))


class DinoFeatures:
    """CLS features of a local DINO / DINOv2 / ViT folder (``transformers.AutoModel``)."""

    def __init__(self, path: str | Path, device: str = "cpu") -> None:
        import torch
        from transformers import AutoImageProcessor, AutoModel

        p = Path(path)
        if not p.exists():
            raise FileNotFoundError(f"DINO weights folder {p} does not exist (longvideo.dino_path)")
        self.torch = torch
        self.model = AutoModel.from_pretrained(str(p)).to(device).eval()
        self.processor = AutoImageProcessor.from_pretrained(str(p))
        self.device = device

    def __call__(self, frames: np.ndarray) -> np.ndarray:
        with self.torch.no_grad():
            inputs = self.processor(images=list(frames), return_tensors="pt").to(self.device)
            h = self.model(**inputs).last_hidden_state[:, 0]  # [T, D] CLS token
        f = h.float().cpu().numpy()
        return f / (np.linalg.norm(f, axis=1, keepdims=True) + 1e-12)


def load_linear_stack(path: str | Path) -> Callable[[np.ndarray], np.ndarray]:
    """A stack of Linear layers from a state dict (LAION's aesthetic MLP has no activations).

    Layers are the 2-D ``*weight`` tensors in file order, each with its ``*bias`` when present.
    """
    import torch

    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"aesthetic head {p} does not exist (longvideo.aesthetic_head)")
    if p.suffix == ".safetensors":
        from safetensors.torch import load_file

        sd: Mapping[str, Any] = load_file(str(p))
    else:
        sd = torch.load(str(p), map_location="cpu", weights_only=True)
    layers = []
    for k, w in sd.items():
        if k.endswith("weight") and w.ndim == 2:
            b = sd.get(k[: -len("weight")] + "bias")
            layers.append((w.float().numpy(), None if b is None else b.float().numpy()))
    if not layers:
        raise ValueError(f"{p}: no Linear weights found (expected keys like 'layers.0.weight')")

    def head(x: np.ndarray) -> np.ndarray:
        for w, b in layers:
            x = x @ w.T + (0.0 if b is None else b)
        return x[:, 0]

    return head


def build_learned_signals(options: Mapping[str, Any], device: str = "cpu") -> tuple[dict[str, Callable[[np.ndarray], float]], list[str]]:
    """Learned per-chunk signal functions from the track options, and load errors (reported, not raised)."""
    signals: dict[str, Callable[[np.ndarray], float]] = {}
    errors: list[str] = []
    clip = None
    if options.get("longvideo.clip_path"):
        try:
            from tracks.interaction.consistency import ClipScorer

            clip = ClipScorer(options["longvideo.clip_path"], device=device)
            signals["background"] = lambda fr: _first_prev(clip.image_features(_sample(fr)))
        except Exception as e:  # noqa: BLE001
            errors.append(f"longvideo.clip_path: {type(e).__name__}: {e}; background stays model-free")
    if options.get("longvideo.aesthetic_head"):
        if clip is None:
            errors.append("longvideo.aesthetic_head needs longvideo.clip_path (the head scores CLIP embeddings)")
        else:
            try:
                head = load_linear_stack(options["longvideo.aesthetic_head"])
                signals["aesthetic"] = lambda fr: float(np.mean(head(clip.image_features(_sample(fr)))))
            except Exception as e:  # noqa: BLE001
                errors.append(f"longvideo.aesthetic_head: {type(e).__name__}: {e}; aesthetic stays model-free")
    if options.get("longvideo.dino_path"):
        try:
            dino = DinoFeatures(options["longvideo.dino_path"], device=device)
            signals["subject"] = lambda fr: _first_prev(dino(_sample(fr)))
        except Exception as e:  # noqa: BLE001
            errors.append(f"longvideo.dino_path: {type(e).__name__}: {e}; subject stays model-free")
    return signals, errors
