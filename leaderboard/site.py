"""The Gradio leaderboard site (``worldolympiad leaderboard serve``).

Tabs: the leaderboard table (published row format + CI and coverage columns; verified or
self-reported runs, one suite, filter by scenario and model family, sort by any column, a
bar plot), a per-model page (per-case scores with the generated video next to the
reference; it opens on the first ranked model), metric documentation drawn from the schema
and the tracks' ``track.yaml``, and a submission tab that validates an uploaded archive and
lists it as *self-reported*, apart from verified runs, until its videos are re-scored here.

The table is honest by construction (:func:`board_table`): verified and self-reported runs
are never ranked together, suites are never pooled, a model is ranked only with every track
of the suite, and runs with no score are not listed.

API endpoints (for ``gradio_client``): ``/leaderboard`` (scenario, sort_by, family, suite,
view), ``/model_cases``, ``/case_videos``, ``/submit``, ``/metrics_doc``.
"""

from __future__ import annotations

import html
import json
import logging
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from leaderboard.aggregate import case_scores, leaderboard_table
from leaderboard.schema import Schema, load_schema
from leaderboard.store import Store, model_family
from leaderboard.submission import SubmissionError, validate_archive

logger = logging.getLogger(__name__)

ALL = "all"


VERIFIED, SELF_REPORTED = "verified", "self-reported"
VIEWS = (VERIFIED, SELF_REPORTED)


def scored_runs(rows: pd.DataFrame) -> pd.DataFrame:
    """Drop runs in which no row produced a score: an all-failed run says nothing about a model."""
    ok = rows[(rows["status"] == "ok") & rows["score"].notna()]
    return rows[rows["run"].isin(set(ok["run"]))]


def suites(rows: pd.DataFrame) -> list[str]:
    """The suites present, the default first: the one most models were scored on (then most rows)."""
    if rows.empty:
        return []
    g = rows.groupby("suite").agg(models=("model", "nunique"), rows=("model", "size"))
    return [str(x) for x in g.sort_values(["models", "rows"], ascending=False, kind="stable").index]


def display_names(runs: pd.DataFrame) -> dict[str, str]:
    """Model key → what the table shows: ``add --name``'s name, an upload's declared model + its id."""
    out: dict[str, str] = {}
    for _, r in runs.sort_values("added_at").iterrows():
        key = str(r["model"])
        if r["source"] == "submission":  # before migration 4 an upload had no display name
            out[key] = f"{r['display'] or key} [upload {r['run_id']}]"
        elif isinstance(r["display"], str) and r["display"]:
            out[key] = r["display"]
        else:
            out.setdefault(key, key)
    return out


def board_table(db: Path, scenario: str = ALL, sort_by: str = "", family: str = ALL, schema: Schema | None = None,
                suite: str = "", view: str = VERIFIED) -> pd.DataFrame:
    """The leaderboard as the site and ``leaderboard build`` show it.

    Verified runs (scored here) and self-reported ones are separate views, never ranked
    together; one suite at a time (default: :func:`suites`' first), never pooled; runs with
    no score are left out; only models scored on every track of the suite are ranked.
    """
    schema = schema or load_schema()
    if view not in VIEWS:
        raise ValueError(f"view {view!r} is not one of {', '.join(VIEWS)}")
    with Store(db) as store:
        rows = scored_runs(store.rows(verified=view == VERIFIED))
        runs = store.runs()
        metrics = store.metric_rows()
    names = suites(rows)
    suite = suite if suite in names else (names[0] if names else "")
    rows = rows[rows["suite"] == suite]
    if rows.empty:
        return pd.DataFrame(columns=["Rank", "Model", "Task"])
    metrics = metrics[metrics["run"].isin(set(rows["run"]))]
    # Full coverage = every track some model of this view has a score on (in this scenario).
    sel = rows if scenario in ("", ALL) else rows[rows["scenario"] == scenario]
    required = sorted(set(sel.loc[(sel["status"] == "ok") & sel["score"].notna(), "track"]))
    if family and family != ALL:
        rows = rows[rows["model"].map(model_family) == family]
        metrics = metrics[metrics["model"].map(model_family) == family]
    df = leaderboard_table(rows, schema, scenario=None if scenario in ("", ALL) else scenario, metrics=metrics,
                           require_tracks=required)
    if df.empty:
        return df
    keys = list(df["Model"])
    shown = display_names(runs)
    df["Model"] = [shown.get(k, k) for k in keys]
    df.insert(2, "Status", view)
    df.insert(3, "Family", [model_family(k) for k in keys])
    df.insert(4, "Suite", suite)
    df["Key"] = keys  # the store's model key (an upload's is upload:<run id>), for the model page
    if sort_by and sort_by in df.columns and sort_by != "Rank":
        asc = sort_by in ("Model", "Family", "Task", "Status", "Suite")
        df = df.sort_values(sort_by, ascending=asc, na_position="last", kind="stable").reset_index(drop=True)
    # Tracks nobody has yet would only add empty columns.
    for spec in schema.tracks.values():
        if spec.column in df.columns and df[spec.column].isna().all():
            df = df.drop(columns=[spec.column, f"{spec.column} CI", f"{spec.column} cov."])
    for mc in schema.metric_columns:
        if mc["column"] in df.columns and df[mc["column"]].isna().all():
            df = df.drop(columns=[mc["column"]])
    # Names are validated on submission; escape anyway, the table renders HTML-ish markdown.
    df["Model"] = df["Model"].map(lambda s: html.escape(str(s)))
    return df


