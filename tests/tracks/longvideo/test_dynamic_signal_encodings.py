"""The model-free ``dynamic`` VDE signal under the encodings users write (track v6).

Measured at the coded resolution (v5: the 128 px analysis size never shrinks a 64 px video), H.264's artefacts
read as motion: the first intra frame redraws thin structures differently from the predicted frames after it,
blocks flicker, and DIS turns that into flow spikes of several pixels in one or two chunks. With one or two
frame pairs per chunk the top 5 % of flow then moved the signal's normalised VDE by 0.2-0.3 between copies of
one clip, more than a colour drift moves any other signal. v6 measures the flow on luma area-averaged onto a
fixed 32 px grid, the same for every copy whatever size it was written at.
"""

from __future__ import annotations

import numpy as np
import pytest

from tracks.longvideo.drift import measure_drift
from tracks.longvideo.signals import ChunkView, dynamic_degree, luma_grid


def _clip(drift: float = 0.0, frames: int = 24) -> np.ndarray:
    """64 px, Atari-like: one-pixel brick rows and walls (which codecs redraw) over black, and a textured box
    moving one pixel per frame (constant motion: the dynamic signal of every chunk is the same); ``drift`` tints
    the frames progressively (the ``color_drift`` defect's kind of change, at its strength)."""
    rng = np.random.default_rng(0)
    tex = rng.integers(60, 230, (12, 12, 3)).repeat(2, 0).repeat(2, 1).astype(np.float32)
    out = np.zeros((frames, 64, 64, 3), np.float32)
    bricks = [(200, 72, 72), (198, 108, 58), (180, 122, 48), (162, 162, 42), (72, 160, 72), (66, 72, 200)]
    for t in range(frames):
        f = out[t]
        f[:, :2] = f[:, -2:] = 142
        for i, c in enumerate(bricks):
            f[4 + 2 * i: 5 + 2 * i, 2:-2] = c
        f[30:54, 2 + t: 26 + t] = tex
        k = drift * t / (frames - 1)
        f *= np.array([1 + 0.3 * k, 1 - 0.2 * k, 1 - 0.3 * k], np.float32)
        f += 20 * k
    return np.clip(out, 0, 255).astype(np.uint8)


def _dynamic_nvde(frames: np.ndarray) -> float:
    return measure_drift(frames, num_chunks=10, signals=("dynamic",)).signals["dynamic"].nvde_linear


def test_encoded_copies_of_one_clip_keep_the_dynamic_drift(tmp_path):
    """Lossless vs crf 23 and crf 35 x0.75, clean and colour-drifted: v5 moved by 0.21-0.28 on every copy
    (mean 0.24), v6 by 0.02-0.15 (mean 0.10)."""
    from worldolympiad.video.io import encode_like_users, read_video

    lossless = _dynamic_nvde(_clip())
    changes = []
    for drift in (0.0, 0.5):
        clip = _clip(drift)
        for crf, scale in ((23, 1.0), (35, 0.75)):
            path = encode_like_users(tmp_path / f"d{drift}_c{crf}.mp4", clip, 15.0, crf=crf, scale=scale)
            changes.append(abs(_dynamic_nvde(read_video(path).frames) - lossless))
    assert float(np.mean(changes)) < 0.12, changes
    assert max(changes) < 0.2, changes


def test_the_grid_is_the_same_for_a_resized_copy_and_keeps_motion():
    clip = _clip()
    small = np.stack([np.asarray(f[::4, ::4]).repeat(3, 0).repeat(3, 1) for f in clip])  # 48 px
    assert luma_grid(clip, 32).shape == luma_grid(small, 32).shape == (len(clip), 32, 32)
    wide = luma_grid(np.zeros((2, 36, 64, 3), np.uint8), 32)
    assert wide.shape == (2, 18, 32)
    # the box moves 1 px per frame at 64 px: half a pixel per frame on the 32 px grid
    view = ChunkView.from_frames(clip[:6])
    assert view.flow_gray is not None and view.flow_gray.shape[1:] == (32, 32)
    assert dynamic_degree(view) == pytest.approx(0.5, abs=0.2)
    still = ChunkView.from_frames(np.repeat(clip[:1], 6, axis=0))
    assert dynamic_degree(still) == pytest.approx(0.0, abs=1e-3)


def test_dynamic_side_zero_measures_at_the_analysis_size_and_bad_sides_are_refused():
    clip = _clip()
    v5 = ChunkView.from_frames(clip[:6], dynamic_side=0)
    assert v5.flow_gray is None
    assert dynamic_degree(v5) == pytest.approx(1.0, abs=0.3)  # pixels per frame at 64 px
    with pytest.raises(ValueError, match="at least 8 px"):
        luma_grid(clip, 4)
