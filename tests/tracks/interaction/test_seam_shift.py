"""A seam that shifts the whole picture moves the agent's window and the world's response with it (version 16, issue 56).

The scenario library's ``seam_cut`` shifts every other chunk sideways by ``s`` x 8 % of the width. On the tuning
split's Pong (bench/suites/interaction_tune) the green paddle's search window is its column, 8 px at 208 px: a shift
of 4 % pushed the paddle out of it, and version 15 followed a sliver of it or a speck of the field (direction and
identity lost in the shifted chunks), while a shift of 16 % pushed it out of the picture and a 3 px speck happened to
move the asked way, so the strongest seam scored above the weaker ones (itune-pong-s408: 0.389 / 0.560 / 0.753).
Likewise ``world_response`` compared where the picture changes without aligning the pictures: a chunk shifted by
4-8 % agreed 0.06-0.12 with its reference and one shifted by 16 % 0.58-0.65. Since version 16 the tracker moves its
frames back onto the first frame's picture (:func:`picture_offsets`, :func:`stabilise`) and the world's response is
read after aligning the chunk with the reference (:func:`picture_shift`); the seam is the transition metrics' to judge.
"""

from __future__ import annotations

import numpy as np
import pytest

from tracks.interaction.actions import agent_appearance
from tracks.interaction.motion import agent_motion, picture_offsets
from tracks.interaction.response import chunk_response, picture_shift


@pytest.fixture(scope="module")
def pong(synth):
    case, frames = synth.game_case("gaming.atari_pong", 3, size=96, frames=48)
    return case, frames


def _seam(case, frames, s: float) -> np.ndarray:
    from worldolympiad.registries import PERTURBATIONS
    from worldolympiad.types import Video

    return PERTURBATIONS.get("seam_cut")(Video(frames, case.fps, chunks=case.chunks), case, s,
                                         np.random.default_rng(0), None).frames


def _chunk(case, i: int) -> slice:
    return slice(case.chunks[i].frame_start, case.chunks[i].frame_end)


def test_picture_offsets_follow_the_seams_and_nothing_else(pong):
    case, frames = pong
    assert not picture_offsets(frames).any()  # sprites moving over a fixed screen shift no picture
    for s in (0.5, 1.0):
        off = picture_offsets(_seam(case, frames, s))
        want = np.zeros_like(off)
        want[_chunk(case, 1), 0] = round(s * 0.08 * frames.shape[2])
        assert np.abs(off - want).max() <= 1, off[:, 0].tolist()


def test_the_agents_window_goes_with_a_shifted_picture(pong):
    case, frames = pong
    app = agent_appearance(case)
    clean = agent_motion(frames, app)
    shifted = _chunk(case, 1)
    assert (clean.areas[shifted] > 0).all()  # the paddle is in view in the chunk the seam shifts
    for s in (0.5, 1.0):  # 4 % and 8 % of the width: out of the paddle's column, still in the picture
        m = agent_motion(_seam(case, frames, s), app)
        # read on the first frame's picture: the seam is no motion of the paddle, the paddle is whole
        assert np.nanmax(np.abs(m.positions - clean.positions)) <= 1.0
        assert np.abs(m.areas[shifted] - clean.areas[shifted]).max() <= 0.25 * clean.areas[shifted].max()
    # 16 %: the paddle is pushed out of the picture, and nothing else is taken for it
    m = agent_motion(_seam(case, frames, 2.0), app)
    assert not m.areas[shifted].any()


def test_the_world_response_of_a_shifted_chunk_is_read_in_its_own_picture(pong):
    case, frames = pong
    for s in (0.5, 1.0):
        r = chunk_response(_seam(case, frames, s), frames, case.chunks)
        row = r["per_chunk"][1]
        assert row["moves"] and row["shift"] == [round(s * 0.08 * 64), 0]
        assert row["agreement"] >= 0.9 and row["responds"]
    assert "shift" not in chunk_response(frames, frames, case.chunks)["per_chunk"][1]


def test_no_shift_between_different_pictures():
    """Two chunks of unrelated content are not aligned: a whole-picture translation does not explain them."""
    rng = np.random.default_rng(1)
    a = rng.uniform(0, 255, (6, 48, 64)).astype(np.float32)
    b = rng.uniform(0, 255, (6, 48, 64)).astype(np.float32)
    assert picture_shift(a, b) == (0, 0)
    assert picture_shift(np.roll(a, 5, axis=2), a) == (5, 0)
