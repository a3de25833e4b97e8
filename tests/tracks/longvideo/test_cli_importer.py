"""`worldolympiad lvbench` (the CI drift job) with a stand-in model, and the LV-Bench importer."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from tracks.longvideo.cli import main
from tracks.longvideo.importer import LVBenchImportError, import_lvbench
from tracks.longvideo.lvbench import cases_from_items, load_slice
from worldolympiad.models.base import WorldModel
from worldolympiad.registries import MODELS
from worldolympiad.suites import load_suite
from worldolympiad.types import Case, Video


class StandIn(WorldModel):
    """Pans over a real photo for as long as the case asks; ``broken`` returns half the frames."""

    def __init__(self, arg: str | None = None, **_: object) -> None:
        self.arg = arg

    def generate(self, case: Case, seed: int = 0) -> Video:
        import cv2
        from skimage import data

        h, w = case.resolution
        n = case.num_frames // 2 if self.arg == "broken" else case.num_frames
        tex = cv2.resize(data.astronaut(), (3 * w, 3 * h), interpolation=cv2.INTER_AREA)
        frames = np.stack([tex[h : 2 * h, int(w + 10 * np.sin(t / 15)) : int(w + 10 * np.sin(t / 15)) + w] for t in range(n)])
        return Video(frames=np.ascontiguousarray(frames), fps=case.fps, chunks=case.chunks)


@pytest.fixture()
def standin():
    MODELS.register("lvstandin", StandIn, override=True)
    yield "lvstandin"
    MODELS.unregister("lvstandin")


def test_bundled_slices_are_minute_long_and_tiled_by_captions():
    for name in ("ci", "mini"):
        sl = load_slice(name)
        for case in cases_from_items(sl.items, fps=sl.fps, resolution=sl.resolution, duration_sec=sl.duration_sec):
            assert case.duration == pytest.approx(60.0)
            assert case.chunks[0].frame_start == 0 and case.chunks[-1].frame_end == case.num_frames
            assert all(a.frame_end == b.frame_start for a, b in zip(case.chunks, case.chunks[1:], strict=False))
            assert all(2.0 <= c.num_frames / case.fps <= 3.0 for c in case.chunks[:-1])
    with pytest.raises(ValueError, match="bundled: ci, mini"):
        load_slice("nope")


def test_ci_job_generates_a_minute_and_scores_vde(standin, tmp_path, capsys):
    rc = main(["--ci", "--model", standin, "--size", "32", "--out", str(tmp_path), "--no-tiny-weights"])
    assert rc == 0, capsys.readouterr().err
    res = json.loads((tmp_path / "lvbench_results.json").read_text())
    row = res["rows"][0]
    assert row["status"] == "ok" and row["frames"] == 480  # 60 s at the ci slice's 8 fps
    assert set(row["metrics"]) >= {"vde_clarity", "vde_motion", "vde_dynamic", "nvde"}
    assert (tmp_path / "videos" / "lvci_dance_0001.mp4").stat().st_size > 0
    assert "vde_clarity" in capsys.readouterr().out


def test_ci_job_table_lists_the_six_vde_variants_with_their_provenance(standin, tmp_path, capsys):
    # the CI job's path with tiny random-init checkpoints of every architecture (4 s of video keeps RAFT cheap)
    rc = main(["--ci", "--model", standin, "--size", "32", "--seconds", "4", "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    mean = json.loads((tmp_path / "lvbench_results.json").read_text())["mean"]
    table = {ln.split()[0]: ln for ln in out.splitlines() if ln.strip().startswith("vde_")}
    assert sorted(table) == sorted(f"vde_{s}" for s in ("clarity", "motion", "aesthetic", "background", "subject", "dynamic"))
    fallback = {"vde_clarity"} if importlib.util.find_spec("pyiqa") is None else set()
    for name, line in table.items():
        kind = "fallback: " if name in fallback else "weights: "
        assert kind in line and mean[name]["provenance"].startswith(kind), (name, line)
    assert "tiny_weights" in table["vde_dynamic"] and "raft_small" in table["vde_dynamic"]
    assert "AMT-S" in table["vde_motion"] and "amt-s.pth" in table["vde_motion"]


def test_ci_job_fails_when_the_model_breaks_or_is_missing(tmp_path, capsys):
    MODELS.register("lvstandin", StandIn, override=True)
    try:
        assert main(["--ci", "--model", "lvstandin:broken", "--size", "32", "--out", str(tmp_path)]) == 1
        assert "model returned 240 frames" in capsys.readouterr().err
    finally:
        MODELS.unregister("lvstandin")
    assert main(["--ci", "--model", "no_such_model", "--out", str(tmp_path)]) == 2
    assert "cannot build model 'no_such_model'" in capsys.readouterr().err


def test_scores_a_folder_of_videos(standin, tmp_path):
    assert main(["--model", standin, "--slice", "mini", "--limit", "1", "--size", "32", "--seconds", "20",
                 "--out", str(tmp_path / "gen")]) == 0
    rc = main(["--videos", str(tmp_path / "gen" / "videos"), "--slice", "mini", "--limit", "1", "--size", "32",
               "--seconds", "20", "--out", str(tmp_path / "read")])
    assert rc == 0
    a = json.loads((tmp_path / "gen" / "lvbench_results.json").read_text())["rows"][0]["metrics"]["vde_subject"]["raw"]
    b = json.loads((tmp_path / "read" / "lvbench_results.json").read_text())["rows"][0]["metrics"]["vde_subject"]["raw"]
    assert b == pytest.approx(a, rel=0.2)  # same video after an H.264 round trip


def test_import_metadata_jsonl_layout_with_videos(tmp_path):
    from worldolympiad.video.io import write_video

    (tmp_path / "videos").mkdir()
    frames = np.random.default_rng(0).integers(0, 255, (40, 32, 32, 3), dtype=np.uint8)
    write_video(tmp_path / "videos" / "v1.mp4", frames, 8.0)
    rows = [{"video_id": "v1", "captions": [{"start": 0, "end": 2.5, "caption": "a"}, {"start": 2.5, "end": 5, "caption": "b"}]},
            {"video_id": "v2", "segments": ["only text", "more text"]},
            {"captions": ["no id"]}]
    (tmp_path / "meta.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    path = import_lvbench(tmp_path)
    suite = load_suite(path)
    by = {c.id: c for c in suite.cases}
    assert set(by) == {"v1", "v2"}
    v1 = by["v1"]
    assert (v1.fps, v1.num_frames, v1.resolution) == (8.0, 40, (32, 32))
    assert [(c.frame_start, c.frame_end, c.caption) for c in v1.chunks] == [(0, 20, "a"), (20, 40, "b")]
    assert v1.resolve(v1.reference).exists()
    assert by["v2"].reference is None and len(by["v2"].chunks) == 2
    assert "id" in json.loads(path.read_text())["description"]  # the skipped item is reported


def test_import_folder_per_video_and_txt_captions(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "captions.json").write_text(json.dumps(["x", "y", "z"]))
    path = import_lvbench(tmp_path, tmp_path / "out" / "s.json")
    assert [c.caption for c in load_suite(path).cases[0].chunks] == ["x", "y", "z"]
    other = tmp_path / "b"
    (other / "captions").mkdir(parents=True)
    (other / "captions" / "clip7.txt").write_text("0 2.5\tfirst\n2.5 5\tsecond\n")
    case = load_suite(import_lvbench(other)).cases[0]
    assert case.id == "clip7" and case.num_frames == 80 and case.chunks[1].caption == "second"


def test_import_empty_folder_is_a_clear_error(tmp_path):
    with pytest.raises(LVBenchImportError, match="no LV-Bench items found"):
        import_lvbench(tmp_path)
