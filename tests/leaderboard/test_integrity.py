"""Leaderboard identity and trust (issue 59, item 1): uploads cannot poison, hijack or bloat
the verified rows; `leaderboard add` validates what it imports; every malformed archive gets
one line, never a traceback. Each test here fails on 85cf2c2."""

import hashlib
import html
import io
import json
import math
import struct
import zipfile

import pytest

from leaderboard.cli import main as lb_main
from leaderboard.site import VERIFIED, board_table, submit_archive
from leaderboard.store import Store

from .conftest import result_row, run_archive, write_run, zip_bytes


def verified_hash(db) -> str:
    with Store(db) as s:
        return hashlib.sha256(s.verified_dump()).hexdigest()


@pytest.fixture
def db(tmp_path):
    """A store with one verified run: `reference`, physics 1.0 on three cases."""
    run = write_run(tmp_path, "reference", [result_row("reference", f"c{i}", 0, "physics", 1.0) for i in range(3)])
    path = tmp_path / "lb.sqlite"
    with Store(path) as s:
        assert s.add_run(run) == "added"
    return path


def _reference_score(db) -> float:
    t = board_table(db, view=VERIFIED)
    return float(t.loc[t["Model"] == "reference", "Physical"].iloc[0])


def test_an_upload_named_like_a_verified_model_is_not_merged_into_it(db):
    before = verified_hash(db)
    rows = [result_row("reference", f"c{i}", 0, "physics", 0.0) for i in range(3)]
    status = submit_archive(run_archive(model="reference", rows=rows), db)
    assert status.startswith("Accepted") and "as upload u" in status
    assert verified_hash(db) == before
    assert _reference_score(db) == 1.0  # was 0.5 on 85cf2c2 (merged, and still "verified")
    with Store(db) as s:
        runs = s.runs()
    upload = runs[runs["source"] == "submission"].iloc[0]
    assert upload["model"] == f"upload:{upload['run_id']}" and upload["display"] == "reference"


def test_an_upload_carrying_another_runs_id_cannot_replace_it(db, tmp_path):
    with Store(db) as s:
        victim = s.runs().iloc[0]["run_id"]
    before = verified_hash(db)
    rows = [result_row("reference", "c0", 0, "physics", 0.0)]
    spec = {"model": "reference", "suite": "smoke", "tracks": ["physics"], "hash": victim, "schema_version": "1.0"}
    data = zip_bytes({"r/run_spec.json": json.dumps(spec).encode(), "r/results.jsonl": (json.dumps(rows[0]) + "\n").encode(),
                      "r/videos/c0__s0.mp4": run_archive.__globals__["MP4"]})
    status = submit_archive(data, db)
    assert status.startswith("Accepted (added)") and victim not in status
    assert verified_hash(db) == before
    with Store(db) as s:
        assert s.counts()["results"] == 4 and s.runs()["run_id"].nunique() == 2


def test_an_upload_cannot_replace_another_upload_with_the_same_spec(db):
    first = submit_archive(run_archive(model="team:a"), db)
    rows = [result_row("team:a", f"c{i}", 0, "physics", 0.0) for i in range(3)]
    second = submit_archive(run_archive(model="team:a", rows=rows), db)
    assert first.startswith("Accepted (added)") and second.startswith("Accepted (added)")
    assert submit_archive(run_archive(model="team:a"), db).startswith("Accepted (unchanged)")
    with Store(db) as s:
        assert (s.runs()["source"] == "submission").sum() == 2


