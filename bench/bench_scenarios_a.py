"""Scenario helper A's families: render timings and ground-truth accuracy, measured.

Prints, for every smoke case of the mechanics / thermal / material / fly-through families,
the make_case and render wall times, then accuracy figures measured on the renders:

* projection: max |sphere centre projected with K and pose - mask centroid| (px),
* closed form: max |RK4 free flight - closed form| (m),
* restitution: max relative error of measured bounces (impact speed >= 0.5 m/s) vs setting,
* (``--sfm``) pycolmap on a 128 px fly-through: registered frames and ATE / path length.

Usage: ``OMP_NUM_THREADS=1 python bench/bench_scenarios_a.py [--sfm]``. Never fails on a timing.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

FAMILIES = ("mechanics", "thermal", "material", "flythrough")


def smoke_timings() -> float:
    from scenarios.suites import smoke_suite
    from worldolympiad.registries import GENERATORS

    t0 = time.perf_counter()
    cases = [c for c in smoke_suite() if c.metadata["generator"].split(".")[0] in FAMILIES]
    t_make = time.perf_counter() - t0
    print(f"smoke (helper A families): {len(cases)} cases, make_case total {t_make:.2f} s")
    total = 0.0
    for c in cases:
        gen = GENERATORS.get(c.metadata["generator"])
        t = time.perf_counter()
        r = gen.render(c)
        dt = time.perf_counter() - t
        total += dt
        print(f"  {c.id:34s} {c.num_frames:3d} frames {c.height}x{c.width}  render {dt:6.2f} s")
        assert r.video.num_frames == c.num_frames
    print(f"render total {total:.2f} s (+ make_case {t_make:.2f} s)")
    return total


def accuracy() -> None:
    from scenarios._mujoco import project_points, sphere_image_centre
    from scenarios.mechanics import instances as M

    worst_px = worst_raw = 0.0
    for gen, seed, extra in ((M.FREE_FALL, 3, {}), (M.PROJECTILE, 4, {}), (M.BOUNCE, 5, {"restitution": 0.7}),
                             (M.COLLISION, 6, {})):
        case = gen.make_case("b", seed=seed, resolution=[96, 96], num_frames=24, fps=24, **extra)
        r = gen.render(case)
        for name, oid in r.object_ids.items():
            pos = np.asarray(r.states["objects"][name]["position"])
            rad = r.states["objects"][name]["size"][0]
            for t in range(case.num_frames):
                m = r.masks[t] == oid
                ys, xs = np.nonzero(m)
                if m.sum() < 12 or xs.min() == 0 or ys.min() == 0 or xs.max() == 95 or ys.max() == 95:
                    continue
                c = np.array([xs.mean(), ys.mean()])
                worst_px = max(worst_px, float(np.linalg.norm(c - sphere_image_centre(r.camera.K, r.camera.poses[t], pos[t], rad))))
                worst_raw = max(worst_raw, float(np.linalg.norm(c - project_points(r.camera.K, r.camera.poses[t], pos[t])[0])))
        if gen in (M.FREE_FALL, M.PROJECTILE):
            name = next(iter(r.object_ids))
            cf = r.states["closed_form"][name]
            n = cf["valid_frames"]
            err = np.abs(np.asarray(r.states["objects"][name]["position"])[:n] - cf["position"]).max()
            print(f"{gen.name}: closed-form max error {err:.2e} m over {n} frames of flight")
    print(f"projection: worst |sphere image centre - mask centroid| = {worst_px:.3f} px with the perspective "
          f"correction, {worst_raw:.3f} px projecting the bare centre (96 px renders)")
    for e in (0.6, 0.7, 0.85):
        case = M.BOUNCE.make_case("e", seed=0, restitution=e, resolution=[32, 32], num_frames=48, fps=24)
        spec, sim = M.BOUNCE._simulate(0, dict(case.metadata["params"]))
        errs = [abs(ev["restitution"] - e) / e for ev in sim.events if -ev["v_in"] >= 0.5]
        print(f"restitution {e}: {len(errs)} bounces >= 0.5 m/s (impact-scene contact k=1e6, dt<=1e-4), max relative error {100 * max(errs):.2f} %")


def sfm() -> None:
    import tempfile
    from pathlib import Path

    import cv2
    import pycolmap

    from scenarios.flythrough.room import ROOM_FLYTHROUGH as G

    case = G.make_case("sfm", seed=0, resolution=[128, 128], num_frames=20, fps=10)
    r = G.render(case)
    with tempfile.TemporaryDirectory() as d:
        img = Path(d) / "img"
        img.mkdir()
        for i, f in enumerate(r.video.frames):
            cv2.imwrite(str(img / f"{i:04d}.png"), cv2.cvtColor(f, cv2.COLOR_RGB2BGR))
        t = time.perf_counter()
        pycolmap.extract_features(Path(d) / "db.db", img, camera_mode=pycolmap.CameraMode.SINGLE)
        pycolmap.match_exhaustive(Path(d) / "db.db")
        recs = pycolmap.incremental_mapping(Path(d) / "db.db", img, Path(d) / "sparse")
        dt = time.perf_counter() - t
    rec = max(recs.values(), key=lambda x: x.num_reg_images())
    est = {}
    for im in rec.images.values():
        M = im.cam_from_world().matrix() if callable(im.cam_from_world) else im.cam_from_world.matrix()
        est[int(im.name[:4])] = -M[:3, :3].T @ M[:3, 3]
    idx = sorted(est)
    A, B = np.array([est[i] for i in idx]), r.camera.poses[idx, :3, 3]
    from tracks.geometry.trajectory import umeyama

    sim = umeyama(A, B)  # the geometry track's Sim(3) alignment (checked against evo there)
    aligned = sim.scale * A @ sim.R.T + sim.t
    ate = float(np.sqrt(((aligned - B) ** 2).sum(1).mean()))
    L = case.metadata["path_length_m"]
    print(f"fly-through SfM: {rec.num_reg_images()}/20 registered in {dt:.1f} s, ATE {ate:.4f} m = {100 * ate / L:.2f} % of path {L:.2f} m")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sfm", action="store_true", help="also run pycolmap on a fly-through (~15 s)")
    args = ap.parse_args()
    smoke_timings()
    accuracy()
    if args.sfm:
        sfm()
    return 0


if __name__ == "__main__":
    sys.exit(main())
