"""The model-free ``dynamic`` VDE signal with flow evidence (option ``longvideo.dynamic_evidence``, 3 by default since v7).

On the long-video tuning suite (``bench/suites/longvideo_tune``) a colour drift over a MuJoCo render's shaded
floor and sky read as 0.3-1.7 px/frame of motion in chunks where the clean render reads 0.001-0.15 (the ball at
rest): a brightness creep over a smooth gradient is, to optical flow, motion, and on the uint8 grid the gradient
is a staircase whose terraces shift when the brightness creeps by a grey level. The dynamic signal's drift then
*fell* under the defect and every colour-drifted video outscored the clean one. With ``dynamic_evidence=3`` a
pixel's flow counts only where its two grid frames differ by more than 3 grey levels. It became the default in
v7, at a cost on the ``smoke`` suite (48-64 px, one frame pair per chunk): one crf 35 pair and a larger clean
encoding gap (``docs/tracks/longvideo.md``).
"""

from __future__ import annotations

import numpy as np
import pytest

from tracks.longvideo.drift import measure_drift
from tracks.longvideo.signals import DYNAMIC_EVIDENCE, ChunkView, dynamic_degree

EVIDENCE = 3  # grey levels, the value measured on the tuning split


def _shaded_scene(drift: float = 0.0, frames: int = 80) -> np.ndarray:
    """96 x 128: smooth shading (a rendered floor and sky), a red ball rolling for 17 frames and then at rest;
    ``drift`` applies the ``color_drift`` defect's gains (1 + 0.4 s, 1, 1 - 0.4 s), growing linearly in time."""
    yy, xx = np.mgrid[0:96, 0:128].astype(np.float32)
    shading = np.stack([90 + 0.6 * xx + 0.3 * yy, 100 + 0.5 * xx + 0.2 * yy, 120 + 0.3 * xx + 0.1 * yy], -1)
    out = []
    for t in range(frames):
        f = shading.copy()
        f[(yy - 60) ** 2 + (xx - (20 + 3 * min(t, 16))) ** 2 < 64] = (200, 40, 40)
        k = t / (frames - 1)
        f *= np.array([1 + 0.4 * drift * k, 1.0, 1 - 0.4 * drift * k], np.float32)
        out.append(np.clip(f, 0, 255).round().astype(np.uint8))
    return np.stack(out)


def test_a_brightness_creep_over_smooth_shading_is_not_motion():
    clean = measure_drift(_shaded_scene(), signals=("dynamic",), dynamic_evidence=EVIDENCE).signals["dynamic"]
    for s in (0.5, 1.0, 2.0):
        drifted = measure_drift(_shaded_scene(s), signals=("dynamic",), dynamic_evidence=EVIDENCE).signals["dynamic"]
        # the chunks where the ball rests read no motion, whatever the cast (without evidence 0.17-0.74 px/frame)
        assert max(drifted.values[2:]) < 0.02, (s, drifted.values)
        assert abs(drifted.nvde_linear - clean.nvde_linear) < 0.02, (s, drifted.nvde_linear, clean.nvde_linear)
    v6 = measure_drift(_shaded_scene(1.0), signals=("dynamic",), dynamic_evidence=0).signals["dynamic"]
    assert min(v6.values[2:]) > 0.1  # v6 (every pixel) reads the defect's brightness creep as motion
    default = measure_drift(_shaded_scene(1.0), signals=("dynamic",)).signals["dynamic"]
    assert max(default.values[2:]) < 0.02  # v7's default does not


def test_a_stronger_colour_drift_drifts_more():
    # without evidence (v6): 0.190 (clean), 0.129, 0.107, 0.102 — the drifted clips score better
    nvde = [measure_drift(_shaded_scene(s), dynamic_evidence=EVIDENCE).nvde for s in (0.0, 0.5, 1.0, 2.0)]
    assert all(b > a for a, b in zip(nvde, nvde[1:], strict=False)), nvde


def test_real_motion_still_reads_as_motion():
    frames = _shaded_scene()
    assert ChunkView.from_frames(frames[:8]).dynamic_evidence == DYNAMIC_EVIDENCE == 3  # on by default since v7
    view = ChunkView.from_frames(frames[:8], dynamic_evidence=EVIDENCE)
    assert dynamic_degree(view) > 0.1  # the rolling ball's edges change by far more than 3 grey levels
    assert dynamic_degree(ChunkView.from_frames(frames[40:48], dynamic_evidence=EVIDENCE)) == 0.0  # at rest


def test_negative_evidence_is_refused():
    with pytest.raises(ValueError, match="grey levels"):
        ChunkView.from_frames(_shaded_scene()[:4], dynamic_evidence=-1)


def test_the_track_option_reaches_the_signal(tmp_path):
    from tracks.longvideo import LongVideoTrack
    from worldolympiad.track import EvalContext
    from worldolympiad.types import Case, Video, even_chunks

    frames = _shaded_scene(2.0)
    case = Case(id="shaded", scenario="mechanics", fps=24.0, num_frames=len(frames), resolution=(96, 128),
                chunks=even_chunks(len(frames), 4), tracks=("longvideo",))

    def dynamic_values(options, sub):
        result = LongVideoTrack().evaluate(Video(frames, 24.0), case, EvalContext(work_dir=tmp_path / sub, options=options))
        vde = next(m for m in result.metrics if m.name == "vde_dynamic")
        return vde.details["chunk_values"]

    assert max(dynamic_values({}, "default")[2:]) < 0.02  # v7's default
    assert min(dynamic_values({"longvideo.dynamic_evidence": 0}, "off")[2:]) > 0.1  # v6
