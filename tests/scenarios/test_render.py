"""`worldolympiad scenarios render`: a folder whose suite validates, videos decode and ground truth matches."""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest
from PIL import Image

from scenarios import render
from scenarios.suites import build_suite
from worldolympiad.types import Case
from worldolympiad.validate import validate_file
from worldolympiad.video.io import read_video

FRAGMENT = """
cases:
  - {id: r-breakout, generator: gaming.atari_breakout, seed: 1, params: {resolution: [32, 32], num_frames: 8, num_chunks: 2}}
  - {id: r-maze, generator: gaming.maze, seed: 1, params: {resolution: [32, 32], num_frames: 8, num_chunks: 2}}
  - {id: r-push, generator: robotics.push, seed: 1, params: {resolution: [32, 32], num_frames: 9}}
  - {id: r-clip, generator: realworld.clip, seed: 1, params: {clip: carphone, num_frames: 8, resolution: [32, 32], num_chunks: 2}}
"""


@pytest.fixture(scope="module")
def suite_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("frag") / "tiny"
    d.mkdir()
    (d / "mine.yaml").write_text(textwrap.dedent(FRAGMENT))
    return d


@pytest.fixture(scope="module")
def rendered_out(suite_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    rc = render.main([str(suite_dir), str(out)])  # exact references are the default
    assert rc == 0
    return out


def test_playable_references_are_smaller_and_inexact_and_never_mix_with_exact_ones(suite_dir, rendered_out, tmp_path,
                                                                                   capsys):
    out = tmp_path / "playable"
    assert render.main([str(suite_dir), str(out), "--playable", "--only", "r-push"]) == 0
    assert json.loads((out / "render_log.json").read_text())["videos"] == "playable"
    assert json.loads((rendered_out / "render_log.json").read_text())["videos"] == "lossless"
    exact = read_video(rendered_out / "videos" / "r-push.mp4").frames
    lossy = read_video(out / "videos" / "r-push.mp4").frames
    assert lossy.shape == exact.shape and not np.array_equal(lossy, exact)
    assert (out / "videos" / "r-push.mp4").stat().st_size < (rendered_out / "videos" / "r-push.mp4").stat().st_size
    assert render.main([str(suite_dir), str(out), "--only", "r-push"]) == 2
    assert "holds playable reference videos" in capsys.readouterr().err


def test_suite_json_validates_and_lists_every_case(rendered_out):
    assert validate_file(rendered_out / "suite.json") == []
    suite = json.loads((rendered_out / "suite.json").read_text())
    assert suite["name"] == "tiny"
    assert [p.split("/")[-1] for p in suite["cases"]] == ["r-breakout.json", "r-maze.json", "r-push.json", "r-clip.json"]


def test_written_files_are_exactly_the_generator_render(rendered_out, suite_dir):
    """Lossless video, conditioning PNG and mask/depth arrays equal a fresh render, byte for byte —
    and re-rendering from the written case file (JSON round trip, as the `reference` model does) too."""
    for case in build_suite(str(suite_dir)):
        written = Case.load(rendered_out / "cases" / f"{case.id}.json")
        fresh = render.generator_for(written).render(written)
        video = read_video(written.resolve(written.reference))
        assert video.frames.shape == (case.num_frames, *case.resolution, 3)
        np.testing.assert_array_equal(video.frames, fresh.video.frames)
        np.testing.assert_array_equal(np.asarray(Image.open(written.resolve(written.conditioning))), fresh.video.frames[0])
        arrays = np.load(written.resolve(written.metadata["ground_truth_files"]["arrays"]))
        if fresh.masks is not None:
            np.testing.assert_array_equal(arrays["masks"], fresh.masks)
        if fresh.depth is not None:
            np.testing.assert_array_equal(arrays["depth"], fresh.depth)
        assert json.loads(str(arrays["object_ids"])) == fresh.object_ids


def test_cases_carry_camera_and_ground_truth_paths(rendered_out):
    push = Case.load(rendered_out / "cases" / "r-push.json")
    assert push.camera is not None and push.camera.poses.shape == (9, 4, 4)
    gt = json.loads(push.resolve(push.physics.ground_truth).read_text())
    assert len(gt["end_effector"]["position"]) == 9
    assert set(gt["objects"]) >= {push.metadata["layout"]["target"]}
    arrays = np.load(push.resolve(push.metadata["ground_truth_files"]["arrays"]))
    np.testing.assert_allclose(arrays["states/end_effector/position"], gt["end_effector"]["position"])
    clip = Case.load(rendered_out / "cases" / "r-clip.json")
    assert clip.camera is None and clip.physics is None  # no ground truth for real footage
    maze = Case.load(rendered_out / "cases" / "r-maze.json")
    states = json.loads(maze.resolve(maze.metadata["ground_truth_files"]["states"]).read_text())
    assert len(states["camera"]["position"]) == 8 and "red_sphere" in states["objects"]


def test_rerun_skips_and_a_failing_case_does_not_stop_the_others(rendered_out, suite_dir, tmp_path, monkeypatch):
    again = render.render_suite(str(suite_dir), rendered_out)
    assert sorted(again.skipped) == ["r-breakout", "r-clip", "r-maze", "r-push"] and not again.written

    from scenarios.gaming.maze import maze

    def boom(case):
        raise RuntimeError("renderer exploded")

    monkeypatch.setattr(maze, "render", boom)
    out = tmp_path / "o"
    rc = render.main([str(suite_dir), str(out), "--only", "r-maze,r-clip"])
    assert rc == 1
    log = json.loads((out / "render_log.json").read_text())
    assert "renderer exploded" in log["failed"]["r-maze"]
    assert json.loads((out / "suite.json").read_text())["cases"] == ["cases/r-clip.json"]
    assert validate_file(out / "suite.json") == []


def test_unknown_only_id_is_a_clear_error(suite_dir, tmp_path):
    with pytest.raises(ValueError, match="nope"):
        render.render_suite(str(suite_dir), tmp_path, only=["nope"])


@pytest.mark.slow
def test_full_smoke_suite_renders_and_validates(tmp_path):
    """The whole smoke suite (every family, both scenario helpers) renders into a valid folder."""
    assert render.main(["smoke", str(tmp_path)]) == 0
    assert validate_file(tmp_path / "suite.json") == []
    for p in json.loads((tmp_path / "suite.json").read_text())["cases"]:
        c = Case.load(tmp_path / p)
        assert read_video(c.resolve(c.reference)).num_frames == c.num_frames
