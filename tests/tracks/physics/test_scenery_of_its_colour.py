"""Physics v15: a wall holding much of a body's colour in pieces shares that colour with the body.

The `ct-arrow-checker-30fps-large` tuning render is a purple arrow falling over a purple-and-green
checkerboard whose purple squares lie 20 Lab units from the arrow's colour (the colour threshold
is 22). Losslessly the squares touch at their corners and make one region far larger than the
body could be, so only the half threshold names the arrow. At H.264 crf 23 the codec breaks the
corners apart: each square is a region under the body's bound, no frame shows the colour
outgrowing it, and v14 joined the arrow to the squares it passed (area 900-1850 px against its
710; rigidity and gravity failed a clean video, 0.12). A body's colour is now shared with the
scenery also when the video's still background holds more of it than the body's bound, in any
number of pieces (`OpenCVSegmenter._shares_colour`).
"""

from __future__ import annotations

import numpy as np

from tracks.physics.checks import CheckInput, run_check
from tracks.physics.segmentation import OpenCVSegmenter, rgb_to_lab
from tracks.physics.tracking import track_objects


def test_an_arrow_over_a_checkerboard_of_its_colour_keeps_its_size_at_crf23(tmp_path):
    from worldolympiad.registries import GENERATORS
    from worldolympiad.video.io import encode_like_users, read_video

    gen = GENERATORS.get("cartoon.flat_bounce")
    case = gen.make_case("arrow", seed=13, resolution=(288, 384), num_frames=48, fps=30, num_chunks=4,
                         shape="arrow", wall="checker", radius=0.08)
    rendered = gen.render(case)
    true_area = float(np.median((rendered.masks > 0).sum(axis=(1, 2))))
    frames = read_video(encode_like_users(tmp_path / "arrow.mp4", rendered.video.frames, case.fps, crf=23)).frames
    hints = [dict(o) for o in case.physics.objects]
    seg = OpenCVSegmenter().segment(frames, hints)
    tracks = track_objects(frames, seg)
    arrow = [tr for tr in tracks if tr.name == "arrow"]
    assert len(arrow) == 1 and arrow[0].visible.all()
    area = arrow[0].area
    assert np.abs(area / true_area - 1).max() < 0.25, (true_area, np.round(area))  # v14: up to 2.6x
    for check in ("rigidity", "gravity"):
        res = run_check(check, CheckInput(tracks, frames, case.fps, "gravity", objects=hints, noise=seg.noise))
        assert res.status == "pass", res


def test_colour_in_many_small_pieces_of_the_scenery_is_shared():
    rng = np.random.default_rng(0)
    T, H, W = 6, 60, 80
    body = np.array([150, 100, 170], np.uint8)
    wall = np.full((T, H, W, 3), (60, 160, 90), np.uint8)
    for y in range(2, H - 6, 10):  # 40 separate 5x5 tiles of nearly the body's colour: no one larger than the body
        for x in range(2, W - 6, 10):
            wall[:, y:y + 5, x:x + 5] = body + rng.integers(-3, 4, 3)
    seg = OpenCVSegmenter()
    lab = rgb_to_lab(wall)
    c = rgb_to_lab(body.reshape(1, 1, 3))[0, 0]
    box_cap = 4 * 8 * 8  # a body declared 8 px wide may cover 256 px; the tiles cover 1,000
    assert seg._shares_colour(lab, [("body", c)], [box_cap], max_area=H * W, min_area=4) == [True]  # v14: False
    sparse = wall.copy()
    sparse[:, 10:] = (60, 160, 90)  # one row of tiles (200 px): under the body's bound, not shared
    lab = rgb_to_lab(sparse)
    assert seg._shares_colour(lab, [("body", c)], [box_cap], max_area=H * W, min_area=4) == [False]