_table = board_table  # the name older callers use


def available_suites(db: Path) -> list[str]:
    """Suites with verified runs (the default first), then those with only self-reported ones."""
    with Store(db) as store:
        verified = suites(scored_runs(store.rows(verified=True)))
        uploaded = suites(scored_runs(store.rows(verified=False)))
    return verified + [x for x in uploaded if x not in verified]


def model_choices(db: Path) -> list[tuple[str, str]]:
    """(shown name, key) of every listed model for the model tab: verified first, in rank order."""
    out: list[tuple[str, str]] = []
    for view in VIEWS:
        table = board_table(db, view=view)
        if "Key" in table:
            out.extend((html.unescape(str(m)) + ("" if view == VERIFIED else " (self-reported)"), str(k))
                       for m, k in zip(table["Model"], table["Key"], strict=True))
        with Store(db) as store:
            rows = scored_runs(store.rows(verified=view == VERIFIED))
            names = display_names(store.runs())
        seen = {k for _, k in out}
        out.extend((names.get(k, k), k) for k in sorted(set(rows["model"]) - seen))
    return out


def submit_archive(data: bytes, db: Path) -> str:
    """Validate an uploaded archive and store it as self-reported. Returns one status line.

    Whatever the archive holds, the answer is a line, never a traceback: unexpected errors
    are logged for the maintainers and the store is left as it was (one transaction).
    """
    try:
        sub = validate_archive(data)
        with Store(db) as store:
            result, run_id = store.add_submission(sub, archive=data)
    except SubmissionError as e:
        return "Rejected: " + "; ".join(html.escape(p) for p in e.problems)
    except Exception as e:  # noqa: BLE001 - a hostile archive must never reach the user as a traceback
        logger.exception("submission failed")
        return (f"Rejected: the archive could not be processed ({type(e).__name__}); check it with "
                "`worldolympiad leaderboard add RUN_DIR` locally, or report this to the maintainers")
    return (f"Accepted ({result}): {html.escape(str(sub.spec['model']))} with {len(sub.rows)} rows as upload "
            f"{run_id}, listed as self-reported (apart from verified runs) until the maintainers re-score its videos.")


def _model_cases(db: Path, model: str) -> pd.DataFrame:
    with Store(db) as store:
        rows = store.rows()
    rows = rows[rows["model"] == model]
    if rows.empty:
        return pd.DataFrame(columns=["case_id", "scenario", "track", "score", "seed_std", "status"])
    c = case_scores(rows)
    c["status"] = np.where(c["n_failed"] > 0, "failed", np.where(c["n_na"] > 0, "not_applicable", "ok"))
    return c[["case_id", "scenario", "track", "score", "seed_std", "status"]].round(4)


def _case_videos(db: Path, model: str, case_id: str) -> tuple[str | None, str | None]:
    """(generated video, reference video) paths for a case, from the run folders on disk."""
    with Store(db) as store:
        loc = store.conn.execute(
            "SELECT location FROM runs WHERE model = ? AND location IS NOT NULL ORDER BY added_at DESC", (model,)
        ).fetchall()
    for (location,) in loc:
        vids = sorted(Path(location, "videos").glob(f"{case_id}__s*.mp4"))
        if vids:
            refs = sorted(Path(location, "references").glob(f"{case_id}*.mp4"))
            return str(vids[0]), (str(refs[0]) if refs else None)
    return None, None


