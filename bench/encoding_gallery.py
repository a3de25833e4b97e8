"""Where the encoding gap comes from: the clean videos of a validity run whose score falls under a lossy
encoding, shown as each encoding shows them, beside the score and what failed.

A validity report (``bench/validity.py``) gives the gap between encodings as a number; this shows the
frames behind it, so that whoever reads it can tell a track that misreads a visible body from a codec that
erased it (a 9 px magenta cross on a purple dotted wall at crf 35 after a 0.75x resize). For each clean
case whose score in a lossy encoding falls more than ``--gap`` below its lossless score, one row: per
encoding, the first frame with the case's first-frame object boxes drawn and the middle frame, both
magnified with nearest-neighbour sampling (pixels stay pixels), titled with the score and, for physics,
the failing checks (the lowest two metrics for the other tracks).

Usage::

    python bench/encoding_gallery.py OUT                     # OUT/encoding_gallery.png, physics, no reference
    python bench/encoding_gallery.py OUT --track interaction --condition reference --gap 0.1
    python bench/encoding_gallery.py OUT --png bench/records/gallery_s55_cartoon.png

``OUT`` is a ``bench/validity.py --out`` folder after a run (``validity.json``, ``videos/``, ``render/``,
``runs/``). Reads only; nothing is scored again.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

CLEAN = "clean"
LOSSLESS = "lossless"


def gap_cases(record: dict[str, Any], track: str, condition: str, gap: float) -> list[tuple[str, dict[str, float | None]]]:
    """Clean cases whose score in some lossy encoding is more than ``gap`` below their lossless score (or
    missing where lossless has one), worst first, with their score per encoding."""
    scores: dict[str, dict[str, float | None]] = {}
    for r in record["records"]:
        if (r["defect"] == CLEAN and r["metric"] == "score" and r["track"] == track
                and r["condition"] == condition):
            scores.setdefault(r["case"], {})[r["encoding"]] = r["value"]
    out = []
    for case, by_enc in scores.items():
        base = by_enc.get(LOSSLESS)
        if base is None:
            continue
        drops = [base - (v if v is not None else 0.0) for e, v in by_enc.items() if e != LOSSLESS]
        if drops and max(drops) > gap:
            out.append((max(drops), case, by_enc))
    return [(case, by_enc) for _, case, by_enc in sorted(out, key=lambda x: (-x[0], x[1]))]


def why(row: dict[str, Any]) -> str:
    """What a results row failed on: physics' failing checks, else its two lowest metrics."""
    fails: list[str] = []
    for m in row.get("metrics", []):
        for rule in (m.get("details") or {}).get("rules", []) or []:
            for c in rule.get("checks", []):
                if c.get("status") == "fail":
                    fails.append(f"{c['check']}: {c.get('reason', '')}")
    if fails:
        return "; ".join(dict.fromkeys(fails))
    vals = sorted((m["normalized"], m["name"]) for m in row.get("metrics", []) if m.get("normalized") is not None)
    return ", ".join(f"{n} {v:.2f}" for v, n in vals[:2])


def _results(out: Path, record: dict[str, Any], track: str, condition: str) -> dict[tuple[str, str], dict[str, Any]]:
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for run in record.get("runs", []):
        if run["track"] != track or run["condition"] != condition:
            continue
        path = out / "runs" / run["run_dir"] / "results.jsonl"
        if path.exists():
            for line in path.read_text().splitlines():
                if line.strip():
                    r = json.loads(line)
                    rows[(run["encoding"], r["case_id"])] = r
    return rows


def _boxes(out: Path, case: str) -> list[list[float]]:
    """The case's first-frame object boxes ``[x0, y0, x1, y1]`` in its own resolution's pixels."""
    for sub in ("cases_noref", "cases"):
        path = out / "render" / sub / f"{case}.json"
        if path.exists():
            spec = json.loads(path.read_text())
            objs = (spec.get("physics") or {}).get("objects") or []
            return [o["box"] for o in objs if o.get("box")]
    return []


