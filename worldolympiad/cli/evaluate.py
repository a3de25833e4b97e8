"""``evaluate-model``: score a world model on a suite and write a run directory.

Usage errors (bad flag values, unknown suite or track) print one line and exit 2. A run
that completes exits 0 even when some rows failed (they are listed at the end); pass
``--strict`` to exit 1 in that case.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from worldolympiad.types import TRACKS as ALL_TRACKS

# The model run when none is given: the world model shipped inside Inferix
# (inferix/weights/reference_world, trained by `inferix train`; see its MODEL_CARD.md).
DEFAULT_MODEL = "inferix:reference-world"
DEFAULT_SUITE = "smoke"

EPILOG = """\
examples:
  evaluate-model                                            # default model on the smoke suite, all tracks
  evaluate-model --model videos:my_videos/ --suite smoke    # score pre-generated <case_id>.mp4 files
  evaluate-model --model videos:data/wo#mymodel --suite wo.json --tracks physics,interaction
  evaluate-model --model perturbed:teleport@0.5 --seeds 0,1,2 --workers 2
  evaluate-model --model diffusers:/models/wan-t2v --suite smoke --device cuda --limit 2
  evaluate-model --model reference --judge openai:http://localhost:8000/v1#qwen2.5-vl --option physics.samples=3

the run directory <out>/<model>__<suite>__<hash>/ holds run_spec.json, videos/, results.jsonl,
timings.jsonl and summary.json; rerunning the same command resumes it.
"""


class UsageError(ValueError):
    """A bad command line; reported in one line with exit code 2."""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="evaluate-model",
        description="Score a video world model on a WorldOlympiad suite (physics, geometry, interaction, long video).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--model", default=DEFAULT_MODEL,
                   help=f"model SPEC: videos:DIR[#PREFIX], reference, perturbed:NAME[@S], diffusers:PATH, "
                        f"inferix:NAME (default: {DEFAULT_MODEL})")
    p.add_argument("--suite", default=DEFAULT_SUITE, help=f"suite name or suite/case JSON file (default: {DEFAULT_SUITE})")
    p.add_argument("--tracks", default=",".join(ALL_TRACKS), help="comma-separated tracks (default: all)")
    p.add_argument("--seeds", default="0", help="comma-separated seeds (default: 0)")
    p.add_argument("--judge", default="none", help="judge SPEC: none, hf:PATH, openai:BASE_URL#MODEL (default: none)")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"], help="where models run (default: auto)")
    p.add_argument("--workers", type=int, default=1, help="worker processes (default: 1)")
    p.add_argument("--out", default="runs", help="parent folder of run directories (default: runs/)")
    p.add_argument("--resume", action=argparse.BooleanOptionalAction, default=True,
                   help="reuse finished rows and stored videos of the same run (default: --resume)")
    p.add_argument("--retry-failed", action="store_true", help="on resume, recompute rows that failed")
    p.add_argument("--limit", type=int, default=None, help="only the first N cases")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="track/model option, repeatable (e.g. physics.segmenter=opencv, model.num_inference_steps=4)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--report", action=argparse.BooleanOptionalAction, default=True,
                   help="write RUN_DIR/report.html with the leaderboard package when it is installed (default: on)")
    p.add_argument("--strict", action="store_true", help="exit 1 if any row failed")
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    return p


def _parse_list(text: str, what: str) -> list[str]:
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not items:
        raise UsageError(f"--{what} is empty; give a comma-separated list")
    return items


def _parse_seeds(text: str) -> list[int]:
    try:
        seeds = [int(x) for x in _parse_list(text, "seeds")]
    except ValueError as e:
        raise UsageError(f"--seeds must be comma-separated integers (e.g. 0,1,2), got {text!r}") from e
    if len(set(seeds)) != len(seeds):
        raise UsageError(f"--seeds has duplicates: {text!r}")
    return seeds


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``evaluate-model``; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    from worldolympiad.evaluator import (
        EvalConfig,
        EvaluationError,
        evaluate,
        format_errors,
        format_results_table,
        format_summary,
        make_run_spec,
        parse_options,
    )
    from worldolympiad.registries import TRACKS

    try:
        tracks = _parse_list(args.tracks, "tracks")
        unknown = [t for t in tracks if t not in TRACKS]
        if unknown:
            raise UsageError(f"unknown track(s) {', '.join(unknown)}; known: {', '.join(TRACKS.names())}")
        seeds = _parse_seeds(args.seeds)
        from worldolympiad.registries import JUDGES, parse_spec

        judge_prefix, _ = parse_spec(args.judge)
        if judge_prefix not in JUDGES:
            raise UsageError(f"unknown judge {args.judge!r}; use none, hf:PATH or openai:BASE_URL#MODEL "
                             f"(known: {', '.join(JUDGES.names())})")
        if args.workers < 1:
            raise UsageError(f"--workers must be >= 1, got {args.workers}")
        if args.limit is not None and args.limit < 1:
            raise UsageError(f"--limit must be >= 1, got {args.limit}")
        options = parse_options(args.option)
        spec = make_run_spec(args.model, args.suite, tracks, seeds, args.judge, options)
        config = EvalConfig(out=Path(args.out), workers=args.workers, device=args.device, resume=args.resume,
                            retry_failed=args.retry_failed, limit=args.limit, progress=not args.no_progress)
        outcome = evaluate(spec, config)
    except (UsageError, EvaluationError, ValueError) as e:
        print(f"evaluate-model: error: {e}", file=sys.stderr)
        return 2
    print(format_results_table(outcome.rows, spec.tracks))
    print()
    print(format_summary(outcome.summary))
    errors = format_errors(outcome.summary)
    if errors:
        print()
        print(errors)
    print(f"\nrun directory: {outcome.run_dir}  ({outcome.computed} rows computed, {outcome.skipped} reused)")
    if args.report:
        _write_report(outcome.run_dir)
    if args.strict and outcome.summary["errors"]:
        return 1
    return 0


def _write_report(run_dir: Path) -> None:
    """RUN_DIR/report.html via ``leaderboard.report:build_report`` (looked up lazily, DESIGN.md §2)."""
    from worldolympiad.registry import import_target

    try:
        build_report = import_target("leaderboard.report:build_report")
    except (ImportError, AttributeError) as e:
        print(f"report: skipped (the leaderboard package is not available: {e})")
        return
    try:
        print(f"report: {build_report(run_dir)}")
    except Exception as e:  # noqa: BLE001 - the scores are on disk; a report failure must not fail the run
        logging.getLogger(__name__).debug("report failed", exc_info=True)
        print(f"report: not written ({type(e).__name__}: {e}); run `worldolympiad report {run_dir}` to retry")


if __name__ == "__main__":
    sys.exit(main())
