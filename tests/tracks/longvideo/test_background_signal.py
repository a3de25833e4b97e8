"""The model-free background signal (HSV-histogram consistency) under the noise users' encodings add (v5).

H.264 4:2:0 spins the hue of grey and dark pixels from frame to frame; counted in hue bins, a still grey wall
looked like a changing background (a crf 35 breakout clip read 0.37 background consistency in a chunk of a still
scene). A slow colour cast that carries a uniform region across a bin edge moved all of it at once."""

from __future__ import annotations

import numpy as np

from tracks.longvideo.signals import ChunkView, _hsv_hist, background_consistency


def test_a_still_grey_wall_with_codec_chroma_noise_is_a_consistent_background():
    rng = np.random.default_rng(0)
    base = np.full((8, 48, 64, 3), 128, np.int16)
    base[:, :, 40:] = 20  # a dark floor
    # the codec's chroma error is shared by each 8x8 block and changes from frame to frame: a block's hue spins
    blocks = rng.integers(-3, 4, (8, 6, 8, 3)).repeat(8, axis=1).repeat(8, axis=2)
    noisy = np.clip(base + blocks, 0, 255).astype(np.uint8)
    assert background_consistency(ChunkView.from_frames(noisy)) > 0.95


def test_a_slow_colour_cast_moves_the_histogram_smoothly():
    # a uniform orange region whose hue creeps across a bin edge (hue 22.5 of 180) by 0.5 per frame
    import cv2

    hues = np.linspace(20.0, 25.0, 11)
    frames = []
    for h in hues:
        hsv = np.zeros((32, 32, 3), np.uint8)
        hsv[..., 0], hsv[..., 1], hsv[..., 2] = round(h), 200, 200
        frames.append(cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB))
    hists = [_hsv_hist(f) for f in frames]
    step = [float(np.minimum(a, b).sum()) for a, b in zip(hists, hists[1:], strict=False)]
    assert min(step) > 0.85, step  # hard bins: one step moved the whole region (intersection 0)
