"""Physics v12: a body whose thin middle the opening erases is still one body.

The `ct-crescent-gradient-20fps` tuning render (cartoon.flat_bounce) is a yellow crescent whose
middle is one or two pixels wide. The morphological opening that removes colour speckle cut it
into its two horns and a sliver, three `crescent` tracks, and the merged series jumped between
them (gravity read an upward acceleration: 0.46 lossless, 0.013 at crf 23). Pieces of a shaped
body's colour are now joined within its declared box after the opening, not before it.
"""

from __future__ import annotations

from tracks.physics.checks import CheckInput, run_check
from tracks.physics.segmentation import OpenCVSegmenter
from tracks.physics.tracking import track_objects


def test_a_crescent_is_one_track_that_falls():
    from worldolympiad.registries import GENERATORS

    gen = GENERATORS.get("cartoon.flat_bounce")
    case = gen.make_case("crescent", seed=4, resolution=(96, 96), num_frames=40, fps=20, num_chunks=4,
                         shape="crescent", wall="gradient", color="yellow")
    video = gen.render(case).video
    hints = [dict(o) for o in case.physics.objects]
    seg = OpenCVSegmenter().segment(video.frames, hints)
    tracks = track_objects(video.frames, seg)
    mine = [tr for tr in tracks if tr.name == "crescent"]
    assert len(mine) == 1 and mine[0].visible.all(), [(tr.name, int(tr.visible.sum())) for tr in tracks]  # v11: three
    for check in ("gravity", "impact", "continuity"):
        res = run_check(check, CheckInput(tracks, video.frames, video.fps, "gravity", objects=hints, noise=seg.noise))
        assert res.status == "pass", res
