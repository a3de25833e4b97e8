"""Generations reused across runs that only score differently (worldolympiad.reuse): a new track version,
another ``--tracks`` list or a track option starts a new run directory, but what the model generates
depends on none of them, so the new run reads the videos its sibling generated instead of generating
every one again."""

from __future__ import annotations

import json
from pathlib import Path

import wo_testlib

from worldolympiad.cli.evaluate import main as evaluate_main
from worldolympiad.reuse import generation_key
from worldolympiad.video import write_video


def _suite(tmp_path: Path, prompt: str = "a test scene") -> Path:
    refs = tmp_path / "refs"
    refs.mkdir(exist_ok=True)
    cases = []
    for i in range(2):
        cid = f"case{i}"
        write_video(refs / f"{cid}.mp4", wo_testlib.frames_for(cid), 8)
        cases.append(wo_testlib.case_dict(cid, reference=str(refs / f"{cid}.mp4"), prompt=f"{prompt} {cid}"))
    return wo_testlib.write_suite(tmp_path / "suite.json", cases)


def _run(suite: Path, out: Path, calls: Path, *extra: str) -> int:
    return evaluate_main(["--model", "repeat-first-frame", "--suite", str(suite), "--tracks", "counting",
                          "--out", str(out), "--no-progress", "--no-report", "--no-baselines",
                          "--option", f"counting.calls={calls}", *extra])


def _stages(run_dir: Path) -> dict[str, str]:
    rows = [json.loads(x) for x in (run_dir / "timings.jsonl").read_text().splitlines()]
    return {r["case_id"]: r["stage"] for r in rows if r["stage"] in ("generate", "read")}


def _scores(run_dir: Path) -> dict[str, float]:
    return {k[0]: r["score"] for k, r in wo_testlib.rows_by_key(run_dir).items()}


def _newest(out: Path, before: set[Path]) -> Path:
    (new,) = [d for d in out.iterdir() if d.is_dir() and not d.name.startswith(".") and d not in before]
    return new


def test_a_run_that_only_scores_differently_reads_its_siblings_generations(tmp_path, capsys):
    suite, out = _suite(tmp_path), tmp_path / "runs"
    assert _run(suite, out, tmp_path / "a.txt") == 0
    first = _newest(out, set())
    assert set(_stages(first).values()) == {"generate"}
    capsys.readouterr()

    # the same model and cases, scored with another track option: a new run directory, no generation
    before = set(out.iterdir())
    assert _run(suite, out, tmp_path / "b.txt") == 0
    second = _newest(out, before)
    assert _stages(second) == {"case0": "read", "case1": "read"}
    assert f"2 generated video(s) reused from {first.name}" in capsys.readouterr().out
    assert _scores(second) == _scores(first)
    assert (second / "videos" / "case0__s0.mp4").read_bytes() == (first / "videos" / "case0__s0.mp4").read_bytes()

    # an edited case is generated again; the unchanged one is still reused
    wo_testlib.write_suite(suite, _edited(suite))
    before = set(out.iterdir())
    assert _run(suite, out, tmp_path / "c.txt") == 0
    assert _stages(_newest(out, before)) == {"case0": "read", "case1": "generate"}

    # --no-resume reuses nothing
    before = set(out.iterdir())
    assert _run(suite, out, tmp_path / "d.txt", "--no-resume") == 0
    assert set(_stages(_newest(out, before)).values()) == {"generate"}


def _edited(suite: Path) -> list[dict]:
    cases = json.loads(suite.read_text())["cases"]
    cases[1]["prompt"] = "another scene"
    return cases


def test_only_models_that_generate_the_same_videos_share_them():
    spec = {"model": "inferix:reference-world", "model_fingerprint": "2696a0dbb173+bridge3",
            "video_format": "h264 yuv444p qp18", "options": [["physics.segmenter", "opencv"]]}
    key = generation_key(spec)
    assert key is not None
    # track options and track versions do not change what is generated
    assert generation_key({**spec, "options": [], "track_versions": [["physics", "9"]]}) == key
    # other weights, model options or storage format do
    assert generation_key({**spec, "model_fingerprint": "ffff"}) != key
    assert generation_key({**spec, "options": [["model.steps", 8]]}) != key
    assert generation_key({**spec, "video_format": "h264 yuv420p qp18"}) != key
    # a model whose weights nobody fingerprints may have changed behind the same spec: never shared
    assert generation_key({"model": "py:mymodel.py:Model", "options": []}) is None
    assert generation_key({"model": "repeat-first-frame", "options": []}) is not None
