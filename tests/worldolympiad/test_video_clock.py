"""A video at another frame rate than its case is scored on the case's clock (issue 56: the videos users bring).

Before session 65 the tracks took the file's rate label: the exact ``smoke-mechanics-free_fall`` reference saved
with ``diffusers.export_to_video``'s default of 10 fps (the case runs at 16) fell at 0.39 g for the size the case
declares and scored physics 0.568 instead of 1.0; a model rendering at twice the case's rate had only the first
half of the case's duration read.
"""

from __future__ import annotations

import json

import numpy as np

from worldolympiad.budgets import decode_limits
from worldolympiad.generate import load_frames
from worldolympiad.suites import load_suite
from worldolympiad.video.io import case_timeline, read_video, write_video


def _case(case_id: str):
    return next(c for c in load_suite("smoke").cases if c.id == case_id)


def _frames(T: int = 12) -> np.ndarray:
    return np.stack([np.full((16, 16, 3), (5 * t) % 256, np.uint8) for t in range(T)])


def test_the_case_timeline_takes_the_nearest_file_frame_only_from_a_faster_file():
    assert case_timeline(16.0, 8.0, 4).tolist() == [0, 2, 4, 6]
    assert case_timeline(25.0, 10.0, 3).tolist() == [0, 2, 5]  # 0, 2.5 (even), 5
    assert case_timeline(8.0, 16.0, 4) is None and case_timeline(30000 / 1001, 29.97, 4) is None


def test_a_faster_file_lasting_the_case_gives_its_frames_at_the_case_times(tmp_path):
    fr = _frames(24)
    write_video(tmp_path / "v.mp4", fr, 16.0, lossless=True)
    v = read_video(tmp_path / "v.mp4", max_frames=12, clock=8.0)
    assert v.fps == 8.0 and v.metadata["retimed_from_fps"] == 16.0
    assert np.array_equal(v.frames, fr[::2])


def test_a_file_too_short_for_the_case_duration_or_slower_is_read_one_to_one_on_the_case_clock(tmp_path):
    fr = _frames(12)
    write_video(tmp_path / "fast.mp4", fr, 24.0, lossless=True)  # 12 frames at 24 fps: half a second of 12 at 12
    v = read_video(tmp_path / "fast.mp4", max_frames=12, clock=12.0)
    assert np.array_equal(v.frames, fr) and v.fps == 12.0 and v.metadata["file_fps"] == 24.0
    write_video(tmp_path / "label.mp4", fr, 10.0, lossless=True)  # export_to_video's default label
    v = read_video(tmp_path / "label.mp4", max_frames=12, clock=16.0)
    assert np.array_equal(v.frames, fr) and v.fps == 16.0 and v.metadata["file_fps"] == 10.0
    same = read_video(tmp_path / "label.mp4", max_frames=12, clock=10.0)
    assert same.fps == 10.0 and "file_fps" not in same.metadata and "retimed_from_fps" not in same.metadata


def test_raw_frames_follow_the_same_clock(tmp_path):
    fr = _frames(24)
    np.savez(tmp_path / "r.npz", frames=fr, fps=np.float64(16.0), chunk_frames=np.array([[0, 12], [12, 24]]))
    v = load_frames(tmp_path / "r.npz", max_frames=12, clock=8.0)
    assert np.array_equal(v.frames, fr[::2]) and v.fps == 8.0 and v.chunks == ()  # file chunks dropped: the case's
    v = load_frames(tmp_path / "r.npz", max_frames=12, clock=20.0)
    assert np.array_equal(v.frames, fr[:12]) and v.fps == 20.0 and v.metadata["file_fps"] == 16.0


def test_chunk_timestamps_of_a_retimed_file_are_mapped_to_the_case_frames(tmp_path):
    from worldolympiad.models.videos import VideosModel

    case = _case("smoke-gaming-breakout")  # 24 frames at 15 fps, chunks of 8
    T = case.num_frames * 2
    write_video(tmp_path / f"{case.id}.mp4", _frames(T), case.fps * 2, lossless=True)
    (tmp_path / f"{case.id}_chunk_timestamps.json").write_text(json.dumps({
        "fps": case.fps * 2, "total_frames": T,
        "chunks": [{"chunk_index": i, "frame_start": 2 * c.frame_start, "frame_end": 2 * c.frame_end}
                   for i, c in enumerate(case.chunks)]}))
    v = VideosModel(str(tmp_path)).generate(case)
    assert v.num_frames == case.num_frames and v.fps == case.fps
    assert [(c.frame_start, c.frame_end) for c in v.chunks] == [(c.frame_start, c.frame_end) for c in case.chunks]


def test_a_correct_fall_saved_at_an_exporters_default_rate_scores_what_it_scores_at_the_case_rate(tmp_path):
    from worldolympiad.evaluator import score_video
    from worldolympiad.models.reference import ReferenceModel

    case = _case("smoke-mechanics-free_fall")
    ref = ReferenceModel().generate(case)
    write_video(tmp_path / "case.mp4", ref.frames, case.fps, lossless=True)
    write_video(tmp_path / "ten.mp4", ref.frames, 10.0, lossless=True)
    doubled = np.repeat(ref.frames, 2, axis=0)  # a model at twice the case's rate (each frame twice)
    write_video(tmp_path / "double.mp4", doubled, case.fps * 2, lossless=True)
    assert read_video(tmp_path / "double.mp4", **decode_limits(case)).metadata["retimed_from_fps"] == case.fps * 2
    scores = {name: score_video(tmp_path / f"{name}.mp4", case, ["physics"], work_dir=tmp_path / name)[0].score
              for name in ("case", "ten", "double")}
    assert scores["case"] is not None and scores["case"] > 0.9
    assert scores["ten"] == scores["case"] and scores["double"] == scores["case"], scores
