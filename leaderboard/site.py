"""The Gradio leaderboard site (``worldolympiad leaderboard serve``).

Tabs: the leaderboard table (published row format + CI and coverage columns, filter by
scenario and model family, sort by any column, a bar plot), a per-model page (per-case
scores with the generated video next to the reference), metric documentation drawn from
the schema and the tracks' ``track.yaml``, and a submission tab that validates an
uploaded archive and lists it as *self-reported* until the maintainers re-run it.

API endpoints (for ``gradio_client``): ``/leaderboard``, ``/model_cases``, ``/case_videos``,
``/submit``, ``/metrics_doc``.
"""

from __future__ import annotations

import html
import json
import logging
from importlib import resources
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


def _table(db: Path, scenario: str = ALL, sort_by: str = "", family: str = ALL,
           schema: Schema | None = None) -> pd.DataFrame:
    schema = schema or load_schema()
    with Store(db) as store:
        rows = store.rows()
        runs = store.runs()
        metrics = store.metric_rows()
    if rows.empty:
        return pd.DataFrame(columns=["Rank", "Model", "Task"])
    if family and family != ALL:
        rows = rows[rows["model"].map(model_family) == family]
        metrics = metrics[metrics["model"].map(model_family) == family]
    df = leaderboard_table(rows, schema, scenario=None if scenario in ("", ALL) else scenario, metrics=metrics)
    if df.empty:
        return df
    verified = runs.groupby("model")["verified"].max()
    df.insert(2, "Status", [("verified" if verified.get(m, 0) else "self-reported") for m in df["Model"]])
    df.insert(3, "Family", [model_family(m) for m in df["Model"]])
    if sort_by and sort_by in df.columns and sort_by != "Rank":
        asc = sort_by in ("Model", "Family", "Task", "Status")
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


