"""world_response and the chunk-by-chunk stillness rule (track version 9, issue 56).

On the tuning split (bench/suites/interaction_tune) the ``action_ignored`` defect froze four and then five
of six chunks; version 8 judged stillness on the median change of the whole video, so a video with four
frozen chunks was "still" and capped like a wholly frozen one (freeway: both 0.000, a tie between two
defect strengths), and a frozen no-op chunk cost nothing (the agent stands still there anyway). Per
chunk, each frozen chunk counts.
"""

from __future__ import annotations

import numpy as np
import pytest

from tracks.interaction import InteractionTrack
from tracks.interaction.following import chunk_response
from worldolympiad.track import EvalContext
from worldolympiad.types import Video


@pytest.fixture(scope="module")
def maze():
    from worldolympiad.registries import GENERATORS

    g = GENERATORS.get("gaming.maze")
    case = g.make_case("maze-response", seed=3, resolution=[64, 64], num_frames=60, fps=12, num_chunks=6)
    return case, g.render(case).video.frames


def _freeze(frames: np.ndarray, case, chunks: range) -> np.ndarray:
    """Each chosen chunk holds its first frame (what ``action_ignored`` does)."""
    order = np.arange(len(frames))
    for i in chunks:
        c = case.chunks[i]
        order[c.frame_start:c.frame_end] = c.frame_start
    return frames[order]


def _evaluate(frames, case, ref, tmp_path):
    ctx = EvalContext(work_dir=tmp_path, reference_loader=lambda: Video(ref, case.fps, chunks=case.chunks))
    return InteractionTrack().evaluate(Video(frames, case.fps, chunks=case.chunks), case, ctx)


def test_each_frozen_chunk_costs_and_two_frozen_strengths_do_not_tie(maze, tmp_path):
    case, ref = maze
    scores, responses, capped = [], [], []
    for k in (0, 2, 4, 5):  # the last k chunks frozen
        out = _evaluate(_freeze(ref, case, range(6 - k, 6)), case, ref, tmp_path / str(k))
        m = {x.name: x for x in out.metrics}["world_response"]
        scores.append(out.score)
        responses.append(m.raw)
        capped.append("capped_at_chance" in out.coverage)
    assert responses == pytest.approx([1.0, 4 / 6, 2 / 6, 1 / 6])
    # two chunks still move: not a still video (version 8 capped k = 4 at chance, 0.25, as "still")
    assert capped == [False, False, False, False]
    assert scores[0] > scores[1] > scores[2] > scores[3] > 0.0, scores


def test_a_wholly_frozen_video_scores_at_most_chance_and_responds_nowhere(maze, tmp_path):
    case, ref = maze
    out = _evaluate(np.repeat(ref[:1], len(ref), axis=0), case, ref, tmp_path)
    metrics = {x.name: x for x in out.metrics}
    # the maze's actions ask for motion: at most direction accuracy's chance, as in version 8
    assert out.score is not None and out.score <= metrics["direction_accuracy"].details["chance"]
    assert metrics["world_response"].raw == 0.0


def test_users_encodings_of_the_clean_video_respond_in_every_chunk(synth, maze):
    """crf 35 after a 0.75x resize keeps 0.6 or more of each chunk's change, a frozen chunk's codec flicker
    stays under half of the reference's."""
    import cv2

    case, ref = maze
    for crf, scale in ((23, 1.0), (35, 0.75)):
        enc = synth.encode(ref, crf=crf, scale=scale, fps=int(case.fps))
        small = np.stack([cv2.resize(f, enc.shape[1:3][::-1], interpolation=cv2.INTER_AREA) for f in ref])
        assert chunk_response(enc, small, case.chunks)["share"] == 1.0
        frozen = synth.encode(_freeze(ref, case, range(3, 6)), crf=crf, scale=scale, fps=int(case.fps))
        r = chunk_response(frozen, small, case.chunks)
        assert r["share"] == pytest.approx(3 / 6), r


def test_without_a_reference_world_response_is_not_applicable(maze, tmp_path):
    case, ref = maze
    out = InteractionTrack().evaluate(Video(ref, case.fps, chunks=case.chunks), case, EvalContext(work_dir=tmp_path))
    m = {x.name: x for x in out.metrics}["world_response"]
    assert m.status == "not_applicable" and "no reference" in m.reason