def _panel(frame: np.ndarray, height: int, boxes: list[list[float]], scale: float) -> np.ndarray:
    import cv2

    H, W = frame.shape[:2]
    k = height / H
    img = cv2.resize(frame, (max(1, round(W * k)), height), interpolation=cv2.INTER_NEAREST)
    for x0, y0, x1, y1 in boxes:
        p0 = (int(x0 * scale * k), int(y0 * scale * k))
        p1 = (int(x1 * scale * k), int(y1 * scale * k))
        cv2.rectangle(img, p0, p1, (255, 255, 0), 1)
    return img


def gallery(out: Path, png: Path, track: str = "physics", condition: str = "no_reference", gap: float = 0.05,
            height: int = 150) -> list[str]:
    """Write the gallery to ``png``; returns the cases shown (none: no image is written)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from worldolympiad.video.io import read_video

    record = json.loads((out / "validity.json").read_text())
    cases = gap_cases(record, track, condition, gap)
    if not cases:
        return []
    rows = _results(out, record, track, condition)
    encodings = [LOSSLESS] + sorted({e for _, by in cases for e in by if e != LOSSLESS})
    fig, axes = plt.subplots(len(cases), len(encodings), figsize=(4.6 * len(encodings), 2.3 * len(cases)),
                             squeeze=False)
    for i, (case, by_enc) in enumerate(cases):
        boxes = _boxes(out, case)
        lossless_w = None
        for j, enc in enumerate(encodings):
            ax = axes[i][j]
            ax.axis("off")
            path = out / "videos" / enc / f"{case}.mp4"
            if not path.exists():
                ax.set_title(f"{enc}: no video", fontsize=7)
                continue
            frames = read_video(path).frames
            if lossless_w is None:
                lossless_w = frames.shape[2]
            scale = frames.shape[2] / lossless_w  # boxes are in the lossless (case) resolution
            mid = len(frames) // 2
            img = np.concatenate([_panel(frames[0], height, boxes, scale), np.full((height, 4, 3), 255, np.uint8),
                                  _panel(frames[mid], height, [], scale)], axis=1)
            ax.imshow(img)
            v = by_enc.get(enc)
            reason = why(rows.get((enc, case), {}))
            title = f"{case}\n" if j == 0 else "\n"
            title += f"{enc} {frames.shape[2]}x{frames.shape[1]}: {'n/a' if v is None else f'{v:.2f}'}"
            ax.set_title(title, fontsize=7, loc="left")
            if reason and enc != LOSSLESS:
                ax.text(0, -0.04, reason[:150], transform=ax.transAxes, fontsize=5.5, va="top", wrap=True)
    fig.suptitle(f"{track}, {condition}: clean videos scoring > {gap} below lossless in a lossy encoding "
                 f"(frame 0 with the first-frame boxes | middle frame)", fontsize=9)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=80)
    plt.close(fig)
    return [c for c, _ in cases]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("Usage::")[1])
    ap.add_argument("out", type=Path, help="a bench/validity.py --out folder after its run")
    ap.add_argument("--track", default="physics")
    ap.add_argument("--condition", default="no_reference", choices=["no_reference", "reference"])
    ap.add_argument("--gap", type=float, default=0.05, help="show clean cases falling more than this below lossless")
    ap.add_argument("--png", type=Path, default=None, help="default OUT/encoding_gallery.png")
    args = ap.parse_args(argv)
    if not (args.out / "validity.json").exists():
        ap.error(f"{args.out}/validity.json not found: run bench/validity.py --out {args.out} first")
    png = args.png or args.out / "encoding_gallery.png"
    shown = gallery(args.out, png, args.track, args.condition, args.gap)
    if not shown:
        print(f"no clean {args.track} case falls more than {args.gap} below lossless ({args.condition}); nothing drawn")
        return 0
    print(f"{len(shown)} cases -> {png}: " + ", ".join(shown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
