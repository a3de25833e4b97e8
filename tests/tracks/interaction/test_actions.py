"""Action vocabularies: every documented form is read, unknown actions are clear per-case errors."""

from __future__ import annotations

import numpy as np
import pytest

from tracks.interaction.actions import UnknownActionError, agent_appearance, default_vocabularies, expected_motion
from worldolympiad.types import CameraSpec, Case, even_chunks


def _case(metadata=None, actions=("forward",), scenario="gaming", camera=None) -> Case:
    return Case(id="c", scenario=scenario, fps=10.0, num_frames=30, resolution=(64, 80),
                chunks=even_chunks(30, len(actions), actions=list(actions)), metadata=metadata or {}, camera=camera)


def test_generic_camera_vocabulary_from_the_shipped_defaults():
    case = _case()
    assert expected_motion("forward", case).mode == "zoom"
    assert expected_motion("forward", case).direction[0] == 1.0
    tl = expected_motion("turn_left", case)
    # turning the camera left moves the content right
    assert (tl.target, tl.mode, tl.direction) == ("camera", "translate", (1.0, 0.0))
    assert expected_motion("static", case).mode == "none"
    assert expected_motion("Turn Left", case).direction == (1.0, 0.0)  # case/space-insensitive match


def test_unknown_action_names_the_action_the_vocabulary_and_its_actions():
    case = _case(metadata={"generator": "gaming.maze"})
    with pytest.raises(UnknownActionError, match=r"unknown action 'jump' for vocabulary 'gaming.maze'.*turn_left"):
        expected_motion("jump", case)


def test_atari_image_translation_form_from_case_metadata():
    space = {"kind": "image_translation", "agent": "paddle",
             "actions": {"NOOP": {"translation": [0.0, 0.0]}, "RIGHT": {"translation": [8.0, 0.0]}}}
    case = _case(metadata={"action_space": space, "game": "breakout"})
    r = expected_motion("RIGHT", case)
    assert (r.target, r.mode, r.direction) == ("agent", "translate", (1.0, 0.0))
    assert r.magnitude == pytest.approx(8.0 / 80)  # fraction of the image width per frame
    assert expected_motion("NOOP", case).mode == "none"
    with pytest.raises(UnknownActionError, match="known actions: NOOP, RIGHT"):
        expected_motion("LEFT", case)


def test_maze_camera_form_turns_yaw_into_content_motion_with_magnitude_from_k():
    space = {"kind": "camera", "actions": {"turn_left": {"translation": [0, 0, 0], "yaw_deg": 4.5},
                                           "forward": {"translation": [0, 0, 0.1], "yaw_deg": 0.0},
                                           "strafe_right": {"translation": [0.1, 0, 0], "yaw_deg": 0.0}}}
    K = [[40.0, 0, 40], [0, 40.0, 32], [0, 0, 1]]
    case = _case(metadata={"action_space": space}, camera=CameraSpec.from_arrays(np.array(K)))
    tl = expected_motion("turn_left", case)
    assert tl.direction == (1.0, 0.0)
    assert tl.magnitude == pytest.approx(np.tan(np.radians(4.5)) * 40.0 / 80)
    assert expected_motion("forward", case).mode == "zoom"
    assert expected_motion("strafe_right", case).direction == (-1.0, 0.0)


def test_structured_end_effector_delta_is_projected_through_the_camera():
    # camera looking down the world +z axis with OpenCV axes = world axes: world +x is image right
    case = _case(scenario="robotics", camera=CameraSpec.from_arrays(np.eye(3), np.eye(4)[None]))
    m = expected_motion({"name": "move_ee", "delta": [0.05, 0.0, 0.0]}, case)
    assert (m.target, m.mode, m.direction) == ("agent", "translate", (1.0, 0.0))
    assert expected_motion("grasp", case).mode == "none"
    no_cam = _case(scenario="robotics")
    with pytest.raises(UnknownActionError, match="no camera pose"):
        expected_motion({"name": "move_ee", "delta": [0.05, 0.0, 0.0]}, no_cam)


def test_atari_pong_defaults_map_right_to_paddle_up_and_agent_colour_is_known():
    case = _case(metadata={"generator": "gaming.atari_pong", "game": "pong"}, actions=("RIGHT",))
    assert expected_motion("RIGHT", case).direction == (0.0, -1.0)
    app = agent_appearance(case)
    assert app["color"] == default_vocabularies()["atari_agents"]["pong"]["color"]
    assert app["window"]["cols"][0] < 144 * 80 / 160 <= app["window"]["cols"][1] + 1


def test_chunk_without_action_expects_nothing():
    assert expected_motion(None, _case()) is None


def test_bare_directions_in_a_gaming_case_without_action_space_are_not_read_as_camera_pans(tmp_path):
    """Issue 56: `left/right/up/down` with no action space were read with the camera vocabulary
    (pans, content moving the other way), and a video ignoring every action scored 0.891 against
    the reference's 0.893. No reading is safe: action following is not applicable, with the fix."""
    from tracks.interaction.actions import AmbiguousActionError
    from tracks.interaction.track import InteractionTrack
    from worldolympiad.track import EvalContext
    from worldolympiad.types import Video

    case = _case(actions=("left", "right"))
    with pytest.raises(AmbiguousActionError, match="action_space"):
        expected_motion("left", case)
    # the camera vocabulary still applies to first-person words and to realworld cases
    assert expected_motion("turn_left", case).target == "camera"
    assert expected_motion("left", _case(actions=("left",), scenario="realworld")).target == "camera"
    frames = np.zeros((case.num_frames, case.height, case.width, 3), np.uint8)
    out = InteractionTrack().evaluate(Video(frames, case.fps), case, EvalContext(work_dir=tmp_path))
    following = {m.name: m for m in out.metrics if m.name in ("direction_accuracy", "magnitude_error", "response_delay")}
    assert all(m.status == "not_applicable" and "action_space" in (m.reason or "") for m in following.values())
