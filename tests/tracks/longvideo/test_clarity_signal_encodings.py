"""The model-free ``clarity`` VDE signal under the encodings users write (track v8, option ``longvideo.clarity_side``).

x264 spends its bits unevenly in time: the first (intra) frame is coded sharper than the predicted frames after it
and static areas keep that detail for a while before it fades, B frames are softer than the P frames around them,
and the 0.75x copy is analysed at its coded size. All of it lives in the finest octave of the coded resolution,
where the variance of the Laplacian at the 128 px analysis size looked (v7), so a clean clip's clarity drifted by
itself once encoded. v8 measures clarity on luma area-averaged onto a fixed grid whose longer side is 48 px.
"""

from __future__ import annotations

import numpy as np
import pytest

from tracks.longvideo.drift import measure_drift
from tracks.longvideo.signals import CLARITY_SIDE, ChunkView, clarity


def _clarity_nvde(frames: np.ndarray, **kw) -> float:
    return measure_drift(frames, num_chunks=10, signals=("clarity",), **kw).signals["clarity"].nvde_linear


@pytest.mark.parametrize("image", ["astronaut", "rocket", "coffee"])
def test_encoded_copies_of_a_clean_clip_keep_its_clarity_drift(tmp_path, synth, image):
    """An 80-frame 128 px pan over a photo, back and forth (its own clarity barely drifts), and its crf 23 and
    crf 35 x0.75 copies. Change of the clarity signal's normalised VDE from the lossless clip, crf 23 / crf 35:
    v7 (128 px) astronaut -0.008 / +0.147, rocket +0.040 / +0.121, coffee +0.005 / +0.117; v8 (48 px grid)
    -0.001 / +0.034, +0.004 / +0.023, +0.001 / +0.006."""
    from worldolympiad.video.io import encode_like_users, read_video

    clip = synth.pan_video(80, 128, 0.5, image, oscillate=True)
    lossless = _clarity_nvde(clip)
    for crf, scale in ((23, 1.0), (35, 0.75)):
        path = encode_like_users(tmp_path / f"{image}_c{crf}.mp4", clip, 15.0, crf=crf, scale=scale)
        copy = read_video(path).frames
        change = abs(_clarity_nvde(copy) - lossless)
        assert change < 0.06, (image, crf, change)
        if crf == 35:  # measured at the analysis size, as v7, the crf 35 copy's clarity drifts by itself
            assert abs(_clarity_nvde(copy, clarity_side=0) - _clarity_nvde(clip, clarity_side=0)) > 0.1


def test_a_blur_drift_still_reads_on_the_grid(synth):
    """Blur growing to sigma 1.5, 3 and 6 px at the last frame (1 / 85 to 1 / 21 of the frame)."""
    clip = synth.pan_video(80, 128, 0.5, "astronaut", oscillate=True)
    nvde = [_clarity_nvde(synth.blur_drift(clip, s) if s else clip) for s in (0.0, 0.5, 1.0, 2.0)]
    assert all(b > a + 0.05 for a, b in zip(nvde, nvde[1:], strict=False)), nvde


def test_the_grid_is_the_same_for_a_resized_copy_and_zero_restores_v7(synth):
    import cv2

    clip = synth.pan_video(12, 128, 0.5, "astronaut")
    small = np.stack([cv2.resize(f, (96, 96), interpolation=cv2.INTER_AREA) for f in clip])
    view, small_view = ChunkView.from_frames(clip), ChunkView.from_frames(small)
    assert CLARITY_SIDE == 48
    assert view.clarity_gray is not None and small_view.clarity_gray is not None
    assert view.clarity_gray.shape == small_view.clarity_gray.shape == (12, 48, 48)
    # the 0.75x copy reads the sharpness of the original on the grid (ratio 1.0005); at the analysis size 1.149
    assert clarity(small_view) == pytest.approx(clarity(view), rel=0.01)
    v7, v7_small = ChunkView.from_frames(clip, clarity_side=0), ChunkView.from_frames(small, clarity_side=0)
    assert v7.clarity_gray is None
    assert clarity(v7) == pytest.approx(float(np.mean([cv2.Laplacian(g.astype(np.float32), cv2.CV_32F).var()
                                                       for g in v7.gray])))
    assert abs(clarity(v7_small) / clarity(v7) - 1) > 0.1


def test_the_track_option_reaches_the_signal(tmp_path, synth):
    from tracks.longvideo import LongVideoTrack
    from worldolympiad.track import EvalContext
    from worldolympiad.types import Case, Video, even_chunks

    frames = synth.pan_video(40, 96, 0.5, "astronaut", oscillate=True)
    case = Case(id="pan", scenario="realworld", fps=15.0, num_frames=len(frames), resolution=(96, 96),
                chunks=even_chunks(len(frames), 4), tracks=("longvideo",))

    def clarity_values(options, sub):
        ctx = EvalContext(work_dir=tmp_path / sub, options={"longvideo.signals": "clarity", **options})
        result = LongVideoTrack().evaluate(Video(frames, 15.0), case, ctx)
        return next(m for m in result.metrics if m.name == "vde_clarity").details["chunk_values"]

    grid = measure_drift(frames, signals=("clarity",)).signals["clarity"].values
    v7 = measure_drift(frames, signals=("clarity",), clarity_side=0).signals["clarity"].values
    assert clarity_values({}, "default") == pytest.approx(grid)
    assert clarity_values({"longvideo.clarity_side": 0}, "v7") == pytest.approx(v7)
    assert grid != pytest.approx(v7)
