"""Physics v12: a two-tone ball is one body, not two quarters of one.

The `pt-bounce-24fps-patches-ball` tuning render is a blue ball with two diagonal quadrants of
its colour and two pale ones. Over the grey floor the pale quadrants match nothing, and the two
blue ones touch at a point or not at all: v11 tracked two `blue_ball` tracks of a quarter ball
each, the main one jumped from the whole ball to a quarter, and the clean video failed
continuity and impact (0.21). Pieces of one colour whose joint convex hull fits the body's
declared box are now one mask (`segmentation._join_pieces`).
"""

from __future__ import annotations

import numpy as np

from tracks.physics.checks import CheckInput, run_check
from tracks.physics.segmentation import OpenCVSegmenter, _join_pieces
from tracks.physics.tracking import track_objects


def test_a_two_tone_ball_is_one_track_and_passes_its_rules():
    from worldolympiad.registries import GENERATORS

    gen = GENERATORS.get("mechanics.bounce")
    case = gen.make_case("two-tone", seed=26, resolution=(128, 176), num_frames=48, fps=24, num_chunks=4,
                         radius=0.14, color="blue", texture="patches")
    video = gen.render(case).video
    hints = [dict(o) for o in case.physics.objects]
    seg = OpenCVSegmenter().segment(video.frames, hints)
    tracks = track_objects(video.frames, seg)
    ball = [tr for tr in tracks if tr.name == "blue_ball"]
    assert len(ball) == 1 and ball[0].visible.all(), [(tr.name, int(tr.visible.sum())) for tr in tracks]  # v11: two
    area = ball[0].area
    assert area.min() >= 0.6 * np.median(area), np.round(area)  # v11: 36 px (a quarter) over the floor
    for check in ("continuity", "impact"):
        res = run_check(check, CheckInput(tracks, video.frames, video.fps, "gravity", objects=hints, noise=seg.noise))
        assert res.status == "pass", res


def test_pieces_a_body_apart_stay_apart():
    m = np.zeros((40, 60), bool)
    m[10:16, 10:16] = True  # one quadrant of a 12 px ball
    m[17:23, 17:23] = True  # the opposite quadrant, a pixel off its corner
    m[10:16, 44:50] = True  # a brick of the same colour 28 px away
    out = _join_pieces(m, max_hull=12 * 12)
    assert out[10:23, 10:23].sum() > m[10:23, 10:23].sum()  # the two quadrants became their hull
    assert not out[10:23, 24:43].any() and out[10:16, 44:50].all()  # the brick stays a brick, unjoined
