"""SQLite store of runs and their result rows, with schema migrations.

Tables (see :data:`MIGRATIONS`)::

    runs     one row per imported run, its spec, where it came from, whether it is
             verified (scored here from videos) or self-reported, its display name
    results  one row per TrackResult (run_id, case_id, seed, track) with the full JSON
    metrics  one row per MetricValue, raw and normalised both kept
    models   one row per model name: family, display name

Importing is idempotent: a run whose content hash is already stored changes nothing;
a resumed run with more rows upserts them.

Identity and trust (issue 59): the store assigns run ids; nothing an upload says is used
as one. A local run (``leaderboard add``, scored here) keeps the evaluator's RunSpec hash
(12 hex digits) as its id and its model name as its key. An upload gets ``u`` + a hash of
its own content and lives under the key ``upload:<run id>``, shown by the model name it
declares: it can never be merged into, or replace, another run or model. Every run is
validated with :func:`leaderboard.submission.run_problems` before it is written.
"""

from __future__ import annotations

import glob
import hashlib
import json
import re
import sqlite3
import time
import zipfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

import pandas as pd

from leaderboard.aggregate import ROW_COLUMNS, scan_results_jsonl
from leaderboard.submission import (
    RESERVED_PREFIX,
    Submission,
    SubmissionError,
    local_run_limits,
    parse_spec,
    run_problems,
    submission_limits,
)

#: the file ``evaluate-model --shard`` writes into each shard's run directory
#: (``worldolympiad.shards.SHARD_FILE``; the leaderboard imports nothing of the evaluator)
SHARD_FILE = "shard.json"

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
    # 4: a display name per run (``add --name``, an upload's declared model) and where an
    #    uploaded archive is kept for re-scoring; ``verified_by``: the local run that re-scored it
    """
    ALTER TABLE runs ADD COLUMN display TEXT;
    ALTER TABLE runs ADD COLUMN archive TEXT;
    ALTER TABLE runs ADD COLUMN verified_by TEXT;
    """,
]

_LOCAL_ID = re.compile(r"\A[0-9a-f]{12}\Z")


def _content_hash(rows: Iterable[dict[str, Any]]) -> str:
    return hashlib.sha256("\n".join(sorted(json.dumps(r, sort_keys=True) for r in rows)).encode()).hexdigest()


