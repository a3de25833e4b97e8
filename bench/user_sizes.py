"""The same videos at the sizes users' models write: does the score (and the time) depend on the size?

Users' world models render at their own size whatever the case asks for (Wan2.1: 832x480). This writes a suite's
reference videos the way such a model would, H.264 yuv420p at a CRF, at each requested size, scores every set through
the public CLI (``evaluate-model --model videos:DIR``) and prints, per case and track, each size's score beside the
case-sized one, with each run's wall time measured in the same process run (these machines are noisy: compare the
ratios, not the seconds).

    OMP_NUM_THREADS=1 MUJOCO_GL=egl python bench/user_sizes.py --out /tmp/sizes [--suite smoke] \\
        [--sizes exact,case,x4,832x480] [--crf 23] [--record NAME]

Sizes: ``exact`` (the case's resolution, lossless: the baseline every other set is compared with), ``case`` (the case's
resolution at the CRF), ``xK`` (K times its sides, a cubic upscale), ``WxH`` (that size whatever the case's aspect
ratio: stretched). Framings, at the case's size and lossless (a model that re-frames the case's scene; bilinear, the
border repeated): ``shift:F`` (moved F of the width to the right), ``zoom:F`` (F times nearer about the centre).
Frame rates, at the case's size and lossless: ``label:F`` (the case's frames, the file labelled F fps, as an exporter's
default labels it), ``rate:K`` (a model at K times the case's rate: every frame K times, at K times its fps). Session 65 (``records/user_sizes_s65.md``): before frames larger than the case were
resampled to it, the 832x480 set failed every row (a decode bomb to the budget) and the 4x set scored physics 0.67
against 0.78 in 8.7x the time. ~3 min on ``smoke`` (2 CPU cores). With ``--record NAME`` the table goes to
``bench/records/NAME.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def target_size(size: str, hw: tuple[int, int]) -> tuple[int, int]:
    """``(h, w)`` of ``size`` (``case``, ``xK``, ``WxH``) for a case of resolution ``hw``, rounded to even sides."""
    h, w = hw
    if size in ("exact", "case"):
        return h, w
    if size.startswith("x"):
        k = float(size[1:])
        return int(round(h * k / 2)) * 2, int(round(w * k / 2)) * 2
    ww, _, hh = size.partition("x")
    return int(hh), int(ww)


def reframe(frames: np.ndarray, size: str) -> np.ndarray:
    """``frames`` under the framing ``shift:F`` or ``zoom:F`` (bilinear, the border repeated)."""
    import cv2

    kind, _, f = size.partition(":")
    H, W = frames.shape[1:3]
    if kind == "shift":
        M = np.array([[1, 0, float(f) * W], [0, 1, 0]], np.float32)
    else:
        M = cv2.getRotationMatrix2D((W / 2, H / 2), 0, float(f)).astype(np.float32)
    return np.stack([cv2.warpAffine(x, M, (W, H), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
                     for x in frames])


def write_sets(out: Path, suite: str, sizes: list[str], crf: int) -> dict[str, Path]:
    """Render each case's reference once and write it at every size into ``out/videos/<size>/<case_id>.mp4``."""
    import cv2

    from worldolympiad.models.reference import ReferenceModel
    from worldolympiad.suites import load_suite
    from worldolympiad.video.io import encode_like_users, write_video

    folders = {s: out / "videos" / s.replace(":", "_") for s in sizes}
    cases = load_suite(suite).cases
    model = ReferenceModel()
    for case in cases:
        todo = [s for s in sizes if not (folders[s] / f"{case.id}.mp4").is_file()]
        if not todo:
            continue
        ref = model.generate(case)
        for s in todo:
            kind, _, arg = s.partition(":")
            if kind == "label":
                write_video(folders[s] / f"{case.id}.mp4", ref.frames, float(arg), lossless=True)
                continue
            if kind == "rate":
                k = int(arg)
                write_video(folders[s] / f"{case.id}.mp4", np.repeat(ref.frames, k, axis=0), ref.fps * k, lossless=True)
                continue
            if kind in ("shift", "zoom"):
                write_video(folders[s] / f"{case.id}.mp4", reframe(ref.frames, s), ref.fps, lossless=True)
                continue
            h, w = target_size(s, ref.frames.shape[1:3])
            frames = ref.frames if (h, w) == ref.frames.shape[1:3] else np.stack(
                [cv2.resize(f, (w, h), interpolation=cv2.INTER_CUBIC) for f in ref.frames])
            if s == "exact":
                write_video(folders[s] / f"{case.id}.mp4", frames, ref.fps, lossless=True)
            else:
                encode_like_users(folders[s] / f"{case.id}.mp4", frames, ref.fps, crf=crf)
    return folders


