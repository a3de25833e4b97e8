"""Drift read together with a dynamic degree (track v3): stillness is never rewarded where motion is demanded.

Track v2 scored a still image 5/6 on every case (five signals that cannot drift, the dynamic one at its
maximum), above drifting videos of real motion: ``repeat-first-frame`` got 0.833 long-video drift on every
smoke case, above ``perturbed:blur_drift@1``.
"""

from __future__ import annotations

import numpy as np
import pytest

from tracks.longvideo.dynamics import MOTION_FLOOR, action_demand, motion_gate, pair_activity
from worldolympiad.track import EvalContext
from worldolympiad.types import Case, Chunk, Video, even_chunks


def _case(num_frames: int, actions: tuple = (), action_space: dict | None = None) -> Case:
    meta = {"action_space": action_space} if action_space else {}
    return Case(id="pan", scenario="realworld", fps=10.0, num_frames=num_frames, resolution=(48, 48),
                chunks=even_chunks(num_frames, 5, actions=actions), tracks=("longvideo",), metadata=meta)


def _score(frames: np.ndarray, case: Case, reference: np.ndarray | None, tmp_path, tag: str, fps: float = 10.0) -> tuple:
    from tracks.longvideo import LongVideoTrack

    loader = (lambda: Video(reference, 10.0)) if reference is not None else None
    out = LongVideoTrack().evaluate(Video(frames, fps, chunks=case.chunks), case,
                                    EvalContext(work_dir=tmp_path / tag, reference_loader=loader))
    gate = next(m for m in out.metrics if m.name == "dynamic_degree")
    return out.score, gate


@pytest.fixture(scope="module")
def moving(synth) -> np.ndarray:
    """A 100-frame real-photo pan that swings back and forth (no drift of its own), 64 px."""
    return synth.pan_video(100, size=64, speed=1.0, oscillate=True)


def test_still_video_scores_zero_where_the_reference_moves(moving, tmp_path):
    case = _case(len(moving))
    still = np.repeat(moving[:1], len(moving), axis=0)
    score, gate = _score(still, case, moving, tmp_path, "still")
    assert gate.details["demand"] == "reference"
    assert gate.normalized == pytest.approx(0.0, abs=1e-6)
    assert score == pytest.approx(0.0, abs=1e-6)  # v2: 5/6


def test_clean_reference_keeps_a_high_score_and_beats_drift_and_freeze_defects(moving, synth, tmp_path):
    from worldolympiad.registries import PERTURBATIONS

    case = _case(len(moving))
    clean, gate = _score(moving, case, moving, tmp_path, "clean")
    assert gate.normalized == 1.0 and clean > 0.85
    video = Video(moving, 10.0, chunks=case.chunks)
    rng = np.random.default_rng(0)
    frozen = PERTURBATIONS.get("frozen")
    defects = {
        "blur_drift@1": synth.blur_drift(moving, 1.0),
        "color_drift@1": synth.color_drift(moving, 1.0),
        "frozen@0.5": frozen(video, case, 0.5, rng, None).frames,
        "frozen@1": frozen(video, case, 1.0, rng, None).frames,
    }
    scores = {k: _score(v, case, moving, tmp_path, k)[0] for k, v in defects.items()}
    assert all(clean > s for s in scores.values()), (clean, scores)
    assert scores["frozen@1"] < scores["frozen@0.5"]


def test_encodings_of_the_clean_video_stay_within_005(moving, tmp_path):
    from worldolympiad.video.io import encode_like_users, read_video

    case = _case(len(moving))
    lossless, _ = _score(moving, case, moving, tmp_path, "lossless")
    for crf, scale in ((23, 1.0), (35, 0.75)):
        path = encode_like_users(tmp_path / f"c{crf}.mp4", moving, 10.0, crf=crf, scale=scale)
        score, gate = _score(read_video(path).frames, case, moving, tmp_path, f"c{crf}")
        assert gate.normalized == 1.0, (crf, gate.details)
        assert abs(score - lossless) <= 0.05, (crf, score, lossless)


def test_actions_demand_motion_without_a_reference(moving, tmp_path):
    space = {"actions": {"NOOP": {"translation": [0.0, 0.0]}, "LEFT": {"translation": [-3.0, 0.0]}}}
    case = _case(len(moving), actions=("NOOP", "LEFT", "LEFT", "NOOP", "LEFT"), action_space=space)
    assert action_demand(case) == [1, 2, 4]
    still_score, still_gate = _score(np.repeat(moving[:1], len(moving), axis=0), case, None, tmp_path, "still")
    assert still_gate.details["demand"] == "actions" and still_score == pytest.approx(0.0, abs=1e-6)
    move_score, move_gate = _score(moving, case, None, tmp_path, "moving")
    assert move_gate.normalized == 1.0 and move_score > 0.85