def submit_archive(data: bytes, db: Path) -> str:
    """Validate an uploaded archive and store it as self-reported. Returns a status line."""
    try:
        sub = validate_archive(data)
    except SubmissionError as e:
        return "Rejected: " + "; ".join(html.escape(p) for p in e.problems)
    with Store(db) as store:
        spec = dict(sub.spec)
        result = store.add_rows(spec, sub.rows, verified=False, source="submission")
    return (f"Accepted ({result}): {html.escape(str(sub.spec['model']))} with {len(sub.rows)} rows, listed as "
            "self-reported until re-run by the maintainers (verified).")


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
    import yaml

    schema = schema or load_schema()
    parts = ["# Metrics\n", "Scores are in [0, 1], higher is better. `All` is the weighted mean of the tracks a model "
             "has (missing tracks are dropped, not zeroed). Seeds are averaged before cases; intervals are 95 % "
             "percentile bootstraps over cases.\n"]
    for name, t in schema.tracks.items():
        parts.append(f"## {t.display} (`{name}`, weight {t.weight:g})\n\n{t.description}\n")
        try:
            text = resources.files(f"tracks.{name}").joinpath("track.yaml").read_text()
            decl = yaml.safe_load(text) or {}
        except (ImportError, OSError):  # track not installed yet, or a namespace stub
            parts.append("_metrics not declared yet_\n")
            continue
        parts.append(f"Track version {decl.get('version', '?')}.\n\n| metric | direction | bounds | description |\n|---|---|---|---|")
        for m in decl.get("metrics") or []:
            direction = "higher is better" if m.get("higher_is_better", True) else "lower is better"
            desc = str(m.get("description", "")).replace("\n", " ").replace("|", "/")
            parts.append(f"| `{m.get('name')}` | {direction} | {m.get('bounds', '')} | {desc} |")
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

    def models() -> list[str]:
        with Store(db) as store:
            return sorted(store.rows()["model"].unique())

    def leaderboard(scenario: str, sort_by: str, family: str) -> pd.DataFrame:
        return _table(db, scenario, sort_by, family, schema)

    def leaderboard_with_plot(scenario: str, sort_by: str, family: str) -> tuple[pd.DataFrame, Any]:
        df = leaderboard(scenario, sort_by, family)
        return df, _bar_plot(df, schema)

    def model_cases(model: str) -> pd.DataFrame:
        return _model_cases(db, model)

    def case_videos(model: str, case_id: str) -> tuple[str | None, str | None]:
        return _case_videos(db, model, case_id)

    def submit(file: Any) -> tuple[str, pd.DataFrame]:
        if file is None:
            return "Rejected: no file uploaded", leaderboard(ALL, "", ALL)
        path = file if isinstance(file, str) else getattr(file, "name", None) or file["path"]
        data = Path(path).read_bytes()
        return submit_archive(data, db), leaderboard(ALL, "", ALL)

    with gr.Blocks(title="WorldOlympiad leaderboard") as app:
        gr.Markdown("# WorldOlympiad leaderboard\nVideo world models scored on physics, 3-D consistency, "
                    "interaction and long-video drift. Rows marked *self-reported* were submitted and not yet re-run.")
        with gr.Tab("Leaderboard"):
            with gr.Row():
                scenario = gr.Dropdown(scenarios, value=ALL, label="Scenario", elem_id="scenario")
                family = gr.Dropdown(families(), value=ALL, label="Model family", elem_id="family",
                                     allow_custom_value=True)
                sort_by = gr.Dropdown(["Rank", "Model", *track_cols, schema.overall_display], value="Rank",
                                      label="Sort by", elem_id="sort_by")
            table = gr.Dataframe(value=leaderboard(ALL, "", ALL), interactive=False, elem_id="table", wrap=True)
            plot = gr.Plot(label="Scores by track", elem_id="plot")
            for ctl in (scenario, sort_by, family):
                ctl.change(leaderboard_with_plot, [scenario, sort_by, family], [table, plot])
            gr.Button("refresh", visible=False).click(leaderboard, [scenario, sort_by, family], table,
                                                       api_name="leaderboard")
            app.load(leaderboard_with_plot, [scenario, sort_by, family], [table, plot])
        with gr.Tab("Model", elem_id="model-tab"):
            model = gr.Dropdown(models(), label="Model", elem_id="model", allow_custom_value=True)
            cases = gr.Dataframe(interactive=False, elem_id="cases")
            case_id = gr.Textbox(label="Case id (pick a row above)", elem_id="case_id")
            with gr.Row():
                gen_video = gr.Video(label="generated", elem_id="gen_video")
                ref_video = gr.Video(label="reference", elem_id="ref_video")
            model.change(model_cases, model, cases, api_name="model_cases")

            def pick(df: pd.DataFrame, evt: gr.SelectData) -> str:
                return str(df.iloc[evt.index[0]]["case_id"])

            # Gradio finds the event argument by its annotation; make it a real class, not a string.
            pick.__annotations__ = {"df": pd.DataFrame, "evt": gr.SelectData, "return": str}

            cases.select(pick, cases, case_id, api_visibility="private")
            case_id.change(case_videos, [model, case_id], [gen_video, ref_video], api_name="case_videos")
        with gr.Tab("Metrics"):
            doc = gr.Markdown(metrics_markdown(schema), elem_id="metrics-doc")
            gr.Button("reload", visible=False).click(lambda: metrics_markdown(schema), None, doc,
                                                      api_name="metrics_doc")
        with gr.Tab("Submit", elem_id="submit-tab"):
            gr.Markdown("Upload a `.zip` of one run directory (`run_spec.json` + `results.jsonl`, optional "
                        "`videos/*.mp4`). It is validated (schema, versions, sizes, paths; nothing executable "
                        "or pickled) and listed as **self-reported** until re-run.")
            upload = gr.File(label="results archive (.zip)", file_types=[".zip"], type="filepath", elem_id="upload")
            status = gr.Textbox(label="status", elem_id="submit_status", interactive=False)
            upload.upload(submit, upload, [status, table], api_name="submit")
    return app


def serve(db: str | Path, host: str = "127.0.0.1", port: int = 7860, block: bool = True) -> Any:
    app = build_app(db)
    app.launch(server_name=host, server_port=port, prevent_thread_lock=not block, show_error=True)
    return app


def _json_default(o: Any) -> Any:
    return str(o)


def dump_table(db: str | Path) -> str:
    return json.dumps(_table(Path(db)).to_dict("records"), default=_json_default)
