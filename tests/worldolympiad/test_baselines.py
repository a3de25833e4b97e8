"""Leaderboard baselines: repeat-first-frame, and the reference world model's random-weights twin."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from worldolympiad.models.base import ModelError
from worldolympiad.models.baselines import LEADERBOARD_BASELINES, RepeatFirstFrameModel
from worldolympiad.types import Case, even_chunks


def _case(tmp_path: Path, **kw) -> Case:
    chunks = even_chunks(12, 3, ["walk", "turn", "walk"], ["forward", "turn_left", "forward"])
    return Case(id="b1", scenario="gaming", fps=15.0, num_frames=12, resolution=(24, 32), prompt="a maze",
                chunks=chunks, base_dir=str(tmp_path), **kw)


def _gradient(h: int = 48, w: int = 64) -> np.ndarray:
    y, x = np.mgrid[0:h, 0:w]
    return np.stack([x * 4 % 256, y * 5 % 256, (x + y) % 256], -1).astype(np.uint8)


def test_repeat_first_frame_holds_the_conditioning_image(tmp_path: Path) -> None:
    from PIL import Image

    Image.fromarray(_gradient()).save(tmp_path / "first.png")
    case = _case(tmp_path, conditioning="first.png")
    video = RepeatFirstFrameModel().generate(case)
    assert video.frames.shape == (12, 24, 32, 3) and video.fps == 15.0
    assert all(np.array_equal(f, video.frames[0]) for f in video.frames)  # no motion at all
    # the image resized to the case resolution (OpenCV area filter), not some other frame
    import cv2

    assert np.array_equal(video.frames[0], cv2.resize(_gradient(), (32, 24), interpolation=cv2.INTER_AREA))
    assert video.chunks == case.chunks


def test_repeat_first_frame_falls_back_to_the_reference_video(tmp_path: Path) -> None:
    from worldolympiad.video.io import write_video

    frames = np.stack([np.roll(_gradient(24, 32), 3 * t, axis=1) for t in range(12)])
    write_video(tmp_path / "ref.mp4", frames, fps=15.0, lossless=True)
    video = RepeatFirstFrameModel().generate(_case(tmp_path, reference="ref.mp4"))
    assert np.abs(video.frames[5].astype(int) - frames[0].astype(int)).mean() < 2  # frame 0, not frame 5
    assert np.abs(video.frames[5].astype(int) - frames[5].astype(int)).mean() > 20


def test_repeat_first_frame_without_any_first_frame_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="no first frame: give it a 'conditioning' image"):
        RepeatFirstFrameModel().generate(_case(tmp_path))
    with pytest.raises(ModelError, match="not found"):
        RepeatFirstFrameModel().generate(_case(tmp_path, conditioning="missing.png"))
    with pytest.raises(ValueError, match="takes no argument"):
        RepeatFirstFrameModel("x")


def test_leaderboard_lists_four_rows_from_noise_to_ground_truth() -> None:
    assert list(LEADERBOARD_BASELINES) == ["repeat-first-frame", "inferix:reference-world-random",
                                           "inferix:reference-world", "reference"]


def test_random_twin_has_the_trained_architecture_but_not_its_weights() -> None:
    import torch

    from inferix.registry import REFERENCE_WORLD_DIR, load_model

    if not (REFERENCE_WORLD_DIR / "bundle.json").is_file():
        pytest.fail(f"the shipped reference world model is missing from {REFERENCE_WORLD_DIR}")
    trained, random = load_model("reference-world"), load_model("reference-world-random")
    assert trained.model.config == random.model.config and trained.actions == random.actions
    assert trained.sampling.timesteps == random.sampling.timesteps and trained.max_side == random.max_side
    assert trained.sampling == random.sampling  # served the same way: the sampler's action guidance too
    diffs = [not torch.equal(a, b) for a, b in zip(trained.model.state_dict().values(),
                                                   random.model.state_dict().values(), strict=True)]
    assert sum(diffs) > len(diffs) // 2
    # seeded: the same random baseline on every machine
    again = load_model("reference-world-random")
    assert all(torch.equal(a, b) for a, b in zip(random.model.state_dict().values(),
                                                 again.model.state_dict().values(), strict=True))


def test_reference_world_rolls_out_a_case_through_the_bridge(tmp_path: Path) -> None:
    from PIL import Image

    from inferix.registry import REFERENCE_WORLD_DIR
    from worldolympiad.models.base import build_model

    if not (REFERENCE_WORLD_DIR / "bundle.json").is_file():
        pytest.fail(f"the shipped reference world model is missing from {REFERENCE_WORLD_DIR}")
    Image.fromarray(_gradient()).save(tmp_path / "first.png")
    case = _case(tmp_path, conditioning="first.png")
    model = build_model("inferix:reference-world")
    video = model.generate(case, seed=0)
    assert video.frames.shape == (12, 24, 32, 3)
    first = np.asarray(Image.open(tmp_path / "first.png").resize((32, 24))).astype(int)
    assert np.abs(video.frames[0].astype(int) - first).mean() < 40  # opens on the (resized) first frame
    assert np.abs(video.frames[0].astype(int) - 128).mean() > 20  # ... not on grey noise


def test_repeat_first_frame_resolves_as_a_model_spec(tmp_path: Path) -> None:
    from PIL import Image

    from worldolympiad.models.base import build_model

    Image.fromarray(_gradient()).save(tmp_path / "first.png")
    model = build_model("repeat-first-frame")
    assert isinstance(model, RepeatFirstFrameModel) and model.name == "repeat-first-frame"
    video = model.generate(_case(tmp_path, conditioning="first.png"))
    assert all(np.array_equal(f, video.frames[0]) for f in video.frames)
