"""``worldolympiad leaderboard {add,build,serve,export}``."""

from __future__ import annotations

import argparse
import difflib
from pathlib import Path

from leaderboard.store import DEFAULT_DB, Store
from leaderboard.submission import SubmissionError
from worldolympiad.cli import help_examples

EPILOG = """examples:
  worldolympiad leaderboard add runs/reference__smoke__1a2b3c4d5e6f     # import a run (idempotent)
  worldolympiad leaderboard add runs/*                                 # import every run folder
  worldolympiad leaderboard add --name "Reference world" runs/inferix-reference-world__smoke__45932ee46ec3
  worldolympiad leaderboard build --out leaderboard.csv                # print the table, export it
  worldolympiad leaderboard build --suite standard --self-reported     # uploads on another suite
  worldolympiad leaderboard serve --port 7860                          # the Gradio site on 127.0.0.1
"""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="worldolympiad leaderboard", description="Maintain and serve the leaderboard.",
                                epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--db", default=str(DEFAULT_DB), help="SQLite store (default %(default)s)")
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("add", help="import run directories (idempotent)",
                       **help_examples("worldolympiad leaderboard add runs/*",
                                   "worldolympiad leaderboard add runs/my-model__smoke__1a2b3c4d5e6f --name \"My model\"",
                                   "worldolympiad leaderboard add runs/theirs --self-reported"))
    a.add_argument("run_dirs", nargs="+")
    a.add_argument("--self-reported", action="store_true", help="mark as self-reported instead of verified")
    a.add_argument("--name", default=None, help="display name of the model (one run directory only)")
    a.add_argument("--verifies", metavar="UPLOAD_ID", default=None,
                   help="the run re-scored this upload's videos (see `rescore`): list it as verified")
    r = sub.add_parser("rescore", help="extract an upload's videos to re-score them here (then `add --verifies`)",
                       **help_examples("worldolympiad leaderboard rescore u1a2b3c4d5e6 --out rescore/u1a2b3c4d5e6",
                                   "evaluate-model --model videos:rescore/u1a2b3c4d5e6 --suite smoke --no-baselines",
                                   "worldolympiad leaderboard add runs/videos--rescore-u1a2b3c4d5e6__smoke__HASH "
                                   "--verifies u1a2b3c4d5e6"))
    r.add_argument("upload_id")
    r.add_argument("--out", required=True, help="folder for the videos (a `videos:` model folder)")
    b = sub.add_parser("build", help="print the leaderboard table; optionally export rows (.csv/.json/.parquet)",
                       **help_examples("worldolympiad leaderboard build", "worldolympiad leaderboard build --suite smoke",
                                   "worldolympiad leaderboard build --self-reported --out uploads.csv"))
    b.add_argument("--scenario", default=None)
    b.add_argument("--suite", default="", help="the suite to rank (default: the one most models ran)")
    b.add_argument("--self-reported", action="store_true", help="show uploads instead of verified runs")
    b.add_argument("--out", default=None, help="export all rows to this file")
    s = sub.add_parser("serve", help="serve the Gradio site",
                       **help_examples("worldolympiad leaderboard serve    # http://127.0.0.1:7860",
                                   "worldolympiad leaderboard --db runs/leaderboard/leaderboard.sqlite serve --port 8080"))
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=7860)
    args = p.parse_args(argv)

    if args.cmd == "add":
        if (args.name is not None or args.verifies) and len(args.run_dirs) != 1:
            print(f"error: --name/--verifies take one run directory; got {len(args.run_dirs)} — add them one by one")
            return 2
        return _add(args)
    if args.cmd == "rescore":
        with Store(args.db) as store:
            try:
                files = store.extract_upload_videos(args.upload_id, args.out)
                suite, spec_json = store.conn.execute("SELECT suite, spec_json FROM runs WHERE run_id = ?",
                                                      (args.upload_id,)).fetchone()
            except SubmissionError as e:
                print(f"error: {'; '.join(e.problems)}")
                return 2
        print(f"wrote {len(files)} files to {args.out}; now re-score them and list the result as verified:\n"
              f"  evaluate-model --model videos:{args.out} --suite {suite}{_seeds_flag(spec_json)} --no-baselines "
              "--out runs\n"
              f"  worldolympiad leaderboard --db {args.db} add --verifies {args.upload_id} runs/<the new run folder>")
        return 0
    if args.cmd == "build":
        import pandas as pd

        from leaderboard.site import SELF_REPORTED, VERIFIED, available_suites, board_table

        known = available_suites(Path(args.db))
        if args.suite and args.suite not in known:
            close = difflib.get_close_matches(args.suite, known, n=1)
            print(f"error: no scored run on suite {args.suite!r}" + (f"; did you mean {close[0]!r}?" if close else "")
                  + f" (suites: {', '.join(known) or 'none yet'})")
            return 2
        df = board_table(Path(args.db), args.scenario or "", suite=args.suite,
                         view=SELF_REPORTED if args.self_reported else VERIFIED)
        df = df.drop(columns=[c for c in ("Key",) if c in df])
        if args.out:
            with Store(args.db) as store:
                print(f"exported rows to {store.export(args.out)}")
        with pd.option_context("display.width", 200, "display.max_columns", 30):
            print(df.to_string(index=False) if not df.empty else "(no results yet: `leaderboard add RUN_DIR` first)")
        return 0
    if args.cmd == "serve":
        from leaderboard.site import serve

        if not Path(args.db).exists():
            print(f"note: {args.db} does not exist yet; the site starts empty")
        serve(args.db, args.host, args.port, block=True)
        return 0
    return 2