def metrics_markdown(schema: Schema | None = None) -> str:
    """Metric documentation: schema track descriptions + each track's declared metrics."""
    from worldolympiad.registries import TRACKS

    schema = schema or load_schema()
    parts = ["# Metrics\n", "Scores are in [0, 1], higher is better. `All` is the weighted mean of the tracks a model "
             "has (missing tracks are dropped, not zeroed). Seeds are averaged before cases; intervals are 95 % "
             "percentile bootstraps over cases.\n"]
    for name, t in schema.tracks.items():
        parts.append(f"## {t.display} (`{name}`, weight {t.weight:g})\n\n{t.description}\n")
        try:  # through the registry (DESIGN.md §2): the site never imports a track's package by name
            spec = TRACKS.get(name).spec()
        except (ImportError, KeyError, ValueError):  # track not installed, or not registered
            spec = None
        if spec is None:
            parts.append("_metrics not declared yet_\n")
            continue
        parts.append(f"Track version {spec.version}.\n\n| metric | direction | bounds | description |\n|---|---|---|---|")
        for m in spec.metrics.values():
            direction = "higher is better" if m.higher_is_better else "lower is better"
            desc = str(m.description).replace("\n", " ").replace("|", "/")
            bounds = f"[{m.bounds[0]:g}, {m.bounds[1]:g}]"
            parts.append(f"| `{m.name}` | {direction} | {bounds} | {desc} |")
        parts.append("")
    return "\n".join(parts)


def _bar_plot(df: pd.DataFrame, schema: Schema) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = [t.column for t in schema.tracks.values() if t.column in df.columns] + [schema.overall_display]
    fig, ax = plt.subplots(figsize=(8, 3.2))
    if not df.empty:
        x = np.arange(len(cols))
        width = 0.8 / max(len(df), 1)
        for i, (_, r) in enumerate(df.iterrows()):
            vals = [float(r[c]) if pd.notna(r[c]) else 0.0 for c in cols]
            ax.bar(x + i * width, vals, width, label=html.unescape(str(r["Model"]))[:30])
        ax.set_xticks(x + 0.4 - width / 2, cols)
        ax.legend(fontsize=7, loc="upper right")
    ax.set_ylim(0, 1)
    ax.set_ylabel("score")
    fig.tight_layout()
    return fig


