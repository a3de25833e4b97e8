"""``worldolympiad``: list, validate, score, import, generate; thin dispatchers to the other packages.

``ls`` never imports torch: it reads registries (names and descriptions only),
``tracks/<track>/track.yaml`` (via the ``TRACKS`` registry's targets) and each track's rules, and
suite factories (which only build Case objects, no rendering).

Dispatchers hand the rest of the command line to the package that owns the command:

==============================  =====================================
``worldolympiad report ...``    ``leaderboard.report:main(argv)``
``worldolympiad leaderboard``   ``leaderboard.cli:main(argv)``
``worldolympiad scenarios render SUITE OUT``  ``scenarios.render:main([SUITE, OUT, ...])``
``worldolympiad lvbench ...``   ``tracks.longvideo.cli:main(argv)``
==============================  =====================================
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

EPILOG = """\
examples:
  worldolympiad ls models                     # model SPEC prefixes
  worldolympiad ls metrics                    # every track's metrics, bounds and weights (from track.yaml)
  worldolympiad ls suites                     # suites with case counts
  worldolympiad validate my_suite.json        # every problem with its JSON path; exit 1 if any
  worldolympiad validate my_suite.json --videos gen/   # + warnings on the videos (4:2:0, lossy, size, length)
  worldolympiad score gen.mp4 --case case.json --reference ref.mp4 --tracks interaction,longvideo
  worldolympiad import data/worldolympiad --layout worldolympiad-damo --out wo.json
  worldolympiad scenarios render smoke out/   # reference videos + case files for your own model
  worldolympiad generate smoke --model inferix:reference-world --out gen/ --device cuda
                                              # generate only; score later: evaluate-model --model videos:gen/
  worldolympiad merge runs/reference__smoke__*__shard-*-of-2   # join evaluate-model --shard I/N runs
  worldolympiad report runs/reference__smoke__1a2b3c4d5e6f
  worldolympiad leaderboard build
  worldolympiad lvbench --help
"""

# Each subcommand's --help ends with examples (tests/worldolympiad/test_cli_help.py runs the cheap ones
# from the repository root, so paths here are real: docs/examples/ holds the example files).
LS_EPILOG = """\
examples:
  worldolympiad ls models        # model SPEC prefixes (reference, videos:DIR, inferix:NAME, ...)
  worldolympiad ls suites        # suites with case counts
  worldolympiad ls metrics       # every track's metrics, bounds and weights
  worldolympiad ls rules         # the physical rules a case's physics.rules may name
  worldolympiad ls options       # every --option KEY: type, default, help (tracks, models, video storage)
"""
VALIDATE_EPILOG = """\
examples:
  worldolympiad validate docs/examples/case.json     # one case file
  worldolympiad validate docs/examples/suite.json    # a suite: every case, duplicate ids
  worldolympiad validate smoke                       # a registered suite
  worldolympiad validate docs/examples/suite.json --videos gen/   # + warnings on gen/<case_id>.mp4
