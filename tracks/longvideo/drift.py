"""Per-chunk signals → VDE for one video (the core of the long-video track and `worldolympiad lvbench`)."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tracks.interaction.flow import FlowEstimator
from tracks.longvideo.signals import (
    AESTHETIC_PARTS,
    CLARITY_SIDE,
    DYNAMIC_EVIDENCE,
    DYNAMIC_SIDE,
    SIGNALS,
    ChunkView,
    aesthetic_parts,
    chunk_signals,
)
from tracks.longvideo.vde import DEFAULT_NUM_CHUNKS, chunk_bounds, normalized_vde, video_drift_error

logger = logging.getLogger(__name__)

# A learned signal: chunk frames uint8 [T, H, W, 3] -> value (see tracks.longvideo.learned).
ChunkSignalFn = Callable[[np.ndarray], float]


@dataclass
class SignalDrift:
    """Drift of one signal: its per-chunk values and the VDE variants."""

    name: str
    values: list[float]
    vde_linear: float
    vde_log: float
    nvde_linear: float
    nvde_log: float
    source: str = "model-free"
    provenance: str = ""
    #: part name -> per-chunk values, when the normalised VDE is the mean of the parts' (the model-free
    #: aesthetic signal from v9); ``vde_linear`` / ``vde_log`` stay those of ``values``
    parts: dict[str, list[float]] = field(default_factory=dict)

    def details(self) -> dict[str, Any]:
        d = {"chunk_values": self.values, "vde_log": self.vde_log, "nvde_linear": self.nvde_linear,
             "nvde_log": self.nvde_log, "source": self.source, "num_chunks": len(self.values)}
        if self.parts:
            d["parts"] = {k: {"chunk_values": v, "nvde_linear": normalized_vde(v, "linear")} for k, v in self.parts.items()}
        if self.provenance:
            d["provenance"] = self.provenance
        return d


def _signal_drift(name: str, series: list[float], parts: dict[str, list[float]], source: str,
                  provenance: str) -> SignalDrift:
    """VDE of one signal's per-chunk ``series``; with ``parts``, its normalised VDE is the mean of theirs."""
    if parts:
        nv_lin = float(np.mean([normalized_vde(v, "linear") for v in parts.values()]))
        nv_log = float(np.mean([normalized_vde(v, "log") for v in parts.values()]))
    else:
        nv_lin, nv_log = normalized_vde(series, "linear"), normalized_vde(series, "log")
    return SignalDrift(name, series, video_drift_error(series, "linear"), video_drift_error(series, "log"),
                       nv_lin, nv_log, source, provenance, parts)


@dataclass
class DriftReport:
    """VDE of every signal of one video."""

    signals: dict[str, SignalDrift]
    num_chunks: int
    frames_used: int
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def nvde(self) -> float | None:
        """Mean normalised VDE (linear weights) over the signals that were measured."""
        vals = [s.nvde_linear for s in self.signals.values()]
        return float(np.mean(vals)) if vals else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "num_chunks": self.num_chunks,
            "frames_used": self.frames_used,
            "nvde": self.nvde,
            "signals": {n: {"vde_linear": s.vde_linear, **s.details()} for n, s in self.signals.items()},
            "errors": dict(self.errors),
        }


def measure_drift(
    frames: np.ndarray,
    *,
    num_chunks: int = DEFAULT_NUM_CHUNKS,
    signals: tuple[str, ...] = SIGNALS,
    max_side: int = 128,
    frame_stride: int = 1,
    learned: dict[str, ChunkSignalFn] | None = None,
    provenance: dict[str, str] | None = None,
    dynamic_side: int = DYNAMIC_SIDE,
    dynamic_evidence: int = DYNAMIC_EVIDENCE,
    clarity_side: int = CLARITY_SIDE,
    aesthetic_by_parts: bool = True,
) -> DriftReport:
    """Split ``frames`` (``uint8 [T, H, W, 3]``) into ``num_chunks`` equal chunks and compute VDE per signal.

    Args:
        frames: the whole video.
        num_chunks: N of the VDE formula (LV-Bench uses 10).
        signals: which signals to measure (subset of :data:`~tracks.longvideo.signals.SIGNALS`).
        max_side: analysis resolution.
        frame_stride: analyse every k-th frame inside each chunk (speed knob for long, high-fps
            videos; chunk boundaries are still those of the full video).
        learned: signal name → learned per-chunk function replacing the model-free one.
        provenance: signal name → what computed it (copied into each signal's details).
        dynamic_side: longer side of the fixed luma grid the model-free ``dynamic`` signal is measured on
            (:data:`~tracks.longvideo.signals.DYNAMIC_SIDE`; 0 = at ``max_side`` as the other signals, v5).
        dynamic_evidence: grey levels a grid pixel must change by for its flow to count
            (:data:`~tracks.longvideo.signals.DYNAMIC_EVIDENCE`, 3 since v7; 0 = every pixel, v6).
        clarity_side: longer side of the fixed luma grid the model-free ``clarity`` signal is measured on
            (:data:`~tracks.longvideo.signals.CLARITY_SIDE`, 48 since v8; 0 = at ``max_side``, v7).
        aesthetic_by_parts: the model-free ``aesthetic`` signal's normalised VDE is the mean of its parts'
            (:data:`~tracks.longvideo.signals.AESTHETIC_PARTS`; v9); ``False``: of the proxy's weighted sum (v8).

    Raises:
        ValueError: fewer frames than chunks.
    """
    bounds = chunk_bounds(len(frames), num_chunks)
    learned = learned or {}
    free = tuple(s for s in signals if s not in learned)
    flow = FlowEstimator()
    per_chunk: dict[str, list[float]] = {s: [] for s in signals}
    by_parts = aesthetic_by_parts and "aesthetic" in free
    parts: dict[str, list[float]] = {p: [] for p in AESTHETIC_PARTS} if by_parts else {}
    errors: dict[str, str] = {}
    for start, end in bounds:
        chunk = frames[start:end:frame_stride]
        if free:
            view = ChunkView.from_frames(chunk, max_side, dynamic_side if "dynamic" in free else 0,
                                         dynamic_evidence, clarity_side if "clarity" in free else 0)
            vals = chunk_signals(view, free, flow)
            for k, v in vals.items():
                per_chunk[k].append(v)
            if by_parts:
                for k, v in aesthetic_parts(view).items():
                    parts[k].append(v)
        for name, fn in learned.items():
            if name in signals and name not in errors:
                try:
                    per_chunk[name].append(float(fn(frames[start:end])))
                except Exception as e:  # noqa: BLE001 - one broken learned signal must not stop the others
                    errors[name] = f"{type(e).__name__}: {e}"
                    logger.warning("learned signal %s failed: %s", name, e)
    out: dict[str, SignalDrift] = {}
    for name in signals:
        series = per_chunk[name]
        if name in errors or len(series) != len(bounds):
            continue
        if any(math.isnan(v) for v in series):
            errors[name] = f"signal {name} is NaN on chunks {[i for i, v in enumerate(series) if math.isnan(v)]}"
            continue
        out[name] = _signal_drift(name, series, parts if name == "aesthetic" else {},
                                  "learned" if name in learned else "model-free", (provenance or {}).get(name, ""))
    return DriftReport(out, num_chunks, bounds[-1][1], errors)
