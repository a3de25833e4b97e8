"""SQLite store: migrations, idempotent import, export (issue 8, acceptance 5)."""

import json
import sqlite3

import pandas as pd

from leaderboard.store import MIGRATIONS, Store

from .conftest import result_row, write_run  # noqa: F401  (pytest importlib mode resolves the package)


def test_fresh_store_is_migrated_to_the_latest_version(tmp_path):
    with Store(tmp_path / "lb.sqlite") as s:
        assert s.schema_version == len(MIGRATIONS)
        assert set(s.counts()) == {"runs", "results", "metrics", "models"}


def test_old_store_is_upgraded_in_place(tmp_path):
    db = tmp_path / "lb.sqlite"
    conn = sqlite3.connect(db)
    conn.executescript(MIGRATIONS[0])
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with Store(db) as s:
        assert s.schema_version == len(MIGRATIONS)
        s.conn.execute("SELECT name, family FROM models")  # table from migration 2 exists


def test_importing_the_same_run_twice_changes_nothing(tmp_path, runs_root):
    _, (a, b) = runs_root
    with Store(tmp_path / "lb.sqlite") as s:
        assert s.add_run(a) == "added"
        snapshot = (s.counts(), s.rows().sort_values(["case_id"]).to_dict("records"))
        assert s.add_run(a) == "unchanged"
        assert (s.counts(), s.rows().sort_values(["case_id"]).to_dict("records")) == snapshot
        assert s.counts()["results"] == 2 and s.counts()["metrics"] == 2


def test_a_resumed_run_with_more_rows_updates_without_duplicates(tmp_path):
    rows = [result_row("m", "c0", 0, "physics", 0.5)]
    d = write_run(tmp_path, "m", rows)
    with Store(tmp_path / "lb.sqlite") as s:
        s.add_run(d)
        rows.append(result_row("m", "c1", 0, "physics", 0.7))
        (d / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (d / "videos" / "c1__s0.mp4").write_bytes((d / "videos" / "c0__s0.mp4").read_bytes())
        assert s.add_run(d) == "updated"
        assert s.counts()["results"] == 2 and s.counts()["runs"] == 1


def test_export_round_trips_rows(tmp_path, runs_root):
    _, runs = runs_root
    with Store(tmp_path / "lb.sqlite") as s:
        for r in runs:
            s.add_run(r)
        for suffix, reader in ((".csv", pd.read_csv), (".json", pd.read_json), (".parquet", pd.read_parquet)):
            out = s.export(tmp_path / f"all{suffix}")
            df = reader(out)
            assert len(df) == 4 and set(df["model"]) == {"reference", "perturbed:vanish@1"}
