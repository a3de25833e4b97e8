"""Physics v16, continuity v10 (issue 56, tuned on bench/suites/cartoon_tune only): a teleport
beside frames where a codec parted the body from a piece of itself.

After a crf 23 encoding, ``ct-crescent-gradient-20fps``'s crescent (96 x 96, ~260 px) is found
whole in one track and, in a few frames, as a ~25 px horn in a second ``crescent`` track. Under
``teleport`` 1.0 it jumps 24 px sideways at frame 20 and the second track takes it on. v9
followed the body's merged path only in frames with one mask of its name, so the jump was divided
over the three frames up to the first single sighting and passed (score 1.0, as the clean video).
Where exactly one of the masks is as large as the body, that one is the body now.
"""

from __future__ import annotations

import numpy as np

from tracks.physics.checks import CheckInput, run_check
from tracks.physics.checks.continuity import merged_path
from tracks.physics.synthetic import track_from_path
from tracks.physics.tracking import ObjectTrack

H = W = 96
T = 40
FPS = 20.0


def _track(tid: int, cen: np.ndarray, area: np.ndarray) -> ObjectTrack:
    return track_from_path(tid, "crescent", cen, area, (H, W))


def _crescent(jump: float) -> list[ObjectTrack]:
    """The body falls and drifts; from frame 20 on it is ``jump`` px to the side, in the horn's track.

    The horn (25 px) is seen beside it in frames 3-5 and 18-19."""
    t = np.arange(T)
    x = 34.0 - 0.03 * t + np.where(t >= 20, jump, 0.0)
    y = np.minimum(19.5 + 0.09 * t**2, 68.0)  # falls, then rests
    body_area = 260.0 + 10 * np.sin(t)
    main = np.full((T, 2), np.nan)
    main[:20] = np.c_[x, y][:20]
    horn = np.full((T, 2), np.nan)
    horn_area = np.full(T, np.nan)
    for f in (3, 4, 5, 18, 19):
        horn[f] = (x[f] + 9.0, y[f] + 4.0)
        horn_area[f] = 25.0
    horn[20:] = np.c_[x, y][20:]
    horn_area[20:] = body_area[20:]
    return [_track(1, main, np.where(t < 20, body_area, np.nan)), _track(3, horn, horn_area)]


def _continuity(tracks: list[ObjectTrack]):
    inp = CheckInput(tracks, np.zeros((T, H, W, 3), np.uint8), FPS, "gravity",
                     objects=[{"name": "crescent", "shape": "crescent"}])
    return run_check("continuity", inp)


def test_a_teleport_beside_a_parted_horn_is_a_jump():
    res = _continuity(_crescent(jump=24.0))
    assert res.status == "fail", res
    assert res.measured["objects"]["crescent:merged"]["frame"] == 20


def test_the_same_body_handed_to_the_horns_track_in_place_moves_on():
    res = _continuity(_crescent(jump=0.0))
    assert res.status == "pass", res


def test_the_merged_path_takes_the_body_sized_mask_where_a_piece_is_seen_beside_it():
    tracks = _crescent(jump=24.0)
    cen, area = merged_path(tracks)
    assert np.isfinite(cen[[3, 4, 5, 18, 19], 0]).all()
    assert abs(cen[19, 0] - tracks[0].centroid[19, 0]) < 1e-9
    assert (area[[3, 4, 5, 18, 19]] > 200).all()


def test_two_body_sized_masks_of_its_name_leave_the_frame_out():
    tracks = _crescent(jump=24.0)
    tracks[1].area[18] = 240.0  # as large as the body: which is the body is unknown
    cen, _ = merged_path(tracks)
    assert np.isnan(cen[18, 0]) and np.isfinite(cen[19, 0])
