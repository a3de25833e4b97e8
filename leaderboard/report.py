"""Static HTML report of one run directory (``worldolympiad report RUN_DIR``).

Writes ``RUN_DIR/report.html`` (self-contained apart from the videos, which are linked
relative to the run folder): the run spec, per-track scores with confidence intervals
and coverage, a bar plot and a radar plot, and one row per case with the generated video
next to the reference and every metric's details.
"""

from __future__ import annotations

import argparse
import base64
import html
import io
import json
import logging
from pathlib import Path
from typing import Any

import numpy as np

from leaderboard.aggregate import (
    case_scores,
    damaged_note,
    overall_scores,
    rows_from_results,
    scan_results_jsonl,
    select_versions,
    track_scores,
)
from leaderboard.schema import Schema, load_schema

logger = logging.getLogger(__name__)


def _png(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _plots(tracks: Any, schema: Schema) -> tuple[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [t for t in schema.tracks if t in set(tracks["track"])]
    vals = [float(tracks.loc[tracks["track"] == t, "score"].iloc[0]) for t in names]
    lo = [float(tracks.loc[tracks["track"] == t, "ci_low"].iloc[0]) for t in names]
    hi = [float(tracks.loc[tracks["track"] == t, "ci_high"].iloc[0]) for t in names]
    labels = [schema.tracks[t].display for t in names]
    fig, ax = plt.subplots(figsize=(6, 3))
    v = np.nan_to_num(np.array(vals))
    err = np.nan_to_num(np.array([np.array(vals) - np.array(lo), np.array(hi) - np.array(vals)]))
    ax.bar(labels, v, yerr=err, capsize=4, color="#4C72B0")
    ax.set_ylim(0, 1)
    ax.set_ylabel("score (95 % CI)")
    bar = _png(fig)
    fig = plt.figure(figsize=(4, 4))
    axr = fig.add_subplot(projection="polar")
    if len(names) >= 3:
        ang = np.linspace(0, 2 * np.pi, len(names), endpoint=False).tolist()
        axr.plot(ang + ang[:1], list(v) + list(v[:1]), "o-")
        axr.fill(ang + ang[:1], list(v) + list(v[:1]), alpha=0.25)
        axr.set_xticks(ang, labels)
    else:
        axr.set_title("radar needs 3+ tracks", fontsize=9)
    axr.set_ylim(0, 1)
    radar = _png(fig)
    return bar, radar


def _video_tag(path: Path, run_dir: Path, label: str) -> str:
    if not path.exists():
        return f"<div class='novid'>{html.escape(label)}: not available</div>"
    rel = path.relative_to(run_dir) if path.is_relative_to(run_dir) else path
    return (f"<figure><video src='{html.escape(str(rel))}' controls muted loop width='192'></video>"
            f"<figcaption>{html.escape(label)}</figcaption></figure>")


def _fmt(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "—"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return html.escape(str(x))


def _chance_note(metric: dict[str, Any]) -> str:
    """A "(chance 0.333)" note after a metric whose details carry the score a random player gets (the
    interaction track's direction accuracy), so a reader sees the line it has to clear."""
    chance = (metric.get("details") or {}).get("chance")
    return f" <span class='not_applicable'>(chance {_fmt(float(chance))})</span>" if chance is not None else ""


def _warnings_section(results: list[dict[str, Any]], run_dir: Path) -> list[str]:
    """Run-level errors (``summary.json``'s ``run_errors``: a judge outage), the judge's accounting
    (requests, failures by kind, tokens, copied samples) and each video's input
    warnings (4:2:0, lossy, size, length, fps against its case; the rows' ``warnings``), which
    weaken the evidence behind the scores below; empty when there are none."""
    out: list[str] = []
    summary_path = run_dir / "summary.json"
    try:
        summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    except (OSError, ValueError):
        summary = {}
    run_errors = [str(e) for e in (summary.get("run_errors") or [])] if isinstance(summary, dict) else []
    if run_errors:
        out.append("<h2>Run errors</h2><ul>" + "".join(f"<li class='failed'>{html.escape(e)}</li>" for e in run_errors)
                   + "</ul>")
    judge = summary.get("judge") if isinstance(summary, dict) else None
    if isinstance(judge, dict) and judge.get("sent"):
        notes = [str(w) for w in (summary.get("judge_warnings") or [])]
        kinds = ", ".join(f"{n} {k}" for k, n in sorted((judge.get("failed_by_kind") or {}).items())) or "none"
        out.append(f"<h2>Judge</h2><p>{judge['sent']} request(s): {judge.get('ok', 0)} answered, "
                   f"{judge.get('failed', 0)} failed ({html.escape(kinds)}); {judge.get('usable', 0)} usable answer(s); "
                   f"{judge.get('prompt_tokens', 0):,} prompt + {judge.get('completion_tokens', 0):,} answer tokens.</p>"
                   + ("<ul>" + "".join(f"<li class='not_applicable'>{html.escape(w)}</li>" for w in notes) + "</ul>"
                      if notes else ""))
    seen: dict[tuple[str, int], list[str]] = {}
    for r in results:
        if r.get("warnings"):
            seen.setdefault((str(r["case_id"]), int(r["seed"])), [str(w) for w in r["warnings"]])
    if seen:
        out.append(f"<h2>Input warnings</h2><p>{len(seen)} video(s) were scored with weaker evidence than the case "
                   "allows; README \"Scoring your own videos\" says what to write.</p><table><tr><th>case</th>"
                   "<th>seed</th><th>warnings</th></tr>")
        out += [f"<tr><td>{html.escape(cid)}</td><td>{seed}</td><td>{'<br>'.join(html.escape(w) for w in ws)}</td></tr>"
                for (cid, seed), ws in sorted(seen.items())]
        out.append("</table>")
    return out


def build_report(run_dir: str | Path, out: str | Path | None = None, schema: Schema | None = None) -> Path:
    """Write the HTML report of ``run_dir``; returns its path.

    Raises:
        FileNotFoundError: ``run_dir`` has no ``results.jsonl``.
    """
    schema = schema or load_schema()
    run_dir = Path(run_dir).resolve()
    res_path = run_dir / "results.jsonl"
    if not res_path.exists():
        raise FileNotFoundError(f"{res_path} not found; run evaluate-model first (it writes the run directory)")
    scan = scan_results_jsonl(res_path)
    results = scan.rows
    if scan.damaged:
        logger.warning("%s: skipped %s", res_path, damaged_note(scan.damaged))
    spec = json.loads((run_dir / "run_spec.json").read_text()) if (run_dir / "run_spec.json").exists() else {}
    rows = rows_from_results(results, run=run_dir.name)
    tracks = track_scores(rows, schema)
    cases = case_scores(rows)
    bar, radar = _plots(tracks, schema) if not tracks.empty else ("", "")

    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>WorldOlympiad report</title><style>",
        "body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px} table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;font-size:14px} th{background:#f4f4f4}"
        "figure{display:inline-block;margin:4px} .novid{display:inline-block;width:192px;color:#999}"
        ".failed{color:#b00} .not_applicable{color:#888} details{margin:2px 0}",
        "</style></head><body>",
        f"<h1>WorldOlympiad report — {html.escape(str(spec.get('model', '?')))}</h1>",
        f"<p>suite <b>{html.escape(str(spec.get('suite', '?')))}</b>, seeds {html.escape(str(spec.get('seeds', '?')))}, "
        f"judge {html.escape(str(spec.get('judge', 'none')))}, run {html.escape(run_dir.name)}</p>",
        (f"<p class='failed'>results.jsonl: skipped {html.escape(damaged_note(scan.damaged))}</p>"
         if scan.damaged else ""),
        "<h2>Tracks</h2><table><tr><th>track</th><th>version</th><th>score</th><th>95 % CI</th><th>seed std</th>"
        "<th>cases scored / applicable</th><th>failed</th></tr>",
    ]
    for _, t in tracks.iterrows():
        disp = schema.tracks[t["track"]].display if t["track"] in schema.tracks else t["track"]
        parts.append(
            f"<tr><td>{html.escape(disp)}</td><td>{html.escape(str(t['track_version']))}</td><td>{_fmt(t['score'])}</td>"
            f"<td>[{_fmt(t['ci_low'])}, {_fmt(t['ci_high'])}]</td><td>{_fmt(t['seed_std'])}</td>"
            f"<td>{int(t['n_cases'])} / {int(t['n_total'] - t['n_na'])}</td><td>{int(t['n_failed'])}</td></tr>")
    if not tracks.empty:
        # The one overall (worldolympiad.overall via overall_scores): the number summary.json and the leaderboard show.
        o = overall_scores(track_scores(select_versions(rows), schema), schema)
        if len(o):
            parts.append(f"<tr class='overall'><th>{html.escape(schema.overall_display)} (overall)</th><td></td>"
                         f"<th>{_fmt(float(o['overall'].iloc[0]), 4)}</th><td colspan='4'>weighted mean of "
                         f"{int(o['n_tracks'].iloc[0])} track score(s), leaderboard/schema.yaml</td></tr>")
    parts.append("</table>")
    if bar:
        parts.append(f"<p><img alt='bar plot' src='{bar}'> <img alt='radar plot' src='{radar}'></p>")

    parts += _warnings_section(results, run_dir)

    parts.append("<h2>Cases</h2>")
    fmt = spec.get("video_format")
    if fmt and "yuv444p" in str(fmt):
        # 4:4:4 keeps the colour of 1-2 px sprites for scoring; Chromium shows it (tests/leaderboard/test_site.py)
        parts.append(f"<p class='not_applicable'>Generated videos are stored as they were scored ({html.escape(str(fmt))}). "
                     "Chrome and Chromium play 4:4:4 H.264; Safari may not. References are shown from 4:2:0 copies. "
                     "<code>--option video.pix_fmt=yuv420p</code> writes files every browser plays, but 4:2:0 erases "
                     "the colour of sprites a pixel or two wide, so the scores change.</p>")
    parts.append("<table><tr><th>case</th><th>scenario</th><th>scores</th><th>videos</th><th>metrics</th></tr>")
    by_case: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        by_case.setdefault(r["case_id"], []).append(r)
    for case_id in sorted(by_case):
        rs = by_case[case_id]
        c = cases[cases["case_id"] == case_id]
        score_cells = "<br>".join(f"{html.escape(str(x['track']))}: {_fmt(x['score'])}" for _, x in c.iterrows())
        seed = min(int(r["seed"]) for r in rs)
        gen = run_dir / "videos" / f"{case_id}__s{seed}.mp4"
        ref_candidates = sorted((run_dir / "references").glob(f"{case_id}*.mp4")) if (run_dir / "references").exists() else []
        ref = ref_candidates[0] if ref_candidates else run_dir / "references" / f"{case_id}.mp4"
        vids = _video_tag(gen, run_dir, "generated") + _video_tag(ref, run_dir, "reference")
        details = []
        for r in sorted(rs, key=lambda r: (r["track"], r["seed"])):
            mrows = "".join(
                f"<tr class='{html.escape(str(m.get('status', 'ok')))}'><td>{html.escape(str(m['name']))}</td>"
                f"<td>{_fmt(m.get('raw'))}{_chance_note(m)}</td><td>{_fmt(m.get('normalized'))}</td>"
                f"<td>{html.escape(str(m.get('status', 'ok')))}</td><td>{html.escape(str(m.get('reason') or ''))}</td></tr>"
                for m in r.get("metrics") or [])
            errs = "".join(f"<div class='failed'>{html.escape(e)}</div>" for e in r.get("errors") or [])
            if r.get("reason"):  # why a not-applicable row has no score
                errs += f"<div class='not_applicable'>{html.escape(str(r['reason']))}</div>"
            details.append(
                f"<details><summary>{html.escape(str(r['track']))} seed {r['seed']} — "
                f"<span class='{html.escape(str(r.get('status', 'ok')))}'>{html.escape(str(r.get('status', 'ok')))}</span>"
                f"</summary>{errs}<table><tr><th>metric</th><th>raw</th><th>normalized</th><th>status</th><th>reason</th>"
                f"</tr>{mrows}</table></details>")
        parts.append(f"<tr><td>{html.escape(case_id)}</td><td>{html.escape(str(rs[0].get('scenario', '')))}</td>"
                     f"<td>{score_cells}</td><td>{vids}</td><td>{''.join(details)}</td></tr>")
    parts.append("</table></body></html>")
    out = Path(out) if out else run_dir / "report.html"
    out.write_text("\n".join(parts))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="worldolympiad report",
        description="Write a static HTML report (tables, plots, per-case videos and metric details) of a run.",
        epilog="example:\n  worldolympiad report runs/reference__smoke__1a2b3c4d5e6f\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("run_dir", help="a run directory written by evaluate-model")
    p.add_argument("--out", help="output file (default RUN_DIR/report.html)")
    args = p.parse_args(argv)
    try:
        path = build_report(args.run_dir, args.out)
    except FileNotFoundError as e:
        print(f"error: {e}")
        return 2
    print(f"wrote {path}")
    return 0
