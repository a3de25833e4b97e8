"""`worldolympiad generate`: generating on one machine and scoring on another (`videos:DIR`) scores exactly
what a direct run of the model scores; runs resume, and one failing case does not stop the rest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import wo_testlib

from worldolympiad.cli.evaluate import main as evaluate_main
from worldolympiad.cli.main import main as wo_main
from worldolympiad.generate import generate_suite, load_frames, save_frames
from worldolympiad.models.base import WorldModel
from worldolympiad.models.videos import VideosModel
from worldolympiad.registries import MODELS
from worldolympiad.types import Case, Chunk, Video
from worldolympiad.video import write_video
from worldolympiad.video.io import VideoError, write_chunk_timestamps

CALLS: list[str] = []


class NoisyModel(WorldModel):
    """Deterministic frames with fine noise (so H.264 storage changes them), one chunk per case chunk;
    fails on any case whose id contains ``bad``."""

    def __init__(self, arg: str | None = None, **options: Any) -> None:
        self.options = options

    def generate(self, case: Case, seed: int = 0) -> Video:
        CALLS.append(f"{case.id}:{seed}")
        if "bad" in case.id:
            raise RuntimeError(f"cannot draw {case.id}")
        h, w = case.resolution
        rng = np.random.default_rng(seed + sum(map(ord, case.id)))
        frames = rng.integers(0, 256, size=(case.num_frames, h, w, 3), dtype=np.uint8)
        return Video(frames=frames, fps=case.fps, chunks=case.chunks)


@pytest.fixture
def noisy(tmp_path):
    MODELS.register("noisy", NoisyModel, override=True)
    CALLS.clear()
    cases = [wo_testlib.case_dict(f"case{i}") for i in range(2)]
    return wo_testlib.write_suite(tmp_path / "suite.json", cases)


def _scores(out: Path) -> dict[tuple[str, int], float]:
    run = next(d for d in out.iterdir() if d.is_dir() and not d.name.startswith("."))
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert all(r["status"] == "ok" for r in rows), rows
    return {(r["case_id"], r["seed"]): next(m["raw"] for m in r["metrics"] if m["name"] == "brightness")
            for r in rows}


@pytest.mark.parametrize("fmt", ["npz", "mp4"])
def test_generated_files_score_exactly_what_a_direct_run_of_the_model_scores(noisy, tmp_path, fmt):
    common = ["--suite", str(noisy), "--tracks", "counting", "--seeds", "0,1", "--no-progress"]
    assert evaluate_main(["--model", "noisy", "--out", str(tmp_path / "direct"), *common]) == 0
    gen = tmp_path / "gen"
    manifest = generate_suite("noisy", noisy, gen, seeds=(0, 1), fmt=fmt, progress=False)
    assert sorted(manifest["cases"]) == [f"case{i}__s{s}" for i in range(2) for s in (0, 1)]
    assert all(r["status"] == "ok" for r in manifest["cases"].values())
    assert evaluate_main(["--model", f"videos:{gen}", "--out", str(tmp_path / "later"), *common]) == 0
    direct, later = _scores(tmp_path / "direct"), _scores(tmp_path / "later")
    assert later == direct  # the same stored-and-decoded frames, to the last bit
    raw = NoisyModel().generate(_case(noisy, "case0"), seed=0).frames
    assert direct[("case0", 0)] != pytest.approx(float(raw.mean()) / 255.0, abs=1e-9)  # storage did change them


def _case(suite: Path, case_id: str) -> Case:
    from worldolympiad.suites import load_suite

    return next(c for c in load_suite(suite).cases if c.id == case_id)


def test_a_failing_case_is_recorded_the_rest_written_and_a_rerun_generates_only_what_is_missing(tmp_path, capsys):
    MODELS.register("noisy", NoisyModel, override=True)
    CALLS.clear()
    suite = wo_testlib.write_suite(tmp_path / "suite.json",
                                   [wo_testlib.case_dict(c) for c in ("case0", "bad1", "case2")])
    out = tmp_path / "gen"
    rc = wo_main(["generate", str(suite), "--model", "noisy", "--out", str(out), "--format", "npz", "--no-progress"])
    assert rc == 1
    err = capsys.readouterr().err
    assert "bad1__s0" in err and "cannot draw bad1" in err
    manifest = json.loads((out / "generate.json").read_text())
    assert manifest["cases"]["bad1__s0"]["status"] == "failed"
    assert manifest["cases"]["case2__s0"]["status"] == "ok" and (out / "case2__s0.npz").is_file()
    assert manifest["device"] == "cpu" and manifest["format"] == "npz" and manifest["planned"] == 3
    CALLS.clear()
    assert wo_main(["generate", str(suite), "--model", "noisy", "--out", str(out), "--format", "npz",
                    "--no-progress"]) == 1
    assert CALLS == ["bad1:0"]  # the two written files were kept, the failed case tried again


def test_only_cases_listing_a_requested_track_are_generated(tmp_path):
    MODELS.register("noisy", NoisyModel, override=True)
    suite = wo_testlib.write_suite(tmp_path / "suite.json", [
        wo_testlib.case_dict("both"), wo_testlib.case_dict("geo", tracks=["geometry"])])
    manifest = generate_suite("noisy", suite, tmp_path / "gen", tracks=["physics"], fmt="npz", progress=False)
    assert list(manifest["cases"]) == ["both__s0"]


def test_frame_files_keep_chunk_boundaries_and_take_captions_from_the_case(tmp_path):
    case = Case.from_dict(wo_testlib.case_dict("c", num_frames=6))
    video = Video(frames=wo_testlib.frames_for("c"), fps=8, chunks=(Chunk(0, 0, 2, "", None), Chunk(1, 2, 6, "", None)))
    back = load_frames(save_frames(tmp_path / "c.npz", video), case)
    assert np.array_equal(back.frames, video.frames) and back.fps == 8
    assert [(c.frame_start, c.frame_end, c.caption, c.action) for c in back.chunks] == [
        (0, 2, "first", "left"), (2, 6, "second", "right")]
    np.savez(tmp_path / "x.npz", pixels=video.frames)
    with pytest.raises(VideoError, match="no 'frames' or 'fps' array"):
        load_frames(tmp_path / "x.npz")


def test_videos_model_reads_chunk_timestamps_beside_a_flat_file(tmp_path):
    case = Case.from_dict(wo_testlib.case_dict("c", num_frames=6))
    write_video(tmp_path / "c__s0.mp4", wo_testlib.frames_for("c"), 8)
    write_chunk_timestamps(tmp_path / "c__s0_chunk_timestamps.json", "c__s0.mp4", 8, 6,
                           [Chunk(0, 0, 4, "", None), Chunk(1, 4, 6, "", None)])
    video = VideosModel(str(tmp_path)).generate(case, seed=0)
    assert [(c.frame_start, c.frame_end, c.caption) for c in video.chunks] == [(0, 4, "first"), (4, 6, "second")]
    assert video.metadata["stored_file"].endswith("c__s0.mp4")
