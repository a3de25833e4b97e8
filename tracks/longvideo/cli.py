"""``worldolympiad lvbench``: generate (or read) minute-long videos for LV-Bench captions and score drift.

Examples::

    worldolympiad lvbench --ci                                  # CI: embedded Inferix model, bundled 'ci' slice
    worldolympiad lvbench --model inferix:tiny --slice mini --out runs/lv
    worldolympiad lvbench --videos my_videos/ --prompts lvbench_suite_items.json
    worldolympiad lvbench --videos my_videos/ --prompts items.json --option longvideo.clip_path=weights/clip-vit-base-patch32

Videos come from ``--model SPEC`` (any model spec; generated chunk by chunk with the captions as
per-chunk prompts) or ``--videos DIR`` (``<id>.mp4`` files, i.e. ``videos:DIR``). Captions come
from ``--prompts FILE`` (a slice JSON, see :mod:`tracks.longvideo.lvbench`) or a bundled
``--slice`` (``ci``, ``mini``). Writes ``<out>/videos/<id>.mp4``, ``<out>/lvbench_results.json``
and prints VDE per signal with what computed it: LV-Bench's published model when its local weights
are given with ``--option longvideo.<key>=PATH`` (``musiq_path``, ``amt_path``, ``clip_path``,
``aesthetic_clip_path``, ``aesthetic_head``, ``dino_path``, ``raft_path``; :mod:`tracks.longvideo.learned`), else the model-free
fallback. ``--ci`` writes tiny random-init checkpoints of every available architecture
(:mod:`tracks.longvideo.tiny_weights`) and scores with them, so every signal's code path runs. The exit
status is non-zero when any video could not be generated or scored, so CI fails when the pipeline breaks.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
import time
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

CI_MODEL = "inferix:tiny"


def build_parser() -> argparse.ArgumentParser:
    from worldolympiad.cli import help_examples

    examples = [ln.strip() for ln in __doc__.split("Examples::")[1].split("\n\n")[1].splitlines() if ln.strip()]
    p = argparse.ArgumentParser(prog="worldolympiad lvbench", description=__doc__.split("\n\n")[0],
                                **help_examples(*examples))
    src = p.add_mutually_exclusive_group()
    src.add_argument("--model", help="model SPEC that generates the videos (e.g. inferix:tiny)")
    src.add_argument("--videos", help="folder of pre-generated <id>.mp4 videos")
    p.add_argument("--prompts", help="LV-Bench-style slice JSON with the captions (instead of --slice)")
    p.add_argument("--slice", help="bundled slice name (ci, mini); default mini, or ci with --ci")
    p.add_argument("--ci", action="store_true",
                   help=f"CI job: {CI_MODEL} on the 'ci' slice (one minute of video), fail on any error")
    p.add_argument("--out", default=None, help="output folder (default runs/lvbench-<slice>)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--num-chunks", type=int, default=10, help="N of the VDE formula (LV-Bench: 10)")
    p.add_argument("--fps", type=float, default=None, help="override the slice's fps")
    p.add_argument("--size", type=int, default=None, help="override the slice's resolution (square, pixels)")
    p.add_argument("--seconds", type=float, default=None, help="override the slice's duration")
    p.add_argument("--limit", type=int, default=None, help="score only the first N videos")
    p.add_argument("--device", default="cpu")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="a long-video track option, e.g. longvideo.dino_path=weights/dino-vitb16 (repeatable)")
    p.add_argument("--no-tiny-weights", action="store_true",
                   help="with --ci: score with the model-free fallbacks instead of tiny random-init models")
    return p


def parse_options(pairs: list[str]) -> dict[str, str]:
    """``["longvideo.k=v", ...]`` → ``{"longvideo.k": "v"}``; only declared long-video keys are accepted.

    Raises:
        ValueError: a pair without ``=`` or an unknown key (the message lists the known keys).
    """
    from tracks.longvideo.track import track_spec

    known = {f"longvideo.{k}" for k in track_spec().option_specs}
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ValueError(f"--option {pair!r}: expected KEY=VALUE, e.g. longvideo.clip_path=weights/clip")
        if key not in known:
            raise ValueError(f"--option {key!r} is not a long-video option; known: {', '.join(sorted(known))}")
        out[key] = value
    return out


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status (0 ok, 1 a video failed, 2 bad usage / model unavailable)."""
    args = build_parser().parse_args(argv)
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(message)s")
    from tracks.longvideo.lvbench import cases_from_items, load_slice

    try:
        sl = load_slice(args.prompts) if args.prompts else load_slice(args.slice or ("ci" if args.ci else "mini"))
        args.track_options = parse_options(args.option)
    except ValueError as e:
        print(f"lvbench: error: {e}", file=sys.stderr)
        return 2
    fps = args.fps or sl.fps
    res = (args.size, args.size) if args.size else sl.resolution
    dur = args.seconds or sl.duration_sec
    items = sl.items[: args.limit] if args.limit else sl.items
    cases = cases_from_items(items, fps=fps, resolution=res, duration_sec=dur, suite=f"lvbench-{sl.name}")
    spec = f"videos:{args.videos}" if args.videos else (args.model or (CI_MODEL if args.ci else None))
    if spec is None:
        print("lvbench: error: pass --model SPEC (e.g. inferix:tiny) or --videos DIR (or --ci)", file=sys.stderr)
        return 2
    out = Path(args.out or f"runs/lvbench-{sl.name}")
    out.mkdir(parents=True, exist_ok=True)

    from worldolympiad.models.base import build_model

    t0 = time.perf_counter()
    try:
        model = build_model(spec, device=args.device)
    except Exception as e:  # noqa: BLE001 - any failure here means the pipeline cannot run
        hint = " (the CI job needs the embedded Inferix model: worldolympiad.models.inferix)" if spec == CI_MODEL else ""
        print(f"lvbench: error: cannot build model {spec!r}{hint}: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    load_s = time.perf_counter() - t0
    skipped: dict[str, str] = {}
    if args.ci and not args.no_tiny_weights:
        from tracks.longvideo.tiny_weights import write_tiny_weights

        tiny, skipped = write_tiny_weights(out / "tiny_weights", seed=args.seed)
        args.track_options = {**tiny, **args.track_options}
    rows = [score_case(model, case, out, args) for case in cases]
    model.close()
    summary = summarize(rows, spec=spec, slice_name=sl.name, num_chunks=args.num_chunks, load_s=load_s,
                        options=args.track_options, tiny_weights_skipped=skipped)
    (out / "lvbench_results.json").write_text(json.dumps(summary, indent=2, default=str))
    print_summary(summary)
    failed = [r for r in rows if r["status"] != "ok"]
    for r in failed:
        print(f"lvbench: FAILED {r['id']}: {r['error']}", file=sys.stderr)
    return 1 if failed else 0


def score_case(model: Any, case: Any, out: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Generate one video, save it, compute VDE; never raises (errors go into the row)."""
    from tracks.longvideo.track import LongVideoTrack
    from worldolympiad.track import EvalContext
    from worldolympiad.video.io import write_video

    row: dict[str, Any] = {"id": case.id, "status": "ok", "error": None, "frames": case.num_frames}
    try:
        t = time.perf_counter()
        video = model.generate(case, seed=args.seed)
        row["generate_s"] = time.perf_counter() - t
        if video.num_frames < case.num_frames:
            raise RuntimeError(f"model returned {video.num_frames} frames, the case asks for {case.num_frames} "
                               f"({case.duration:.0f} s at {case.fps:g} fps)")
        row["video"] = str(write_video(out / "videos" / f"{case.id}.mp4", video.frames, video.fps))
        t = time.perf_counter()
        ctx = EvalContext(seed=args.seed, device=args.device, work_dir=out / "work" / case.id,
                          options={**getattr(args, "track_options", {}), "longvideo.num_chunks": args.num_chunks})
        res = LongVideoTrack().evaluate(video, case, ctx)
        row["score_s"] = time.perf_counter() - t
        row["metrics"] = {m.name: {"raw": m.raw, "status": m.status, "reason": m.reason,
                                   "vde_log": m.details.get("vde_log"), "provenance": m.details.get("provenance")}
                          for m in res.metrics}
        row["load_errors"] = [e for e in res.errors if e.startswith("longvideo.")]
        row["score"] = res.score
        bad = [m.name for m in res.metrics if m.status != "ok"]
        nvde = row["metrics"].get("nvde", {}).get("raw")
        if bad or nvde is None or not math.isfinite(nvde):
            raise RuntimeError(f"VDE could not be computed for {bad or ['nvde']}: {res.errors}")
    except Exception as e:  # noqa: BLE001 - recorded per video; the exit status reports it
        row["status"] = "failed"
        row["error"] = f"{type(e).__name__}: {e}"
        logger.exception("lvbench: %s failed", case.id)
    return row


def summarize(rows: list[dict[str, Any]], **meta: Any) -> dict[str, Any]:
    ok = [r for r in rows if r["status"] == "ok"]
    names = sorted({n for r in ok for n in r["metrics"]})
    mean: dict[str, Any] = {}
    for n in names:
        vals = [r["metrics"][n]["raw"] for r in ok if r["metrics"][n]["raw"] is not None]
        logs = [r["metrics"][n]["vde_log"] for r in ok if r["metrics"][n].get("vde_log") is not None]
        provs = sorted({str(r["metrics"][n].get("provenance")) for r in ok if r["metrics"][n].get("provenance")})
        mean[n] = {"linear": sum(vals) / len(vals) if vals else None, "log": sum(logs) / len(logs) if logs else None,
                   "provenance": "; ".join(provs) if provs else None}
    return {**meta, "videos": len(rows), "ok": len(ok), "mean": mean, "rows": rows,
            "generate_s": sum(r.get("generate_s", 0.0) for r in rows), "score_s": sum(r.get("score_s", 0.0) for r in rows)}


def print_summary(s: dict[str, Any]) -> None:
    print(f"LV-Bench drift: model {s['spec']}, slice {s['slice_name']}, {s['ok']}/{s['videos']} videos scored, "
          f"N = {s['num_chunks']}; load {s['load_s']:.1f} s, generate {s['generate_s']:.1f} s, score {s['score_s']:.1f} s")
    print(f"  {'metric':<16}{'VDE linear':>12}{'VDE log':>12}  computed by")
    for n, v in s["mean"].items():
        lin = "-" if v["linear"] is None else f"{v['linear']:.4f}"
        log = "-" if v["log"] is None else f"{v['log']:.4f}"
        print(f"  {n:<16}{lin:>12}{log:>12}  {v.get('provenance') or ''}")
    for sig, why in (s.get("tiny_weights_skipped") or {}).items():
        print(f"  no tiny {sig} checkpoint: {why}")


if __name__ == "__main__":
    raise SystemExit(main())
