"""The run's summary (``summary.json``) and the terminal tables of ``evaluate-model``.

Scores follow the one definition of the overall score (:mod:`worldolympiad.overall`,
``leaderboard/schema.yaml``), so the terminal, ``summary.json``, ``report.html`` and the
leaderboard show the same numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from worldolympiad.types import RunSpec, TrackResult

# ===================================================================== summary


def _mean_std(values: Sequence[float]) -> tuple[float | None, float | None]:
    """Mean and sample std (ddof=1; 0.0 for a single value)."""
    if not values:
        return None, None
    arr = np.asarray(values, dtype=np.float64)
    std = float(arr.std(ddof=1)) if len(arr) > 1 else 0.0
    return float(arr.mean()), std


def summarize(rows: Sequence[TrackResult], spec: RunSpec, suite_name: str = "",
              weights: Mapping[str, float] | None = None) -> dict[str, Any]:
    """Per-track and overall scores, their spread over seeds, status counts and the failure table.

    Track ``mean`` and overall ``mean`` follow the one definition of the leaderboard
    (:mod:`worldolympiad.overall`, ``leaderboard/schema.yaml``): seeds first, then cases, then
    the weighted mean of the track scores the run has; rows of a track at another version than
    its newest are left out. ``per_seed`` holds the same numbers computed on each seed's rows
    alone and ``std`` is their sample std (ddof=1; 0.0 for one seed).

    Args:
        weights: track weights of the overall (default: :func:`worldolympiad.overall.overall_weights`).
    """
    from worldolympiad.overall import overall_score, overall_weights, track_score, version_key

    seeds = list(spec.seeds)
    weights = dict(weights) if weights is not None else overall_weights(spec.tracks)
    tracks: dict[str, Any] = {}
    # track -> seed -> case -> scores (seed None: every seed)
    scored: dict[str, dict[int | None, dict[str, list[float]]]] = {}
    for name in spec.tracks:
        rs = [r for r in rows if r.track == name]
        counts = {s: sum(1 for r in rs if r.status == s) for s in ("ok", "not_applicable", "failed")}
        versions = sorted({r.track_version for r in rs}, key=version_key)
        ok = [r for r in rs if r.status == "ok" and r.score is not None and versions and r.track_version == versions[-1]]
        by_seed: dict[int | None, dict[str, list[float]]] = {}
        for r in ok:
            for key in (None, r.seed):
                by_seed.setdefault(key, {}).setdefault(r.case_id, []).append(float(r.score))  # type: ignore[arg-type]
        scored[name] = by_seed
        per_seed = {str(seed): v for seed in seeds if (v := track_score(by_seed.get(seed, {}))) is not None}
        _, std = _mean_std(list(per_seed.values()))
        tracks[name] = {"mean": track_score(by_seed.get(None, {})), "std": std, "per_seed": per_seed,
                        "counts": counts, "n_cases_scored": len(by_seed.get(None, {})), "versions": versions}
    overall_seed: dict[str, float] = {}
    for seed in seeds:
        o = overall_score({t: track_score(s.get(seed, {})) for t, s in scored.items()}, weights)
        if o is not None:
            overall_seed[str(seed)] = o
    mean = overall_score({t: v["mean"] for t, v in tracks.items()}, weights)
    _, std = _mean_std(list(overall_seed.values()))
    counts = {s: sum(1 for r in rows if r.status == s) for s in ("ok", "not_applicable", "failed")}
    errors = [{"case_id": r.case_id, "seed": r.seed, "track": r.track, "error": "; ".join(r.errors)}
              for r in rows if r.status == "failed"]
    warnings: dict[tuple[str, int], list[str]] = {}
    for r in rows:
        if r.warnings:
            warnings.setdefault((r.case_id, r.seed), list(r.warnings))
    return {
        "run": spec.hash,
        "model": spec.model,
        "suite": suite_name or spec.suite,
        "seeds": seeds,
        "num_cases": len({r.case_id for r in rows}),
        "num_rows": len(rows),
        "tracks": tracks,
        "overall": {"mean": mean, "std": std, "per_seed": overall_seed, "counts": counts, "weights": weights,
                    "definition": "weighted mean of the track scores (seeds, then cases, then tracks); "
                                  "leaderboard/schema.yaml overall"},
        "errors": errors,
        "warnings": [{"case_id": cid, "seed": seed, "warnings": w} for (cid, seed), w in sorted(warnings.items())],
    }


def format_warnings(summary: Mapping[str, Any]) -> str:
    """One line counting the input warnings of the run's videos by kind (empty string when there is none)."""
    items = summary.get("warnings") or []
    if not items:
        return ""
    kinds: dict[str, int] = {}
    for item in items:
        for w in item["warnings"]:
            kinds[w.split(":")[0]] = kinds.get(w.split(":")[0], 0) + 1
    counted = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
    first = items[0]
    return (f"input warnings on {len(items)} video(s) ({counted}; e.g. {first['case_id']} s{first['seed']}: "
            f"{first['warnings'][0]}); each row's 'warnings' and summary.json list them")


