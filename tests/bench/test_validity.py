"""The held-out validity harness (``bench/validity.py``): its statistics on a hand-made table, and one tiny
end-to-end ``--quick`` run through the public CLI."""

from __future__ import annotations

import json

import pytest


def _rec(case: str, defect: str, s: float, value: float | None, enc: str = "lossless", metric: str = "score") -> dict:
    return {"condition": "reference", "encoding": enc, "case": case, "track": "physics", "metric": metric,
            "defect": defect, "strength": s, "value": value}


def test_pair_accuracy_and_spearman_on_a_hand_made_table(validity):
    records = [
        # case a: clean 0.9 > 0.6 > 0.3 > 0.1 -> all 6 pairs right, rho 1
        _rec("a", "clean", 0.0, 0.9), _rec("a", "teleport", 0.25, 0.6), _rec("a", "teleport", 0.5, 0.3),
        _rec("a", "teleport", 1.0, 0.1),
        # case b: clean 0.5, defects 0.7 (above clean), 0.5 (tie with clean), 0.2
        # pairs (clean, .25) wrong, (clean, .5) tie, (clean, 1) right, (.25, .5) right, (.25, 1) right, (.5, 1) right
        _rec("b", "clean", 0.0, 0.5), _rec("b", "teleport", 0.25, 0.7), _rec("b", "teleport", 0.5, 0.5),
        _rec("b", "teleport", 1.0, 0.2),
    ]
    r = validity.statistics(records)["ranking"]["reference"]["lossless"]["physics"]["score"]
    assert r["pairs"] == 12 and r["series"] == 2
    assert r["pair_accuracy"] == pytest.approx((6 + 4.5) / 12)
    # case b: values [0.5, 0.7, 0.5, 0.2] against -strength [0, -.25, -.5, -1]: ranks of values 2.5, 4, 2.5, 1
    from scipy.stats import spearmanr

    rho_b = spearmanr([0, -0.25, -0.5, -1], [0.5, 0.7, 0.5, 0.2]).statistic
    assert r["spearman"] == pytest.approx((1.0 + rho_b) / 2)


def test_a_constant_metric_is_undecided_not_perfect(validity):
    records = [_rec("a", "clean", 0.0, 1.0), *[_rec("a", "vanish", s, 1.0) for s in (0.34, 0.67, 1.0)]]
    r = validity.statistics(records)["ranking"]["reference"]["lossless"]["physics"]["score"]
    assert r["pair_accuracy"] == pytest.approx(0.5) and r["spearman"] == 0.0


def test_a_defect_video_that_is_the_clean_video_again_is_not_ordered(validity):
    """A "gravity reversal" of balls rolling on a floor changes a handful of pixels: the defect video
    is the clean one again, so its tie with the clean video is no ranking error and is left out."""
    noop = {**_rec("a", "gravity_reversed", 0.34, 1.0), "noop": True}
    records = [_rec("a", "clean", 0.0, 1.0), noop, _rec("a", "gravity_reversed", 0.67, 0.4),
               _rec("a", "gravity_reversed", 1.0, 0.1)]
    r = validity.statistics(records)["ranking"]["reference"]["lossless"]["physics"]["score"]
    # left: (clean, .67), (clean, 1), (.67, 1) -- all right; (clean, .34) and (.34, *) are not pairs of defects
    assert r["pairs"] == 3 and r["pair_accuracy"] == 1.0 and r["noop_pairs"] == 1 and r["spearman"] == 1.0
    # without the flag the same table counts the tie as half a pair and a misordered one
    plain = validity.statistics([{k: v for k, v in x.items() if k != "noop"} for x in records])
    assert plain["ranking"]["reference"]["lossless"]["physics"]["score"]["pair_accuracy"] < 1.0


