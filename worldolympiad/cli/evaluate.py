"""``evaluate-model``: score a world model on a suite and write a run directory.

Usage errors (bad flag values, unknown suite or track) print one line and exit 2. A run
that completes exits 0 even when some rows failed (they are listed at the end); pass
``--strict`` to exit 1 in that case. A judge outage (judge requests sent, none answered usably)
is a run error: ``run_errors`` in summary.json, a ``RUN ERROR`` line, exit 1 under ``--strict``.

With ``--baselines`` (the default when ``--model`` is not given) the same command then
scores every model of :data:`worldolympiad.models.baselines.LEADERBOARD_BASELINES` that is
not the main model, each into its own resumable run directory, imports this invocation's
runs into ``<out>/leaderboard/leaderboard.sqlite`` (through the ``leaderboard`` package,
looked up lazily, DESIGN.md §2), prints the leaderboard and writes
``<out>/leaderboard/leaderboard.html`` and ``leaderboard.csv``. A baseline that cannot be
run is reported and the others still run; under ``--strict`` it makes the exit code 1.
"""

from __future__ import annotations

import argparse
import html
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from worldolympiad.types import TRACKS as ALL_TRACKS

if TYPE_CHECKING:
    from worldolympiad.evaluator import EvalConfig, RunOutcome
    from worldolympiad.types import RunSpec

# The model run when none is given: the world model shipped inside Inferix
# (inferix/weights/reference_world, trained by `reference-world-lab train`; see its MODEL_CARD.md).
DEFAULT_MODEL = "inferix:reference-world"
DEFAULT_SUITE = "smoke"
# Where the leaderboard of a --baselines run goes, under --out.
LEADERBOARD_DIR = "leaderboard"

EPILOG = """\
examples:
  evaluate-model                                            # default model + the 3 baselines on smoke, all tracks
  evaluate-model --no-baselines                             # the default model only
  evaluate-model --model reference --baselines --limit 1    # a model of yours and the baselines, one case
  evaluate-model --model videos:my_videos/ --suite smoke    # score pre-generated <case_id>.mp4 files
  evaluate-model --model videos:data/wo#mymodel --suite wo.json --tracks physics,interaction
  evaluate-model --model perturbed:teleport@0.5 --seeds 0,1,2 --workers 2
  evaluate-model --model diffusers:/models/wan-t2v --suite smoke --device cuda --limit 2
  evaluate-model --model py:pan.py:PanningModel --suite smoke --option model.speed=2   # your WorldModel class
  evaluate-model --model http:http://127.0.0.1:8000 --suite smoke  # a model server (docs/model_http.md)
  evaluate-model --model reference --judge openai:http://localhost:8000/v1#qwen2.5-vl --option physics.judge_samples=3
  evaluate-model --model reference --suite smoke --shard 0/2   # half the work (a Slurm array task); then
  worldolympiad merge runs/reference__smoke__*__shard-*-of-2    # join the shards into one run
  evaluate-model --model perturbed:teleport@0.5 --executor ray:auto --workers 4   # on a Ray cluster (docs/cluster.md)
  evaluate-model --model reference --executor ray:auto --judge hf:/models/Qwen2.5-VL-7B-Instruct --judge-workers 2

the run directory <out>/<model>__<suite>__<hash>/ holds run_spec.json, videos/, results.jsonl,
timings.jsonl, summary.json and run.log (what pycolmap, MuJoCo and other native libraries print
while videos are generated and scored; the terminal keeps the progress line, which weighs rows by
their cost and names the running ones); rerunning the same command resumes it: finished rows are
reused unless their inputs changed (a replaced video, an edited case, a video that now exists: every row
records its input files' fingerprints), and failed rows are reused unless --retry-failed is given.
A --model that cannot work (a misspelt kind, a missing folder, a hub id) exits 2 before any work.

--baselines (on when --model is not given, off when it is) then scores the leaderboard baselines
(repeat-first-frame, inferix:reference-world-random, inferix:reference-world, reference; the main
model is not run twice) with the same flags, each into its own run directory, and prints a leaderboard
of this invocation's runs, written to <out>/leaderboard/leaderboard.html (+ .csv, and .sqlite for
`worldolympiad leaderboard --db <out>/leaderboard/leaderboard.sqlite serve`).
"""


class UsageError(ValueError):
    """A bad command line; reported in one line with exit code 2."""


