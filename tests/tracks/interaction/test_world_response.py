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
from tracks.interaction.response import chunk_response
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


# --------------------------------------------------------------- version 12: motion that agrees
@pytest.fixture(scope="module")
def breakout():
    from worldolympiad.registries import GENERATORS

    g = GENERATORS.get("gaming.atari_breakout")
    case = g.make_case("breakout-response", seed=1, resolution=[96, 128], num_frames=48, fps=15, num_chunks=4)
    return case, g.render(case).video.frames


def _churn(ref: np.ndarray, seed: int = 0) -> np.ndarray:
    """What a random-weight model draws: the first picture under blotches that change every frame, as much
    change a frame as the reference shows and more, nowhere in particular and going nowhere."""
    import cv2

    rng = np.random.default_rng(seed)
    out = []
    for _ in range(len(ref)):
        noise = cv2.GaussianBlur(rng.normal(0.0, 1.0, ref.shape[1:3]).astype(np.float32), (0, 0), 3.0)
        noise *= 40.0 / float(noise.std())
        out.append(np.clip(ref[0].astype(np.float32) + noise[..., None], 0, 255).astype(np.uint8))
    return np.stack(out)


@pytest.mark.parametrize("name", ["maze", "breakout"])
def test_churn_that_changes_as_much_as_the_reference_does_not_respond(name, request):
    """Version 9-11 counted any change of half the reference's as a response (the random model rose 0.407 ->
    0.595 on smoke); the churn's motion agrees with the reference's neither in flow (the maze's camera) nor
    in place (Breakout's ball and paddle)."""
    case, ref = request.getfixturevalue(name)
    r = chunk_response(_churn(ref), ref, case.chunks)
    judged = [p for p in r["per_chunk"] if p["responds"] is not None]
    assert judged and all(p["video"] >= 0.5 * p["reference"] for p in judged), r  # version 11 said: responds
    assert r["share"] == 0.0, r
    assert {p["test"] for p in judged} == {"flow" if name == "maze" else "location"}


def test_encodings_of_the_clean_breakout_respond_where_it_moves(synth, breakout):
    """The place test keeps the clean video at crf 23 and crf 35 after a 0.75x resize (the codec's own
    flicker is the map's floor)."""
    import cv2

    case, ref = breakout
    for crf, scale in ((23, 1.0), (35, 0.75)):
        enc = synth.encode(ref, crf=crf, scale=scale, fps=int(case.fps))
        small = np.stack([cv2.resize(f, enc.shape[1:3][::-1], interpolation=cv2.INTER_AREA) for f in ref])
        r = chunk_response(enc, small, case.chunks)
        assert r["moving"] >= 2 and r["share"] == 1.0, (crf, r)


def test_a_camera_that_moves_against_the_reference_does_not_respond(maze):
    """Each chunk played backwards moves as much, the other way: the flow projects negatively."""
    case, ref = maze
    order = np.arange(len(ref))
    for c in case.chunks:
        order[c.frame_start:c.frame_end] = order[c.frame_start:c.frame_end][::-1]
    r = chunk_response(ref[order], ref, case.chunks)
    assert r["share"] == 0.0, r
    assert all(p["agreement"] < 0 for p in r["per_chunk"] if p["test"] == "flow"), r


def test_churn_is_not_still_it_fails_world_response_and_is_judged_by_the_rest(maze, tmp_path):
    """A video that moves, but not the way its reference does, responds nowhere; it is not the still video of
    version 7 (score 0 or chance, motion-dependent metrics dropped): it changes in every chunk."""
    case, ref = maze
    out = _evaluate(_churn(ref), case, ref, tmp_path)
    metrics = {x.name: x for x in out.metrics}
    assert metrics["world_response"].raw == 0.0
    assert metrics["transition_smoothness"].status == "ok", metrics["transition_smoothness"]
    assert "capped_at_chance" not in out.coverage, out.coverage