def test_two_strengths_that_made_the_same_frames_are_not_ordered(validity):
    """An `action_ignored` at 0.67 and at 1.0 replays the same frames when the clip has few chunks:
    the two videos are one, so no metric can order them; their tie is left out, not half a pair."""
    records = [{**_rec("a", "clean", 0.0, 1.0), "video": "c"}, {**_rec("a", "action_ignored", 0.34, 0.6), "video": "x"},
               {**_rec("a", "action_ignored", 0.67, 0.3), "video": "y"}, {**_rec("a", "action_ignored", 1.0, 0.3), "video": "y"}]
    r = validity.statistics(records)["ranking"]["reference"]["lossless"]["physics"]["score"]
    # left: (clean, .34), (clean, .67), (clean, 1), (.34, .67), (.34, 1) -- all right; (.67, 1) is one video
    assert r["pairs"] == 5 and r["pair_accuracy"] == 1.0 and r["identical_pairs"] == 1
    # and the one video is one point of the Spearman series (at 0.67 and again at 1.0 it tied with itself: 0.949)
    assert r["spearman"] == 1.0
    # without the shas the tie counts as half a pair
    plain = validity.statistics([{k: v for k, v in x.items() if k != "video"} for x in records])
    assert plain["ranking"]["reference"]["lossless"]["physics"]["score"]["pair_accuracy"] == pytest.approx(5.5 / 6)


