"""Geometry track benchmarks: SfM and splat-fit speed/quality, and validity against perturbations.

Usage::

    OMP_NUM_THREADS=2 python bench/bench_geometry.py speed     [--frames 48] [--size 128] [--budget 600]
    OMP_NUM_THREADS=2 python bench/bench_geometry.py validity  [--cases 3] [--size 64] [--frames 24] [--iters N]
    OMP_NUM_THREADS=2 python bench/bench_geometry.py all
    OMP_NUM_THREADS=1 python bench/bench_geometry.py turn      [--suite bench/suites/geometry_tune]

``speed`` prints seconds per 48-frame 128 px video for SfM (pycolmap, known and estimated
intrinsics; OpenCV fallback), ATE as a fraction of path length, registration rate, and the CPU
splat fit's held-out PSNR against wall time (target: >= 22 dB within 10 minutes on 2 cores);
with CUDA it also prints fit iterations/s of gsplat's CUDA rasterizer vs ours.

``validity`` scores the reference and each geometry perturbation (homography_jitter,
content_drift, frame_shuffle, scale_pumping) at several strengths on fly-through cases (the
scenario package's ``flythrough.*`` generators when registered, else this track's exact
synthetic fly-through) and prints the pair table, the fraction of (case, perturbation,
strength) pairs the reference wins, and Spearman(score, strength) per perturbation.
``turn`` measures the camera metrics alone (SfM and the track's camera stage, no splat fit) on the
tuning split's turn-in-place maze sweeps (``bench/suites/geometry_tune``): each clean render, its two
users' encodings, ``homography_jitter`` (0.5, 1, 2), ``frame_shuffle`` (0.25, 0.5, 1) and the same yaws
turned about a pivot 0.1 / 0.3 m behind the camera (the camera travels); prints camera_score, rpe_rot and
the mean orientation error per video, and how many (clean, defect) pairs camera_score orders right.
Nothing here asserts on timings.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

PERTURBS = ("homography_jitter", "content_drift", "frame_shuffle", "scale_pumping")


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    from tracks.geometry.metrics.heldout import psnr

    return float(np.mean([psnr(x, y) for x, y in zip(a, b, strict=True)]))


def bench_speed(frames_n: int, size: int, budget: float, log_every: float) -> None:
    from tracks.geometry.sfm import motion_masks, recover_cameras
    from tracks.geometry.splat import SplatConfig, SplatFit, fit_splats, render_views
    from tracks.geometry.synthetic import fly_through
    from tracks.geometry.trajectory import path_length, trajectory_errors

    ft = fly_through(frames_n, size, size, seed=0)
    print(f"== speed: {frames_n} frames, {size}x{size} px, synthetic fly-through (exact poses)")
    idx = np.arange(frames_n)
    t = time.perf_counter()
    masks = motion_masks(ft.frames)
    print(f"motion masks                 {time.perf_counter() - t:7.2f} s")
    recs = {}
    for label, K, method in (("pycolmap, case K", ft.K, "pycolmap"), ("pycolmap, estimated K", None, "pycolmap"),
                             ("opencv chain, case K", ft.K, "opencv")):
        t = time.perf_counter()
        rec = recover_cameras(ft.frames, idx, Path(tempfile.mkdtemp()), K=K, masks=masks, method=method)
        dt = time.perf_counter() - t
        r = rec.registered
        if r.sum() >= 3:
            e = trajectory_errors(rec.poses[r], ft.poses[r])
            extra = f"ATE {e.ate_rmse / path_length(ft.poses[r]) * 100:5.2f} % of path, RPE rot {e.rpe_rot_deg_mean:.2f} deg"
        else:
            extra = f"failed: {rec.failure}"
        print(f"SfM {label:24s} {dt:7.2f} s  registration {rec.registration_rate:.2f}  reproj {rec.reprojection_error:.2f} px  {extra}")
        recs[label] = rec

    _flythrough_accuracy(frames_n, size)

    rec = recs["pycolmap, case K"]
    reg = np.nonzero(rec.registered)[0]
    images, c2w = ft.frames[reg], rec.poses[reg]
    # The densification schedule scales with `iterations`; the time budget ends the fit first on slow CPUs.
    cfg = SplatConfig(iterations=3000, densify=True, time_limit_s=budget, max_gaussians=30000)
    from tracks.geometry.splat import split_train_test

    _, test_ids = split_train_test(len(reg), cfg.holdout_every)
    t0 = time.perf_counter()
    state = {"next": log_every, "eval_s": 0.0, "first22": None}
    print(f"splat fit (CPU, budget {budget:.0f} s, {len(reg) - len(test_ids)} train / {len(test_ids)} held-out views):")

    def cb(step: int, params: dict) -> None:
        el = time.perf_counter() - t0 - state["eval_s"]
        if el < state["next"]:
            return
        te = time.perf_counter()
        fit = SplatFit({k: v.detach() for k, v in params.items()}, [], test_ids, step + 1, el)
        p = _psnr(images[test_ids], render_views(fit, c2w[test_ids], rec.K, size, size))
        state["eval_s"] += time.perf_counter() - te
        if p >= 22.0 and state["first22"] is None:
            state["first22"] = el
        print(f"  {el:7.1f} s  step {step + 1:5d}  gaussians {params['means'].shape[0]:6d}  held-out PSNR {p:5.2f} dB", flush=True)
        state["next"] += log_every

    cfg.time_limit_s = budget
    fit = fit_splats(images, c2w, rec.K, rec.points, rec.colors, cfg, callback=cb)
    final = _psnr(images[test_ids], render_views(fit, c2w[test_ids], rec.K, size, size))
    fit_s = fit.seconds - state["eval_s"]
    print(f"splat fit: {fit.iterations} iterations in {fit_s:.1f} s ({fit.iterations / fit_s:.2f} it/s), "
          f"{fit.num_gaussians} Gaussians, final held-out PSNR {final:.2f} dB, "
          f">= 22 dB first at {state['first22'] if state['first22'] is not None else 'never'} s")

    import torch

    if torch.cuda.is_available():
        for dev in ("cuda", "cpu"):
            c = SplatConfig(iterations=200, densify=False)
            f = fit_splats(images, c2w, rec.K, rec.points, rec.colors, c, device=dev)
            print(f"fit iterations/s on {dev:4s} ({'gsplat CUDA' if dev == 'cuda' else 'our CPU'}): {f.iterations / f.seconds:.1f}")
    else:
        print("no CUDA device: gsplat CUDA iterations/s not measured")


def _flythrough_accuracy(frames_n: int, size: int, n: int = 3) -> None:
    """ATE (% of path) and registration rate on the scenario package's MuJoCo fly-throughs."""
    import torch  # noqa: F401 - before MuJoCo's EGL renderer (see bench_validity)

    from tracks.geometry.sfm import recover_cameras
    from tracks.geometry.trajectory import path_length, trajectory_errors

    cases = [c for c in _cases(n, size, frames_n) if c[2] != "tracks.geometry.synthetic"]
    if not cases:
        print("flythrough.* generators not registered: scenario fly-through accuracy not measured")
        return
    for case, video, gen in cases:
        t = time.perf_counter()
        rec = recover_cameras(video.frames, np.arange(video.num_frames), Path(tempfile.mkdtemp()), K=case.camera.K)
        dt = time.perf_counter() - t
        r = rec.registered
        P = case.camera.poses
        e = trajectory_errors(rec.poses[r], P[r])
        print(f"{gen} {case.id}: SfM {dt:6.2f} s  registration {rec.registration_rate:.2f}  "
              f"ATE {e.ate_rmse / path_length(P[r]) * 100:5.2f} % of path  RPE rot {e.rpe_rot_deg_mean:.2f} deg")


