"""A named object hidden for a chunk keeps its identity (interaction v23, ``identity_consistency`` of objects).

With no agent colour (the robots) identity is judged on the case's coloured objects, each followed by its colour. A
chunk in which an object was never found scored 0, as for the agent: on ``bench/suites/interaction_tune``'s pick the
red cube under the closing gripper (the grasp chunk) read as a change of identity, so the clean video scored 0.5
without its reference, and the pick's ``seam_cut`` 1 and 2 were ordered by where that cube happened to be found.
Now a chunk where an object is unseen but found again later is left out; an object gone for good still scores 0.
"""

from __future__ import annotations

import numpy as np
import pytest

from tracks.interaction.consistency import agent_identity_consistency, calibrate_identity
from tracks.interaction.track import InteractionTrack
from worldolympiad.types import Case, PhysicsSpec, even_chunks

SIZE, FRAMES = 64, 36
RED, GREEN = (220, 30, 30), (30, 200, 60)


def _video(hide_red: tuple[int, ...]) -> np.ndarray:
    """Two cubes on a grey floor; in the chunks ``hide_red`` (of three, 12 frames each) a grey plate covers the red."""
    frames = np.full((FRAMES, SIZE, SIZE, 3), 120, np.uint8)
    frames[:, 20:30, 10:20] = RED
    frames[:, 20:30, 40:50] = GREEN
    for k in hide_red:
        frames[12 * k : 12 * (k + 1), 16:34, 6:24] = (200, 200, 200)  # the white gripper over the cube
    return frames


def _case() -> Case:
    objects = ({"name": "red_cube", "color": list(RED), "box": [10, 20, 20, 30]},
               {"name": "green_cube", "color": list(GREEN), "box": [40, 20, 50, 30]})
    return Case(id="pick", scenario="robotics", fps=12.0, num_frames=FRAMES, resolution=(SIZE, SIZE),
                chunks=even_chunks(FRAMES, 3), physics=PhysicsSpec(rules=(), objects=objects))


def test_a_cube_hidden_for_a_chunk_keeps_its_identity_and_one_gone_for_good_does_not():
    case = _case()
    hidden = InteractionTrack._identity(_video(hide_red=(1,)), case, case.chunks, None)
    assert hidden["per_object"]["red_cube"] == [None, 1.0] and hidden["per_object"]["green_cube"] == [1.0, 1.0]
    assert hidden["per_chunk"] == [1.0, 1.0] and calibrate_identity(hidden["per_chunk"], None)["mean"] == 1.0
    gone = InteractionTrack._identity(_video(hide_red=(1, 2)), case, case.chunks, None)
    assert gone["per_object"]["red_cube"] == [0.0, 0.0] and gone["per_chunk"] == [0.5, 0.5]


def test_a_fully_seen_agent_is_never_excused_and_calibration_leaves_unseen_chunks_out():
    chunks = even_chunks(FRAMES, 3)
    areas = np.full(FRAMES, 50.0)
    areas[12:24] = 0  # not found in the middle chunk, found again after
    colors = np.tile(np.array(RED, float), (FRAMES, 1))
    assert agent_identity_consistency(chunks, areas, colors)["per_chunk"] == [0.0, 1.0]
    obj = agent_identity_consistency(chunks, areas, colors, occludable=True)
    assert obj["per_chunk"] == [None, 1.0] and obj["mean"] == 1.0
    cal = calibrate_identity([None, 0.8], [0.5, 1.0])
    assert cal["per_chunk"] == [pytest.approx(0.8)] and cal["mean"] == pytest.approx(0.8)


def test_an_agent_that_shrank_under_min_area_before_it_went_unseen_is_excused():
    """Interaction v24: Pong's paddle goes under the top wall (4 px seen); crf 35 after a 0.75x resize erased those
    pixels for a whole chunk, which scored 0 (the clean video's identity 0.5 against 1.0 lossless). Not finding a
    sprite that had shrunk under MIN_AREA_PX is no evidence of a change; one that vanished while fully seen is."""
    from tracks.interaction.consistency import MIN_AREA_PX, shrank_away

    chunks = even_chunks(FRAMES, 3)
    areas = np.full(FRAMES, 20.0)
    areas[8:12] = MIN_AREA_PX / 4  # half under the wall at the end of the first chunk
    areas[12:24] = 0
    colors = np.tile(np.array(GREEN, float), (FRAMES, 1))
    assert shrank_away(areas, 12) and not shrank_away(np.full(FRAMES, 20.0), 12)
    assert agent_identity_consistency(chunks, areas, colors)["per_chunk"] == [None, 1.0]
    gone = areas.copy()
    gone[24:] = 0  # never found again: gone, not hidden
    assert agent_identity_consistency(chunks, gone, colors)["per_chunk"] == [0.0, 0.0]
