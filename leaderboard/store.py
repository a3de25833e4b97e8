"""SQLite store of runs and their result rows, with schema migrations.

Tables (see :data:`MIGRATIONS`)::

    runs     one row per imported run (run_id = RunSpec hash), its spec, where it came
             from, whether it is verified (re-run by the maintainers) or self-reported
    results  one row per TrackResult (run_id, case_id, seed, track) with the full JSON
    metrics  one row per MetricValue, raw and normalised both kept
    models   one row per model name: family, display name

Importing is idempotent: a run whose content hash is already stored changes nothing;
a resumed run with more rows upserts them.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from leaderboard.aggregate import ROW_COLUMNS, scan_results_jsonl

DEFAULT_DB = Path("leaderboard.sqlite")

MIGRATIONS: list[str] = [
    # 1: initial schema
    """
    CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        model TEXT NOT NULL,
        suite TEXT NOT NULL,
        spec_json TEXT NOT NULL,
        source TEXT NOT NULL,
        verified INTEGER NOT NULL DEFAULT 0,
        content_hash TEXT NOT NULL,
        added_at TEXT NOT NULL
    );
    CREATE TABLE results (
        run_id TEXT NOT NULL REFERENCES runs(run_id),
        model TEXT NOT NULL,
        suite TEXT, scenario TEXT,
        case_id TEXT NOT NULL, seed INTEGER NOT NULL, track TEXT NOT NULL, track_version TEXT NOT NULL,
        status TEXT NOT NULL, score REAL,
        row_json TEXT NOT NULL,
        PRIMARY KEY (run_id, case_id, seed, track)
    );
    CREATE TABLE metrics (
        run_id TEXT NOT NULL, case_id TEXT NOT NULL, seed INTEGER NOT NULL, track TEXT NOT NULL,
        name TEXT NOT NULL, version TEXT NOT NULL, raw REAL, normalized REAL, status TEXT NOT NULL,
        PRIMARY KEY (run_id, case_id, seed, track, name)
    );
    """,
    # 2: models table and lookup indexes
    """
    CREATE TABLE models (name TEXT PRIMARY KEY, family TEXT NOT NULL, display TEXT NOT NULL);
    CREATE INDEX results_model ON results(model, track, track_version);
    """,
    # 3: where a locally imported run lives (for its videos on the model page)
    """
    ALTER TABLE runs ADD COLUMN location TEXT;
    """,
]


def model_family(spec: str) -> str:
    """``inferix:reference-world`` → ``inferix``; ``perturbed:vanish@1`` → ``perturbed``."""
    return spec.split(":", 1)[0] if ":" in spec else spec


class Store:
    """A leaderboard database (SQLite file)."""

    def __init__(self, path: str | Path = DEFAULT_DB) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(str(self.path))
        self.conn.execute("PRAGMA foreign_keys = ON")
        self.migrate()

    # --------------------------------------------------------------- schema
    @property
    def schema_version(self) -> int:
        return int(self.conn.execute("PRAGMA user_version").fetchone()[0])

    def migrate(self) -> int:
        """Apply pending migrations in order; returns the new schema version."""
        v = self.schema_version
        for i, sql in enumerate(MIGRATIONS[v:], start=v + 1):
            with self.conn:
                self.conn.executescript(sql)
                self.conn.execute(f"PRAGMA user_version = {i}")
        return self.schema_version

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --------------------------------------------------------------- import
    def add_run(self, run_dir: str | Path, *, verified: bool = True, source: str = "local") -> str:
        """Import a run directory (``run_spec.json`` + ``results.jsonl``).

        Returns ``"added"``, ``"updated"`` (more rows than before) or ``"unchanged"``.

        Raises:
            FileNotFoundError: the folder lacks ``run_spec.json`` or ``results.jsonl``.
        """
        run_dir = Path(run_dir)
        spec_path, res_path = run_dir / "run_spec.json", run_dir / "results.jsonl"
        for p in (spec_path, res_path):
            if not p.exists():
                raise FileNotFoundError(f"{p} not found: `leaderboard add` needs a run directory written by evaluate-model")
        spec = json.loads(spec_path.read_text())
        rows = scan_results_jsonl(res_path).rows  # damaged lines are skipped (the CLI names them)
        return self.add_rows(spec, rows, verified=verified, source=source, location=str(run_dir.resolve()))

    def add_rows(self, spec: dict[str, Any], rows: Iterable[dict[str, Any]], *, verified: bool, source: str,
                 location: str | None = None) -> str:
        rows = list(rows)
        run_id = str(spec.get("hash") or hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12])
        content = hashlib.sha256("\n".join(sorted(json.dumps(r, sort_keys=True) for r in rows)).encode()).hexdigest()
        cur = self.conn.execute("SELECT content_hash, verified FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if cur is not None and cur[0] == content and bool(cur[1]) == verified:
            return "unchanged"
        if cur is not None and bool(cur[1]) and not verified:
            # A self-reported upload never downgrades a verified run with the same spec.
            return "unchanged"
        model = str(spec.get("model", rows[0]["model"] if rows else "unknown"))
        with self.conn:  # one transaction: a failure leaves the store unchanged
            self.conn.execute(
                "INSERT INTO runs(run_id, model, suite, spec_json, source, verified, content_hash, added_at, location) "
                "VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(run_id) DO UPDATE SET content_hash=excluded.content_hash, "
                "verified=excluded.verified, spec_json=excluded.spec_json, source=excluded.source, "
                "location=COALESCE(excluded.location, runs.location)",
                (run_id, model, str(spec.get("suite", "")), json.dumps(spec, sort_keys=True), source, int(verified),
                 content, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), location),
            )
            self.conn.execute(
                "INSERT OR IGNORE INTO models(name, family, display) VALUES (?,?,?)", (model, model_family(model), model)
            )
            for r in rows:
                score = r.get("score")
                self.conn.execute(
                    "INSERT OR REPLACE INTO results(run_id, model, suite, scenario, case_id, seed, track, track_version,"
                    " status, score, row_json) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    (run_id, str(r["model"]), r.get("suite", ""), r.get("scenario", ""), str(r["case_id"]),
                     int(r["seed"]), str(r["track"]), str(r.get("track_version", "1")), str(r.get("status", "ok")),
                     float(score) if isinstance(score, (int, float)) else None, json.dumps(r, sort_keys=True)),
                )
                for m in r.get("metrics") or ():
                    raw, norm = m.get("raw"), m.get("normalized")
                    self.conn.execute(
                        "INSERT OR REPLACE INTO metrics(run_id, case_id, seed, track, name, version, raw, normalized,"
                        " status) VALUES (?,?,?,?,?,?,?,?,?)",
                        (run_id, str(r["case_id"]), int(r["seed"]), str(r["track"]), str(m["name"]),
                         str(m.get("version", "1")), raw if isinstance(raw, (int, float)) else None,
                         norm if isinstance(norm, (int, float)) else None, str(m.get("status", "ok"))),
                    )
        return "added" if cur is None else "updated"

    # ---------------------------------------------------------------- query
    def rows(self, *, verified_only: bool = False) -> pd.DataFrame:
        """All result rows as the DataFrame :mod:`leaderboard.aggregate` expects."""
        q = ("SELECT r.run_id AS run, r.model, r.suite, r.scenario, r.case_id, r.seed, r.track, r.track_version,"
             " r.status, r.score FROM results r JOIN runs u ON u.run_id = r.run_id")
        if verified_only:
            q += " WHERE u.verified = 1"
        df = pd.read_sql_query(q, self.conn)
        df["score"] = df["score"].astype(float)
        return df[ROW_COLUMNS]

    def metric_rows(self) -> pd.DataFrame:
        """All metric rows in the shape :func:`leaderboard.aggregate.metric_rows_from_results` gives."""
        df = pd.read_sql_query(
            "SELECT m.run_id AS run, r.model, r.scenario, m.case_id, m.seed, m.track, r.track_version, m.name AS metric,"
            " m.version, m.status, m.normalized FROM metrics m JOIN results r ON r.run_id = m.run_id AND"
            " r.case_id = m.case_id AND r.seed = m.seed AND r.track = m.track", self.conn)
        df["normalized"] = df["normalized"].astype(float)
        return df

    def runs(self) -> pd.DataFrame:
        return pd.read_sql_query(
            "SELECT run_id, model, suite, source, verified, added_at, "
            "(SELECT COUNT(*) FROM results r WHERE r.run_id = runs.run_id) AS n_rows FROM runs ORDER BY added_at",
            self.conn)

    def metrics(self, model: str | None = None) -> pd.DataFrame:
        q = ("SELECT u.model, m.* FROM metrics m JOIN runs u ON u.run_id = m.run_id")
        args: tuple[Any, ...] = ()
        if model:
            q += " WHERE u.model = ?"
            args = (model,)
        return pd.read_sql_query(q, self.conn, params=args)

    def counts(self) -> dict[str, int]:
        return {t: int(self.conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0])
                for t in ("runs", "results", "metrics", "models")}

    def export(self, path: str | Path) -> Path:
        """Export all result rows; the format follows the suffix: .csv, .json or .parquet."""
        path = Path(path)
        df = self.rows()
        if path.suffix == ".csv":
            df.to_csv(path, index=False)
        elif path.suffix == ".json":
            df.to_json(path, orient="records", indent=1)
        elif path.suffix == ".parquet":
            df.to_parquet(path, index=False)
        else:
            raise ValueError(f"unknown export format {path.suffix!r}; use .csv, .json or .parquet")
        return path
