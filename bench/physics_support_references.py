"""Physics v22's `support` check on every clean tuning-split render of the rules it judges.

Renders each melting, sublimation and dissolving case of the tuning-split suites (`smoke`, `physics`, `standard` by
default), encodes it as users do (lossless, H.264 yuv420p crf 23, crf 35 after a 0.75x resize), segments and tracks it
as the physics track does and runs the check. Prints one line per video and rule, and exits 1 when any clean render
*fails* it: a ride-along check only lowers a rule's score, so with every reference passing, the references' scores and
the baseline order are what they were before the check existed.

    OMP_NUM_THREADS=1 MUJOCO_GL=egl python bench/physics_support_references.py [SUITE ...]   # ~40 s

Tuning-split suites only: never point it at the held-out split (`scenarios/heldout/splits.py`).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from scenarios.render import generator_for
from scenarios.suites import build_suite
from tracks.physics.checks import CheckInput, run_check
from tracks.physics.checks.support import RULES
from tracks.physics.segmentation import build_segmenter
from tracks.physics.track import analyse, case_camera_moves, mark_shrinking, object_hints, scale_hints
from worldolympiad.video.io import encode_like_users, read_video

GENERATORS = ("thermal.melting", "thermal.sublimation", "material.dissolving")
ENCODINGS = (("lossless", None, 1.0), ("crf23", 23, 1.0), ("crf35_s0.75", 35, 0.75))


def main(argv: list[str]) -> int:
    suites = argv or ["smoke", "physics", "standard"]
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for suite in suites:
            for case in build_suite(suite):
                if (case.metadata or {}).get("generator") not in GENERATORS or case.physics is None:
                    continue
                video = generator_for(case).render(case).video
                seg = build_segmenter("opencv", max_objects=4)
                hints = mark_shrinking(object_hints(case, video.frames, seg), case.physics.rules)
                for enc, crf, scale in ENCODINGS:
                    frames = video.frames if crf is None else read_video(
                        encode_like_users(Path(tmp) / "v.mp4", video.frames, video.fps, crf=crf, scale=scale)).frames
                    objects = scale_hints(hints, case, frames.shape[1:3])
                    a = analyse(frames, video.fps, seg, objects)
                    for rule in (r for r in case.physics.rules if r in RULES):
                        r = run_check("support", CheckInput(a.tracks, frames, video.fps, rule, objects=objects,
                                                            camera_moves=case_camera_moves(case),
                                                            case_rules=tuple(case.physics.rules)))
                        failed += r.status == "fail"
                        print(f"{suite:9s} {case.id:36s} {enc:12s} {rule:11s} {r.status:14s} "
                              f"lift share {r.measured.get('lift_share')}  {r.reason if r.status != 'pass' else ''}",
                              flush=True)
    print(f"{failed} clean render(s) fail the support check")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