def score(folder: Path, out: Path, suite: str) -> tuple[Path, float]:
    """``evaluate-model --model videos:FOLDER`` into ``out``; its run directory and wall seconds."""
    cmd = [sys.executable, "-m", "worldolympiad.cli.evaluate", "--model", f"videos:{folder}", "--suite", suite,
           "--no-baselines", "--no-progress", "--no-report", "--out", str(out)]
    print("$", " ".join(cmd), flush=True)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    runs = [p.parent for p in out.glob("*/results.jsonl")]
    return max(runs, key=lambda d: (d / "results.jsonl").stat().st_mtime), wall


def rows(run: Path) -> dict[tuple[str, str], float | str | None]:
    """``(case, track) -> score`` (``None`` for a row without one, ``failed`` for a failed row)."""
    out: dict[tuple[str, str], float | str | None] = {}
    for line in (run / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["status"] == "not_applicable":
            continue
        out[(r["case_id"], r["track"])] = r["score"] if r["status"] == "ok" else r["status"]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="example: OMP_NUM_THREADS=1 MUJOCO_GL=egl python bench/user_sizes.py --out /tmp/sizes")
    ap.add_argument("--out", required=True, help="working folder (videos, runs); resumable")
    ap.add_argument("--suite", default="smoke")
    ap.add_argument("--sizes", default="exact,case,x4,832x480",
                    help="comma-separated: exact, case, xK, WxH (the first is the baseline)")
    ap.add_argument("--crf", type=int, default=23, help="x264 CRF of every set (yuv420p)")
    ap.add_argument("--record", default=None, help="also write bench/records/NAME.{json,md}")
    args = ap.parse_args(argv)
    out, sizes = Path(args.out), [s.strip() for s in args.sizes.split(",") if s.strip()]
    folders = write_sets(out, args.suite, sizes, args.crf)
    results, walls = {}, {}
    for s in sizes:
        run, walls[s] = score(folders[s], out / "runs" / s.replace(":", "_"), args.suite)
        results[s] = rows(run)
    keys = sorted(set().union(*(r.keys() for r in results.values())))
    base = sizes[0]

    def fmt(v: float | str | None) -> str:
        return f"{v:.3f}" if isinstance(v, float) else str(v or "-")

    lines = [f"# Scores of `{args.suite}`'s references written at users' sizes (H.264 yuv420p crf {args.crf}) or "
             "framings (lossless)", "",
             f"`python bench/user_sizes.py --out OUT --suite {args.suite} --sizes {','.join(sizes)} --crf {args.crf}`, "
             f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC.", "",
             "| case | track | " + " | ".join(sizes) + " |", "|---|---|" + "---|" * len(sizes)]
    for case, track in keys:
        lines.append(f"| {case} | {track} | " + " | ".join(fmt(results[s].get((case, track))) for s in sizes) + " |")
    lines += ["", f"| size | failed rows | mean score (scored rows) | mean / max abs difference to {base} | rows within "
              f"0.05 of {base} | wall s | wall / {base} |", "|---|---|---|---|---|---|---|"]
    summary = {}
    for s in sizes:
        vals = [v for v in results[s].values() if isinstance(v, float)]
        failed = sum(1 for v in results[s].values() if v == "failed")
        diffs = [abs(v - b) for k, v in results[s].items()
                 if isinstance(v, float) and isinstance(b := results[base].get(k), float)]
        summary[s] = {"failed": failed, "mean": float(np.mean(vals)) if vals else None,
                      "mean_abs_diff": float(np.mean(diffs)) if diffs else None,
                      "max_abs_diff": max(diffs) if diffs else None,
                      "within_0.05": sum(1 for d in diffs if d <= 0.05), "compared": len(diffs),
                      "wall_s": walls[s], "wall_ratio": walls[s] / walls[base]}
        lines.append(f"| {s} | {failed} | {fmt(summary[s]['mean'])} | {fmt(summary[s]['mean_abs_diff'])} / "
                     f"{fmt(summary[s]['max_abs_diff'])} | {summary[s]['within_0.05']} of {len(diffs)} | "
                     f"{walls[s]:.0f} | {walls[s] / walls[base]:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.record:
        rec = ROOT / "bench" / "records"
        (rec / f"{args.record}.md").write_text(text)
        (rec / f"{args.record}.json").write_text(json.dumps(
            {"suite": args.suite, "sizes": sizes, "crf": args.crf, "summary": summary,
             "scores": {s: {f"{c}|{t}": v for (c, t), v in r.items()} for s, r in results.items()}}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
