"""Aggregation: pure functions over result rows (pandas).

The order of averaging is fixed and documented:

1. **Seeds first.** For each (model, track, version, case) the ``ok`` rows' scores are
   averaged over seeds (``score``) with their spread (``seed_std``).
2. **Then cases.** A track's score is the mean over cases of the seed-averaged scores, with
   a percentile-bootstrap confidence interval over cases and coverage (how many of the
   model's cases produced a score, how many were not applicable or failed).
3. **Then tracks.** ``All`` is the weighted mean (weights from ``schema.yaml``) of the track
   scores the model *has*; a missing track is dropped and re-weighted, never a zero. The
   number of tracks behind it is reported.

Step 3 is :func:`worldolympiad.overall.overall_score`, the one definition of the overall that
``summary.json``, the terminal table and ``report.html`` show too.

Versions are never mixed: rows are compared only within one ``track_version``. By
default each track is shown at the newest version any model has; models scored with an
older version show no number for that track (and are listed as stale).

Rows with status ``failed`` have no score; they are counted in coverage, not averaged.
Tracks that want failure to cost points give a documented floor score instead.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from leaderboard.schema import Schema, load_schema
from worldolympiad.overall import overall_score, version_key

logger = logging.getLogger(__name__)

ROW_COLUMNS = ["run", "model", "suite", "scenario", "case_id", "seed", "track", "track_version", "status", "score"]


def rows_from_results(results: Iterable[dict[str, Any]], run: str = "") -> pd.DataFrame:
    """TrackResult dicts → a DataFrame with :data:`ROW_COLUMNS` (one row per result)."""
    recs = []
    for r in results:
        score = r.get("score")
        recs.append({
            "run": run,
            "model": str(r["model"]),
            "suite": str(r.get("suite", "")),
            "scenario": str(r.get("scenario", "")),
            "case_id": str(r["case_id"]),
            "seed": int(r["seed"]),
            "track": str(r["track"]),
            "track_version": str(r.get("track_version", "1")),
            "status": str(r.get("status", "ok")),
            "score": float(score) if isinstance(score, (int, float)) else np.nan,
        })
    return pd.DataFrame.from_records(recs, columns=ROW_COLUMNS)


METRIC_COLUMNS = ["run", "model", "scenario", "case_id", "seed", "track", "track_version", "metric", "version",
                  "status", "normalized"]


def metric_rows_from_results(results: Iterable[dict[str, Any]], run: str = "") -> pd.DataFrame:
    """One row per MetricValue (normalised value kept; raw stays in the store)."""
    recs = []
    for r in results:
        for m in r.get("metrics") or ():
            n = m.get("normalized")
            recs.append({"run": run, "model": str(r["model"]), "scenario": str(r.get("scenario", "")),
                         "case_id": str(r["case_id"]), "seed": int(r["seed"]), "track": str(r["track"]),
                         "track_version": str(r.get("track_version", "1")), "metric": str(m["name"]),
                         "version": str(m.get("version", "1")), "status": str(m.get("status", "ok")),
                         "normalized": float(n) if isinstance(n, (int, float)) else np.nan})
    return pd.DataFrame.from_records(recs, columns=METRIC_COLUMNS)


def metric_column_scores(metrics: pd.DataFrame, track: str, metric: str) -> pd.DataFrame:
    """Per model: mean over cases of the seed-averaged normalised value of one metric (newest version)."""
    m = metrics[(metrics["track"] == track) & (metrics["metric"] == metric) & (metrics["status"] == "ok")]
    m = m.dropna(subset=["normalized"])
    if m.empty:
        return pd.DataFrame(columns=["model", "score", "n_cases"])
    newest = max(m["version"].unique(), key=_version_key)
    m = m[m["version"] == newest]
    per_case = m.groupby(["model", "case_id"])["normalized"].mean().reset_index()
    g = per_case.groupby("model")["normalized"]
    return pd.DataFrame({"score": g.mean(), "n_cases": g.count()}).reset_index()


@dataclass(frozen=True)
class ResultsFile:
    """The rows of a ``results.jsonl`` and the 1-based numbers of the lines that were skipped."""

    rows: list[dict[str, Any]]
    damaged: list[int]


def scan_results_jsonl(path: str | Path) -> ResultsFile:
    """Read ``results.jsonl`` line by line, setting damaged lines aside instead of failing.

    A line is damaged when it is not UTF-8, not JSON, or not a JSON object (a disk error, a
    killed writer, a hand edit). Every reader (``leaderboard add``, ``report``) must still
    work on the rest, so such lines are returned by number, never raised. A trailing partial
    line from a killed run is not counted: the evaluator rewrites it on resume.
    """
    raw = Path(path).read_bytes()
    lines = raw.split(b"\n")
    rows: list[dict[str, Any]] = []
    damaged: list[int] = []
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            r = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            r = None
        if isinstance(r, dict):
            rows.append(r)
        elif not (i == len(lines) and not raw.endswith(b"\n")):
            damaged.append(i)
    return ResultsFile(rows, damaged)


def read_results_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a ``results.jsonl``; damaged lines are skipped with a logged warning (see :func:`scan_results_jsonl`)."""
    scan = scan_results_jsonl(path)
    if scan.damaged:
        logger.warning("%s: skipped %s", path, damaged_note(scan.damaged))
    return scan.rows


