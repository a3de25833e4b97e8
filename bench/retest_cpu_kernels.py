"""Test-retest of a model's scores across torch's CPU kernels: the same model, seed and cases, generated twice.

torch picks its CPU kernels by the processor's vector unit (``torch.backends.cpu.get_cpu_capability()``); the
environment variable ``ATEN_CPU_CAPABILITY`` (``default``, ``avx2``, ``avx512``) lowers the choice. Different kernels
round differently, a block-causal sampler carries the last bits from block to block, and the videos of one model on two
machines differ by a grey level here and there. A benchmark whose score moves with that is reading noise: this prints,
per case and track, how far the two generations' scores lie apart, and where their videos differ at all.

    OMP_NUM_THREADS=1 MUJOCO_GL=egl python bench/retest_cpu_kernels.py --out /tmp/retest \\
        [--model inferix:reference-world] [--suite smoke] [--capabilities native,avx2] [--record NAME]

Each capability's run is ``evaluate-model --model MODEL --suite SUITE --no-baselines --out OUT/<capability>`` (resumed
when it exists: ~3 min per run for the default model on smoke, 2 CPU cores). ``native`` leaves the variable unset. With
``--record NAME`` the table goes to ``bench/records/NAME.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def run_dir(out: Path, model: str, suite: str) -> Path | None:
    """The run directory under ``out`` of ``model`` on ``suite`` (its ``run_spec.json``); the newest results win
    where a track version changed and left an older one beside it."""
    found = [p.parent for p in out.glob("*/run_spec.json")
             if (spec := json.loads(p.read_text())).get("model") == model and spec.get("suite") == suite
             and (p.parent / "results.jsonl").is_file()]
    return max(found, key=lambda d: (d / "results.jsonl").stat().st_mtime, default=None)


def _env(capability: str) -> dict[str, str]:
    """The environment with ``ATEN_CPU_CAPABILITY`` set to ``capability`` (unset for ``native``)."""
    env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    if capability != "native":
        env["ATEN_CPU_CAPABILITY"] = capability
    return env


def generate(out: Path, capability: str, model: str, suite: str) -> Path:
    env = _env(capability)
    cmd = [sys.executable, "-m", "worldolympiad.cli.evaluate", "--model", model, "--suite", suite, "--no-baselines",
           "--no-progress", "--out", str(out)]
    print("$", " ".join(cmd), f"(ATEN_CPU_CAPABILITY={env.get('ATEN_CPU_CAPABILITY', 'unset')})", flush=True)
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    d = run_dir(out, model, suite)
    if d is None:
        raise SystemExit(f"no results.jsonl under {out} for {model}: see the run's log there")
    return d


def capability_of(capability: str) -> str:
    return subprocess.run([sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
                          env=_env(capability), check=True, capture_output=True, text=True).stdout.strip()


def scores(d: Path) -> dict[tuple[str, str], float | None]:
    out = {}
    for line in (d / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        out[(r["case_id"], r["track"])] = r["score"]
    return out


def video_difference(a: Path, b: Path) -> dict[str, dict[str, float]]:
    from worldolympiad.video.io import read_video

    out = {}
    for fa in sorted((a / "videos").glob("*.mp4")):
        fb = b / "videos" / fa.name
        if not fb.is_file():
            continue
        x, y = read_video(fa).frames.astype(np.int16), read_video(fb).frames.astype(np.int16)
        if x.shape != y.shape:
            out[fa.stem] = {"shape_differs": 1.0}
            continue
        dif = np.abs(x - y)
        out[fa.stem] = {"max": float(dif.max()), "mean": float(dif.mean())}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--model", default="inferix:reference-world")
    ap.add_argument("--suite", default="smoke")
    ap.add_argument("--capabilities", default="native,avx2", help="two ATEN_CPU_CAPABILITY values; native = unset")
    ap.add_argument("--record", default=None)
    args = ap.parse_args(argv)
    caps = [c.strip() for c in args.capabilities.split(",")]
    if len(caps) != 2:
        raise SystemExit(f"--capabilities takes two values, got {caps}")
    dirs = [generate(args.out / c, c, args.model, args.suite) for c in caps]
    kernels = [capability_of(c) for c in caps]
    sa, sb = scores(dirs[0]), scores(dirs[1])
    vids = video_difference(dirs[0], dirs[1])
    rows = []
    for key in sorted(set(sa) | set(sb)):
        a, b = sa.get(key), sb.get(key)
        delta = None if a is None or b is None else abs(a - b)
        rows.append({"case": key[0], "track": key[1], caps[0]: a, caps[1]: b, "delta": delta})
    per_track: dict[str, dict[str, float | int]] = {}
    for t in sorted({r["track"] for r in rows}):
        ds = [r["delta"] for r in rows if r["track"] == t and r["delta"] is not None]
        per_track[t] = {"scored": len(ds), "moved": sum(d > 1e-9 for d in ds), "max_delta": max(ds, default=0.0)}
    same = sum(v.get("max") == 0.0 for v in vids.values())
    lines = [f"# Test-retest across CPU kernels: `{args.model}` on `{args.suite}`", "",
             f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC. Kernels: `{caps[0]}` -> {kernels[0]}, `{caps[1]}` -> "
             f"{kernels[1]}. Command: `python bench/retest_cpu_kernels.py --out {args.out} --model {args.model} "
             f"--suite {args.suite} --capabilities {args.capabilities}`.", "",
             f"Videos identical bit for bit: {same} of {len(vids)}.", "",
             "| video | max grey-level difference | mean |", "|---|---|---|"]
    lines += [f"| {k} | {v.get('max', 'shape')} | {v.get('mean', 0.0):.4f} |" for k, v in vids.items() if v.get("max") != 0.0]
    lines += ["", "| track | rows scored in both | rows that moved | largest move |", "|---|---|---|---|"]
    lines += [f"| {t} | {v['scored']} | {v['moved']} | {v['max_delta']:.4f} |" for t, v in per_track.items()]
    lines += ["", f"| case | track | {caps[0]} | {caps[1]} |", "|---|---|---|---|"]
    lines += [f"| {r['case']} | {r['track']} | {r[caps[0]]:.4f} | {r[caps[1]]:.4f} |" for r in rows
              if r["delta"] is not None and r["delta"] > 1e-9]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.record:
        rec = ROOT / "bench" / "records" / args.record
        rec.with_suffix(".md").write_text(text)
        rec.with_suffix(".json").write_text(json.dumps({"model": args.model, "suite": args.suite, "capabilities": caps,
                                                       "kernels": kernels, "videos": vids, "per_track": per_track,
                                                       "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