class _ModelAction(argparse.Action):
    """Stores ``--model`` and records that it was given (the default of ``--baselines`` depends on it)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        namespace.model_given = True


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="evaluate-model",
        description="Score a video world model on a WorldOlympiad suite (physics, geometry, interaction, long video).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.set_defaults(model_given=False)
    p.add_argument("--model", default=DEFAULT_MODEL, action=_ModelAction,
                   help=f"model SPEC: videos:DIR[#PREFIX], reference, perturbed:NAME[@S], diffusers:PATH, "
                        f"inferix:NAME, py:MODULE_OR_FILE.py:CLASS, http:URL (default: {DEFAULT_MODEL})")
    p.add_argument("--suite", default=DEFAULT_SUITE, help=f"suite name or suite/case JSON file (default: {DEFAULT_SUITE})")
    p.add_argument("--tracks", default=",".join(ALL_TRACKS), help="comma-separated tracks (default: all)")
    p.add_argument("--seeds", default="0", help="comma-separated seeds (default: 0)")
    p.add_argument("--judge", default="none", help="judge SPEC: none, hf:PATH, openai:BASE_URL#MODEL (default: none)")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"], help="where models run (default: auto)")
    p.add_argument("--workers", type=int, default=1,
                   help="worker processes (default: 1); with --executor ray, the number of model copies "
                        "(generation actors) on the cluster")
    p.add_argument("--judge-workers", type=int, default=None, metavar="N",
                   help="with --executor ray and --judge hf:PATH: copies of the judge model in the Ray judge pool, "
                        "one GPU each on a cuda run (default: 1); every scoring task's judge asks the pool")
    p.add_argument("--executor", default="local", metavar="local|ray[:ADDRESS]",
                   help="who runs the work: local (this machine, default) or ray (a Ray cluster: ray:auto joins "
                        "the one `ray start` made, ray:HOST:PORT another, plain ray starts one on this machine); "
                        "needs pip install 'worldolympiad[ray]'; docs/cluster.md")
    p.add_argument("--shard", metavar="I/N", default=None,
                   help="run only shard I of N (every N-th case and seed, e.g. a Slurm array task), into "
                        "<out>/<run>__shard-I-of-N/; join the N shard directories with `worldolympiad merge`")
    p.add_argument("--out", default="runs", help="parent folder of run directories (default: runs/)")
    p.add_argument("--resume", action=argparse.BooleanOptionalAction, default=True,
                   help="reuse finished rows and stored videos of the same run, and videos the same model generated "
                        "for the same cases in a run beside it that only scored differently (another track "
                        "version, --tracks or judge; default: --resume)")
    p.add_argument("--retry-failed", action="store_true", help="on resume, recompute rows that failed")
    p.add_argument("--limit", type=int, default=None, help="only the first N cases")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="track/model option, repeatable (e.g. physics.segmenter=opencv, model.steps=4; "
                        "`worldolympiad ls options` lists every key; an unknown key exits 2); "
                        "video.pix_fmt / video.qp set how generated videos are stored and scored "
                        "(default yuv444p, constant quantizer 18: 4:2:0 loses the colour of 1-2 px sprites)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--report", action=argparse.BooleanOptionalAction, default=True,
                   help="write RUN_DIR/report.html with the leaderboard package when it is installed (default: on)")
    p.add_argument("--baselines", action=argparse.BooleanOptionalAction, default=None,
                   help="after the model, also score the leaderboard baselines (repeat-first-frame, "
                        "inferix:reference-world-random, inferix:reference-world, reference) with the same flags "
                        "and print/write a leaderboard of these runs to <out>/leaderboard/ "
                        "(default: on when --model is not given, off when it is)")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 if any row failed, the judge was down (a run error) or a baseline could not run")
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    return p


def _parse_list(text: str, what: str) -> list[str]:
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not items:
        raise UsageError(f"--{what} is empty; give a comma-separated list")
    return items


def _did_you_mean(names: Sequence[str], known: Sequence[str]) -> str:
    """`` (did you mean 'x'?)`` for the first of ``names`` close to a known one, else ``""``."""
    import difflib

    for name in names:
        close = difflib.get_close_matches(name, list(known), n=2, cutoff=0.5)
        if close:
            return f" (did you mean {' or '.join(repr(c) for c in close)}?)"
    return ""


def _parse_seeds(text: str) -> list[int]:
    try:
        seeds = [int(x) for x in _parse_list(text, "seeds")]
    except ValueError as e:
        raise UsageError(f"--seeds must be comma-separated integers (e.g. 0,1,2), got {text!r}") from e
    if len(set(seeds)) != len(seeds):
        raise UsageError(f"--seeds has duplicates: {text!r}")
    return seeds


@dataclass
class _Plan:
    """The validated flags shared by every model one invocation runs."""

    tracks: list[str]
    seeds: list[int]
    options: dict[str, Any]
    config: EvalConfig


def _plan(args: argparse.Namespace) -> _Plan:
    """Validate the flags once (raises UsageError / ValueError)."""
    from worldolympiad.evaluator import EvalConfig, parse_options
    from worldolympiad.judges import preflight_judge
    from worldolympiad.options import check_options
    from worldolympiad.registries import JUDGES, TRACKS, parse_spec

    tracks = _parse_list(args.tracks, "tracks")
    unknown = [t for t in tracks if t not in TRACKS]
    if unknown:
        raise UsageError(f"unknown track(s) {', '.join(unknown)}{_did_you_mean(unknown, TRACKS.names())}; "
                         f"known: {', '.join(TRACKS.names())}")
    seeds = _parse_seeds(args.seeds)
    judge_prefix, _ = parse_spec(args.judge)
    if judge_prefix not in JUDGES:
        raise UsageError(f"unknown judge {args.judge!r}{_did_you_mean([judge_prefix], JUDGES.names())}; "
                         "use none, hf:PATH or openai:BASE_URL#MODEL "
                         f"(known: {', '.join(JUDGES.names())})")
    if args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    if args.judge_workers is not None and args.judge_workers < 1:
        raise UsageError(f"--judge-workers must be >= 1, got {args.judge_workers}")
    if args.limit is not None and args.limit < 1:
        raise UsageError(f"--limit must be >= 1, got {args.limit}")
    out = Path(args.out).expanduser()
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {args.out} is a file; pass a folder (run directories are made inside it)")
    options = parse_options(args.option)
    check_options(options, args.model)  # an unknown key exits 2 here, naming the valid keys
    shard = None
    if args.shard is not None:
        from worldolympiad.shards import Shard, ShardError

        try:
            shard = Shard.parse(args.shard)
        except ShardError as e:
            raise UsageError(str(e)) from e
    executor = _check_executor(args.executor)
    note = preflight_judge(args.judge)  # a model the judge server does not serve fails here, before any row
    if note:
        print(note)
    config = EvalConfig(out=Path(args.out), workers=args.workers, device=args.device, resume=args.resume,
                        retry_failed=args.retry_failed, limit=args.limit, progress=not args.no_progress,
                        shard=shard, executor=executor, judge_workers=args.judge_workers)
    return _Plan(tracks=tracks, seeds=seeds, options=options, config=config)


def _check_executor(text: str) -> str:
    """``--executor``: ``local``, ``ray`` or ``ray:ADDRESS``; ray must be importable (checked before any work).

    Raises:
        UsageError: another value, or ray is not installed.
    """
    kind, _, address = text.strip().partition(":")
    if kind == "local" and not address:
        return "local"
    if kind != "ray":
        raise UsageError(f"--executor must be local, ray or ray:ADDRESS (e.g. ray:auto, ray:10.0.0.1:6379), got {text!r}")
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        raise UsageError("--executor ray needs Ray on this machine and on the cluster: pip install 'worldolympiad[ray]' "
                         "(or pip install ray); docs/cluster.md")
    return text.strip()


def _run_model(model: str, args: argparse.Namespace, plan: _Plan) -> tuple[RunSpec, RunOutcome]:
    """Evaluate one model with the invocation's flags, print its tables and write its report.

    Raises:
        EvaluationError, ValueError: the run could not start (see :func:`worldolympiad.evaluator.evaluate`).
    """
    from worldolympiad.evaluator import (
        evaluate,
        format_errors,
        format_results_table,
        format_summary,
        format_warnings,
        make_run_spec,
    )

    spec = make_run_spec(model, args.suite, plan.tracks, plan.seeds, args.judge, plan.options)
    outcome = evaluate(spec, plan.config)
    print(format_results_table(outcome.rows, spec.tracks))
    print()
    print(format_summary(outcome.summary))
    errors = format_errors(outcome.summary)
    if errors:
        print()
        print(errors)
    warnings = format_warnings(outcome.summary)
    if warnings:
        print(f"\n{warnings}")
    for line in _judge_notes(outcome.summary):
        print(f"\n{line}")
    print(f"\nrun directory: {outcome.run_dir}  ({outcome.computed} rows computed, {outcome.skipped} reused)")
    if plan.config.shard is not None:
        n = plan.config.shard.count
        print(f"shard {plan.config.shard} of run {spec.hash}: once all {n} shards are done, join them with\n"
              f"  worldolympiad merge {outcome.run_dir.parent / spec.dirname}__shard-*-of-{n}")
    from worldolympiad.rundir import RUN_LOG

    run_log = outcome.run_dir / RUN_LOG
    if run_log.is_file() and run_log.stat().st_size:
        print(f"third-party output (pycolmap/glog, MuJoCo, ...): {run_log}")
    for line in _resume_notes(outcome):
        print(line)
    if args.report:
        _write_report(outcome.run_dir)
    return spec, outcome


def _judge_notes(summary: dict[str, Any]) -> list[str]:
    """The run-level judge lines: an outage (also ``run_errors`` in summary.json), what the judge cost
    and how it failed, copied samples (``judge_warnings``) and a spent budget."""
    lines = [f"RUN ERROR: {e}" for e in summary.get("run_errors") or ()]
    judge = summary.get("judge") or {}
    if judge.get("sent"):
        kinds = ", ".join(f"{n} {k}" for k, n in sorted((judge.get("failed_by_kind") or {}).items()))
        lines.append(f"judge: {judge['sent']} request(s), {judge.get('failed', 0)} failed{f' ({kinds})' if kinds else ''}, "
                     f"{judge.get('usable', 0)} usable answer(s), {judge.get('prompt_tokens', 0):,} prompt + "
                     f"{judge.get('completion_tokens', 0):,} answer tokens")
    lines += [f"JUDGE WARNING: {w}" for w in summary.get("judge_warnings") or ()]
    if judge.get("refused"):
        lines.append(f"judge budget of {judge.get('budget')} request(s) spent: {judge['refused']} request(s) not "
                     "sent, their judge metrics are missing (raise it with ?budget=N on --judge)")
    return lines


def _resume_notes(outcome: RunOutcome, examples: int = 5) -> list[str]:
    """What a rerun did differently: rows recomputed because their inputs changed, failed rows reused."""
    lines = []
    if outcome.recomputed_inputs:
        shown = "; ".join(outcome.changed[:examples]) + ("; ..." if len(outcome.changed) > examples else "")
        lines.append(f"{outcome.recomputed_inputs} row(s) recomputed because their inputs changed ({shown})")
    if outcome.reused_failed:
        lines.append(f"{outcome.reused_failed} failed row(s) reused from an earlier run of this command; "
                     "once their cause is fixed, add --retry-failed to compute them again")
    if outcome.reused_videos:
        origins = sorted(set(outcome.reused_videos.values()))
        lines.append(f"{len(outcome.reused_videos)} generated video(s) reused from {', '.join(origins[:3])}"
                     + (" and others" if len(origins) > 3 else "")
                     + " (same model, weights, model options and case inputs; only the scoring differs); "
                     "--no-resume generates them again")
    return lines


def _run_baselines(args: argparse.Namespace, plan: _Plan) -> tuple[list[tuple[RunSpec, RunOutcome]], list[str]]:
    """Every leaderboard baseline other than the main model, one after another.

    Returns the runs that completed and one line per baseline that raised (the others still run).
    """
    from worldolympiad.models.baselines import LEADERBOARD_BASELINES

    todo = [(m, what) for m, what in LEADERBOARD_BASELINES.items() if m != args.model]
    done: list[tuple[RunSpec, RunOutcome]] = []
    failed: list[str] = []
    for i, (model, what) in enumerate(todo, start=1):
        print(f"\n=== baseline {i}/{len(todo)}: {model} ({what}) ===")
        try:
            done.append(_run_model(model, args, plan))
        except Exception as e:  # noqa: BLE001 - one baseline must not stop the others
            logging.getLogger(__name__).debug("baseline %s failed", model, exc_info=True)
            line = f"{model}: {type(e).__name__}: {e}"
            print(f"baseline {line} (skipped; the other baselines still run)", file=sys.stderr)
            failed.append(line)
    return done, failed


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``evaluate-model``; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    from worldolympiad.evaluator import EvaluationError

    try:
        plan = _plan(args)
        _check_model(args.model)
        if args.model.startswith("videos:"):
            _check_videos(args.model, args.suite, plan.seeds, args.limit)
            _print_input_warnings(args.model, args.suite, plan.seeds[0], args.limit)
        runs = [_run_model(args.model, args, plan)]
    except (UsageError, EvaluationError, ValueError) as e:
        print(f"evaluate-model: error: {e}", file=sys.stderr)
        return 2
    failed: list[str] = []
    if args.baselines if args.baselines is not None else not args.model_given:
        done, failed = _run_baselines(args, plan)
        runs += done
        _write_leaderboard(runs, plan.config.out)
        if failed:
            print(f"\nbaselines that could not run ({len(failed)}): " + "; ".join(failed))
    if args.strict and (failed or any(outcome.summary["errors"] or outcome.summary.get("run_errors")
                                      for _, outcome in runs)):
        return 1
    return 0


def _check_model(model: str) -> None:
    """``--model`` resolved and checked before any work (no run directory is made for a bad one).

    Raises:
        UsageError: a misspelt kind (with "did you mean"), a missing folder, a hub id, an unknown name.
    """
    from worldolympiad.models.base import ModelSpecError, check_model_spec

    try:
        check_model_spec(model)
    except ModelSpecError as e:
        raise UsageError(str(e)) from e


def _check_videos(model: str, suite: str, seeds: Sequence[int], limit: int | None, examples: int = 5) -> None:
    """Say how many of the suite's cases a ``videos:`` folder has a video for, and which lack one.

    Raises:
        UsageError: not one case has a video (a wrong folder or a naming scheme the model does not read).
    """
    from worldolympiad.models.videos import video_coverage
    from worldolympiad.suites import SuiteError, load_suite_lenient

    root, _, prefix = model.removeprefix("videos:").partition("#")
    try:
        cases = load_suite_lenient(suite).cases[:limit]
    except SuiteError:
        return  # evaluate() reports the suite's own error
    if not cases:
        return
    cov = video_coverage(root, cases, seeds, prefix or None)

    def some(ids: Sequence[str]) -> str:
        return ", ".join(ids[:examples]) + (f" (+{len(ids) - examples} more)" if len(ids) > examples else "")

    renames = "; ".join(f"rename {f} to {cid}{Path(f).suffix}" for f, cid in list(cov.renames.items())[:examples])
    naming = ("name each video <case_id>.mp4 (or <case_id>__s<seed>.mp4 per seed)"
              + (f"; did you mean: {renames}" if renames else ""))
    if not cov.found:
        raise UsageError(f"--model {model}: no video for any of the {len(cases)} case(s) of {suite} "
                         f"({cov.files} video file(s) in {root}); {naming}; the cases are {some(cov.missing)}")
    if cov.missing:
        print(f"warning: {model}: videos found for {len(cov.found)} of {len(cases)} case(s); no video for "
              f"{some(cov.missing)} — their rows will fail; {naming}", file=sys.stderr)
    else:
        print(f"{model}: videos found for all {len(cases)} case(s)")


def _print_input_warnings(model: str, suite: str, seed: int, limit: int | None) -> None:
    """Once per run, a summary of what in a ``videos:`` folder will weaken the evidence (4:2:0, lossy, size,
    length, fps; :func:`worldolympiad.models.videos.video_input_warnings`). Never fails the run."""
    from worldolympiad.models.videos import summarize_warnings, video_input_warnings
    from worldolympiad.suites import load_suite_lenient

    root, _, prefix = model.removeprefix("videos:").partition("#")
    try:
        cases = load_suite_lenient(suite).cases[:limit]
        warnings = video_input_warnings(root, cases, seed=seed, prefix=prefix or None)
    except Exception as e:  # noqa: BLE001 - the check is advice; the run reports real failures per case
        logging.getLogger(__name__).debug("input check failed", exc_info=True)
        print(f"input check: skipped ({type(e).__name__}: {e})")
        return
    lines = summarize_warnings([w for w in warnings if w.kind != "missing"], len(cases))
    if lines:
        print(f"input check of {root} (warnings; scores are still computed; "
              f"`worldolympiad validate SUITE --videos DIR` lists every file):")
        for line in lines:
            print(f"  warning: {line}")
        print()


def _write_leaderboard(runs: Sequence[tuple[RunSpec, RunOutcome]], out: Path) -> Path | None:
    """Import ``runs`` into ``<out>/leaderboard/leaderboard.sqlite``, print their leaderboard, write .html/.csv.

    The ``leaderboard`` package is looked up lazily (DESIGN.md §2); when it is missing, or the
    table cannot be built, one line says so and the run still succeeds (its scores are on disk).
    Only this invocation's runs are shown; the store keeps every run imported there.
    """
    from worldolympiad.registries import REPORTING

    try:
        store_cls = REPORTING.get("store")
        leaderboard_table = REPORTING.get("leaderboard_table")
        load_schema = REPORTING.get("schema")
    except (ImportError, AttributeError, KeyError) as e:
        print(f"\nleaderboard: skipped (the leaderboard package is not available: {e})")
        return None
    lb_dir = Path(out) / LEADERBOARD_DIR
    db = lb_dir / "leaderboard.sqlite"
    try:
        schema = load_schema()
        ids = {spec.hash for spec, _ in runs}
        with store_cls(db) as store:
            for _, outcome in runs:
                store.add_run(outcome.run_dir)
            rows = store.rows()
            metrics = store.metric_rows()
        table = leaderboard_table(rows[rows["run"].isin(ids)], schema, metrics=metrics[metrics["run"].isin(ids)])
        tracks = {t for spec, _ in runs for t in spec.tracks}
        shown = ["Rank", "Model", *[s.column for t, s in schema.tracks.items() if t in tracks],
                 *[c["column"] for c in schema.metric_columns if c["column"] in table and table[c["column"]].notna().any()],
                 schema.overall_display, "Tracks"]
        print(f"\nleaderboard ({len(table)} models, suite {runs[0][0].suite}):")
        print(table[[c for c in shown if c in table]].to_string(index=False, na_rep="—") if len(table) else "(no rows)")
        # The files keep every column (CI, coverage...) except those empty for all of these runs.
        table = table[[c for c in table if not (table[c].isna() | (table[c] == "")).all()]]
        lb_dir.mkdir(parents=True, exist_ok=True)
        table.to_csv(lb_dir / "leaderboard.csv", index=False)
        page = lb_dir / "leaderboard.html"
        links = "".join(f"<li><a href='{_link(o.run_dir, lb_dir)}'>{html.escape(s.model)}</a> — "
                        f"{html.escape(o.run_dir.name)}</li>" for s, o in runs)
        page.write_text("<!doctype html><html><head><meta charset='utf-8'><title>WorldOlympiad leaderboard</title>"
                        "<style>body{font-family:system-ui,sans-serif;margin:2em} table{border-collapse:collapse}"
                        "td,th{border:1px solid #ccc;padding:4px 8px;font-size:14px}</style></head><body>"
                        f"<h1>WorldOlympiad leaderboard — {html.escape(runs[0][0].suite)}</h1>"
                        + table.to_html(index=False, na_rep="—") + f"<h2>Runs</h2><ul>{links}</ul></body></html>")
    except Exception as e:  # noqa: BLE001 - the scores are on disk; the leaderboard must not fail the run
        logging.getLogger(__name__).debug("leaderboard failed", exc_info=True)
        print(f"\nleaderboard: not written ({type(e).__name__}: {e}); run `worldolympiad leaderboard --db {db} "
              "add RUN_DIR...` then `build` to retry")
        return None
    print(f"leaderboard: {page}  (store {db}; browse: worldolympiad leaderboard --db {db} serve)")
    return page


def _link(run_dir: Path, start: Path) -> str:
    """A relative link from ``start`` to the run's report.html (or to the run folder without one)."""
    target = run_dir / "report.html" if (run_dir / "report.html").exists() else run_dir
    return html.escape(os.path.relpath(target.resolve(), start.resolve()))


def _write_report(run_dir: Path) -> None:
    """RUN_DIR/report.html via the ``report`` entry of ``REPORTING`` (looked up lazily, DESIGN.md §2)."""
    from worldolympiad.registries import REPORTING

    try:
        build_report = REPORTING.get("report")
    except (ImportError, AttributeError, KeyError) as e:
        print(f"report: skipped (the leaderboard package is not available: {e})")
        return
    try:
        print(f"report: {build_report(run_dir)}")
    except Exception as e:  # noqa: BLE001 - the scores are on disk; a report failure must not fail the run
        logging.getLogger(__name__).debug("report failed", exc_info=True)
        print(f"report: not written ({type(e).__name__}: {e}); run `worldolympiad report {run_dir}` to retry")


if __name__ == "__main__":
    sys.exit(main())
