"""A robot's end effector followed by its own texture (interaction v21, ``motion.point_track``).

With no agent colour, the agent was the blob that differs from the temporal median background: the largest
moving piece in the first frame, then whichever piece lay nearest. On the tuning pick it jumped between pieces of
the arm (0.1-7 % of the frame from frame to frame), differently in every encoding (its lift read 0.0081 of the width
a frame lossless, 0.0013 at crf 35). Where the case says where the end effector starts (``metadata.start_ee``
through the case camera: ``actions.agent_start``), corners around it are followed instead.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.tracks.interaction.conftest import encode, texture
from tracks.interaction.actions import agent_start
from tracks.interaction.motion import agent_motion
from worldolympiad.types import CameraSpec, Case, even_chunks

SIZE = 96
GRIPPER = (30, 30)  # its first-frame centre (x, y)
#: the gripper's velocity per 12-frame chunk (px a frame): down, hold, up-right
MOVES = [(0.0, 1.0), (0.0, 0.0), (0.75, -0.75)]


def _arm() -> np.ndarray:
    """A big plain link sliding right all along, and a small textured gripper (14 px) apart from it doing ``MOVES``."""
    import cv2
    from skimage import data

    bg = texture(SIZE)
    grip = cv2.resize(data.coffee()[100:260, 180:340], (14, 14), interpolation=cv2.INTER_AREA)  # its own texture
    frames, g, link = [], np.array(GRIPPER, float), 20.0
    for v in MOVES:
        for _ in range(12):
            f = bg.copy()
            f[60:80, int(link) : int(link) + 40] = (200, 200, 205)  # the link: larger than the gripper
            x, y = np.round(g).astype(int)
            f[y - 7 : y + 7, x - 7 : x + 7] = grip
            frames.append(f)
            g, link = g + np.asarray(v), link + 1.0
    return np.stack(frames)


def _chunk_means(frames: np.ndarray, appearance: dict | None, scale: float = 1.0) -> np.ndarray:
    """Mean motion per chunk in px a frame of the 96 px original (within-chunk steps only)."""
    tr = agent_motion(frames, appearance).translation * frames.shape[2] / scale
    return np.array([tr[k * 12 : (k + 1) * 12 - 1].mean(axis=0) for k in range(len(MOVES))])


START = {"color": None, "start": list(GRIPPER), "resolution": [SIZE, SIZE]}


def _follows(got: np.ndarray) -> None:
    """The gripper's moves read the way they went (cosine > 0.9) at 0.6-1.1 of their speed (corners near the
    gripper's edge, on the still scene, hold part of the steps back), and its hold reads as none."""
    for v, want in zip(got, MOVES, strict=True):
        want = np.asarray(want)
        if not want.any():
            assert np.abs(v).max() < 0.05, got
            continue
        assert v @ want / (np.linalg.norm(v) * np.linalg.norm(want)) > 0.9, got
        assert 0.6 < np.linalg.norm(v) / np.linalg.norm(want) < 1.1, got


def test_the_end_effector_is_followed_from_its_start_not_the_largest_moving_piece():
    frames = _arm()
    assert agent_motion(frames, START).tracking == "points" and agent_motion(frames, None).tracking == "blobs"
    _follows(_chunk_means(frames, START))
    assert _chunk_means(frames, None)[1][0] > 0.3  # blobs: the link sliding right while the gripper holds


def test_the_end_effector_reads_the_same_after_lossy_encodings():
    lossless = _chunk_means(_arm(), START)
    for crf, scale in ((23, 1.0), (35, 0.75)):
        got = _chunk_means(encode(_arm(), crf=crf, scale=scale), dict(START), scale)
        _follows(got)
        assert np.abs(got - lossless).max() < 0.2, (crf, scale, got, lossless)


def test_agent_start_projects_the_end_effector_through_the_case_camera():
    K = np.array([[100.0, 0, 48], [0, 100.0, 48], [0, 0, 1]])
    pose = np.eye(4)  # camera at the origin looking down world +z (OpenCV axes)
    case = Case(id="arm", scenario="robotics", fps=12.0, num_frames=36, resolution=(96, 96),
                chunks=even_chunks(36, 3), metadata={"start_ee": [0.1, -0.05, 1.0]},
                camera=CameraSpec.from_arrays(K, pose[None]))
    assert agent_start(case) == {"color": None, "start": [58.0, 43.0], "resolution": [96, 96]}
    behind = Case(id="b", scenario="robotics", fps=12.0, num_frames=36, resolution=(96, 96), chunks=case.chunks,
                  metadata={"start_ee": [0.0, 0.0, -1.0]}, camera=case.camera)
    outside = Case(id="o", scenario="robotics", fps=12.0, num_frames=36, resolution=(96, 96), chunks=case.chunks,
                   metadata={"start_ee": [1.0, 0.0, 1.0]}, camera=case.camera)
    bare = Case(id="n", scenario="robotics", fps=12.0, num_frames=36, resolution=(96, 96), chunks=case.chunks)
    assert agent_start(behind) is None and agent_start(outside) is None and agent_start(bare) is None


# ----------------------------------------------------------------------------------------------------------------
# The projected command (v21, actions.chunk_expectations + following.motion_floor): a lift seen from above moves
# the gripper's image slower than the 0.002-of-the-width floor a tracker needs when the motion's size is unknown.

