"""Realised motion (camera ego-motion, agent tracking) and the action-following verdicts."""

from __future__ import annotations

import numpy as np
import pytest

from tracks.interaction.following import analyze_following, chance_following
from tracks.interaction.motion import agent_motion, camera_motion
from worldolympiad.types import Case, even_chunks


def test_camera_motion_recovers_pan_speed_and_zoom_sign(synth):
    v = synth.camera_video([(1.5, 0.0, 0.0), (0.0, -1.0, 0.0), (0.0, 0.0, 0.02)], frames_per_move=8)
    m = camera_motion(v)
    pan, tilt, zoom = slice(0, 7), slice(8, 15), slice(16, 23)
    assert np.median(m.translation[pan, 0]) * 48 == pytest.approx(1.5, abs=0.2)
    assert np.median(m.translation[tilt, 1]) * 48 == pytest.approx(-1.0, abs=0.2)
    assert np.median(m.zoom[zoom]) == pytest.approx(0.02, abs=0.006)
    assert abs(np.median(m.zoom[pan])) < 0.003


def test_agent_tracker_follows_the_coloured_sprite(synth):
    v = synth.sprite_video([(1.0, 0.0), (0.0, 1.0)], frames_per_move=6)
    m = agent_motion(v, {"color": [40, 220, 240], "window": None})
    assert np.nanmedian(m.translation[:5, 0]) * 48 == pytest.approx(1.0, abs=0.25)
    assert np.nanmedian(m.translation[6:11, 1]) * 48 == pytest.approx(1.0, abs=0.25)
    # the model-free blob tracker (colour unknown) sees the same motion
    b = agent_motion(v, None)
    assert np.nanmedian(b.translation[:5, 0]) * 48 == pytest.approx(1.0, abs=0.35)


def _camera_case(actions, frames_per=12) -> Case:
    n = frames_per * len(actions)
    return Case(id="cam", scenario="realworld", fps=12.0, num_frames=n, resolution=(48, 48),
                chunks=even_chunks(n, len(actions), actions=list(actions)), tracks=("interaction",))


def test_following_scores_direction_and_flags_inverted_actions(synth):
    case = _camera_case(["turn_left", "forward", "turn_right"])
    good = synth.camera_video([(1.5, 0, 0), (0, 0, 0.02), (-1.5, 0, 0)])
    bad = synth.camera_video([(-1.5, 0, 0), (0, 0, -0.02), (1.5, 0, 0)])
    assert analyze_following(good, case, case.chunks).direction_accuracy == 1.0
    assert analyze_following(bad, case, case.chunks).direction_accuracy == 0.0


def test_following_magnitude_error_against_the_reference(synth):
    case = _camera_case(["turn_left", "turn_right"])
    ref = synth.camera_video([(1.0, 0, 0), (-1.0, 0, 0)])
    slow = synth.camera_video([(0.5, 0, 0), (-0.5, 0, 0)])
    assert analyze_following(ref, case, case.chunks, reference=ref).magnitude_error == pytest.approx(0.0)
    err = analyze_following(slow, case, case.chunks, reference=ref).magnitude_error
    assert err == pytest.approx(0.5, abs=0.12)


def test_response_delay_measured_by_cross_correlation_with_the_reference(synth):
    case = _camera_case(["turn_left", "static", "turn_right", "static"])
    ref = synth.camera_video([(1.5, 0, 0), (0, 0, 0), (-1.5, 0, 0), (0, 0, 0)])
    late = synth.delayed(ref, 3)
    assert analyze_following(ref, case, case.chunks, reference=ref).delay_frames == 0
    assert analyze_following(late, case, case.chunks, reference=ref).delay_frames == pytest.approx(3, abs=1)


def test_a_frozen_video_never_answered_so_its_delay_is_the_longest_lag_not_zero(synth):
    # version 1 found no correlation peak in a flat series and reported lag 0: a perfect score
    case = _camera_case(["turn_left", "static", "turn_right", "static"])
    ref = synth.camera_video([(1.5, 0, 0), (0, 0, 0), (-1.5, 0, 0), (0, 0, 0)])
    frozen = np.repeat(ref[:1], len(ref), axis=0)
    rep = analyze_following(frozen, case, case.chunks, reference=ref)
    assert rep.delay_method == "no_response" and rep.delay_frames == 12  # one 12-frame chunk
    late = analyze_following(synth.delayed(ref, 3), case, case.chunks, reference=ref)
    assert late.delay_method == "frame_alignment" and late.delay_frames == 3


def test_response_delay_without_reference_uses_onset_inside_chunks(synth):
    case = _camera_case(["turn_left", "turn_right"])
    ref = synth.camera_video([(1.5, 0, 0), (-1.5, 0, 0)])
    on_time = analyze_following(ref, case, case.chunks).delay_frames
    late = analyze_following(synth.delayed(ref, 4), case, case.chunks).delay_frames
    assert late >= on_time + 3