def build_app(db: str | Path, schema: Schema | None = None) -> Any:
    """Build the Gradio Blocks app over the store at ``db``."""
    import gradio as gr

    db = Path(db)
    schema = schema or load_schema()
    scenarios = [ALL, *schema.scenarios]
    track_cols = [t.column for t in schema.tracks.values()]

    def families() -> list[str]:
        with Store(db) as store:
            return [ALL, *sorted({model_family(m) for m in store.rows()["model"].unique()})]

    def suite_names() -> list[str]:
        return available_suites(db)

    def leaderboard(scenario: str, sort_by: str, family: str, suite: str = "",
                    view: str = VERIFIED) -> pd.DataFrame:
        return board_table(db, scenario, sort_by, family, schema, suite=suite or "", view=view or VERIFIED)

    def leaderboard_with_plot(scenario: str, sort_by: str, family: str, suite: str,
                              view: str) -> tuple[pd.DataFrame, Any]:
        df = leaderboard(scenario, sort_by, family, suite, view)
        return df, _bar_plot(df, schema)

    def model_cases(model: str) -> pd.DataFrame:
        return _model_cases(db, model)

    def case_videos(model: str, case_id: str) -> tuple[str | None, str | None]:
        return _case_videos(db, model, case_id)

    def submit(file: Any) -> tuple[str, pd.DataFrame]:
        if file is None:
            return "Rejected: no file uploaded", pd.DataFrame()
        path = file if isinstance(file, str) else getattr(file, "name", None) or file["path"]
        status = submit_archive(Path(path).read_bytes(), db)
        return status, leaderboard(ALL, "", ALL, _submitted_suite(status, db), SELF_REPORTED)

    def refresh() -> tuple[Any, ...]:
        """On page load: choices that uploads may have changed, and the first model's cases."""
        choices = model_choices(db)
        first = choices[0][1] if choices else None
        return (gr.Dropdown(choices=families()), gr.Dropdown(choices=suite_names()),
                gr.Dropdown(choices=choices, value=first), _model_cases(db, first) if first else None)

    first_suite = (suite_names() or [""])[0]
    choices = model_choices(db)
    first_model = choices[0][1] if choices else None
    with gr.Blocks(title="WorldOlympiad leaderboard") as app:
        gr.Markdown("# WorldOlympiad leaderboard\nVideo world models scored on physics, 3-D consistency, "
                    "interaction and long-video drift. **Verified** runs were scored here from their videos; "
                    "**self-reported** uploads are a separate list, never ranked with them. One suite at a "
                    "time; a model is ranked only with every track of the suite (its coverage is shown).")
        with gr.Tab("Leaderboard"):
            with gr.Row():
                view = gr.Radio(list(VIEWS), value=VERIFIED, label="Runs", elem_id="view")
                suite = gr.Dropdown(suite_names(), value=first_suite, label="Suite", elem_id="suite",
                                    allow_custom_value=True)
                scenario = gr.Dropdown(scenarios, value=ALL, label="Scenario", elem_id="scenario")
                family = gr.Dropdown(families(), value=ALL, label="Model family", elem_id="family",
                                     allow_custom_value=True)
                sort_by = gr.Dropdown(["Rank", "Model", *track_cols, schema.overall_display], value="Rank",
                                      label="Sort by", elem_id="sort_by")
            table = gr.Dataframe(value=leaderboard(ALL, "", ALL, first_suite), interactive=False, elem_id="table",
                                 wrap=True)
            plot = gr.Plot(label="Scores by track", elem_id="plot")
            controls = [scenario, sort_by, family, suite, view]
            for ctl in (scenario, sort_by, family, suite, view):
                ctl.change(leaderboard_with_plot, controls, [table, plot])
            gr.Button("refresh", visible=False).click(leaderboard, controls, table, api_name="leaderboard")
            app.load(leaderboard_with_plot, controls, [table, plot])
        with gr.Tab("Model", elem_id="model-tab"):
            # Opens on the first ranked model with its cases shown (an empty page with a model
            # already picked looked broken, and picking it again changed nothing).
            model = gr.Dropdown(choices, value=first_model, label="Model", elem_id="model",
                                allow_custom_value=True)
            cases = gr.Dataframe(value=_model_cases(db, first_model) if first_model else None, interactive=False,
                                 elem_id="cases")
            case_id = gr.Textbox(label="Case id (pick a row above)", elem_id="case_id")
            with gr.Row():
                gen_video = gr.Video(label="generated", elem_id="gen_video")
                ref_video = gr.Video(label="reference", elem_id="ref_video")
            model.change(model_cases, model, cases, api_name="model_cases")
            model.select(model_cases, model, cases, api_visibility="private")  # fires on re-picking too

            def pick(df: pd.DataFrame, evt: gr.SelectData) -> str:
                return str(df.iloc[evt.index[0]]["case_id"])

            # Gradio finds the event argument by its annotation; make it a real class, not a string.
            pick.__annotations__ = {"df": pd.DataFrame, "evt": gr.SelectData, "return": str}

            cases.select(pick, cases, case_id, api_visibility="private")
            case_id.change(case_videos, [model, case_id], [gen_video, ref_video], api_name="case_videos")
        app.load(refresh, None, [family, suite, model, cases], api_visibility="private")
        with gr.Tab("Metrics"):
            doc = gr.Markdown(metrics_markdown(schema), elem_id="metrics-doc")
            gr.Button("reload", visible=False).click(lambda: metrics_markdown(schema), None, doc,
                                                      api_name="metrics_doc")
        with gr.Tab("Submit", elem_id="submit-tab"):
            gr.Markdown("Upload a `.zip` of one run directory (`run_spec.json` + `results.jsonl` + the "
                        "`videos/<case>__s<seed>.mp4` it scored; `run_spec.json` may name a `submitter`). It is "
                        "validated (schema, versions, sizes, paths; nothing executable or pickled) and listed as "
                        "**self-reported**, apart from verified runs, as `submitter/model [upload <id>]`; it "
                        "becomes verified only when the maintainers re-score its videos here.")
            upload = gr.File(label="results archive (.zip)", file_types=[".zip"], type="filepath", elem_id="upload")
            status = gr.Textbox(label="status", elem_id="submit_status", interactive=False)
            submitted = gr.Dataframe(label="self-reported runs on this suite", interactive=False,
                                     elem_id="submitted")
            upload.upload(submit, upload, [status, submitted], api_name="submit")
    return app


def _submitted_suite(status: str, db: Path) -> str:
    """The suite of the upload a status line names (to show it among its peers), else the default."""
    m = re.search(r"as upload (u[0-9a-f]{11})", status)
    if m:
        with Store(db) as store:
            row = store.conn.execute("SELECT suite FROM runs WHERE run_id = ?", (m.group(1),)).fetchone()
        if row:
            return str(row[0])
    return ""


def serve(db: str | Path, host: str = "127.0.0.1", port: int = 7860, block: bool = True) -> Any:
    from leaderboard.submission import submission_limits

    app = build_app(db)
    # No tracebacks to users (a hostile upload must get one line), and no upload past the archive
    # limit even reaches the validator.
    app.launch(server_name=host, server_port=port, prevent_thread_lock=not block, show_error=False,
               max_file_size=int(submission_limits()["max_archive_bytes"]))
    return app


def _json_default(o: Any) -> Any:
    return str(o)


def dump_table(db: str | Path) -> str:
    return json.dumps(board_table(Path(db)).to_dict("records"), default=_json_default)
