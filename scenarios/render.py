"""``worldolympiad scenarios render SUITE OUT``: reference videos + case files on disk.

Output layout (everything a user needs to evaluate their own model, and what the Inferix
training recipe reads)::

    OUT/
      suite.json                 {"name", "version", "description", "cases": ["cases/<id>.json", ...]}
      cases/<id>.json            the case; reference, conditioning and ground-truth paths are
                                 relative to this file ("../videos/<id>.mp4" ...), camera filled
                                 from the render when the generator knows it
      videos/<id>.mp4            reference video: lossless RGB H.264, the exact frames (the default), or
                                 yuv420p at quantizer 18 with --playable (plays in browsers, about
                                 6x smaller, but scores against it differ: see below)
      conditioning/<id>.png      first frame (the image a world model starts from)
      ground_truth/<id>.json     per-frame states (object/agent/end-effector/camera positions...)
                                 as nested JSON; arrays of 3+ dimensions only in the .npz
      ground_truth/<id>.npz      masks [T, H, W] (int32 object ids, 0 = background), depth
                                 [T, H, W] float32 (inf = no hit), object_ids (JSON string),
                                 and every state array under "states/<path>"
      render_log.json            per-case seconds and any failures

A case that fails to render is logged (and listed in ``render_log.json``) and left out of
``suite.json``; the others still render. Reruns skip cases whose files all exist
(``--overwrite`` to redo them).

References are exact by default because they are what every track measures against: the same frames
the evaluator's own reference cache holds for a registered suite, so ``evaluate-model --suite
OUT/suite.json`` scores what ``--suite NAME`` scores. 4:2:0 chroma smears 1-2 px objects, and the
trackers then follow other paths: the shipped reference model scored 0.095 on smoke physics against a
``--playable`` render and 0.087 against an exact one, from identical generated frames (robotics pick
0.041 against 0.121; HISTORY.md of the reference model, session 32).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from worldolympiad.scenario import Rendered
from worldolympiad.types import Case, jsonable

logger = logging.getLogger(__name__)

DENSE_NDIM = 3  # state arrays with this many dimensions or more go to the .npz only


def case_paths(out: Path, case_id: str) -> dict[str, Path]:
    """Where each file of one case goes under ``out``."""
    return {
        "case": out / "cases" / f"{case_id}.json",
        "video": out / "videos" / f"{case_id}.mp4",
        "conditioning": out / "conditioning" / f"{case_id}.png",
        "states": out / "ground_truth" / f"{case_id}.json",
        "arrays": out / "ground_truth" / f"{case_id}.npz",
    }


def generator_for(case: Case) -> Any:
    """The generator instance that made ``case`` (from ``metadata["generator"]``)."""
    from worldolympiad.registries import GENERATORS

    name = (case.metadata or {}).get("generator")
    if not name:
        raise ValueError(f"case {case.id!r} has no metadata['generator']; only generated cases can be rendered")
    gen = GENERATORS.get(name)
    return gen() if isinstance(gen, type) else gen


def _flatten(prefix: str, obj: Any) -> Iterator[tuple[str, np.ndarray]]:
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            yield from _flatten(f"{prefix}/{k}", v)
    elif isinstance(obj, np.ndarray) and obj.dtype != object:
        yield prefix, obj
    elif isinstance(obj, (list, tuple)) and obj and all(isinstance(x, (int, float, np.number)) for x in np.ravel(obj)):
        try:
            yield prefix, np.asarray(obj)
        except ValueError:  # ragged
            return


def _light(obj: Any) -> Any:
    """States without the dense (>= 3-D) arrays, for the JSON file."""
    if isinstance(obj, Mapping):
        return {k: _light(v) for k, v in obj.items() if not (isinstance(v, np.ndarray) and v.ndim >= DENSE_NDIM)}
    return obj


def write_rendered(case: Case, rendered: Rendered, out: Path, *, lossless: bool = True) -> Case:
    """Write one rendered case under ``out`` and return the case as written (paths set)."""
    from PIL import Image

    from worldolympiad.video.io import write_video

    paths = case_paths(out, case.id)
    for p in paths.values():
        p.parent.mkdir(parents=True, exist_ok=True)
    frames = rendered.video.frames
    write_video(paths["video"], frames, case.fps, lossless=lossless)
    Image.fromarray(frames[0]).save(paths["conditioning"])
    arrays: dict[str, np.ndarray] = {"object_ids": np.asarray(json.dumps(rendered.object_ids))}
    if rendered.masks is not None:
        arrays["masks"] = np.asarray(rendered.masks, np.int32)
    if rendered.depth is not None:
        arrays["depth"] = np.asarray(rendered.depth, np.float32)
    arrays.update(dict(_flatten("states", rendered.states)))
    np.savez_compressed(paths["arrays"], **arrays)  # type: ignore[arg-type]  # numpy's stub reads **arrays as allow_pickle
    states_doc = {"case_id": case.id, "object_ids": rendered.object_ids, **_light(rendered.states)}
    paths["states"].write_text(json.dumps(jsonable(states_doc)))

    rel = lambda p: f"../{p.parent.name}/{p.name}"  # noqa: E731 - paths are relative to cases/
    physics = case.physics
    if physics is not None and physics.ground_truth is None:
        physics = dataclasses.replace(physics, ground_truth=rel(paths["states"]))
    meta = dict(case.metadata)
    meta["ground_truth_files"] = {
        "states": rel(paths["states"]),
        "arrays": rel(paths["arrays"]),
        "has_masks": rendered.masks is not None,
        "has_depth": rendered.depth is not None,
    }
    written = dataclasses.replace(
        case,
        reference=rel(paths["video"]),
        conditioning=rel(paths["conditioning"]),
        camera=case.camera or rendered.camera,
        physics=physics,
        metadata=meta,
        base_dir=str(paths["case"].parent.resolve()),
    )
    paths["case"].write_text(json.dumps(jsonable(written.to_dict()), indent=1))
    return written


@dataclasses.dataclass
class RenderReport:
    """What a suite render did."""

    out: Path
    written: list[str] = dataclasses.field(default_factory=list)
    skipped: list[str] = dataclasses.field(default_factory=list)
    failed: dict[str, str] = dataclasses.field(default_factory=dict)
    seconds: dict[str, float] = dataclasses.field(default_factory=dict)


def _render_one(case: Case, out: Path, lossless: bool) -> float:
    t0 = time.perf_counter()
    rendered = generator_for(case).render(case)
    write_rendered(case, rendered, out, lossless=lossless)
    return time.perf_counter() - t0


def render_cases(cases: Sequence[Case], out: str | Path, *, name: str, description: str = "",
                 overwrite: bool = False, lossless: bool = True, workers: int = 1) -> RenderReport:
    """Render ``cases`` into ``out`` and write ``suite.json`` listing those that rendered."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    mode = "lossless" if lossless else "playable"
    log = out / "render_log.json"
    if log.is_file() and not overwrite:
        before = json.loads(log.read_text()).get("videos")
        if before and before != mode:
            raise ValueError(f"{out} holds {before} reference videos; rendering {mode} ones beside them would mix the "
                             f"two: pass --overwrite, or another folder")
    report = RenderReport(out)
    todo = []
    for case in cases:
        if not overwrite and all(p.exists() for p in case_paths(out, case.id).values()):
            report.skipped.append(case.id)
        else:
            todo.append(case)
    if workers > 1 and len(todo) > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = {c.id: pool.submit(_render_one, c, out, lossless) for c in todo}
            for cid, fut in futures.items():
                try:
                    report.seconds[cid] = fut.result()
                    report.written.append(cid)
                except Exception as e:  # noqa: BLE001 - one bad case never stops a run
                    report.failed[cid] = f"{type(e).__name__}: {e}"
    else:
        for case in todo:
            try:
                report.seconds[case.id] = _render_one(case, out, lossless)
                report.written.append(case.id)
            except Exception as e:  # noqa: BLE001 - one bad case never stops a run
                logger.exception("case %s failed to render", case.id)
                report.failed[case.id] = f"{type(e).__name__}: {e}"
    ok = [c.id for c in cases if c.id not in report.failed]
    suite = {"name": name, "version": "1", "description": description or f"reference renders of suite {name}",
             "cases": [f"cases/{cid}.json" for cid in ok]}
    if ok:
        (out / "suite.json").write_text(json.dumps(suite, indent=1))
    log.write_text(json.dumps(
        {"suite": name, "videos": mode, "written": report.written, "skipped": report.skipped, "failed": report.failed,
         "seconds": {k: round(v, 3) for k, v in report.seconds.items()}}, indent=1))
    return report