def test_idle_actions_and_no_reference_demand_nothing(moving, tmp_path):
    """Nothing asks for motion: the gate stays open and the score is the drift score (v2's 5/6 for a still)."""
    space = {"actions": {"NOOP": {"translation": [0.0, 0.0]}}}
    case = _case(len(moving), actions=("NOOP",) * 5, action_space=space)
    assert action_demand(case) == []
    score, gate = _score(np.repeat(moving[:1], len(moving), axis=0), case, None, tmp_path, "still")
    assert gate.details["demand"] == "none" and gate.normalized == 1.0
    assert score == pytest.approx(5 / 6)


@pytest.mark.parametrize("action, moves", [
    ({"name": "move_ee", "delta": [0.0, 0.0, -0.1]}, True),
    ({"name": "move_ee", "delta": [0.0, 0.0, 0.0]}, False),
    ({"name": "grasp"}, True),
    ({"name": "noop"}, False),
    ("forward", True),
    ("NOOP", False),
    (None, False),
])
def test_which_actions_ask_for_motion(action, moves):
    case = Case(id="a", scenario="robotics", fps=10.0, num_frames=20, resolution=(32, 32),
                chunks=(Chunk(0, 0, 20, "", action),), tracks=("longvideo",))
    assert (action_demand(case) == [0]) is moves


def test_a_still_reference_demands_nothing_and_activity_is_size_free(moving):
    still = np.repeat(moving[:1], 30, axis=0)
    g = motion_gate(still, 10.0, _case(30), (still, 10.0))
    assert g.demand == "reference_still" and g.gate == 1.0
    # frame widths per frame: the same pan at twice the size reads the same activity
    import cv2

    big = np.stack([cv2.resize(f, (128, 128), interpolation=cv2.INTER_LINEAR) for f in moving[:12]])
    a_small, a_big = pair_activity(moving[:12]).mean(), pair_activity(big).mean()
    assert a_small > MOTION_FLOOR and a_big == pytest.approx(a_small, rel=0.25)


def _ball_video(T: int = 40, size: int = 96) -> np.ndarray:
    """A 3 px ball falling fast over a black floor: motion flow misses (track v3 read it as still)."""
    frames = np.zeros((T, size, size, 3), np.uint8)
    frames[:, -8:] = 60
    for t in range(T):
        y = int(5 + 0.08 * t * t) % (size - 12)
        frames[t, y: y + 3, size // 2: size // 2 + 3] = 255
    return frames


def test_a_reference_whose_only_motion_is_a_small_fast_object_still_demands_motion(monkeypatch):
    """Frame changes carry the demand where flow reads the reference as still (track v3 then demanded nothing:
    four standard references, Breakout, free fall, bounce and melting, gave a still video its drift score)."""
    import tracks.longvideo.dynamics as dyn

    ball = _ball_video()
    case = _case(len(ball))
    monkeypatch.setattr(dyn, "MOTION_FLOOR", 1.0)  # flow can see nothing: only frame changes are left
    g = dyn.motion_gate(ball, 10.0, case, (ball, 10.0))
    assert list(g.details["gates"]) == ["change"] and g.gate == 1.0
    still = dyn.motion_gate(np.repeat(ball[:1], len(ball), axis=0), 10.0, case, (ball, 10.0))
    assert still.demand == "reference" and still.gate == 0.0


def test_an_encoded_still_reads_as_still_in_every_encoding(moving, tmp_path):
    from worldolympiad.video.io import encode_like_users, read_video

    case = _case(len(moving))
    still = np.repeat(moving[:1], len(moving), axis=0)
    for crf, scale in ((23, 1.0), (35, 0.75)):
        path = encode_like_users(tmp_path / f"s{crf}.mp4", still, 10.0, crf=crf, scale=scale)
        g = motion_gate(read_video(path).frames, 10.0, case, (moving, 10.0))
        assert g.gate == pytest.approx(0.0, abs=1e-6), (crf, g.details)


def test_a_prompt_that_says_something_moves_demands_motion_without_a_reference(moving, tmp_path):
    """v10: a street clip has no reference and no actions in users' hands, but its prompt says a cyclist rides; a
    frozen copy of it scored 0.833 (no drift) against the clip's own 0.845. Now the prompt demands motion as actions
    do; a prompt of changes without motion (a melting time-lapse) still demands nothing."""
    from dataclasses import replace

    from tracks.longvideo.dynamics import prompt_demand

    case = replace(_case(len(moving)), prompt="Street footage: a cyclist rides behind a railing; a bus drove past.")
    assert prompt_demand(case) == ["rides", "drove"]
    still_score, still_gate = _score(np.repeat(moving[:1], len(moving), axis=0), case, None, tmp_path, "still")
    assert still_gate.details["demand"] == "prompt" and still_gate.details["motion_words"] == ["rides", "drove"]
    assert still_score == pytest.approx(0.0, abs=1e-6)
    move_score, move_gate = _score(moving, case, None, tmp_path, "moving")
    assert move_gate.normalized == 1.0 and move_score > 0.85
    melting = replace(case, prompt="Time-lapse: an ice cube melts on a warm plate; a drop of dye turns the water blue.")
    assert prompt_demand(melting) == []
    score, gate = _score(np.repeat(moving[:1], len(moving), axis=0), melting, None, tmp_path, "melting")
    assert gate.details["demand"] == "none" and score == pytest.approx(5 / 6)
