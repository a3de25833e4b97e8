"""Physics track bench: validity pair table, monotonicity in strength, and CPU seconds per case.

1. Validity: for every physics generator of the scenario library (mechanics / thermal /
   material), render the reference, apply each physics perturbation at several strengths and
   score reference and perturbed videos with the physics track (model-free checks only, no
   judge). Prints one row per (case, perturbation): reference score, perturbed score at
   strength 1, win, and the Spearman correlation between strength and score; then the share of
   pairs the reference wins (acceptance: >= 95 %) and, per perturbation, the Spearman of the
   mean score over cases vs strength (acceptance: <= -0.9, i.e. falling).
2. Speed: seconds per case for segmentation + tracking + checks on 128 px, 48-frame videos.

Usage:
    MUJOCO_GL=egl OMP_NUM_THREADS=1 python bench/bench_physics.py [--families mechanics,thermal,material]
        [--seeds 0] [--res 64] [--frames 48] [--strengths 0.25,0.5,0.75,1] [--speed-only | --no-speed]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MUJOCO_GL", "egl")

PHYSICS_PERTURBATIONS = ("gravity_reversed", "teleport", "vanish", "shape_morph", "time_reversal", "frozen")


def _score(track, video, case, ref_video, work: Path):
    from worldolympiad.track import EvalContext

    ctx = EvalContext(work_dir=work, reference_loader=lambda: ref_video)
    out = track.evaluate(video, case, ctx)
    return out.score, ctx.timings


def validity(families: list[str], seeds: list[int], res: int, frames: int, strengths: list[float]) -> dict:
    from scipy.stats import spearmanr

    from tracks.physics.track import PhysicsTrack
    from worldolympiad.registries import GENERATORS, PERTURBATIONS

    track = PhysicsTrack()
    work = Path(tempfile.mkdtemp(prefix="bench_physics_"))
    gens = [g for g in GENERATORS.names() if g.split(".")[0] in families]
    rows, curves = [], {p: [] for p in PHYSICS_PERTURBATIONS}
    print(f"{'case':34s} {'perturbation':17s} {'ref':>6s} {'@1.0':>6s} {'win':>4s} {'spearman':>8s}  scores by strength")
    for gname in gens:
        gen = GENERATORS.get(gname)
        for seed in seeds:
            case = gen.make_case(f"{gname}-{seed}", seed=seed, resolution=(res, res), num_frames=frames)
            rendered = gen.render(case)
            ref = rendered.video
            ref_score, _ = _score(track, ref, case, ref, work)
            for pname in PHYSICS_PERTURBATIONS:
                fn = PERTURBATIONS.get(pname)
                scores = [ref_score]
                try:
                    for s in strengths:
                        v = fn(ref, case, s, np.random.default_rng(seed), rendered)
                        scores.append(_score(track, v, case, ref, work)[0])
                except ValueError as e:  # the perturbation cannot apply to this case (e.g. no visible object)
                    print(f"{case.id:34s} {pname:17s} perturbation not applicable: {e}")
                    continue
                except Exception as e:  # a scoring crash is a finding: report it, keep benchmarking
                    print(f"{case.id:34s} {pname:17s} ERROR {type(e).__name__}: {e}")
                    continue
                sc = np.array([np.nan if x is None else x for x in scores], float)
                full = sc[-1]
                win = bool(np.isfinite(sc[0]) and (not np.isfinite(full) or full < sc[0]))
                rho = spearmanr([0.0, *strengths], sc, nan_policy="omit")[0] if np.isfinite(sc).sum() > 2 else np.nan
                rows.append((case.id, pname, sc[0], full, win, rho))
                curves[pname].append(sc)
                print(f"{case.id:34s} {pname:17s} {sc[0]:6.3f} {full:6.3f} {'yes' if win else 'NO':>4s} {rho:8.3f}  "
                      + " ".join(f"{x:.3f}" for x in sc), flush=True)
    wins = sum(r[4] for r in rows)
    print(f"\nreference outscores the perturbation at strength 1 on {wins}/{len(rows)} pairs = {wins / max(len(rows), 1):.1%} (need >= 95 %)")
    print("monotonicity: Spearman(strength, mean score over cases) per perturbation (need <= -0.9):")
    out = {"win_rate": wins / max(len(rows), 1), "spearman": {}}
    for p, cs in curves.items():
        if not cs:
            continue
        mean = np.nanmean(np.stack(cs), axis=0)
        rho = spearmanr([0.0, *strengths], mean)[0]
        per_case = np.array([r[5] for r in rows if r[1] == p], float)
        out["spearman"][p] = rho
        print(f"  {p:17s} mean curve " + " ".join(f"{x:.3f}" for x in mean) + f"  spearman {rho:+.3f}; "
              f"cases with own spearman <= -0.9: {(per_case <= -0.9).sum()}/{len(per_case)}")
    return out


def _speed_inputs(res: int, frames: int):
    """(name, case, reference, generated) at ``res`` px: the scenario library's bounce when it is
    installed, else the synthetic bouncing ball; the generated video is the teleport perturbation."""
    from worldolympiad.registries import GENERATORS, PERTURBATIONS

    out = []
    if "mechanics.bounce" in GENERATORS:
        gen = GENERATORS.get("mechanics.bounce")
        case = gen.make_case("speed-bounce", seed=0, resolution=(res, res), num_frames=frames)
        r = gen.render(case)
        bad = PERTURBATIONS.get("teleport")(r.video, case, 1.0, np.random.default_rng(0), r)
        out.append(("mechanics.bounce (MuJoCo)", case, r.video, bad))
    from tracks.physics import synthetic as S
    from worldolympiad.types import Case, PhysicsSpec, Video

    scene = S.bouncing_ball(T=frames, H=res, W=res)
    case = Case(id="speed", scenario="robotics", fps=scene.fps, num_frames=frames, resolution=(res, res),
                physics=PhysicsSpec(rules=("gravity", "impact"), objects=tuple(scene.object_hints())), tracks=("physics",))
    out.append(("synthetic bouncing ball", case, Video(scene.frames, scene.fps),
                Video(S.perturb(scene, "teleport", 1.0).frames, scene.fps)))
    return out


def speed(res: int = 128, frames: int = 48, repeats: int = 3) -> None:
    """Seconds per case (segmentation + tracking + checks, both videos) on 128 px, 48-frame videos."""
    from tracks.physics.track import PhysicsTrack

    track = PhysicsTrack()
    work = Path(tempfile.mkdtemp(prefix="bench_physics_speed_"))
    print(f"\nspeed ({res} px, {frames} frames, CPU, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}; "
          "generated and reference video each segmented and tracked, no judge):")
    for name, case, ref, gen in _speed_inputs(res, frames):
        _score(track, gen, case, ref, work)  # warm-up: imports (scipy.optimize, cv2)
        totals = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            _, timings = _score(track, gen, case, ref, work)
            totals.append(time.perf_counter() - t0)
        print(f"  {name:28s} seconds per case: {np.median(totals):.2f} (median of {repeats}); stages: "
              + ", ".join(f"{k} {v:.2f}s" for k, v in timings.items()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", default="mechanics,thermal,material")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--res", type=int, default=64)
    ap.add_argument("--frames", type=int, default=48)
    ap.add_argument("--strengths", default="0.25,0.5,0.75,1")
    ap.add_argument("--speed-only", action="store_true")
    ap.add_argument("--no-speed", action="store_true")
    a = ap.parse_args(argv)
    if not a.speed_only:
        validity(a.families.split(","), [int(s) for s in a.seeds.split(",")], a.res, a.frames,
                 [float(s) for s in a.strengths.split(",")])
    if not a.no_speed:
        speed()
    return 0


if __name__ == "__main__":
    sys.exit(main())