BIG = 256
FX = 72.0  # focal length (px): the lift below moves the gripper's image 3.6 px over its 12 frames
LIFT = [{"name": "move_ee", "delta": [0.0, 0.0, 0.1]}, {"name": "grasp"}, {"name": "move_ee", "delta": [0.0, 0.0, -0.1]}]


def _overhead_case() -> Case:
    """A camera 1 m above the floor looking straight down (OpenCV axes: x = world x, y = -world y, z = -world z);
    the end effector 0.5 m below it and 0.1 m aside, lifted 0.1 m, held, lowered back."""
    K = np.array([[FX, 0, BIG / 2], [0, FX, BIG / 2], [0, 0, 1]])
    c2w = np.eye(4)
    c2w[:3, :3] = np.diag([1.0, -1.0, -1.0])
    c2w[:3, 3] = [0.0, 0.0, 1.0]
    return Case(id="overhead-lift", scenario="robotics", fps=12.0, num_frames=36, resolution=(BIG, BIG),
                chunks=even_chunks(36, 3, actions=LIFT), metadata={"start_ee": [0.1, 0.0, 0.5]},
                camera=CameraSpec.from_arrays(K, c2w[None]))


def _gripper_video(case: Case, frozen: bool = False) -> np.ndarray:
    """A textured 24 px gripper drawn at the end effector's projection, moving by a sub-pixel step a frame."""
    import cv2
    from skimage import data

    bg = texture(BIG)
    grip = cv2.resize(data.coffee()[100:260, 180:340], (24, 24), interpolation=cv2.INTER_AREA)
    out = []
    for t in range(case.num_frames):
        k, f = divmod(t, 12)
        share = f / 11 if not frozen else 0.0
        z = 0.5 + 0.1 * ([share, 1.0, 1.0 - share][k] if k != 1 or not frozen else 0.0)
        if frozen and k == 2:
            z = 0.5
        u = FX * 0.1 / (1.0 - z) + BIG / 2
        m = np.float32([[1, 0, u - 12], [0, 1, BIG / 2 - 12]])
        frame = bg.copy()
        patch = cv2.warpAffine(grip, m, (BIG, BIG), flags=cv2.INTER_LINEAR)
        mask = cv2.warpAffine(np.full((24, 24), 255, np.uint8), m, (BIG, BIG), flags=cv2.INTER_LINEAR)[..., None] / 255.0
        out.append((frame * (1 - mask) + patch * mask).round().astype(np.uint8))
    return np.stack(out)


def test_a_commanded_move_is_expected_where_its_projection_goes():
    from tracks.interaction.actions import chunk_expectations

    case = _overhead_case()
    lift, hold, lower = chunk_expectations(case, case.chunks)
    # straight up under an overhead camera: the old reading dropped the depth change, leaving no image direction
    # (a zoom the agent's tracker never measures); projected from where the arm is, the gripper drifts outward
    assert lift.mode == "translate" and lift.direction == pytest.approx((1.0, 0.0))
    assert lift.magnitude == pytest.approx(FX * (0.1 / 0.4 - 0.1 / 0.5) / BIG / 12)
    assert hold.mode == "none"
    # the lowering starts where the lift left the arm (0.4 m from the camera), so it is the lift's reverse
    assert lower.direction == pytest.approx((-1.0, 0.0)) and lower.magnitude == pytest.approx(lift.magnitude)


def test_a_slow_projected_move_is_told_from_a_frozen_arm():
    from tracks.interaction.following import TRANSLATE_FLOOR, analyze_following

    case = _overhead_case()
    speed = FX * (0.1 / 0.4 - 0.1 / 0.5) / BIG / 12
    assert speed < TRANSLATE_FLOOR  # the move is slower than the floor for a motion of unknown size
    clean = analyze_following(_gripper_video(case), case, case.chunks)
    frozen = analyze_following(_gripper_video(case, frozen=True), case, case.chunks)
    assert [c.direction_ok for c in clean.chunks] == [True, True, True], clean.to_dict()
    assert [c.direction_ok for c in frozen.chunks] == [False, True, False], frozen.to_dict()
    assert clean.moved_fraction == 1.0 and frozen.moved_fraction == 0.0
    assert clean.tracking == {"video": "points"}


def test_a_still_arm_scores_nothing_where_its_commands_have_no_chance_level(tmp_path):
    """v22: continuous end-effector commands have no chance level to scale a still video onto. Followed by its
    points, the still arm passes the grasp chunk (it asks for no motion), which v21 scored 0.133 on the smoke pick;
    a video that moves in none of the chunks asking for motion shows no control and scores 0."""
    from tracks.interaction import InteractionTrack
    from worldolympiad.track import EvalContext
    from worldolympiad.types import Video

    case = _overhead_case()
    track = InteractionTrack()
    moving = track.evaluate(Video(_gripper_video(case), case.fps, chunks=case.chunks), case,
                            EvalContext(work_dir=tmp_path / "moving"))
    still = track.evaluate(Video(_gripper_video(case, frozen=True), case.fps, chunks=case.chunks), case,
                           EvalContext(work_dir=tmp_path / "still"))
    direction = next(m for m in still.metrics if m.name == "direction_accuracy")
    assert direction.raw == pytest.approx(1 / 3) and direction.details["chance"] is None  # the grasp chunk
    assert still.score == 0.0 and still.coverage["capped_at_chance"]["chance"] == 0.0
    assert "moved in none" in still.coverage["capped_at_chance"]["reason"]
    assert moving.score > 0.5 and "capped_at_chance" not in moving.coverage