def test_a_stronger_replay_that_only_holds_a_tiny_change_still_is_not_ordered(validity):
    """``action_ignored`` on a pick (descend, grasp, lift): the weaker strength freezes the lift, the stronger one
    the grasp too, which only keeps the gripper open (a few pixels where the arm's step moves many). The two
    videos differ by under NOOP_SHARE of the clean video's one-step motion, so the harness gives the stronger one
    the weaker one's ``alike`` and their pair is left out, as two strengths that made the same frames are; a
    stronger strength that holds a moving arm still stays a pair."""
    import numpy as np

    from scenarios.perturb.interaction import action_ignored
    from worldolympiad.types import Case, Video, even_chunks

    T = 30
    frames = np.full((T, 40, 40, 3), 30, np.uint8)
    for t in range(T):
        y = 2 + min(t, 9) * 2 if t < 10 else (20 if t < 20 else 20 - (t - 19) * 2)  # descend, hold, lift
        frames[t, y:y + 8, 10:26] = 200  # the arm: 8 x 16 px, 2 px a step (32 px change)
        if 10 <= t < 20:
            frames[t, y + 8, 12 + (t - 10) // 3] = 90  # the grasp: one finger pixel creeps in
    chunks = even_chunks(T, 3)
    video, case = Video(frames=frames, fps=10.0, chunks=chunks), Case(id="p", scenario="s", fps=10.0, num_frames=T,
                                                                      resolution=(40, 40), chunks=chunks)
    lift_frozen = action_ignored(video, case, 0.34, np.random.default_rng(0), None).frames
    grasp_too = action_ignored(video, case, 0.67, np.random.default_rng(0), None).frames
    assert not np.array_equal(lift_frozen, grasp_too)
    assert validity.replay_step_share(frames, lift_frozen, grasp_too) < validity.NOOP_SHARE
    assert validity.replay_step_share(frames, frames, lift_frozen) >= 1.0  # the lift held still: a defect
    records = [{**_rec("a", "clean", 0.0, 1.0), "video": "c"},
               {**_rec("a", "action_ignored", 0.34, 0.63), "video": "x", "alike": "x"},
               {**_rec("a", "action_ignored", 0.67, 0.63), "video": "y", "alike": "x"}]
    r = validity.statistics(records)["ranking"]["reference"]["lossless"]["physics"]["score"]
    assert r["pairs"] == 2 and r["pair_accuracy"] == 1.0 and r["identical_pairs"] == 1
    plain = validity.statistics([{k: v for k, v in x.items() if k != "alike"} for x in records])
    assert plain["ranking"]["reference"]["lossless"]["physics"]["score"]["pair_accuracy"] == pytest.approx(2.5 / 3)


def test_changed_share_is_relative_to_the_defects_object(validity):
    import numpy as np

    clean = np.zeros((3, 20, 20, 3), np.uint8)
    masks = np.zeros((3, 20, 20), np.int32)
    masks[:, 5:10, 5:10] = 1  # a 25 px object
    bad = clean.copy()
    bad[1, 0, :5] = 200  # 5 px changed in one frame: a fifth of the object
    assert validity.changed_share(clean, bad, masks) == pytest.approx(0.2)
    bad[2, 10:20, 10:20] = 200  # 100 px: four objects' worth
    assert validity.changed_share(clean, bad, masks) == pytest.approx(4.0)
    assert validity.changed_share(clean, bad, None) == pytest.approx(100 / 400)
    masks[:, 12:20, 0:10] = 2  # an 80 px object: the share is of the object the defect moved
    assert validity.changed_share(clean, bad, masks, object_id=2) == pytest.approx(100 / 80)
    assert validity.changed_share(clean, bad, masks) == pytest.approx(4.0)  # no id: the smallest object


def test_a_freeze_after_the_motion_ended_is_the_clean_video_again(validity):
    """``frozen`` at low strength holds the last frames of a clip whose ball has already stopped: nothing
    changes, so the "defect" must be left out of the pairs (counted as a tie it read as a ranking error).
    A freeze while the ball still moves changes about one step's motion or more and stays a defect."""
    import numpy as np

    from scenarios.perturb.physics import frozen
    from worldolympiad.types import Case, Video

    T = 12
    frames = np.full((T, 24, 48, 3), 40, np.uint8)
    x = [2 + 3 * min(t, 7) for t in range(T)]  # moves 3 px a frame for 7 frames, then rests
    for t in range(T):
        frames[t, 8:14, x[t]:x[t] + 6] = 220
    video, case = Video(frames=frames, fps=10.0), Case(id="c", scenario="s", fps=10.0, num_frames=T, resolution=(24, 48), tracks=["longvideo"])
    late = frozen(video, case, 0.34, np.random.default_rng(0), None)
    early = frozen(video, case, 1.0, np.random.default_rng(0), None)
    assert validity.reorder_changed_share(frames, late.frames) < validity.NOOP_SHARE
    assert validity.reorder_changed_share(frames, early.frames) >= 1.0
    assert "frozen" in validity.REORDER_DEFECTS and "seam_cut" not in validity.REORDER_DEFECTS


def test_encoding_gap_is_the_largest_difference_to_the_lossless_score(validity):
    records = [
        _rec("a", "clean", 0.0, 0.90), _rec("a", "clean", 0.0, 0.86, "crf23"), _rec("a", "clean", 0.0, 0.70, "crf35"),
        _rec("a", "vanish", 0.5, 0.40), _rec("a", "vanish", 0.5, 0.45, "crf23"), _rec("a", "vanish", 0.5, 0.41, "crf35"),
        _rec("a", "vanish", 1.0, None, "crf23"),  # not scored: ignored, counted missing
    ]
    stats = validity.statistics(records)
    g = stats["encoding_gap"]["reference"]["physics"]["score"]
    assert g["max"] == pytest.approx(0.20) and g["clean_max"] == pytest.approx(0.20)
    assert g["mean"] == pytest.approx((0.20 + 0.05) / 2) and g["videos"] == 2
    assert g["per_encoding"] == pytest.approx({"crf23": 0.05, "crf35": 0.20})
    assert stats["ranking"]["reference"]["crf23"]["physics"]["score"]["missing"] == 1


def test_baseline_verdicts_per_track_mean_and_rows(validity):
    rows = {"reference": {("physics", "c1", 0): 0.9, ("physics", "c2", 0): 0.4},
            "repeat-first-frame": {("physics", "c1", 0): 0.2, ("physics", "c2", 0): 0.5},
            "random": {("physics", "c1", 0): 0.1, ("physics", "c2", 0): None}}
    v = validity.baseline_verdicts(rows, ["reference", "repeat-first-frame", "random"])["physics"]
    assert v["rows"] == 1  # c2 has no random score: only rows every model has are compared
    assert v["repeat-first-frame"]["mean_ok"] and v["random"]["cases_ok"] == 1
    v2 = validity.baseline_verdicts({k: {kk: vv for kk, vv in m.items() if kk[1] == "c2"} for k, m in rows.items()
                                     if k != "random"}, ["reference", "repeat-first-frame"])["physics"]
    assert not v2["repeat-first-frame"]["mean_ok"] and v2["repeat-first-frame"]["failing"] == ["c2@s0: 0.400 vs 0.500"]


def test_baselines_score_only_the_tracks_asked_for(validity, tmp_path, monkeypatch):
    """A new version of one track needs only its own baseline rows (session 61: physics v24 without 60 minutes
    of geometry, interaction and long video)."""
    import worldolympiad.cli.evaluate as cli
    from worldolympiad.evaluator import make_run_spec

    calls = []

    def fake_evaluate(argv):
        calls.append(argv)
        model, tracks = argv[argv.index("--model") + 1], argv[argv.index("--tracks") + 1].split(",")
        run = tmp_path / "runs" / make_run_spec(model, "smoke", tracks, [0]).dirname
        run.mkdir(parents=True, exist_ok=True)
        score = {"reference": 0.9, "repeat-first-frame": 0.1}[model]
        (run / "summary.json").write_text(json.dumps({"tracks": {t: {"mean": score} for t in tracks}}))
        (run / "results.jsonl").write_text("\n".join(json.dumps(
            {"track": t, "case_id": "c1", "seed": 0, "status": "ok", "score": score, "metrics": []}) for t in tracks))
        return 0

    monkeypatch.setattr(cli, "main", fake_evaluate)
    out = validity.run_baselines(tmp_path, {"smoke": [0]}, ["reference", "repeat-first-frame"], None, ["physics"])
    assert all(a[a.index("--tracks") + 1] == "physics" for a in calls) and len(calls) == 2
    verdicts = out["suites"]["smoke"]["tracks"]
    assert set(verdicts) == {"physics"} and verdicts["physics"]["repeat-first-frame"]["mean_ok"]


def test_a_row_the_track_cannot_decide_is_listed_with_its_reason(validity):
    """standard-mechanics-stacking-0: a stable stack barely moves, so long video's motion gate demands
    nothing and the still video scores 0.872 against the reference's 0.833; the report says why."""
    still = {"metrics": [{"name": "dynamic_degree", "details": {
        "demand": "reference_still", "reference_dynamic_degree": 0.0, "why": "the reference itself shows no motion"}}]}
    moving = {"metrics": [{"name": "dynamic_degree", "details": {"demand": "reference", "reference_dynamic_degree": 0.3}}]}
    assert validity.cannot_tell(moving) is None and validity.cannot_tell({"metrics": None}) is None
    reason = validity.cannot_tell(still)
    assert reason and "reference itself is still" in reason
    key = ("longvideo", "stack", 0)
    v = validity.baseline_verdicts({"reference": {key: 0.833}, "repeat-first-frame": {key: 0.872}},
                                   ["reference", "repeat-first-frame"], {key: reason})["longvideo"]["repeat-first-frame"]
    assert v["cases_ok"] == 0 and v["explained"] == 1 and "cannot tell apart" in v["failing"][0]


def test_quick_run_end_to_end_scores_every_encoding_and_resumes(validity, tmp_path, monkeypatch):
    """Two tiny held-out cases, one defect per track; the interaction and long-video tracks only (physics on a
    tiny case is covered by the statistics above and the no-reference suite is checked for its contents)."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    out = tmp_path / "v"
    assert validity.main(["--quick", "--out", str(out), "--tracks", "interaction,longvideo",
                          "--cases", "hq-photo-rocket"]) == 0
    record = json.loads((out / "validity.json").read_text())
    ranking = record["statistics"]["ranking"]["reference"]
    assert set(ranking) == {"lossless", "crf23", "crf35_s0.75"}
    for enc in ranking:
        assert ranking[enc]["longvideo"]["score"]["pairs"] == 6  # clean + 3 strengths of one defect
    # the crf23 file really is what users write
    from worldolympiad.video.io import probe_encoding

    info = probe_encoding(out / "videos" / "crf23" / "hq-photo-rocket.mp4")
    assert info["chroma"] == "4:2:0" and info["lossless"] is False
    assert (out / "validity.md").read_text().startswith("# Held-out validity report (quick)")
    # a rerun reuses every row: the evaluator computes nothing new
    runs_before = {p: p.stat().st_mtime for p in (out / "runs").glob("*/results.jsonl")}
    assert validity.main(["--quick", "--out", str(out), "--tracks", "interaction,longvideo",
                          "--cases", "hq-photo-rocket"]) == 0
    assert {p: p.stat().st_mtime for p in (out / "runs").glob("*/results.jsonl")} == runs_before


def test_no_reference_suite_strips_the_reference_of_physics_cases_only(validity, tmp_path):
    validity.register_heldout()
    out = tmp_path / "v"
    cases = validity.heldout_cases(True, ["hq-shape-hexagon"])
    variants = validity.prepare(out, cases, ["physics", "longvideo"], validity.QUICK_DEFECTS)
    suites = validity.write_suites(out, variants, ["physics", "longvideo"])
    assert set(suites) == {("reference", "physics"), ("reference", "longvideo"), ("no_reference", "physics"),
                           ("no_reference", "longvideo"), ("no_rules", "physics")}
    noref = json.loads(suites[("no_reference", "physics")].read_text())["cases"]
    assert len(noref) == 4  # the clean video and three teleport strengths; no long-video defect
    for rel in noref:
        doc = json.loads((suites[("no_reference", "physics")].parent / rel).read_text())
        assert "reference" not in doc and doc["tracks"] == ["physics"]
        # nothing left to render a reference from: the evaluator's reference loader finds none
        from worldolympiad.models.reference import ReferenceStore
        from worldolympiad.types import Case

        assert "generator" not in doc["metadata"] and doc["physics"]["ground_truth"] is None
        assert ReferenceStore(tmp_path / "cache").load(Case.load(suites[("no_reference", "physics")].parent / rel)) is None
    # the clean video is in both tracks' no-reference suites, each case file naming its own track
    for track in ("physics", "longvideo"):
        suite = suites[("no_reference", track)]
        docs = [json.loads((suite.parent / rel).read_text()) for rel in json.loads(suite.read_text())["cases"]]
        assert all(d["tracks"] == [track] for d in docs), track
    ref_doc = json.loads((out / "render" / "cases" / "hq-shape-hexagon.json").read_text())
    assert ref_doc["reference"].endswith("hq-shape-hexagon.mp4")
    # the long-video suite holds the clean video and its own defects only
    lv = json.loads(suites[("reference", "longvideo")].read_text())["cases"]
    assert len(lv) == 4 and all("teleport" not in c for c in lv)
    # a changed case file makes a new suite file (the evaluator would otherwise reuse rows scored on the old one)
    case_file = out / "render" / "cases" / "hq-shape-hexagon.json"
    case_file.write_text(case_file.read_text().replace('"prompt": "', '"prompt": "changed '))
    again = validity.write_suites(out, variants, ["physics", "longvideo"])
    assert again[("reference", "physics")] != suites[("reference", "physics")]
    assert again[("reference", "longvideo")] != suites[("reference", "longvideo")]


def test_no_rules_suite_keeps_the_reference_and_removes_the_declared_rules(validity, tmp_path):
    """A user with a reference video who names no rules: the physics track must find the rules itself (from a judge,
    or from the checks run on the reference). Cases that declare no rules are not repeated (they are `reference` rows)."""
    validity.register_heldout()
    out = tmp_path / "v"
    cases = validity.heldout_cases(True, ["hq-shape-hexagon"])
    assert cases[0].physics.rules  # the flat shape declares its rules
    variants = validity.prepare(out, cases, ["physics"], validity.QUICK_DEFECTS)
    suites = validity.write_suites(out, variants, ["physics"], ["reference", "no_rules"])
    assert set(suites) == {("reference", "physics"), ("no_rules", "physics")}
    norules = json.loads(suites[("no_rules", "physics")].read_text())["cases"]
    assert len(norules) == 4 and all(rel.startswith("cases_norules/") for rel in norules)
    for rel in norules:
        doc = json.loads((suites[("no_rules", "physics")].parent / rel).read_text())
        assert doc["physics"]["rules"] == [] and doc["reference"].endswith("hq-shape-hexagon.mp4")
        assert doc["physics"]["objects"]  # what the case says about its objects stays
    # a case declaring no rules has no no_rules suite
    doc = json.loads((out / "render" / "cases" / "hq-shape-hexagon.json").read_text())
    doc["physics"]["rules"] = []
    for v in variants:
        (out / "render" / "cases" / f"{v['id']}.json").write_text(json.dumps(doc))
    assert ("no_rules", "physics") not in validity.write_suites(out, variants, ["physics"], ["no_rules"])


def test_a_report_from_a_copy_without_git_says_its_commit_is_unknown(validity, monkeypatch, tmp_path):
    """Session 56's records were measured on `git archive` copies: git_state() read an empty commit and the header
    said "Commit ``" without saying why. Outside a checkout the commit is None and the header says it is unknown and
    how to record it."""
    monkeypatch.setattr(validity, "ROOT", tmp_path)  # no .git here or above (a fresh tmp dir)
    state = validity.git_state()
    assert state["commit"] is None
    assert validity._commit_line(state).startswith("Commit unknown (the tree measured is not a git checkout")
    assert validity._commit_line({"commit": "abc"}) == "Commit `abc`"