def _missing_videos(run_dir: Path, rows: list[dict[str, Any]]) -> list[str]:
    """"Verified" means scored here from videos: each scored (case, seed) has its video in RUN/videos."""
    keys = sorted({(str(r["case_id"]), int(r["seed"])) for r in rows if r.get("status", "ok") == "ok"})
    missing = [f"{c}__s{s}" for c, s in keys if not any((run_dir / "videos").glob(f"{glob.escape(c)}__s{s}.*"))]
    if not missing:
        return []
    return [f"{len(missing)} scored case(s) have no video in {run_dir / 'videos'} (e.g. {missing[0]}.mp4); "
            "verified means scored here from videos — re-run evaluate-model, or add it with --self-reported"]


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
    def add_run(self, run_dir: str | Path, *, verified: bool = True, source: str = "local",
                name: str | None = None) -> str:
        """Import a run directory (``run_spec.json`` + ``results.jsonl``) scored here.

        Every row is validated as an upload's would be (sizes aside); damaged lines of
        ``results.jsonl`` are skipped. ``name`` sets the model's display name.

        Returns ``"added"``, ``"updated"`` (more rows than before) or ``"unchanged"``.

        Raises:
            FileNotFoundError: the folder lacks ``run_spec.json`` or ``results.jsonl``.
            SubmissionError: the content is invalid (every problem listed), or the folder is one shard
                of a run (``shard.json``: merge the shards first).
        """
        run_dir = Path(run_dir)
        spec_path, res_path = run_dir / "run_spec.json", run_dir / "results.jsonl"
        for p in (spec_path, res_path):
            if not p.exists():
                raise FileNotFoundError(f"{p} not found: `leaderboard add` needs a run directory written by evaluate-model")
        if (run_dir / SHARD_FILE).exists():
            raise SubmissionError([f"{run_dir.name} is one shard of a run (evaluate-model --shard): a shard alone "
                                   "is part of the run's rows; join the shards with `worldolympiad merge "
                                   "SHARD_DIR...` and add the merged directory"])
        spec = parse_spec(spec_path.read_bytes())
        rows = scan_results_jsonl(res_path).rows  # damaged lines are skipped (the CLI names them)
        limits = local_run_limits()
        problems = run_problems(spec, rows, limits=limits)
        if name is not None and not problems:
            problems = run_problems(spec | {"model": name}, [], limits=limits)
        if verified and not problems:
            problems = _missing_videos(run_dir, rows)
        if problems:
            raise SubmissionError(problems)
        run_id = self._local_run_id(spec)
        return self._write_run(run_id, str(spec["model"]), spec, rows, verified=verified, source=source,
                               location=str(run_dir.resolve()), display=name)

    def _local_run_id(self, spec: dict[str, Any]) -> str:
        """The evaluator's RunSpec hash when it is one, else a hash of the spec; never an upload's id."""
        h = spec.get("hash")
        if isinstance(h, str) and _LOCAL_ID.match(h):
            return h
        return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]

    def add_submission(self, sub: Submission, archive: bytes | None = None) -> tuple[str, str]:
        """Store a validated upload as self-reported under its own key; returns (status, run id).

        The run id is assigned here from the upload's content (spec, rows, video bytes), so
        re-uploading the same run changes nothing and a different one is a new run: an upload
        can never update another run. The archive is kept next to the store for re-scoring.

        Raises:
            SubmissionError: the store's budget for uploaded metric values is spent.
        """
        identity = json.dumps([sub.spec, _content_hash(sub.rows), sorted(sub.videos.values())], sort_keys=True)
        run_id = "u" + hashlib.sha256(identity.encode()).hexdigest()[:11]
        self._check_upload_budget(run_id, sum(len(r.get("metrics") or ()) for r in sub.rows), len(archive or b""))
        stored = self.uploads_dir / f"{run_id}.zip" if archive is not None else None
        # Shown as "<submitter>/<model> [upload <id>]": the namespace is the upload's, never a stored model's.
        display = "/".join(str(sub.spec[k]) for k in ("submitter", "model") if sub.spec.get(k))
        status = self._write_run(run_id, RESERVED_PREFIX + run_id, sub.spec, sub.rows, verified=False,
                                 source="submission", display=display, archive=str(stored) if stored else None)
        if stored is not None and archive is not None and not stored.exists():
            stored.parent.mkdir(parents=True, exist_ok=True)
            stored.write_bytes(archive)
        return status, run_id

    def _check_upload_budget(self, run_id: str, n_metrics: int, n_bytes: int) -> None:
        """Uploads together may hold so many metric values and archive bytes; then they are refused."""
        limits = submission_limits()
        used = int(self.conn.execute("SELECT COUNT(*) FROM metrics m JOIN runs u ON u.run_id = m.run_id "
                                     "WHERE u.source = 'submission' AND u.run_id != ?", (run_id,)).fetchone()[0])
        if used + n_metrics > int(limits["max_store_upload_metric_rows"]):
            raise SubmissionError([f"the leaderboard holds {used} uploaded metric values and takes at most "
                                   f"{limits['max_store_upload_metric_rows']}; uploads are closed until the "
                                   "maintainers make room"])
        kept = sum(p.stat().st_size for p in self.uploads_dir.glob("*.zip") if p.stem != run_id)
        if kept + n_bytes > int(limits["max_store_upload_bytes"]):
            raise SubmissionError([f"kept upload archives take {kept} bytes and at most "
                                   f"{limits['max_store_upload_bytes']} are allowed; uploads are closed until the "
                                   "maintainers make room"])

    @property
    def uploads_dir(self) -> Path:
        """Where uploaded archives are kept (beside the database file)."""
        return self.path.parent / f"{self.path.stem}.uploads"

    def _write_run(self, run_id: str, model: str, spec: dict[str, Any], rows: list[dict[str, Any]], *,
                   verified: bool, source: str, location: str | None = None, display: str | None = None,
                   archive: str | None = None) -> str:
        """Insert or update one validated run under ``run_id`` and key ``model`` (one transaction)."""
        content = _content_hash(rows)
        cur = self.conn.execute("SELECT content_hash, verified, model, display FROM runs WHERE run_id = ?",
                                (run_id,)).fetchone()
        if cur is not None and cur[2] != model:
            raise SubmissionError([f"run id {run_id} already belongs to model {cur[2]!r}, not {model!r}; "
                                   "the run_spec.json was copied from another run — re-run evaluate-model"])
        if cur is not None and cur[0] == content and bool(cur[1]) == verified and (display is None or display == cur[3]):
            return "unchanged"
        if cur is not None and bool(cur[1]) and not verified:
            # A self-reported import never downgrades a verified run with the same spec.
            return "unchanged"
        with self.conn:  # one transaction: a failure leaves the store unchanged
            self.conn.execute(
                "INSERT INTO runs(run_id, model, suite, spec_json, source, verified, content_hash, added_at, location,"
                " display, archive) VALUES (?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(run_id) DO UPDATE SET "
                "content_hash=excluded.content_hash, verified=excluded.verified, spec_json=excluded.spec_json, "
                "source=excluded.source, location=COALESCE(excluded.location, runs.location), "
                "display=COALESCE(excluded.display, runs.display), archive=COALESCE(excluded.archive, runs.archive)",
                (run_id, model, str(spec.get("suite", "")), json.dumps(spec, sort_keys=True), source, int(verified),
                 content, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), location, display, archive),
            )
            self.conn.execute(
                "INSERT OR IGNORE INTO models(name, family, display) VALUES (?,?,?)", (model, model_family(model), model)
            )
            for r in rows:
                self._write_row(run_id, model, r)
        return "added" if cur is None else "updated"

    def _write_row(self, run_id: str, model: str, r: dict[str, Any]) -> None:
        score = r.get("score")
        key = (run_id, str(r["case_id"]), int(r["seed"]), str(r["track"]))
        self.conn.execute(
            "INSERT OR REPLACE INTO results(run_id, model, suite, scenario, case_id, seed, track, track_version,"
            " status, score, row_json) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (run_id, model, str(r.get("suite", "")), str(r.get("scenario", "")), *key[1:],
             str(r.get("track_version", "1")), str(r.get("status", "ok")),
             float(score) if isinstance(score, (int, float)) else None, json.dumps(r, sort_keys=True)),
        )
        for m in r.get("metrics") or ():
            raw, norm = m.get("raw"), m.get("normalized")
            self.conn.execute(
                "INSERT OR REPLACE INTO metrics(run_id, case_id, seed, track, name, version, raw, normalized,"
                " status) VALUES (?,?,?,?,?,?,?,?,?)",
                (*key, str(m["name"]), str(m.get("version", "1")), raw if isinstance(raw, (int, float)) else None,
                 norm if isinstance(norm, (int, float)) else None, str(m.get("status", "ok"))),
            )

    # ------------------------------------------------------------ re-scoring
    def extract_upload_videos(self, upload_id: str, out: str | Path) -> list[Path]:
        """Write an upload's videos (``<case>__s<seed>.mp4`` + chunk timestamps) flat into ``out``.

        ``out`` is then a ``videos:`` folder: ``evaluate-model --model videos:OUT`` re-scores them here.
        """
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        written = []
        for name, data in self._upload_videos(upload_id).items():
            (out / name).write_bytes(data)
            written.append(out / name)
        return written

    def _upload_videos(self, upload_id: str) -> dict[str, bytes]:
        """The upload's files under ``videos/`` by base name (the archive was validated on upload)."""
        row = self.conn.execute("SELECT archive FROM runs WHERE run_id = ? AND source = 'submission'",
                                (upload_id,)).fetchone()
        if row is None or not row[0] or not Path(row[0]).is_file():
            raise SubmissionError([f"no kept archive for upload {upload_id!r}; `leaderboard build --self-reported` "
                                   "lists the upload ids (u + 11 hex digits)"])
        with zipfile.ZipFile(row[0]) as zf:
            return {PurePosixPath(i.filename).name: zf.read(i) for i in zf.infolist()
                    if PurePosixPath(i.filename).parent.name == "videos" and not i.is_dir()}

    def verify_upload(self, upload_id: str, run_dir: str | Path, name: str | None = None) -> str:
        """Import the local re-scoring of an upload's videos as verified, under the upload's name.

        ``run_dir`` must be an ``evaluate-model --model videos:DIR`` run on the upload's suite
        whose ``DIR`` holds exactly the uploaded videos (same bytes). The verified numbers
        are the re-scored ones, shown as ``<name> [upload <id>]``; the uploaded numbers stay
        self-reported and leave that list.

        Raises:
            SubmissionError: the run does not re-score this upload (one line saying why).
        """
        run_dir = Path(run_dir)
        spec = parse_spec((run_dir / "run_spec.json").read_bytes()) if (run_dir / "run_spec.json").exists() else {}
        up = self.conn.execute("SELECT suite, display, verified_by FROM runs WHERE run_id = ? AND source = "
                               "'submission'", (upload_id,)).fetchone()
        if up is None:
            raise SubmissionError([f"no upload {upload_id!r} in {self.path}"])
        model = str(spec.get("model", ""))
        if not model.startswith("videos:"):
            raise SubmissionError([f"{run_dir} scored {model or '?'!r}, not the upload's videos; run "
                                   f"`leaderboard rescore {upload_id} --out DIR` then "
                                   "`evaluate-model --model videos:DIR`"])
        if spec.get("suite") != up[0]:
            raise SubmissionError([f"{run_dir} ran suite {spec.get('suite')!r}; the upload is on {up[0]!r}"])
        folder = Path(model[len("videos:"):].split("#", 1)[0])
        for fname, data in self._upload_videos(upload_id).items():
            local = folder / fname
            if not local.is_file() or hashlib.sha256(local.read_bytes()).digest() != hashlib.sha256(data).digest():
                raise SubmissionError([f"{local} is not the uploaded {fname}; re-extract with `leaderboard rescore "
                                       f"{upload_id} --out {folder}` and re-run evaluate-model"])
        status = self.add_run(run_dir, name=name or str(up[1]))
        run_id = self._local_run_id(spec)
        with self.conn:  # the upload id stays in the name: a verified upload never passes for a house model
            self.conn.execute("UPDATE runs SET display = ? WHERE run_id = ?",
                              (f"{name or up[1]} [upload {upload_id}]", run_id))
            self.conn.execute("UPDATE runs SET verified_by = ? WHERE run_id = ?", (run_id, upload_id))
        return status

    def verified_dump(self) -> bytes:
        """Every verified run, result and metric row, canonically ordered: hash it to prove nothing moved."""
        queries = (
            "SELECT * FROM runs WHERE verified = 1 ORDER BY run_id",
            "SELECT r.* FROM results r JOIN runs u ON u.run_id = r.run_id WHERE u.verified = 1 "
            "ORDER BY r.run_id, r.case_id, r.seed, r.track",
            "SELECT m.* FROM metrics m JOIN runs u ON u.run_id = m.run_id WHERE u.verified = 1 "
            "ORDER BY m.run_id, m.case_id, m.seed, m.track, m.name",
        )
        out: list[str] = []
        for q in queries:
            out.extend(json.dumps(list(row)) for row in self.conn.execute(q))
        return "\n".join(out).encode()

    # ---------------------------------------------------------------- query
    def rows(self, *, verified_only: bool = False, verified: bool | None = None) -> pd.DataFrame:
        """All result rows as the DataFrame :mod:`leaderboard.aggregate` expects.

        ``model`` is the run's key (an upload's is ``upload:<run id>``) and ``suite`` the
        run's suite. ``verified`` keeps only verified (True) or self-reported (False) runs.
        """
        q = ("SELECT r.run_id AS run, u.model, COALESCE(NULLIF(u.suite, ''), r.suite) AS suite, r.scenario,"
             " r.case_id, r.seed, r.track, r.track_version, r.status, r.score FROM results r"
             " JOIN runs u ON u.run_id = r.run_id")
        if verified_only:
            verified = True
        if verified is not None:  # an upload re-scored here is listed by its verified run only
            q += f" WHERE u.verified = {int(verified)}" + ("" if verified else " AND u.verified_by IS NULL")
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
            "SELECT run_id, model, suite, source, verified, added_at, display, verified_by, "
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