def _cases(n: int, size: int, frames_n: int):
    """(case, reference video) pairs: scenario fly-throughs when registered, else our synthetic ones."""
    from worldolympiad.types import CameraSpec, Case, Video

    try:
        from worldolympiad.registries import GENERATORS

        names = [g for g in GENERATORS.names() if g.startswith("flythrough.")]
    except Exception:  # noqa: BLE001 - the scenarios package may be absent
        names = []
    out = []
    if names:
        gen = GENERATORS.get(names[0])
        for i in range(n):
            case = gen.make_case(f"bench_ft_{i}", seed=i, resolution=(size, size), num_frames=frames_n)
            rendered = gen.render(case)
            out.append((case, rendered.video, names[0]))
        return out
    from tracks.geometry.synthetic import fly_through

    for i in range(n):
        ft = fly_through(frames_n, size, size, seed=i)
        case = Case(id=f"bench_ft_{i}", scenario="realworld", fps=8.0, num_frames=frames_n, resolution=(size, size),
                    camera=CameraSpec.from_arrays(ft.K, ft.poses), tracks=("geometry",))
        out.append((case, Video(ft.frames, 8.0), "tracks.geometry.synthetic"))
    return out


def bench_validity(n_cases: int, size: int, frames_n: int, iters: int, strengths: list[float],
                   perturbations: tuple[str, ...] = PERTURBS) -> None:
    # Import torch/gsplat (and so triton) before MuJoCo renders anything: importing triton's C
    # extension after MuJoCo's EGL renderer ran intermittently segfaults (__libc_free) here.
    import gsplat  # noqa: F401
    import torch  # noqa: F401
    from scipy.stats import spearmanr

    from tracks.geometry.track import GeometryTrack
    from worldolympiad.registries import PERTURBATIONS
    from worldolympiad.track import EvalContext

    track = GeometryTrack()

    def score(video, case) -> float:
        ctx = EvalContext(work_dir=Path(tempfile.mkdtemp()), options={"geometry.splat_iterations": iters})
        return float(track.evaluate(video, case, ctx).score)

    cases = _cases(n_cases, size, frames_n)
    print(f"== validity: {len(cases)} cases from {cases[0][2]}, {size} px, {frames_n} frames, {iters} splat iterations")
    wins = total = 0
    rhos: dict[str, list[float]] = {p: [] for p in perturbations}
    print(f"{'case':12s} {'perturbation':18s} " + " ".join(f"s={s:<5g}" for s in [0.0, *strengths]))
    for case, video, _ in cases:
        ref = score(video, case)
        for p in perturbations:
            fn = PERTURBATIONS.get(p)
            row = [ref]
            for s in strengths:
                row.append(score(fn(video, case, s, np.random.default_rng(0), None), case))
            wins += sum(ref > x for x in row[1:])
            total += len(row) - 1
            rho = spearmanr([0.0, *strengths], row).statistic
            rhos[p].append(-rho)  # higher strength → lower score is the expected (positive) direction
            print(f"{case.id:12s} {p:18s} " + " ".join(f"{x:7.3f}" for x in row) + f"   monotone rho={-rho:+.2f}", flush=True)
    print(f"reference wins {wins}/{total} pairs = {wins / total * 100:.1f} %")
    for p, r in rhos.items():
        print(f"Spearman(strength, -score) {p:18s} mean {np.mean(r):+.2f}  per case {[round(x, 2) for x in r]}")