# ====================================================================== tables


def _fmt(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def format_results_table(rows: Sequence[TrackResult], tracks: Sequence[str]) -> str:
    """Case × track table of scores (mean over seeds); ``n/a`` not applicable, ``FAIL`` failed."""
    case_ids = sorted({r.case_id for r in rows})
    cells: dict[tuple[str, str], list[TrackResult]] = {}
    for r in rows:
        cells.setdefault((r.case_id, r.track), []).append(r)
    width = max([len("case")] + [len(c) for c in case_ids])
    header = "case".ljust(width) + "".join(f"  {t:>11}" for t in tracks)
    lines = [header, "-" * len(header)]
    for cid in case_ids:
        line = cid.ljust(width)
        for t in tracks:
            rs = cells.get((cid, t), [])
            scores = [r.score for r in rs if r.status == "ok" and r.score is not None]
            if scores:
                cell = f"{np.mean(scores):.3f}"
            elif any(r.status == "failed" for r in rs):
                cell = "FAIL"
            elif rs and all(r.status == "not_applicable" for r in rs):
                cell = "n/a"
            else:
                cell = "-"
            line += f"  {cell:>11}"
        lines.append(line)
    return "\n".join(lines)


def format_summary(summary: Mapping[str, Any]) -> str:
    """Per-track score ± std over seeds with status counts, then overall, to the leaderboard's 4 decimals."""
    lines = [f"{'track':<12} {'score ± std (over seeds)':>24}   ok  n/a  failed"]
    for name, t in summary["tracks"].items():
        c = t["counts"]
        ms = f"{_fmt(t['mean'], 4)} ± {_fmt(t['std'], 4)}" if t["mean"] is not None else "-"
        lines.append(f"{name:<12} {ms:>24}  {c['ok']:>3}  {c['not_applicable']:>3}  {c['failed']:>6}")
    o = summary["overall"]
    c = o["counts"]
    ms = f"{_fmt(o['mean'], 4)} ± {_fmt(o['std'], 4)}" if o["mean"] is not None else "-"
    lines.append(f"{'overall':<12} {ms:>24}  {c['ok']:>3}  {c['not_applicable']:>3}  {c['failed']:>6}")
    return "\n".join(lines)


def format_errors(summary: Mapping[str, Any], max_len: int = 300) -> str:
    """One table of every failure (empty string when there is none)."""
    errors = summary.get("errors") or []
    if not errors:
        return ""
    lines = [f"{len(errors)} failed row(s):"]
    for e in errors:
        msg = e["error"] if len(e["error"]) <= max_len else e["error"][: max_len - 3] + "..."
        lines.append(f"  {e['case_id']} s{e['seed']} {e['track']}: {msg}")
    return "\n".join(lines)