def render_suite(suite: str, out: str | Path, *, limit: int | None = None, only: Sequence[str] = (),
                 overwrite: bool = False, lossless: bool = True, workers: int = 1) -> RenderReport:
    """Build the suite (a built-in name or a folder of fragments) and render it into ``out``."""
    from scenarios.suites import build_suite

    cases = build_suite(suite)
    if only:
        missing = set(only) - {c.id for c in cases}
        if missing:
            raise ValueError(f"--only names cases not in suite {suite!r}: {sorted(missing)}")
        cases = [c for c in cases if c.id in set(only)]
    if limit is not None:
        cases = cases[:limit]
    return render_cases(cases, out, name=Path(suite).name, overwrite=overwrite, lossless=lossless, workers=workers)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: ``worldolympiad scenarios render SUITE OUT [--limit N] [--only ID,...] [--workers N]``."""
    ap = argparse.ArgumentParser(prog="worldolympiad scenarios render",
                                 description="Render a suite's reference videos, case files and ground truth into OUT.",
                                 epilog="examples:\n"
                                        "  worldolympiad scenarios render smoke out/smoke              # 20 cases + suite.json\n"
                                        "  worldolympiad scenarios render smoke out/smoke --limit 2 --playable\n"
                                        "  worldolympiad scenarios render smoke out/maze --only smoke-gaming-maze\n"
                                        "  worldolympiad scenarios render standard out/std --workers 2\n"
                                        "  evaluate-model --model videos:gen/ --suite out/smoke/suite.json   "
                                        "# score your model's videos of them\n",
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("suite", help="suite name (smoke, gaming, robotics, realworld, physics, standard) or a folder of "
                                  "<family>.yaml fragments")
    ap.add_argument("out", help="output folder (created)")
    ap.add_argument("--limit", type=int, default=None, help="render only the first N cases")
    ap.add_argument("--only", default="", help="comma-separated case ids to render")
    ap.add_argument("--workers", type=int, default=1, help="processes (default 1)")
    ap.add_argument("--overwrite", action="store_true", help="re-render cases whose files already exist")
    video = ap.add_mutually_exclusive_group()
    video.add_argument("--playable", action="store_true",
                       help="reference videos as yuv420p H.264 at quantizer 18: play in browsers and are about 6x "
                            "smaller, but tracks score against them differently from the exact default (for viewing "
                            "and for carrying data, not for scores you compare)")
    video.add_argument("--lossless", action="store_true",
                       help="exact RGB reference videos (libx264rgb, quantizer 0; the default, kept for old commands)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    try:
        report = render_suite(args.suite, args.out, limit=args.limit, only=[s for s in args.only.split(",") if s],
                              overwrite=args.overwrite, lossless=not args.playable, workers=args.workers)
    except ValueError as e:
        print(f"worldolympiad scenarios render: error: {e}", file=sys.stderr)
        return 2
    print(f"rendered {len(report.written)} case(s), skipped {len(report.skipped)} existing, "
          f"{len(report.failed)} failed, in {time.perf_counter() - t0:.1f} s -> {report.out / 'suite.json'}")
    for cid, err in report.failed.items():
        print(f"  FAILED {cid}: {err}")
    return 1 if report.failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