def damaged_note(damaged: Sequence[int]) -> str:
    """``"2 damaged lines (3, 9) — not UTF-8 / not a JSON object"``: one line for terminals and pages."""
    shown = ", ".join(map(str, damaged[:10])) + (", ..." if len(damaged) > 10 else "")
    return (f"{len(damaged)} damaged line{'s' if len(damaged) != 1 else ''} ({shown}) — not UTF-8 or not a JSON "
            "object; the other rows are used")


def load_run(run_dir: str | Path) -> pd.DataFrame:
    run_dir = Path(run_dir)
    return rows_from_results(read_results_jsonl(run_dir / "results.jsonl"), run=run_dir.name)


_version_key = version_key


def newest_versions(rows: pd.DataFrame) -> dict[str, str]:
    """The newest ``track_version`` of each track present in ``rows``."""
    out: dict[str, str] = {}
    for track, g in rows.groupby("track"):
        out[str(track)] = max(g["track_version"].astype(str).unique(), key=_version_key)
    return out


def select_versions(rows: pd.DataFrame, versions: dict[str, str] | None = None) -> pd.DataFrame:
    """Keep only rows at the given version per track (default: the newest)."""
    versions = versions or newest_versions(rows)
    keep = rows.apply(lambda r: versions.get(r["track"]) == r["track_version"], axis=1) if len(rows) else []
    return rows[keep] if len(rows) else rows


def case_scores(rows: pd.DataFrame) -> pd.DataFrame:
    """Step 1: average each case's ``ok`` scores over seeds.

    Returns one row per (model, track, track_version, scenario, case_id) with ``score``
    (seed mean, NaN if no seed produced a score), ``seed_std``, ``n_seeds`` and the status
    counts of that case.
    """
    if rows.empty:
        return pd.DataFrame(columns=["model", "track", "track_version", "scenario", "case_id", "score", "seed_std",
                                     "n_seeds", "n_ok", "n_na", "n_failed"])
    keys = ["model", "track", "track_version", "scenario", "case_id"]
    ok = rows[(rows["status"] == "ok") & rows["score"].notna()]

    def stats(g: pd.DataFrame) -> pd.Series:
        s = g.loc[g.index.intersection(ok.index), "score"]
        return pd.Series({
            "score": float(s.mean()) if len(s) else np.nan,
            "seed_std": float(s.std(ddof=0)) if len(s) else np.nan,
            "n_seeds": int(len(s)),
            "n_ok": int((g["status"] == "ok").sum()),
            "n_na": int((g["status"] == "not_applicable").sum()),
            "n_failed": int((g["status"] == "failed").sum()),
        })

    return rows.groupby(keys, sort=True).apply(stats, include_groups=False).reset_index()