def test_unreachable_expectation_is_judged_against_the_reference(synth):
    # the reference sprite does not move on RIGHT (e.g. against a wall): a model that also stays put follows it
    case = Case(id="a", scenario="gaming", fps=12.0, num_frames=24, resolution=(48, 48),
                chunks=even_chunks(24, 2, actions=["RIGHT", "LEFT"]), metadata={"generator": "gaming.atari_breakout",
                                                                              "action_space": {"kind": "image_translation", "agent_color": [40, 220, 240],
                                                                                               "actions": {"RIGHT": {"translation": [1, 0]}, "LEFT": {"translation": [-1, 0]}}}})
    ref = synth.sprite_video([(0.0, 0.0), (-1.0, 0.0)])
    rep = analyze_following(ref, case, case.chunks, reference=ref)
    assert rep.direction_accuracy == 1.0
    assert rep.chunks[0].expectation == "reference"


def _atari_case(actions, vocabulary) -> Case:
    n = 12 * len(actions)
    space = {"kind": "image_translation", "agent_color": [40, 220, 240],
             "actions": {a: {"translation": t} for a, t in vocabulary.items()}}
    return Case(id="a", scenario="gaming", fps=12.0, num_frames=n, resolution=(48, 48),
                chunks=even_chunks(n, len(actions), actions=list(actions)),
                metadata={"generator": "gaming.atari_breakout", "action_space": space})


def test_chance_is_the_share_of_the_vocabulary_whose_motion_passes_the_chunk():
    vocab = {"NOOP": [0, 0], "FIRE": [0, 0], "RIGHT": [1, 0], "LEFT": [-1, 0]}
    case = _atari_case(["NOOP", "RIGHT", "LEFT"], vocab)
    # still actions pass a NOOP chunk (2 of 4); only RIGHT passes RIGHT (1 of 4)
    assert chance_following(case, case.chunks) == pytest.approx([0.5, 0.25, 0.25])


def test_chance_on_camera_moves_counts_a_turn_as_a_strafe_and_forward_alone():
    # content shifts the same way under turn_left and strafe_left; only forward zooms in
    moves = {"forward": {"translation": [0, 0, 0.1]}, "back": {"translation": [0, 0, -0.1]},
             "strafe_left": {"translation": [-0.05, 0, 0]}, "strafe_right": {"translation": [0.05, 0, 0]},
             "turn_left": {"yaw_deg": 3.0}, "turn_right": {"yaw_deg": -3.0}}
    case = _camera_case(["strafe_left", "forward", "turn_right"])
    case.metadata["action_space"] = {"kind": "camera", "actions": moves}
    assert chance_following(case, case.chunks) == pytest.approx([2 / 6, 1 / 6, 2 / 6])


def test_chance_is_judged_against_the_reference_where_the_reference_does_not_move(synth):
    vocab = {"NOOP": [0, 0], "FIRE": [0, 0], "RIGHT": [1, 0], "LEFT": [-1, 0]}
    case = _atari_case(["RIGHT", "LEFT"], vocab)
    ref = synth.sprite_video([(0.0, 0.0), (-1.0, 0.0)])  # against the wall on RIGHT: it stays put
    assert chance_following(case, case.chunks) == pytest.approx([0.25, 0.25])
    # as the track judges it: chunk 0 is followed by standing still, which 2 of the 4 actions do
    assert chance_following(case, case.chunks, reference=ref) == pytest.approx([0.5, 0.25])
    assert analyze_following(ref, case, case.chunks, reference=ref).chunks[0].expectation == "reference"


def test_the_track_report_carries_per_chunk_chance_equal_to_chance_following(synth):
    vocab = {"NOOP": [0, 0], "FIRE": [0, 0], "RIGHT": [1, 0], "LEFT": [-1, 0]}
    case = _atari_case(["RIGHT", "LEFT", "NOOP"], vocab)
    ref = synth.sprite_video([(0.0, 0.0), (-1.0, 0.0), (0.0, 0.0)])  # RIGHT against the wall: stays put
    video = synth.sprite_video([(1.0, 0.0), (-1.0, 0.0), (0.0, 0.0)])
    rep = analyze_following(video, case, case.chunks, reference=ref)
    # the reference fallback applies to chunk 0 (standing still passes it: NOOP and FIRE)
    assert [c.chance for c in rep.chunks] == pytest.approx(chance_following(case, case.chunks, reference=ref))
    assert [c.chance for c in rep.chunks] == pytest.approx([0.5, 0.25, 0.5])
    assert rep.chance == pytest.approx(5 / 12)
    assert rep.to_dict()["chance"] == pytest.approx(5 / 12)


def test_chance_is_not_defined_on_a_synonym_table_or_a_structured_command(synth):
    # no action_space: the default camera vocabulary, whose 29 names are synonyms of 11 moves
    case = _camera_case(["turn_left", "forward"])
    rep = analyze_following(synth.camera_video([(1.5, 0, 0), (0, 0, 0.02)]), case, case.chunks)
    assert rep.direction_accuracy == 1.0
    assert rep.chance is None and "synonyms" in rep.chance_reason
    with pytest.raises(ValueError, match="synonyms"):
        chance_following(case, case.chunks)
    # a fly-through's structured camera move has no finite set of alternatives
    moves = {"turn_left": {"yaw_deg": 3.0}, "turn_right": {"yaw_deg": -3.0}}
    cam = _camera_case([{"name": "camera", "yaw_deg": 3.0}])
    cam.metadata["action_space"] = {"kind": "camera", "actions": moves}
    rep = analyze_following(synth.camera_video([(1.5, 0, 0)]), cam, cam.chunks)
    assert rep.chance is None and "structured" in rep.chance_reason