@pytest.mark.parametrize(("row", "reason"), [
    (result_row("m", "c0", 0, "physics", 5.0), "score 5.0 must be null or a number in [0, 1]"),
    (result_row("m", "c0", 0, "physics", math.nan), "score nan must be null"),
    ({k: v for k, v in result_row("m", "c0", 0, "physics", 0.5).items() if k != "model"}, "missing field 'model'"),
    (result_row("m", "c0", 10**30, "physics", 0.5), "seed 1000000000000000000000000000000 must be an integer"),
    (result_row("m", "c0", 0, "physics", 0.5) | {"metrics": [{"raw": 1.0}]}, "needs a 'name'"),
])
def test_leaderboard_add_validates_every_row(tmp_path, capsys, row, reason):
    run = write_run(tmp_path, "m", [result_row("m", "c1", 0, "physics", 0.5), row])
    db = tmp_path / "lb.sqlite"
    assert lb_main(["--db", str(db), "add", str(run)]) == 1
    out = capsys.readouterr().out
    assert "rejected: results.jsonl line 2: " in out and reason in out and "Traceback" not in out
    with Store(db) as s:
        assert s.counts()["results"] == 0


def test_leaderboard_add_rejects_a_spec_that_is_a_list(tmp_path, capsys):
    run = write_run(tmp_path, "m", [result_row("m", "c0", 0, "physics", 0.5)])
    (run / "run_spec.json").write_text("[1, 2]")
    assert lb_main(["--db", str(tmp_path / "lb.sqlite"), "add", str(run)]) == 1
    assert "run_spec.json must be a JSON object, got a list" in capsys.readouterr().out


def test_bloat_is_refused_before_the_store_grows(db):
    before = verified_hash(db)
    size = db.stat().st_size
    wide = [dict(result_row("team:b", f"c{i}", 0, "physics", 0.5),
                 metrics=[{"name": f"m{j}", "raw": 0.5, "normalized": 0.5} for j in range(300)]) for i in range(50)]
    assert "300 metrics in one row; the limit is 64" in submit_archive(run_archive("team:b", wide), db)
    many = [dict(result_row("team:b", f"c{i}", 0, "physics", 0.5),
                 metrics=[{"name": f"m{j}", "raw": 0.5, "normalized": 0.5} for j in range(60)]) for i in range(400)]
    assert "24000 metric values in all; the limit is 20000" in submit_archive(run_archive("team:b", many), db)
    assert verified_hash(db) == before and db.stat().st_size == size
    with Store(db) as s:
        assert s.counts()["runs"] == 1


def test_the_store_refuses_uploads_past_its_total_metric_budget(db, monkeypatch):
    import leaderboard.store as store_mod

    limits = store_mod.submission_limits() | {"max_store_upload_metric_rows": 5}
    monkeypatch.setattr(store_mod, "submission_limits", lambda: limits)
    assert submit_archive(run_archive("team:c"), db).startswith("Accepted")  # 3 metric values
    status = submit_archive(run_archive("team:d"), db)
    assert status.startswith("Rejected: the leaderboard holds 3 uploaded metric values and takes at most 5")


def _forge(data: bytes, member: str, how: str) -> bytes:
    """Damage one member: its local header signature, or its compression method or CRC in the
    central directory (what zipfile trusts)."""
    info = zipfile.ZipFile(io.BytesIO(data)).getinfo(member)
    b = bytearray(data)
    if how == "signature":
        b[info.header_offset:info.header_offset + 4] = b"XXXX"
        return bytes(b)
    central = data.index(b"PK\x01\x02")
    while data[central + 46:central + 46 + len(member)] != member.encode():
        central = data.index(b"PK\x01\x02", central + 4)
    if how == "method":
        struct.pack_into("<H", b, central + 10, 99)
    elif how == "crc":
        struct.pack_into("<I", b, central + 16, info.CRC ^ 0xFFFF)
    return bytes(b)


@pytest.mark.parametrize("how", ["signature", "method", "crc"])
def test_forged_zip_headers_get_one_line(db, how):
    before = verified_hash(db)
    data = _forge(run_archive(), "run/results.jsonl", how)
    status = submit_archive(data, db)
    assert status.startswith("Rejected:") and "\n" not in status and "Traceback" not in status
    assert "cannot be read" in status or "not a zip" in status
    assert verified_hash(db) == before


