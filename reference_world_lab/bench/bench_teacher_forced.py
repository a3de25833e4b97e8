"""Teacher-forced check of a reference-world checkpoint, per content: does it beat standing still?

For each video of a rendered folder (``worldolympiad scenarios render ...``; by default two per
generator), the first clip's first block is predicted from the clean prefix frame at several
noise levels (``reference_world_lab.recipe.teacher_forced_error``: the training layout, the block-causal
mask, the previous-frame anchor). Printed per video and per generator, in grey levels (0-255):

* ``copy``: the error of repeating the prefix frame (what a zero ``anchor_residual`` head gives);
* ``x0@sigma``: the error of the x0 the model's velocity implies at that noise level.

An ``x0`` above ``copy`` is a model worse than standing still on that content; an ``x0`` that does
not fall as sigma falls is a model that ignores its noisy input (the sampler's later steps then
add nothing). Seconds per checkpoint on CPU; no GPU needed. Session 15 found the shipped weights
above ``copy`` on every physics and robotics generator, at every sigma.

Usage::

    worldolympiad scenarios render reference_world_lab/configs/reference_world_data /tmp/rw/train
    python reference_world_lab/bench/bench_teacher_forced.py /tmp/rw/train [--model-dir OUT/model] [--per-generator 2]
        [--against reference-world] [--sigmas 1,0.2,0.05,0.01]
        [--config reference_world_lab/configs/reference_world_gpu2.yaml] [--json F]

``--still 0,0.03,0.075,0.15`` adds the still-content floor (``reference_world_lab.recipe.still_anchor_error``):
each clip's first frame held still under a no-op (``NOOP`` for Atari, the default action
otherwise), its clean context noised to each std, the first block's x0 error at sigma 1, per
generator; for a model with an anchor-level input also with the std withheld (told 0), which
shows whether it uses the label. Copying the anchor scores 0 at std 0.

``--against M`` scores a second model on the same clips and noise and adds, per generator, its
x0 error over the other's (``new / old`` below 1 = the candidate is better there) and their
geometric mean over generators: the one-line verdict on a candidate before the 45-minute gaming
bench. ``--config`` supplies the data layout and action vocabulary (its ``data.roots`` is
replaced by the folder). Prints numbers; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
DEFAULT_CONFIG = REPO / "reference_world_lab" / "configs" / "reference_world_gpu2.yaml"
# below this copy error (grey levels) a clip's first block is still and x0 / copy means nothing
# (thermal vaporization's 0.003 made a 4,000x ratio)
MIN_COPY = 0.5


def summarize(rows: list[dict], sigmas: tuple[float, ...]) -> dict[str, dict]:
    """Per generator: mean ``copy`` and ``x0`` per sigma over its videos, ``x0 / copy``, and with
    ``x0_against`` in the rows (``--against``) that model's means and ``new / old`` per sigma; an
    ``"all"`` entry holds the geometric mean of ``new / old`` over the generators."""
    by_gen: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_gen[r["generator"]].append(r)
    out: dict[str, dict] = {}
    for gen, rs in sorted(by_gen.items()):
        copy = float(np.mean([r["copy"] for r in rs]))
        x0 = {s: float(np.mean([r["x0"][s] for r in rs])) for s in sigmas}
        entry: dict = {"videos": len(rs), "copy": copy, "x0": x0,
                       "x0_over_copy": {s: x0[s] / copy if copy >= MIN_COPY else None for s in sigmas}}
        if all("x0_against" in r for r in rs):
            old = {s: float(np.mean([r["x0_against"][s] for r in rs])) for s in sigmas}
            entry["x0_against"] = old
            entry["new_over_old"] = {s: x0[s] / old[s] if old[s] > 0 else None for s in sigmas}
        out[gen] = entry
    ratios = [e["new_over_old"] for e in out.values() if "new_over_old" in e]
    if ratios:
        out["all"] = {"new_over_old": {s: float(np.exp(np.mean([np.log(r[s]) for r in ratios if r[s]])))
                                       for s in sigmas}}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("render_dir", help="folder written by `worldolympiad scenarios render`")
    ap.add_argument("--model-dir", default=None, help="exported bundle (default: the shipped reference-world)")
    ap.add_argument("--against", default=None,
                    help="a second model (exported bundle or registry name) scored on the same clips: "
                         "adds its error and new / old per generator")
    ap.add_argument("--config", default=str(DEFAULT_CONFIG), help="recipe for the data layout and actions")
    ap.add_argument("--per-generator", type=int, default=2, help="videos per generator (0 = all)")
    ap.add_argument("--sigmas", default="1,0.2,0.05,0.01")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--still", default=None,
                    help="context-noise stds for the still-content floor (e.g. 0,0.03,0.075,0.15; default: off)")
    ap.add_argument("--json", default=None, help="write the per-video results here")
    args = ap.parse_args(argv)

    from inferix.registry import load_model
    from reference_world_lab.config import load_config
    from reference_world_lab.data import ClipDataset
    from reference_world_lab.recipe import still_anchor_error, teacher_forced_error

    sigmas = tuple(float(s) for s in args.sigmas.split(","))
    stds = tuple(float(s) for s in args.still.split(",")) if args.still else ()
    name = args.model_dir or "reference-world"
    lm = load_model(name)
    lm.model.eval()
    against = load_model(args.against) if args.against else None
    if against is not None:
        against.model.eval()
    cfg = load_config(args.config, [f"data.roots=[{Path(args.render_dir).resolve()}]", "data.caption_dropout=0"])
    data = ClipDataset(cfg.data, cfg.actions, lambda hw, content: lm.pixel_hw(lm.latent_hw_for(hw, content)))
    seen: dict[str, int] = defaultdict(int)
    rows = []
    for i, v in enumerate(data.videos):
        if args.per_generator and seen[v.content] >= args.per_generator:
            continue
        seen[v.content] += 1
        clip = data.clip_at(i)
        r = teacher_forced_error(lm, clip, cfg.data.block_frames, sigmas=sigmas, seed=args.seed)
        row = {"case": v.case_id, "generator": v.content, "copy": r["copy"][0],
               "x0": {s: r["x0"][s][0] for s in sigmas}}
        line = f"{v.case_id:40s} copy {r['copy'][0]:5.1f}  " + "  ".join(f"x0@{s:g} {r['x0'][s][0]:5.1f}" for s in sigmas)
        if against is not None:  # the same clip and noise (seed)
            ra = teacher_forced_error(against, clip, cfg.data.block_frames, sigmas=sigmas, seed=args.seed)
            row["x0_against"] = {s: ra["x0"][s][0] for s in sigmas}
            line += "   against " + "  ".join(f"{ra['x0'][s][0]:5.1f}" for s in sigmas)
        if stds:
            noop = data.action_id("NOOP" if v.content.startswith("gaming.atari") else None)
            if noop is None:
                raise SystemExit(f"--still: the recipe's vocabulary has no no-op for {v.content}")
            for tag, m in (("still", lm), ("still_against", against)):
                if m is None:
                    continue
                row[tag] = {s: e[0] for s, e in still_anchor_error(m, clip, cfg.data.block_frames, noop,
                                                                     stds=stds, seed=args.seed).items()}
                if m.model.config.anchor_level:
                    row[tag + "_untold"] = {s: e[0] for s, e in still_anchor_error(
                        m, clip, cfg.data.block_frames, noop, stds=stds, tell=False, seed=args.seed).items()}
        rows.append(row)
        print(line, flush=True)

    summary = summarize(rows, sigmas)
    print(f"\nper generator (mean over its videos; x0 / copy > 1 = worse than repeating the frame), {name}"
          + (f"; new / old against {args.against} (< 1 = {name} is better)" if against is not None else "") + ":")
    for gen, e in summary.items():
        if gen == "all":
            continue
        ratio = "  ".join(f"{e['x0_over_copy'][s]:5.2f}" if e["x0_over_copy"][s] is not None else "  n/a"
                          for s in sigmas)
        line = (f"  {gen:26s} copy {e['copy']:5.1f}  " + "  ".join(f"x0@{s:g} {e['x0'][s]:5.1f}" for s in sigmas)
                + f"   x0/copy {ratio}")
        if "new_over_old" in e:
            line += "   new/old " + "  ".join(f"{e['new_over_old'][s]:5.2f}" for s in sigmas)
        print(line)
    if "all" in summary:
        print("  geometric mean new/old over generators: "
              + "  ".join(f"sigma {s:g} {summary['all']['new_over_old'][s]:.3f}" for s in sigmas))
    if stds:
        print(f"\nstill-content floor (grey levels off a held frame, sigma 1) by context-noise std {stds}; "
              "copying the anchor: 0 at std 0:")
        for gen in sorted({r["generator"] for r in rows}):
            mine = [r for r in rows if r["generator"] == gen]
            for tag, label in (("still", name), ("still_untold", f"{name}, std withheld"),
                               ("still_against", args.against), ("still_against_untold", f"{args.against}, std withheld")):
                if tag in mine[0]:
                    print(f"  {gen:26s} " + "  ".join(f"{np.mean([r[tag][s] for r in mine]):6.2f}" for s in stds)
                          + f"   {label}")
    if args.json:
        Path(args.json).write_text(json.dumps({"model": name, "against": args.against, "sigmas": sigmas,
                                               "videos": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