def _pivot_frames(case, radius: float) -> np.ndarray:
    """The maze case's yaws with the camera turning about a point ``radius`` m behind it (it travels)."""
    import scenarios.gaming.maze as mz

    p = case.metadata["params"]
    grid, _, landmarks = mz.maze._world(int(case.metadata["seed"]), int(p["maze_size"]))
    textures = mz.make_textures()
    lms = [(pos, mz.LANDMARK_RADIUS, mz.LANDMARK_COLORS[name]) for name, pos in landmarks]
    poses = case.camera.poses.copy()
    poses[:, :3, 3] = poses[0, :3, 3] + radius * (poses[:, :3, 2] - poses[0, :3, 2])
    h, w = case.resolution
    return np.stack([mz.render_view(grid, textures, case.camera.K, P, h, w, lms)[0] for P in poses])


def _shown(metric) -> str:
    return f"{metric.raw:.3f}" if metric.status == "ok" else str(metric.status)


def bench_turn(suite: str) -> None:
    from scenarios.gaming.maze import maze
    from scenarios.perturb import table
    from scenarios.suites import suite_entries
    from tracks.geometry.metrics.camera import NAMES, camera_metrics
    from tracks.geometry.sfm import sample_frames
    from tracks.geometry.track import GeometryTrack, track_spec
    from worldolympiad.track import EvalContext
    from worldolympiad.types import Video
    from worldolympiad.video.io import encode_like_users, read_video

    perturb = table()
    specs = track_spec().metrics
    wins = total = 0
    print("| case | video | camera_score | rpe_rot (deg) | mean orientation error (deg) |\n|---|---|---|---|---|")
    for e in suite_entries(suite):
        case = maze.make_case(e.id, seed=e.seed, **e.params)
        rendered = maze.render(case)
        videos = {"clean": rendered.video.frames}
        with tempfile.TemporaryDirectory() as d:
            for name, crf, scale in (("crf23", 23, 1.0), ("crf35_s0.75", 35, 0.75)):
                path = encode_like_users(Path(d) / f"{name}.mp4", rendered.video.frames, case.fps, crf=crf, scale=scale)
                videos[name] = read_video(path).frames
        for defect, strengths in (("homography_jitter", (0.5, 1.0, 2.0)), ("frame_shuffle", (0.25, 0.5, 1.0))):
            for s in strengths:
                videos[f"{defect}-{s:g}"] = perturb[defect].fn(rendered.video, case, s, np.random.default_rng(0),
                                                               rendered).frames
        for radius in (0.1, 0.3):
            videos[f"pivot-{radius:g}m"] = _pivot_frames(case, radius)
        scores = {}
        for name, frames in videos.items():
            video = Video(frames, case.fps)
            with tempfile.TemporaryDirectory() as d:
                track, ctx = GeometryTrack(), EvalContext(work_dir=d, options={})
                idx = sample_frames(video.num_frames, int(track_spec().options["max_frames"]))
                rec, masks = track._recover(ctx, video.frames[idx], idx, Path(d), track._case_K(case, video))
                usable = rec.ok and int(rec.registered.sum()) >= 3
                m = {x.name: x for x in track._camera(video, case, ctx, rec, idx, masks, usable, rec.failure, specs,
                                                      camera_metrics, NAMES)}
            cam, rot = m["camera_score"], m["rpe_rot"]
            scores[name] = cam.normalized if cam.status == "ok" else None
            print(f"| {e.id} | {name} | {_shown(cam)} | {_shown(rot)} | {cam.details.get('mean_rot_err_deg', float('nan')):.2f} |",
                  flush=True)
        for name in videos:
            if name.startswith(("homography_jitter", "frame_shuffle", "pivot")):
                total += 1
                wins += scores["clean"] is not None and scores[name] is not None and scores["clean"] > scores[name]
    print(f"camera_score: clean above the defect in {wins}/{total} (clean, defect) pairs (a missing score counts wrong)")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["speed", "validity", "all", "turn"])
    ap.add_argument("--suite", default=str(Path(__file__).resolve().parent / "suites" / "geometry_tune"),
                    help="turn: the tuning suite of turn-in-place cases")
    ap.add_argument("--frames", type=int, default=None)
    ap.add_argument("--size", type=int, default=None)
    ap.add_argument("--budget", type=float, default=600.0, help="splat fit wall-time budget (s)")
    ap.add_argument("--log-every", type=float, default=30.0)
    ap.add_argument("--cases", type=int, default=3)
    ap.add_argument("--iters", type=int, default=None,
                    help="splat fit steps for validity (default: the track's own, geometry.splat_iterations)")
    ap.add_argument("--strengths", default="0.25,0.5,1.0")
    ap.add_argument("--perturbations", default=",".join(PERTURBS))
    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    if a.what in ("speed", "all"):
        bench_speed(a.frames or 48, a.size or 128, a.budget, a.log_every)
    if a.what == "turn":
        bench_turn(a.suite)
    if a.what in ("validity", "all"):
        from tracks.geometry.track import track_spec

        iters = a.iters if a.iters is not None else int(track_spec().options["splat_iterations"])
        bench_validity(a.cases, a.size or 64, a.frames or 24, iters, [float(s) for s in a.strengths.split(",")],
                       tuple(a.perturbations.split(",")))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
