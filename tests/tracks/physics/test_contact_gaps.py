"""Physics v11: a body lost for the one frame it touches the floor has not vanished.

A silver plate bouncing on grey tiles (the `pt-bounce-24fps-silver-plate` tuning render) merges
with the floor in the frame of each contact: its mask is gone there and nowhere else. v10 read
the three contacts as three frames of vanishing (permanence failed) and, the turn at each bounce
being unseen, found no bounce at all, only kinks whose speed ratio looked like energy gained
(impact failed). Impact v6 reads the turn across a one-frame gap; permanence v4 does not count
such a gap at a contact. A flicker elsewhere, or a body erased for good, still counts.
"""

from __future__ import annotations

import numpy as np
import pytest

from tracks.physics.checks import CheckInput, run_check
from tracks.physics.checks.permanence import contact_gaps
from tracks.physics.segmentation import OpenCVSegmenter
from tracks.physics.tracking import track_objects


@pytest.fixture(scope="module")
def plate():
    from scenarios.perturb import table
    from worldolympiad.registries import GENERATORS

    gen = GENERATORS.get("mechanics.bounce")
    case = gen.make_case("plate", seed=23, resolution=(128, 160), num_frames=48, fps=24, num_chunks=4,
                         shape="plate", radius=0.1, color="silver")
    rendered = gen.render(case)
    gone = table()["vanish"].fn(rendered.video, case, 0.34, rendered=rendered)
    return [dict(o) for o in case.physics.objects], rendered.video, gone


def _run(hints, video, check: str):  # type: ignore[no-untyped-def]
    seg = OpenCVSegmenter().segment(video.frames, hints)
    tracks = track_objects(video.frames, seg)
    return tracks, run_check(check, CheckInput(tracks, video.frames, video.fps, "gravity", objects=hints, noise=seg.noise))


def test_a_plate_lost_only_at_its_contacts_bounces_and_stays(plate):
    hints, clean, _ = plate
    tracks, perm = _run(hints, clean, "permanence")
    gaps = contact_gaps(tracks, "silver_plate", clean.num_frames, clean.fps, clean.frames.shape[1])
    assert len(gaps) >= 2, gaps  # the render loses the plate at its contacts
    assert perm.status == "pass" and perm.score == 1.0, perm  # v10: fail, 3 frames missing
    _, imp = _run(hints, clean, "impact")
    assert imp.status == "pass" and imp.measured["bounces"] >= 2, imp  # v10: 0 bounces, "added energy"


def test_a_plate_erased_for_good_still_vanishes(plate):
    hints, _, gone = plate
    _, perm = _run(hints, gone, "permanence")
    assert perm.status == "fail" and perm.score < 0.5, perm


def test_a_flicker_mid_flight_is_not_a_contact():
    from tracks.physics.tracking import ObjectTrack

    T, fps, H = 24, 24.0, 100
    y = 10 + 0.5 * 9.8 * 40 * (np.arange(T) / fps) ** 2  # a fall, no contact in view
    cen = np.stack([np.full(T, 50.0), y], 1)
    vis = np.ones(T, bool)
    vis[8] = False
    tr = ObjectTrack(id=1, name="ball", centroid=np.where(vis[:, None], cen, np.nan), area=np.where(vis, 40.0, np.nan),
                     bbox=np.where(vis[:, None], np.c_[cen - 3, cen + 3], np.nan), color=np.zeros((T, 3)),
                     state=["visible" if v else "missing" for v in vis], touching=np.zeros(T, bool), frame_size=(H, 100))
    assert contact_gaps([tr], "ball", T, fps, H) == set()