def _warn_damaged(run_dir: Path) -> None:
    """Say which lines of ``results.jsonl`` were skipped (they are not in the store)."""
    from leaderboard.aggregate import damaged_note, scan_results_jsonl

    damaged = scan_results_jsonl(run_dir / "results.jsonl").damaged
    if damaged:
        print(f"{run_dir}: warning: skipped {damaged_note(damaged)}")


def _seeds_flag(spec_json: str) -> str:
    """`` --seeds 0,1`` when the upload declares seeds (the re-score must cover the same ones)."""
    import json

    seeds = json.loads(spec_json).get("seeds")
    ok = isinstance(seeds, list) and seeds and all(isinstance(x, int) and not isinstance(x, bool) for x in seeds)
    return f" --seeds {','.join(map(str, seeds))}" if ok else ""


def _add(args: argparse.Namespace) -> int:
    """``add``: one line per folder; exit 1 if a run was refused, 2 if no folder was a run directory.

    ``add runs/*`` meets folders that are not runs (``runs/leaderboard``, written by
    evaluate-model): they are skipped with a note instead of failing the whole command.
    """
    code, n_runs = 0, 0
    with Store(args.db) as store:
        for d in args.run_dirs:
            if Path(d).is_dir() and not any((Path(d) / f).exists() for f in ("run_spec.json", "results.jsonl")):
                print(f"{d}: skipped (not a run directory: no run_spec.json or results.jsonl)")
                continue
            n_runs += 1
            try:
                if args.verifies:
                    print(f"{d}: {store.verify_upload(args.verifies, d, name=args.name)} (verifies upload "
                          f"{args.verifies})")
                else:
                    print(f"{d}: {store.add_run(d, verified=not args.self_reported, name=args.name)}")
                _warn_damaged(Path(d))
            except SubmissionError as e:
                print(f"{d}: rejected: {'; '.join(e.problems[:5])}" + (" ..." if len(e.problems) > 5 else ""))
                code = 1
            except (FileNotFoundError, ValueError) as e:
                print(f"{d}: error: {e}")
                code = 1
    if n_runs == 0:
        print("error: none of these folders is a run directory; pass the folders evaluate-model wrote "
              "(RUN_DIR/run_spec.json + results.jsonl)")
        return 2
    return code