file formats: docs/formats.md
budgets: a case may ask for at most 20,000 frames and 1,000,000,000 pixels (num_frames x H x W), and a
  video is decoded up to its case's frame count, frames larger than the case's resolution resampled to it
  (at most 4K frames, or 16x the case's pixels); raise them where the machine holds more with the
  environment variables WORLDOLYMPIAD_MAX_FRAMES and WORLDOLYMPIAD_MAX_PIXELS
"""
SCORE_EPILOG = """\
examples:
  worldolympiad score gen/ball_drop_01.mp4 --case docs/examples/case.json
  worldolympiad score gen/ball_drop_01.mp4 --case docs/examples/case.json --tracks physics,longvideo --json -
  worldolympiad score gen/x.mp4 --case x.json --reference ref.mp4 --judge openai:http://localhost:8000/v1#Qwen2.5-VL-7B
"""
IMPORT_EPILOG = """\
examples:
  worldolympiad import outputs_batch --layout worldolympiad-damo --out wo.json   # DAMO layout: general/gaming/embodied
  evaluate-model --model videos:outputs_batch#cosmos --suite wo.json             # then score a model's videos
  worldolympiad import LVBench/ --layout lvbench --out lv.json
layouts: docs/formats.md
"""
MERGE_EPILOG = """\
examples:
  evaluate-model --model reference --suite smoke --shard 0/2        # Slurm array task 0 (and 1 with --shard 1/2)
  worldolympiad merge runs/reference__smoke__*__shard-*-of-2        # -> runs/reference__smoke__<hash>/
  worldolympiad merge /shared/runs/m__standard__*__shard-*-of-8 --out runs --replace
the shards must be every I/N of one evaluate-model command (same run hash, N, --limit), each finished;
the merged directory is the one the unsharded command writes (rerunning that command computes nothing)
"""
GENERATE_EPILOG = """\
examples:
  worldolympiad generate smoke --model inferix:reference-world --out gen/ --device cuda
  worldolympiad generate docs/examples/suite.json --model inferix:tiny --out gen/ --limit 1
  evaluate-model --model videos:gen/ --suite smoke          # score the folder later, anywhere
"""


def _command(name: str) -> tuple[str, str]:
    """``(target, provider)`` of a subcommand another package provides, from the ``COMMANDS``
    registry (worldolympiad.registries): the lazy ``"module:function"`` string is read, not imported."""
    from worldolympiad.registries import COMMANDS

    return COMMANDS.target(name), str(COMMANDS.describe(name).get("provider", "another package"))


# command → ("module:function", package that provides it), as registered in COMMANDS
DISPATCH: dict[str, tuple[str, str]] = {name: _command(name) for name in ("report", "leaderboard", "scenarios", "lvbench")}

LS_KINDS = ("models", "tracks", "metrics", "suites", "rules", "options", "judges", "generators", "perturbations")


class UsageError(ValueError):
    """A bad command line (exit 2)."""


# ============================================================================ ls


def _table(rows: Sequence[Sequence[str]]) -> str:
    if not rows:
        return "(none)"
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=False)) + "  " + r[-1] for r in rows)


def _track_package(name: str) -> str | None:
    """The package holding a track's data files, found without importing the track class."""
    from worldolympiad.registries import TRACKS

    module = TRACKS.target(name).split(":", 1)[0]  # the lazy "module:attr" target, read, not loaded
    import importlib.util

    try:
        spec = importlib.util.find_spec(module)  # imports parent packages only, never the module itself
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations is None:  # a plain module: its data files sit in its package
        return module.rpartition(".")[0] or None
    return module


def load_track_yaml(name: str) -> dict[str, Any] | None:
    """``tracks/<track>/track.yaml`` of a registered track (``None`` if not declared)."""
    import importlib.resources as res

    import yaml

    pkg = _track_package(name)
    if not pkg:
        return None
    try:
        f = res.files(pkg).joinpath("track.yaml")
        if not f.is_file():
            return None
        return yaml.safe_load(f.read_text())  # type: ignore[no-any-return]
    except (ModuleNotFoundError, FileNotFoundError, NotADirectoryError, TypeError):
        return None


def _ls_models() -> str:
    from worldolympiad.registries import MODELS

    return _table([(n, d.get("source", ""), d.get("description", "")) for n, d in MODELS.items()])


def _ls_simple(reg_name: str) -> str:
    from worldolympiad import registries

    reg = getattr(registries, reg_name)
    return _table([(n, d.get("description", "")) for n, d in reg.items()])


def _ls_tracks() -> str:
    from worldolympiad.registries import TRACKS

    rows = []
    for n, d in TRACKS.items():
        y = load_track_yaml(n)
        version = f"v{y.get('version')}" if y else "(metrics not declared)"
        rows.append((n, version, d.get("description", "")))
    return _table(rows)


def _ls_metrics() -> str:
    from worldolympiad.registries import TRACKS

    out = []
    for n in TRACKS.names():
        y = load_track_yaml(n)
        if not y:
            out.append(f"{n}: (metrics not declared)")
            continue
        weights = (y.get("score") or {}).get("weights") or {}
        out.append(f"{n} v{y.get('version', '?')}: {' '.join(str(y.get('description', '')).split())[:100]}")
        rows = []
        for m in y.get("metrics") or []:
            direction = "higher better" if m.get("higher_is_better", True) else "lower better"
            bounds = m.get("bounds")
            b = f"[{bounds[0]}, {bounds[1]}]" if isinstance(bounds, (list, tuple)) and len(bounds) == 2 else "-"
            w = weights.get(m.get("name"))
            rows.append(("  " + str(m.get("name")), f"v{m.get('version', '1')}", direction, b,
                         f"w={w}" if w is not None else "w=0", " ".join(str(m.get("description", "")).split())))
        out.append(_table(rows))
    return "\n".join(out)


def _ls_rules() -> str:
    """Every registered track's rule catalogue (:meth:`worldolympiad.track.Track.rules`; the physics
    track's ``rules.yaml``), read through the ``TRACKS`` registry."""
    from worldolympiad.registries import TRACKS

    rules: list[dict[str, Any]] = []
    for name in TRACKS.names():
        try:
            rules += TRACKS.get(name).rules()
        except (ImportError, AttributeError):  # a track that is not installed, or predates rules()
            continue
    if not rules:
        from worldolympiad.validate import load_schema

        ids = load_schema("case")["properties"]["physics"]["properties"]["rules"]["items"]["enum"]
        return "(rule descriptions not declared: no registered track lists its rules)\n" + "\n".join(ids)
    return _table([(r["id"], r.get("dimension", ""), " ".join(str(r.get("description", "")).split()))
                   for r in rules])


def _suite_counts_without_building(name: str) -> int | None:
    """Case count from the provider module's ``suite_counts() -> {name: n}``, if it has one.

    Building a suite calls every generator's ``make_case``; a provider can list its counts
    from data instead (``scenarios.suites.suite_counts`` reads the YAML fragments), which
    keeps ``ls suites`` instant.
    """
    import importlib

    from worldolympiad.registries import SUITES

    target = SUITES.target(name)  # the lazy "module:attr" string, read without loading it
    try:
        counts = getattr(importlib.import_module(target.split(":", 1)[0]), "suite_counts", None)
        result = counts() if callable(counts) else None
    except Exception:  # noqa: BLE001 - fall back to building the suite
        return None
    return int(result[name]) if isinstance(result, dict) and name in result else None


def _ls_suites() -> str:
    from worldolympiad.registries import SUITES

    rows = []
    for n, d in SUITES.items():
        try:
            known = _suite_counts_without_building(n)
            count = f"{known if known is not None else len(SUITES.get(n)())} cases"
        except Exception as e:  # noqa: BLE001 - a suite that cannot build is listed with why
            count = f"(unavailable: {type(e).__name__}: {str(e).splitlines()[0][:80] if str(e) else ''})"
        rows.append((n, count, d.get("description", "")))
    return _table(rows)


def _ls_options() -> str:
    """Every declared ``--option`` key (worldolympiad.options); ``model.*`` keys per model kind."""
    from worldolympiad.options import declared_options, model_options
    from worldolympiad.registries import MODELS

    def default(v: object) -> str:
        return "-" if v is None else ",".join(map(str, v)) if isinstance(v, list) else str(v)

    def row(key: str, o: Any, who: str = "") -> tuple[str, ...]:
        kind = o.type + (f" ({'|'.join(o.choices)})" if o.choices else "")
        return (key, kind, default(o.default), (f"[{who}] " if who else "") + o.help)

    rows = [row(k, o) for k, o in declared_options().items()]
    for name in MODELS.names():
        rows += [row(f"model.{k}", o, name) for k, o in (model_options(name) or {}).items()]
    return ("--option KEY=VALUE (repeatable); an unknown key or a bad value exits 2 before the run starts\n"
            + _table(rows))


def cmd_ls(args: argparse.Namespace) -> int:
    fn: dict[str, Callable[[], str]] = {
        "models": _ls_models,
        "tracks": _ls_tracks,
        "metrics": _ls_metrics,
        "suites": _ls_suites,
        "rules": _ls_rules,
        "options": _ls_options,
        "judges": lambda: _ls_simple("JUDGES"),
        "generators": lambda: _ls_simple("GENERATORS"),
        "perturbations": lambda: _ls_simple("PERTURBATIONS"),
    }
    print(fn[args.kind]())
    return 0


# ===================================================================== validate


def cmd_validate(args: argparse.Namespace) -> int:
    from worldolympiad.validate import validate_file

    path = Path(args.target)
    if not path.exists():
        from worldolympiad.registries import SUITES

        if args.target in SUITES:
            from worldolympiad.validate import case_warnings, validate_case_dict

            problems = []
            warnings = []
            cases = SUITES.get(args.target)()
            seen: set[str] = set()
            for i, c in enumerate(cases):
                problems += validate_case_dict(c.to_dict(), prefix=f"$[{i}]")
                warnings += case_warnings(c.to_dict(), prefix=f"$[{i}]")
                if c.id in seen:
                    problems.append(f"$[{i}].id: duplicate case id {c.id!r}")  # type: ignore[arg-type]
                seen.add(c.id)
            _report_warnings(args.target, warnings)
            return _report_problems(args.target, problems, len(cases))
        raise UsageError(f"{path} not found (and not a registered suite name); pass a case or suite JSON file")
    from worldolympiad.validate import warnings_for_file

    problems = validate_file(path)
    _report_warnings(str(path), warnings_for_file(path))
    n = 1
    try:
        from worldolympiad.validate import parse_json

        d = parse_json(path.read_text())
        n = len(d["cases"]) if isinstance(d, dict) and isinstance(d.get("cases"), list) else 1
    except (json.JSONDecodeError, OSError):
        pass
    return _report_problems(str(path), problems, n)


def _report_warnings(what: str, warnings: Sequence[Any]) -> None:
    """Weak-evidence warnings (the exit code is the problems' alone)."""
    for w in warnings:
        print(f"{what}: warning: {w}")


def _report_problems(what: str, problems: Sequence[Any], n: int) -> int:
    if problems:
        for p in problems:
            print(f"{what}: {p}")
        print(f"{len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"{what}: OK ({n} case{'s' if n != 1 else ''})")
    return 0


def cmd_validate_and_videos(args: argparse.Namespace) -> int:
    """``validate`` (exit code from the case/suite check alone), then ``--videos DIR`` warnings when given."""
    rc = cmd_validate(args)
    if args.videos:
        _print_video_warnings(args.target, args.videos)
    return rc


def _print_video_warnings(target: str, videos: str) -> None:
    from worldolympiad.models.videos import summarize_warnings, video_input_warnings
    from worldolympiad.suites import load_suite_lenient

    root, _, prefix = videos.partition("#")
    if not Path(root).is_dir():
        raise UsageError(f"--videos {videos}: folder {root} not found; pass the folder holding <case_id>.mp4 files")
    cases = load_suite_lenient(target).cases
    warnings = video_input_warnings(root, cases, prefix=prefix or None)
    for w in warnings:
        print(f"warning: {w}")
    lines = summarize_warnings(warnings, len(cases))
    print(f"{videos}: {len(cases)} case(s) checked, "
          + (f"{len(warnings)} warning(s) (scores are still computed; evidence is weaker):" if warnings else "no warnings"))
    for line in lines:
        print(f"  {line}")


# ======================================================================== score


def cmd_score(args: argparse.Namespace) -> int:
    import dataclasses

    from worldolympiad.evaluator import score_video
    from worldolympiad.types import TRACKS as ALL_TRACKS
    from worldolympiad.types import Case
    from worldolympiad.video.io import VideoError

    case = Case.load(args.case)
    if args.reference:
        case = dataclasses.replace(case, reference=str(Path(args.reference).resolve()))
    tracks = [t.strip() for t in (args.tracks or ",".join(ALL_TRACKS)).split(",") if t.strip()]
    options = _checked_options(args.option)
    try:
        rows = score_video(args.video, case, tracks, seed=args.seed, judge=args.judge, device=args.device,
                           options=options, work_dir=args.work_dir)
    except VideoError as e:
        print(f"worldolympiad score: error: {e}", file=sys.stderr)
        return 1
    table = [("track", "status", "score", "metrics / reason")]
    for r in rows:
        if r.status == "ok":
            detail = ", ".join(f"{m.name}={m.normalized:.3f}" if m.normalized is not None else f"{m.name}:{m.status}"
                               for m in r.metrics)
        else:
            detail = "; ".join(r.errors)
        table.append((r.track, r.status, "-" if r.score is None else f"{r.score:.3f}", detail))
    doc = json.dumps([r.to_dict() for r in rows], indent=2)
    if args.json == "-":
        print(doc)
        return 0
    print(_table(table))
    if args.json:
        Path(args.json).write_text(doc + "\n")
        print(f"wrote {args.json}")
    else:
        print(doc)
    return 0


# ======================================================================= import


def cmd_import(args: argparse.Namespace) -> int:
    root = Path(args.root)
    if not root.is_dir():
        raise UsageError(f"{root} is not a folder; pass the root of the dataset")
    out = Path(args.out) if args.out else None
    if args.layout == "worldolympiad-damo":
        from worldolympiad.importers.damo import import_damo

        path, suite = import_damo(root, out, name=args.name)
        print(f"wrote {path}: {len(suite.cases)} case(s)"
              + (f", {len(suite.broken)} skipped:" if suite.broken else ""))
        for b in suite.broken:
            print(f"  skipped {b.case_id}: {b.error}")
        guessed = [c.id for c in suite.cases if str(c.metadata.get("chunk_boundaries", "")).startswith("even split")]
        if guessed:
            print(f"  note: {len(guessed)} case(s) have several chunks but no intervals or chunk timestamps; their "
                  f"chunks split the video evenly ({', '.join(guessed[:5])}{', ...' if len(guessed) > 5 else ''}); "
                  "add \"interval\": \"[MM:SS, MM:SS)\" to each chunk of prompt.json to fix")
        return 0
    fn = _load_dispatch(*_command("import-lvbench"))
    if fn is None:
        return 2
    result = fn(root, out)
    print(f"imported LV-Bench layout: {result}")
    return 0


def _checked_options(pairs: Sequence[str], model: str | None = None) -> dict[str, Any]:
    """``--option`` pairs parsed and checked against the declared keys (worldolympiad.options).

    Raises:
        UsageError: a pair without ``=``, an unknown key (with the valid ones) or a bad value.
    """
    from worldolympiad.evaluator import parse_options
    from worldolympiad.options import check_options

    try:
        options = parse_options(pairs)
        check_options(options, model)
    except ValueError as e:
        raise UsageError(str(e)) from e
    return options


# ===================================================================== generate


def cmd_generate(args: argparse.Namespace) -> int:
    from worldolympiad.cli.evaluate import UsageError as FlagError
    from worldolympiad.cli.evaluate import _parse_list, _parse_seeds
    from worldolympiad.generate import generate_suite

    try:  # the same flags as evaluate-model's, parsed the same way
        seeds = _parse_seeds(args.seeds)
        tracks = _parse_list(args.tracks, "tracks") if args.tracks else None
    except FlagError as e:
        raise UsageError(str(e)) from e
    manifest = generate_suite(args.model, args.suite, args.out, seeds=seeds, tracks=tracks, fmt=args.format,
                              options=_checked_options(args.option, args.model), device=args.device, limit=args.limit,
                              overwrite=args.overwrite, progress=not args.no_progress)
    rows = manifest["cases"]
    failed = {k: r for k, r in rows.items() if r.get("status") != "ok"}
    print(f"{len(rows) - len(failed)} video(s) in {args.out} ({args.format}), {len(failed)} failed; "
          f"manifest {Path(args.out) / 'generate.json'}")
    for k, r in failed.items():
        print(f"  failed {k}: {r.get('error')}", file=sys.stderr)
    print(f"score them: evaluate-model --model videos:{args.out} --suite {args.suite}"
          + (f" --tracks {args.tracks}" if args.tracks else ""))
    return 1 if failed else 0


def cmd_merge(args: argparse.Namespace) -> int:
    from worldolympiad.shards import ShardError, merge_runs
    from worldolympiad.summary import format_summary

    try:
        outcome = merge_runs([Path(r) for r in args.runs], Path(args.out) if args.out else None, replace=args.replace)
    except ShardError as e:
        raise UsageError(str(e)) from e
    print(format_summary(outcome.summary))
    print(f"\nmerged {len(outcome.shards)} shard(s), {outcome.rows} rows: {outcome.run_dir}")
    return 0


# =================================================================== dispatchers


def _load_dispatch(target: str, provider: str) -> Any:
    from worldolympiad.registry import import_target

    try:
        return import_target(target)
    except (ImportError, AttributeError) as e:
        print(f"worldolympiad: error: this command is provided by {provider} ({target}), which is not available: "
              f"{e}; install or update that package", file=sys.stderr)
        return None


def dispatch(cmd: str, rest: list[str]) -> int:
    target, provider = DISPATCH[cmd]
    if cmd == "scenarios":
        usage = "usage: worldolympiad scenarios render SUITE OUT [options]  (see `worldolympiad scenarios render --help`)"
        if rest[:1] in (["-h"], ["--help"]):
            print(usage)
            return 0
        if not rest or rest[0] != "render":
            print(usage, file=sys.stderr)
            return 2
        rest = rest[1:]
    fn = _load_dispatch(target, provider)
    if fn is None:
        return 2
    rc = fn(rest)
    return int(rc or 0)


# ========================================================================= main


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="worldolympiad", description="WorldOlympiad: a benchmark for video world models.",
                                epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    ls = sub.add_parser("ls", help="list models, tracks, metrics, suites, rules, options, judges, generators, "
                                   "perturbations",
                        epilog=LS_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    ls.add_argument("kind", choices=LS_KINDS)
    v = sub.add_parser("validate", help="check a case or suite file; every problem with its JSON path",
                       epilog=VALIDATE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    v.add_argument("target", metavar="CASE_OR_SUITE")
    v.add_argument("--videos", metavar="DIR[#PREFIX]",
                   help="also check the videos a `--model videos:DIR` run would score: warns (exit code unchanged) "
                        "about 4:2:0 chroma, lossy coding, another size or fps than the case, fewer frames, "
                        "missing files; each warning says what it costs and how to fix it")
    s = sub.add_parser("score", help="score one video file of one case", epilog=SCORE_EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("video", metavar="VIDEO")
    s.add_argument("--case", required=True, help="case JSON file")
    s.add_argument("--reference", help="reference video (overrides the case's)")
    s.add_argument("--tracks", help="comma-separated tracks (default: all)")
    s.add_argument("--judge", default="none", help="judge SPEC (default: none)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    s.add_argument("--option", action="append", default=[], metavar="KEY=VALUE")
    s.add_argument("--work-dir", help="folder for artifacts (default: a temp folder)")
    s.add_argument("--json", metavar="FILE", help="write the track results as JSON to FILE and print only the "
                   "table; '-' prints only the JSON (for jq). Default: the table, then the JSON")
    im = sub.add_parser("import", help="convert a public data layout into a suite file", epilog=IMPORT_EPILOG,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    im.add_argument("root", metavar="ROOT")
    im.add_argument("--layout", required=True, choices=["worldolympiad-damo", "lvbench"])
    im.add_argument("--out", help="suite JSON to write (default: ROOT/suite.json)")
    im.add_argument("--name", help="suite name (default: the folder name)")
    g = sub.add_parser(
        "generate", help="generate a suite's videos with a model, to score later (evaluate-model --model videos:DIR)",
        description="Generate a suite's videos with a model without scoring them, e.g. on a GPU machine; "
                    "score the folder anywhere with `evaluate-model --model videos:OUT --suite SUITE`. "
                    "Existing files are kept (a stopped run resumes); OUT/generate.json lists each case's "
                    "status, seconds and error.",
        epilog=GENERATE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    g.add_argument("suite", metavar="SUITE", help="suite name or suite/case JSON file (e.g. a rendered suite.json)")
    g.add_argument("--model", default="inferix:reference-world", help="model SPEC (default: inferix:reference-world)")
    g.add_argument("--out", required=True, help="folder for <case_id>__s<seed>.<format> files")
    g.add_argument("--format", choices=["mp4", "npz"], default="mp4",
                   help="mp4: H.264 at the evaluator's storage settings (needs PyAV); npz: raw uint8 frames "
                        "(no encoder needed; videos:DIR stores them at the run's settings)")
    g.add_argument("--seeds", default="0", help="comma-separated seeds (default: 0)")
    g.add_argument("--tracks", help="only cases that list one of these comma-separated tracks")
    g.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    g.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="model.KEY=VALUE for the model; video.pix_fmt / video.qp for mp4 storage")
    g.add_argument("--limit", type=int, help="only the first N cases")
    g.add_argument("--overwrite", action="store_true", help="generate again the files that already exist")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    mg = sub.add_parser("merge", help="join the shard directories of one run (evaluate-model --shard I/N) into one run",
                        epilog=MERGE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    mg.add_argument("runs", nargs="+", metavar="RUN", help="every shard directory of the run")
    mg.add_argument("--out", help="parent folder of the merged run (default: the shards' folder)")
    mg.add_argument("--replace", action="store_true", help="write over an existing merged directory")
    for cmd, (target, provider) in DISPATCH.items():
        more = " render" if cmd == "scenarios" else ""
        sub.add_parser(cmd, help=f"→ {target} ({provider}); see `worldolympiad {cmd}{more} --help`", add_help=False)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``worldolympiad``; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    verbose = "-v" in argv[:1] or "--verbose" in argv[:1]
    if verbose:
        argv = argv[1:]
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    if argv and argv[0] in DISPATCH:
        return dispatch(argv[0], argv[1:])
    args = build_parser().parse_args(argv)
    handlers: dict[str, Callable[[argparse.Namespace], int]] = {
        "ls": cmd_ls, "validate": cmd_validate_and_videos, "score": cmd_score, "import": cmd_import,
        "generate": cmd_generate, "merge": cmd_merge,
    }
    try:
        return handlers[args.cmd](args)
    except UsageError as e:
        print(f"worldolympiad: error: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - one clear line instead of a traceback; -v shows it
        from worldolympiad.types import CaseError

        if verbose:
            raise
        code = 2 if isinstance(e, (CaseError, FileNotFoundError)) else 1
        print(f"worldolympiad: error: {e}", file=sys.stderr)
        return code


if __name__ == "__main__":
    sys.exit(main())