def bootstrap_ci(values: Sequence[float], resamples: int = 1000, confidence: float = 0.95,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean over ``values`` (NaN-free). One value → (v, v)."""
    x = np.asarray(values, dtype=np.float64)
    if len(x) == 0:
        return (np.nan, np.nan)
    if len(x) == 1:
        return (float(x[0]), float(x[0]))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(x), size=(resamples, len(x)))
    means = x[idx].mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return (float(lo), float(hi))


def _seed_spread(rows: pd.DataFrame) -> float:
    """Std over seeds of the per-seed mean over cases (how much a rerun would move the score)."""
    ok = rows[(rows["status"] == "ok") & rows["score"].notna()]
    if ok.empty:
        return np.nan
    per_seed = ok.groupby("seed")["score"].mean()
    return float(per_seed.std(ddof=0)) if len(per_seed) > 1 else 0.0


def track_scores(rows: pd.DataFrame, schema: Schema | None = None, by_scenario: bool = False) -> pd.DataFrame:
    """Steps 1-2: per (model, track[, scenario]) mean over cases of seed-averaged scores.

    Columns: ``score``, ``ci_low``, ``ci_high``, ``seed_std``, ``n_cases`` (with a score),
    ``n_total`` (cases seen), ``n_na``, ``n_failed``, ``coverage`` (= n_cases / n_total).
    """
    schema = schema or load_schema()
    cases = case_scores(rows)
    keys = ["model", "track", "track_version"] + (["scenario"] if by_scenario else [])
    out = []
    for key, g in cases.groupby(keys, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        scored = g["score"].dropna()
        lo, hi = bootstrap_ci(scored.to_numpy(), schema.bootstrap_resamples, schema.bootstrap_confidence,
                              schema.bootstrap_seed)
        sel = rows
        for k, v in zip(keys, key, strict=True):
            sel = sel[sel[k] == v]
        rec = dict(zip(keys, key, strict=True))
        rec.update({
            "score": float(scored.mean()) if len(scored) else np.nan,
            "ci_low": lo,
            "ci_high": hi,
            "seed_std": _seed_spread(sel),
            "n_cases": int(len(scored)),
            "n_total": int(len(g)),
            "n_na": int((g["n_ok"] + g["n_failed"] == 0).sum()),
            "n_failed": int(((g["n_failed"] > 0) & g["score"].isna()).sum()),
        })
        applicable = rec["n_total"] - rec["n_na"]
        rec["coverage"] = rec["n_cases"] / applicable if applicable else np.nan
        out.append(rec)
    cols = keys + ["score", "ci_low", "ci_high", "seed_std", "n_cases", "n_total", "n_na", "n_failed", "coverage"]
    return pd.DataFrame.from_records(out, columns=cols)


def overall_scores(tracks: pd.DataFrame, schema: Schema | None = None) -> pd.DataFrame:
    """Step 3: per model, weighted mean of the track scores it has (missing tracks dropped)."""
    schema = schema or load_schema()
    weights = schema.weights()
    out = []
    for model, g in tracks.groupby("model", sort=True):
        g = g[g["score"].notna()]
        overall = overall_score(dict(zip(g["track"], g["score"].astype(float), strict=True)), weights)
        if overall is None:
            out.append({"model": model, "overall": np.nan, "n_tracks": 0})
            continue
        out.append({"model": model, "overall": overall, "n_tracks": int(len(g))})
    return pd.DataFrame.from_records(out, columns=["model", "overall", "n_tracks"])


def per_case_overall(rows: pd.DataFrame) -> pd.DataFrame:
    """The published per-case overall: mean of the available track scores of that case."""
    cases = case_scores(rows)
    g = cases.dropna(subset=["score"]).groupby(["model", "case_id"])["score"]
    return g.agg(["mean", "count"]).rename(columns={"mean": "overall", "count": "n_tracks"}).reset_index()


def leaderboard_table(rows: pd.DataFrame, schema: Schema | None = None,
                      versions: dict[str, str] | None = None, scenario: str | None = None,
                      metrics: pd.DataFrame | None = None, require_tracks: Sequence[str] = ()) -> pd.DataFrame:
    """The site's main table: ``Rank | Model | Task | <track columns> | All`` + CI/coverage columns.

    Args:
        rows: result rows from :func:`rows_from_results` (any number of models/runs).
        versions: track → version to compare at (default: newest per track).
        scenario: restrict to one scenario family (``gaming``...) — the "Task" column.
        metrics: metric rows (:func:`metric_rows_from_results`) for the schema's metric columns
            (e.g. CLIP); without them those columns are empty.
        require_tracks: a model is ranked only with a score on each of these tracks (an ``All``
            over fewer tracks is not comparable); the others follow with no rank and their
            coverage shown. Empty: every model is ranked (what one run's own table does).
    """
    schema = schema or load_schema()
    if scenario:
        rows = rows[rows["scenario"] == scenario]
    versions = versions or newest_versions(rows)
    all_models = sorted(rows["model"].unique())
    stale = {m: sorted(set(g.loc[g.apply(lambda r: versions.get(r["track"]) != r["track_version"], axis=1), "track"]))
             for m, g in rows.groupby("model")}
    rows = select_versions(rows, versions)
    tracks = track_scores(rows, schema)
    overall = overall_scores(tracks, schema).set_index("model")
    records = []
    for model in all_models:
        g = tracks[tracks["model"] == model]
        rec: dict[str, Any] = {"Model": model, "Task": scenario or "all"}
        for name, spec in schema.tracks.items():
            t = g[g["track"] == name]
            if len(t) and not np.isnan(t["score"].iloc[0]):
                r = t.iloc[0]
                rec[spec.column] = round(float(r["score"]), 4)
                rec[f"{spec.column} CI"] = f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]"
                rec[f"{spec.column} cov."] = f"{int(r['n_cases'])}/{int(r['n_total'] - r['n_na'])}"
            else:
                rec[spec.column] = np.nan
                rec[f"{spec.column} CI"] = ""
                rec[f"{spec.column} cov."] = ""
        for mc in schema.metric_columns:
            rec[mc["column"]] = np.nan
            if metrics is not None and not metrics.empty:
                sel = metrics if not scenario else metrics[metrics["scenario"] == scenario]
                ms = metric_column_scores(sel, mc["track"], mc["metric"]).set_index("model")
                if model in ms.index:
                    rec[mc["column"]] = round(float(ms.loc[model, "score"]), 4)
        o = overall.loc[model] if model in overall.index else {"overall": np.nan, "n_tracks": 0}
        rec[schema.overall_display] = round(float(o["overall"]), 4) if not np.isnan(o["overall"]) else np.nan
        rec["Tracks"] = int(o["n_tracks"])
        # Tracks whose rows for this model are at another version than the one compared.
        rec["Stale"] = ", ".join(t for t in stale.get(model, []) if g[g["track"] == t].empty)
        records.append(rec)
    df = pd.DataFrame.from_records(records)
    if df.empty:
        return df
    df = df.sort_values(schema.overall_display, ascending=False, na_position="last").reset_index(drop=True)
    if require_tracks:
        df = _rank_full_coverage(df, tracks, require_tracks)
    else:
        df.insert(0, "Rank", range(1, len(df) + 1))
    # Published order first (Rank | Model | Task | Physical | 3D Cons. | CLIP | Interact. | All), then the rest.
    head = ["Rank", "Model", "Task", *[c for c in schema.row_format if c in df.columns], schema.overall_display]
    return df[head + [c for c in df.columns if c not in head]]


def _rank_full_coverage(df: pd.DataFrame, tracks: pd.DataFrame, required: Sequence[str]) -> pd.DataFrame:
    """Rank only models scored on every required track; list the rest after them, unranked.

    ``Coverage`` says how many of the required tracks a model has, so a one-track ``All``
    is never read as comparable to a four-track one.
    """
    have = {m: set(g.loc[g["score"].notna(), "track"]) for m, g in tracks.groupby("model")}
    n_have = [len(have.get(m, set()) & set(required)) for m in df["Model"]]
    full = pd.Series([n == len(required) for n in n_have], index=df.index)
    df = df.assign(Coverage=[f"{n}/{len(required)} tracks" for n in n_have])
    df = pd.concat([df[full], df[~full]]).reset_index(drop=True)
    n_ranked = int(full.sum())
    df.insert(0, "Rank", [*range(1, n_ranked + 1), *["—"] * (len(df) - n_ranked)])
    return df
