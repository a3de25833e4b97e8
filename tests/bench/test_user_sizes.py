"""``bench/user_sizes.py``: the sets it writes are the ones it names (sizes, framings, rates) and a run's rows are read
back as scores, ``None`` for an ok row without one and ``failed`` for a failed row."""

from __future__ import annotations

import json

import numpy as np


def test_sizes_are_the_case_size_a_multiple_of_it_or_a_fixed_size_in_even_sides(user_sizes):
    assert user_sizes.target_size("exact", (64, 48)) == (64, 48) == user_sizes.target_size("case", (64, 48))
    assert user_sizes.target_size("x4", (64, 48)) == (256, 192)
    assert user_sizes.target_size("x1.5", (63, 48)) == (94, 72)  # rounded to even sides, as 4:2:0 needs
    assert user_sizes.target_size("832x480", (64, 64)) == (480, 832)


def test_a_shift_moves_the_picture_right_and_a_zoom_brings_it_nearer(user_sizes):
    f = np.zeros((1, 20, 40, 3), np.uint8)
    f[0, 8:12, 18:22] = 255  # a square at the centre
    moved = user_sizes.reframe(f, "shift:0.1")[0]
    assert moved[8:12, 22:26].min() == 255 and moved[8:12, 18:22].max() == 0  # 4 px right
    near = user_sizes.reframe(f, "zoom:2")[0]
    area = int((near > 128).any(axis=-1).sum())
    assert 3 * 16 <= area <= 5 * 16  # twice the side: about four times the 16 px (bilinear edges)
    ys, xs = np.nonzero((near > 128).any(axis=-1))
    assert abs(ys.mean() - 9.5) <= 0.5 and abs(xs.mean() - 19.5) <= 0.5  # about the centre


def test_rows_read_scores_and_failures(user_sizes, tmp_path):
    rows = [{"case_id": "a", "track": "physics", "status": "ok", "score": 0.5},
            {"case_id": "a", "track": "geometry", "status": "not_applicable", "score": None},
            {"case_id": "b", "track": "physics", "status": "ok", "score": None},
            {"case_id": "c", "track": "physics", "status": "failed", "score": None}]
    (tmp_path / "results.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    assert user_sizes.rows(tmp_path) == {("a", "physics"): 0.5, ("b", "physics"): None, ("c", "physics"): "failed"}
