"""A small sprite's size is its coverage, not its pixel count (version 17, issue 56).

A codec (or a resize) spreads a small sprite's contrast over more pixels at a fraction each: on the tuning split's
Freeway (bench/suites/interaction_tune, itune-freeway-s404) the 12 px chicken reads 18 px at crf 23, past
``MIN_AREA_PX`` (16), so identity_consistency compared its colour with later chunks' 3-6 px sightings (which the
lossless video never does: 12 px and 3-6 px are both small) and read a change of identity (0.70 against 1.0
lossless). The tracked component's summed likelihood (``MotionSeries.coverage``) stays about the sprite's size.
"""

from __future__ import annotations

import numpy as np
import pytest

from tracks.interaction import InteractionTrack
from tracks.interaction.consistency import MIN_AREA_PX
from tracks.interaction.motion import MotionSeries, agent_motion
from worldolympiad.types import even_chunks


@pytest.fixture(scope="module")
def freeway_crf23(tmp_path_factory):
    """The tuning split's itune-freeway-s404 (bench/suites/interaction_tune/interaction.yaml), rendered, and
    encoded as the validity harness writes it at crf 23."""
    pytest.importorskip("ale_py")
    from worldolympiad.registries import GENERATORS
    from worldolympiad.video.io import encode_like_users, read_video

    g = GENERATORS.get("gaming.atari_freeway")
    case = g.make_case("itune-freeway-s404", seed=404, resolution=[96, 96], num_frames=60, fps=15, num_chunks=6)
    ref = g.render(case).video.frames
    path = encode_like_users(tmp_path_factory.mktemp("crf23") / "clean.mp4", ref, case.fps, crf=23)
    return case, ref, read_video(path).frames


def test_a_smeared_sprite_covers_its_own_size(freeway_crf23):
    from tracks.interaction.actions import agent_appearance

    case, ref, lossy = freeway_crf23
    first = slice(case.chunks[0].frame_start, case.chunks[0].frame_end)
    clean = agent_motion(ref, agent_appearance(case))
    m = agent_motion(lossy, agent_appearance(case))
    assert m.tracking == "colour" and m.coverage is not None
    assert np.median(clean.areas[first]) < MIN_AREA_PX <= np.median(m.areas[first])  # the codec spread it ...
    assert abs(np.median(m.coverage[first]) - np.median(clean.areas[first])) <= 3.0  # ... its coverage did not grow


def test_clean_freeway_at_crf23_keeps_its_identity(freeway_crf23):
    from worldolympiad.track import EvalContext
    from worldolympiad.types import Video

    case, ref, lossy = freeway_crf23
    out = InteractionTrack().evaluate(Video(lossy, case.fps, chunks=case.chunks), case,
                                      EvalContext(reference_loader=lambda: Video(ref, case.fps, chunks=case.chunks)))
    identity = next(m for m in out.metrics if m.name == "identity_consistency")
    assert identity.status == "ok" and identity.normalized == 1.0  # version 16: 0.405


def test_identity_compares_the_colour_of_sprites_large_by_coverage_only(synth):
    case, frames = synth.game_case("gaming.atari_freeway", 0, size=64, frames=20)
    chunks = even_chunks(20, 2)
    # first chunk 18 px wide smear of a 12 px sprite, then 4 px sightings whose colour the codec took from the road
    areas = np.r_[np.full(10, 18.0), np.full(10, 4.0)]
    coverage = np.r_[np.full(10, 12.0), np.full(10, 3.0)]
    colors = np.r_[np.tile((193.0, 194.0, 152.0), (10, 1)), np.tile((208.0, 214.0, 156.0), (10, 1))]
    n = len(frames) - 1
    series = MotionSeries(np.zeros((n, 2)), np.zeros(n), "agent", np.zeros((len(frames), 2)), areas, colors, "colour",
                          coverage)
    assert InteractionTrack._identity(frames, case, chunks, None, series)["per_chunk"] == [1.0]
    # a sprite large by coverage too is still compared
    large = MotionSeries(np.zeros((n, 2)), np.zeros(n), "agent", np.zeros((len(frames), 2)), areas, colors, "colour",
                         np.r_[np.full(10, 30.0), np.full(10, 3.0)])
    assert InteractionTrack._identity(frames, case, chunks, None, large)["per_chunk"][0] < 0.8
