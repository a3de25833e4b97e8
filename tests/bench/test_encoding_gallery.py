"""``bench/encoding_gallery.py``: which clean videos it shows (those a lossy encoding drops by more than
the gap, worst first) and what it says failed, on a hand-made validity folder."""

from __future__ import annotations

import json

import numpy as np


def _rec(case: str, enc: str, value: float | None, defect: str = "clean", condition: str = "no_reference",
         track: str = "physics") -> dict:
    return {"condition": condition, "encoding": enc, "case": case, "track": track, "metric": "score",
            "defect": defect, "strength": 0.0, "value": value}


RECORDS = [
    _rec("kept", "lossless", 1.0), _rec("kept", "crf23", 0.97), _rec("kept", "crf35_s0.75", 0.96),
    _rec("erased", "lossless", 1.0), _rec("erased", "crf23", 0.9), _rec("erased", "crf35_s0.75", 0.1),
    _rec("dented", "lossless", 0.9), _rec("dented", "crf23", 0.7), _rec("dented", "crf35_s0.75", 0.88),
    _rec("unscored", "lossless", 0.8), _rec("unscored", "crf35_s0.75", None),
    # not clean, other condition, other track: never shown
    _rec("erased", "crf35_s0.75", 0.0, defect="teleport"), _rec("kept", "crf35_s0.75", 0.0, condition="reference"),
    _rec("kept", "crf35_s0.75", 0.0, track="interaction"),
]


def test_it_shows_the_clean_cases_a_lossy_encoding_drops_by_more_than_the_gap_worst_first(gallery):
    shown = gallery.gap_cases({"records": RECORDS}, "physics", "no_reference", 0.05)
    assert [c for c, _ in shown] == ["erased", "unscored", "dented"]
    assert dict(shown)["erased"] == {"lossless": 1.0, "crf23": 0.9, "crf35_s0.75": 0.1}
    assert [c for c, _ in gallery.gap_cases({"records": RECORDS}, "physics", "no_reference", 0.5)] == ["erased", "unscored"]


def test_it_names_physics_failing_checks_else_the_two_lowest_metrics(gallery):
    physics = {"metrics": [{"name": "rule_pass_rate", "normalized": 0.4, "details": {"rules": [
        {"rule": "gravity", "checks": [{"check": "gravity", "status": "fail", "reason": "nothing falls"},
                                       {"check": "continuity", "status": "pass", "reason": ""}]},
        {"rule": "impact", "checks": [{"check": "gravity", "status": "fail", "reason": "nothing falls"}]}]}}]}
    assert gallery.why(physics) == "gravity: nothing falls"
    other = {"metrics": [{"name": "a", "normalized": 0.9}, {"name": "b", "normalized": 0.2},
                         {"name": "c", "normalized": 0.5}, {"name": "d", "normalized": None}]}
    assert gallery.why(other) == "b 0.20, c 0.50"


def test_it_draws_one_row_per_case_from_a_validity_folder(gallery, tmp_path):
    from worldolympiad.video.io import write_video

    frames = np.zeros((6, 32, 48, 3), np.uint8)
    frames[:, 10:16, 20:26] = 200
    for enc, (case, _) in [(e, c) for e in ("lossless", "crf23", "crf35_s0.75") for c in [("erased", 0)]]:
        write_video(tmp_path / "videos" / enc / f"{case}.mp4", frames, 8.0)
    (tmp_path / "render" / "cases_noref").mkdir(parents=True)
    (tmp_path / "render" / "cases_noref" / "erased.json").write_text(
        json.dumps({"physics": {"objects": [{"name": "box", "box": [20, 10, 26, 16]}]}}))
    records = [r for r in RECORDS if r["case"] == "erased"]
    (tmp_path / "validity.json").write_text(json.dumps({"records": records, "runs": []}))
    png = tmp_path / "g.png"
    assert gallery.main([str(tmp_path), "--png", str(png)]) == 0
    assert png.stat().st_size > 1000
    assert gallery.gallery(tmp_path, tmp_path / "none.png", gap=0.95) == []
    assert not (tmp_path / "none.png").exists()
