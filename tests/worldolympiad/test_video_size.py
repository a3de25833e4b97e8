"""A video larger than its case is judged at the case's resolution (issue 56: the videos users bring).

Users' models write at their own size (Wan2.1: 832x480) whatever the case asks for. Before session 65 such a
video was refused as a decode bomb (16x the case's pixels at most: every row of an 832x480 run of ``smoke``
failed), and one at 4x the case's side was scored at that size, where the tracks' pixel tolerances were never
set: the exact ``smoke`` references upscaled 4x scored physics 0.67 instead of 0.78 (hardness 1.0 -> 0.0) and
took 9x as long. Now every frame larger than the case is area-resampled to it as it is decoded.
"""

from __future__ import annotations

import numpy as np
import pytest

from worldolympiad.budgets import decode_limits
from worldolympiad.suites import load_suite
from worldolympiad.video.io import fit_within, read_video, write_video


def _blocky(frames: np.ndarray, k: int) -> np.ndarray:
    """Each pixel a ``k x k`` block: area resampling back by ``k`` gives the frames exactly."""
    return np.repeat(np.repeat(frames, k, axis=1), k, axis=2)


def test_a_frame_larger_than_the_case_is_area_resampled_and_a_smaller_one_is_kept():
    rng = np.random.default_rng(0)
    small = rng.integers(0, 256, (16, 24, 3), dtype=np.uint8)
    assert fit_within(small, (16, 24)) is small and fit_within(small, (32, 48)) is small
    assert np.array_equal(fit_within(_blocky(small[None], 4)[0], (16, 24)), small)
    wide = fit_within(rng.integers(0, 256, (48, 83, 3), dtype=np.uint8), (16, 24))  # another aspect: stretched
    assert wide.shape == (16, 24, 3)
    tall_narrow = fit_within(rng.integers(0, 256, (40, 10, 3), dtype=np.uint8), (16, 24))  # larger on one side
    assert tall_narrow.shape == (16, 24, 3)


def test_a_model_sized_video_of_a_small_case_is_decoded_at_the_case_resolution(tmp_path):
    """832x480 for a 64x64 case: refused before ("past the budget for its case"), now 64x64 frames."""
    case = next(c for c in load_suite("smoke").cases if c.id == "smoke-gaming-breakout")
    rng = np.random.default_rng(1)
    frames = rng.integers(0, 256, (case.num_frames, 480, 832, 3), dtype=np.uint8)
    write_video(tmp_path / "v.mp4", frames, case.fps, qp=18, pix_fmt="yuv444p")
    video = read_video(tmp_path / "v.mp4", **decode_limits(case))
    assert video.frames.shape == (case.num_frames, *case.resolution, 3)
    assert video.metadata["resized_from"] == [480, 832]


@pytest.mark.parametrize("case_id", ["smoke-material-hardness", "smoke-material-color_mixing"])
def test_a_case_video_written_at_four_times_its_size_scores_what_the_case_sized_one_scores(case_id, tmp_path):
    """The exact reference, each pixel written as a 4x4 block (lossless): the same physics score. At 4x
    (with a cubic upscale and crf 23) these two scored 0.0 and 0.196 where their case-sized videos scored
    1.0 and 0.99."""
    from worldolympiad.evaluator import score_video
    from worldolympiad.models.reference import ReferenceModel

    case = next(c for c in load_suite("smoke").cases if c.id == case_id)
    ref = ReferenceModel().generate(case)
    write_video(tmp_path / "case.mp4", ref.frames, case.fps, lossless=True)
    write_video(tmp_path / "big.mp4", _blocky(ref.frames, 4), case.fps, lossless=True)
    native = score_video(tmp_path / "case.mp4", case, ["physics"], work_dir=tmp_path / "w1")[0]
    big = score_video(tmp_path / "big.mp4", case, ["physics"], work_dir=tmp_path / "w2")[0]
    assert native.status == "ok" and native.score is not None and native.score > 0.9, native
    assert big.status == "ok" and big.score == native.score, (big.score, native.score)


def test_the_warning_says_the_video_is_scored_at_the_case_resolution_and_stretched():
    from worldolympiad.models.videos import check_frames

    case = next(c for c in load_suite("smoke").cases if c.id == "smoke-gaming-breakout")
    (w,) = check_frames(case, "v.mp4", case.num_frames, (480, 832), case.fps)
    assert w.kind == "resized"
    assert "the video is 832x480 px, scored at the case's 64x64, its aspect ratio 1.73 stretched to 1.00" in w.message
    (small,) = check_frames(case, "v.mp4", case.num_frames, (48, 48), case.fps)
    assert small.kind == "size"