@pytest.mark.parametrize(("rows", "reason"), [
    ([result_row("team:m", "c0", 10**30, "physics", 0.5)], "must be an integer in [0, 4294967295]"),
    ([result_row("team:m", "c0", 0, "physics", 0.5) | {"metrics": [{"raw": 0.5}]}], "needs a 'name'"),
    ([result_row("team:m", "c0", 0, "physics", 0.5) | {"details": json.loads("[" * 200 + "]" * 200)}],
     "nested deeper than 32 levels"),
    ([result_row("team:m", "c0", 0, ["physics"], 0.5)], "unknown track"),
])
def test_hostile_rows_get_one_line_and_change_nothing(db, rows, reason):
    before = verified_hash(db)
    status = html.unescape(submit_archive(run_archive("team:m", rows, videos=False), db))
    assert status.startswith("Rejected:") and reason in status
    assert verified_hash(db) == before


def test_json_nested_past_the_parsers_recursion_limit_gets_one_line(db):
    deep = ("[" * 100_000 + "]" * 100_000).encode()
    spec = {"model": "team:m", "suite": "smoke", "tracks": ["physics"]}
    for members in ({"run_spec.json": deep, "results.jsonl": b"{}\n"},
                    {"run_spec.json": json.dumps(spec).encode(), "results.jsonl": deep + b"\n"}):
        status = submit_archive(zip_bytes(members), db)
        assert status.startswith("Rejected:") and "nested too deeply" in status


def test_an_unexpected_error_is_one_line_not_a_traceback(db, monkeypatch):
    import leaderboard.site as site

    monkeypatch.setattr(site, "validate_archive", lambda data: 1 / 0)
    status = submit_archive(run_archive(), db)
    assert status.startswith("Rejected: the archive could not be processed (ZeroDivisionError)")


def test_the_site_does_not_show_errors_to_users(tmp_path, monkeypatch):
    import leaderboard.site as site

    seen = {}

    class App:
        def launch(self, **kw):
            seen.update(kw)

    monkeypatch.setattr(site, "build_app", lambda db: App())
    site.serve(tmp_path / "lb.sqlite", block=False)
    assert seen["show_error"] is False and seen["max_file_size"] == 50 * 2**20


def test_the_store_refuses_uploads_past_its_kept_archive_budget(db, monkeypatch):
    import leaderboard.store as store_mod

    first = run_archive("team:c")
    limits = store_mod.submission_limits() | {"max_store_upload_bytes": len(first) + 10}
    monkeypatch.setattr(store_mod, "submission_limits", lambda: limits)
    assert submit_archive(first, db).startswith("Accepted")
    assert "kept upload archives take" in submit_archive(run_archive("team:d"), db)


def test_leaderboard_add_marks_verified_only_a_run_with_its_videos(tmp_path, capsys):
    run = write_run(tmp_path, "hand-made", [result_row("hand-made", "c0", 0, "physics", 0.9)], videos=False)
    db = tmp_path / "lb.sqlite"
    assert lb_main(["--db", str(db), "add", str(run)]) == 1
    assert "verified means scored here from videos" in capsys.readouterr().out
    assert lb_main(["--db", str(db), "add", "--self-reported", str(run)]) == 0
    assert board_table(db, view=VERIFIED).empty  # 85cf2c2 listed it as verified


def test_the_same_rows_with_other_videos_are_another_upload(db):
    first = submit_archive(run_archive("team:v"), db)
    other = run_archive("team:v", videos=False, **{f"run/videos/c{i}__s0.mp4": b"\0\0\0\x18ftypother" for i in range(3)})
    second = submit_archive(other, db)
    assert first.startswith("Accepted (added)") and second.startswith("Accepted (added)")
    assert first.split("as upload ")[1][:12] != second.split("as upload ")[1][:12]


def test_an_upload_is_shown_in_its_submitters_namespace(db):
    data = run_archive("my-model")
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            body = src.read(info)
            if info.filename.endswith("run_spec.json"):
                body = json.dumps(json.loads(body) | {"submitter": "lab-x"}).encode()
            dst.writestr(info.filename, body)
    status = submit_archive(buf.getvalue(), db)
    upload = status.split("as upload ")[1][:12]
    mine = board_table(db, view="self-reported")
    assert list(mine["Model"]) == [f"lab-x/my-model [upload {upload}]"]
