"""Hostile and malformed submissions are rejected with a clear message and leave the store
unchanged (issue 8, acceptance 4)."""

import json

import pytest

from leaderboard.store import Store
from leaderboard.submission import SubmissionError, validate_archive

from .conftest import result_row, run_archive, zip_bytes


def test_a_valid_archive_is_accepted():
    sub = validate_archive(run_archive())
    assert sub.spec["model"] == "team:my-model" and len(sub.rows) == 3


@pytest.mark.parametrize(
    "name",
    ["../../etc/passwd.json", "/abs/results.json", "run/../../x.json", "C:/windows/x.json"],
)
def test_zip_slip_paths_are_rejected(name):
    data = run_archive(**{name: b"{}"})
    with pytest.raises(SubmissionError, match="escapes the archive"):
        validate_archive(data)


def test_a_zip_bomb_is_rejected_before_extraction():
    bomb = b"0" * (30 * 2**20)  # 30 MiB of zeros compresses ~1000x
    with pytest.raises(SubmissionError, match="compression ratio"):
        validate_archive(run_archive(**{"run/notes.txt": bomb}))


def test_ten_thousand_rows_are_rejected():
    rows = [result_row("team:m", f"c{i}", 0, "physics", 0.5) for i in range(10_000)]
    with pytest.raises(SubmissionError, match="10000 rows"):
        validate_archive(run_archive(model="team:m", rows=rows, videos=False))


def test_markup_in_a_model_name_is_rejected():
    evil = '<script>alert("x")</script>'
    with pytest.raises(SubmissionError, match="no markup"):
        validate_archive(run_archive(model=evil, rows=[result_row(evil, "c0", 0, "physics", 0.5)]))


def test_wrong_schema_version_is_rejected():
    spec = {"model": "team:m", "suite": "smoke", "tracks": ["physics"], "schema_version": "7.0"}
    data = zip_bytes({"run_spec.json": json.dumps(spec).encode(),
                      "results.jsonl": (json.dumps(result_row("team:m", "c0", 0, "physics", 0.5)) + "\n").encode()})
    with pytest.raises(SubmissionError, match="schema_version '7.0' is not compatible"):
        validate_archive(data)


@pytest.mark.parametrize("name", ["run/model.pkl", "run/weights.pt", "run/run.sh", "run/x.py", "run/a.npy"])
def test_pickled_or_executable_files_are_rejected(name):
    with pytest.raises(SubmissionError, match="not accepted"):
        validate_archive(run_archive(**{name: b"\x80\x04K\x01."}))


def test_executable_bit_is_rejected():
    spec = {"model": "team:m", "suite": "smoke", "tracks": ["physics"]}
    data = zip_bytes({"run_spec.json": json.dumps(spec).encode(), "results.jsonl": b"",
                      "notes.txt": b"#!/bin/sh\n"}, mode_for={"notes.txt": 0o100755})
    with pytest.raises(SubmissionError, match="executable"):
        validate_archive(data)


def test_scores_out_of_range_and_unknown_tracks_are_named():
    rows = [result_row("team:m", "c0", 0, "physics", 1.5), result_row("team:m", "c1", 0, "teleportation", 0.5)]
    with pytest.raises(SubmissionError) as e:
        validate_archive(run_archive(model="team:m", rows=rows))
    msg = str(e.value)
    assert "line 1: score 1.5" in msg and "line 2: unknown track 'teleportation'" in msg


def test_not_a_zip_is_rejected():
    with pytest.raises(SubmissionError, match="not a zip"):
        validate_archive(b"PK\x03\x04 this is not really a zip")


def test_rejected_submission_leaves_store_unchanged(tmp_path, runs_root):
    from leaderboard.site import submit_archive

    _, (a, _) = runs_root
    db = tmp_path / "lb.sqlite"
    with Store(db) as s:
        s.add_run(a)
        before = s.counts()
    for bad in (run_archive(**{"../x.json": b"{}"}), b"garbage"):
        status = submit_archive(bad, db)
        assert status.startswith("Rejected")
    with Store(db) as s:
        assert s.counts() == before
    ok = submit_archive(run_archive(), db)
    assert ok.startswith("Accepted") and "self-reported" in ok
    with Store(db) as s:
        runs = s.runs()
        assert list(runs.loc[runs["display"] == "team:my-model", "verified"]) == [0]
