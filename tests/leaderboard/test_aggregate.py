"""Aggregation on hand-built result sets (issue 8, acceptance 1)."""

import math

import numpy as np

from leaderboard.aggregate import (
    bootstrap_ci,
    case_scores,
    leaderboard_table,
    overall_scores,
    rows_from_results,
    track_scores,
)


def row(model, case, seed, track, score, status="ok", version="1", scenario="gaming"):
    return {"model": model, "case_id": case, "seed": seed, "track": track, "score": score, "status": status,
            "track_version": version, "scenario": scenario, "suite": "t"}


def test_seeds_are_averaged_before_cases():
    # case a: seeds 0 and 1 score 0.0 and 1.0 -> 0.5; case b: one seed, 1.0.
    # Seeds first: (0.5 + 1.0) / 2 = 0.75. Pooling all rows would give 2/3.
    rows = rows_from_results([
        row("m", "a", 0, "physics", 0.0), row("m", "a", 1, "physics", 1.0), row("m", "b", 0, "physics", 1.0),
    ])
    t = track_scores(rows)
    assert math.isclose(t["score"].iloc[0], 0.75)
    c = case_scores(rows).set_index("case_id")
    assert math.isclose(c.loc["a", "seed_std"], 0.5)
    assert c.loc["a", "n_seeds"] == 2


def test_missing_track_is_dropped_not_zeroed():
    rows = rows_from_results([
        row("full", "a", 0, "physics", 0.6), row("full", "a", 0, "geometry", 0.2),
        row("partial", "a", 0, "physics", 0.6),  # no geometry at all
    ])
    o = overall_scores(track_scores(rows)).set_index("model")
    assert math.isclose(o.loc["full", "overall"], 0.4)
    assert math.isclose(o.loc["partial", "overall"], 0.6)  # zero-filling would give 0.3
    assert o.loc["partial", "n_tracks"] == 1
    table = leaderboard_table(rows).set_index("Model")
    assert np.isnan(table.loc["partial", "3D Cons."])


def test_not_applicable_and_failed_rows_are_counted_in_coverage_not_averaged():
    rows = rows_from_results([
        row("m", "a", 0, "geometry", 0.8),
        row("m", "b", 0, "geometry", None, status="not_applicable"),
        row("m", "c", 0, "geometry", None, status="failed"),
    ])
    t = track_scores(rows).iloc[0]
    assert math.isclose(t["score"], 0.8)
    assert (t["n_cases"], t["n_total"], t["n_na"], t["n_failed"]) == (1, 3, 1, 1)
    assert math.isclose(t["coverage"], 0.5)  # 1 scored of 2 applicable


def test_versions_are_never_mixed():
    rows = rows_from_results([
        row("old", "a", 0, "physics", 0.9, version="1"),
        row("new", "a", 0, "physics", 0.5, version="2"),
        row("both", "a", 0, "physics", 0.1, version="1"),
        row("both", "a", 0, "physics", 0.7, version="2"),
    ])
    table = leaderboard_table(rows).set_index("Model")
    assert math.isclose(table.loc["both", "Physical"], 0.7)  # v1 row ignored, not averaged in
    assert np.isnan(table.loc["old", "Physical"])  # stale version: no number, not 0.9
    assert table.loc["old", "Stale"] == "physics"
    pinned = leaderboard_table(rows, versions={"physics": "1"}).set_index("Model")
    assert math.isclose(pinned.loc["old", "Physical"], 0.9)
    assert math.isclose(pinned.loc["both", "Physical"], 0.1)


def test_bootstrap_ci_contains_the_mean_and_shrinks_with_more_cases():
    rng = np.random.default_rng(1)
    small = rng.uniform(0, 1, 8)
    big = rng.uniform(0, 1, 400)
    lo, hi = bootstrap_ci(small)
    assert lo <= small.mean() <= hi
    blo, bhi = bootstrap_ci(big)
    assert blo <= big.mean() <= bhi
    assert (bhi - blo) < (hi - lo)
    rows = rows_from_results([row("m", f"c{i}", 0, "physics", float(v)) for i, v in enumerate(small)])
    t = track_scores(rows).iloc[0]
    assert t["ci_low"] <= t["score"] <= t["ci_high"]


def test_table_is_ranked_by_overall_and_filters_by_scenario():
    rows = rows_from_results([
        row("good", "a", 0, "physics", 0.9, scenario="gaming"), row("good", "r", 0, "physics", 0.1, scenario="robotics"),
        row("bad", "a", 0, "physics", 0.2, scenario="gaming"), row("bad", "r", 0, "physics", 0.8, scenario="robotics"),
    ])
    gaming = leaderboard_table(rows, scenario="gaming")
    assert list(gaming["Model"]) == ["good", "bad"] and list(gaming["Rank"]) == [1, 2]
    robotics = leaderboard_table(rows, scenario="robotics")
    assert list(robotics["Model"]) == ["bad", "good"]


def test_published_row_format_with_clip_metric_column():
    from leaderboard.aggregate import metric_rows_from_results

    def r(model, case, track, score, clip=None):
        d = row(model, case, 0, track, score)
        d["metrics"] = [] if clip is None else [{"name": "text_alignment", "normalized": clip, "version": "1",
                                                   "status": "ok"}]
        return d

    results = [r("m", "a", "physics", 0.5), r("m", "a", "geometry", 0.3), r("m", "a", "interaction", 0.7, clip=0.2),
               r("m", "b", "interaction", 0.5, clip=0.6)]
    table = leaderboard_table(rows_from_results(results), metrics=metric_rows_from_results(results))
    assert list(table.columns[:9]) == ["Rank", "Model", "Task", "Physical", "3D Cons.", "CLIP", "Interact.",
                                       "LV Drift", "All"]
    assert math.isclose(table.loc[0, "CLIP"], 0.4)  # mean over cases of normalised text alignment
    assert math.isclose(table.loc[0, "Interact."], 0.6)
