"""Stillness is never rewarded (issue 56): where the actions ask for motion, a frozen first frame must
not score above the chance level of direction accuracy. On main at 85cf2c2 it scored 0.59 on the
smoke Atari cases, because a still video has perfectly smooth transitions, a perfectly kept identity
and (version 1) no response delay."""

from __future__ import annotations

import numpy as np
import pytest

from tracks.interaction import InteractionTrack
from worldolympiad.track import EvalContext
from worldolympiad.types import Video


@pytest.mark.parametrize("generator", ["gaming.atari_breakout", "gaming.atari_freeway", "gaming.maze"])
def test_a_frozen_video_scores_no_better_than_chance_where_actions_ask_for_motion(synth, generator, tmp_path):
    case, ref = synth.game_case(generator, 0)
    frozen = np.repeat(ref[:1], len(ref), axis=0)
    ctx = EvalContext(work_dir=tmp_path, reference_loader=lambda: Video(ref, case.fps, chunks=case.chunks))
    out = InteractionTrack().evaluate(Video(frozen, case.fps, chunks=case.chunks), case, ctx)
    metrics = {m.name: m for m in out.metrics}
    chance = metrics["direction_accuracy"].details["chance"]
    assert chance is not None
    assert out.score is not None and out.score <= chance, f"{generator}: frozen {out.score:.3f} > chance {chance:.3f}"
    for name in ("transition_smoothness", "identity_consistency", "response_delay"):
        assert metrics[name].status == "not_applicable" and "moved in none" in metrics[name].reason
    # the reference itself keeps every metric
    good = InteractionTrack().evaluate(Video(ref, case.fps, chunks=case.chunks), case, ctx)
    assert all(m.status == "ok" for m in good.metrics if m.name in ("transition_smoothness", "identity_consistency"))
    assert good.score > out.score


def test_a_still_copy_of_a_moving_clip_without_actions_scores_zero(tmp_path):
    """Issue 56: a real clip has no actions, so no chance level; its frozen first frame tied the clip at
    1.000 (no seams, a perfectly kept identity). Where the reference moves and the video does not, the
    track scores 0 and says why."""
    import os
    from pathlib import Path

    os.environ.setdefault("MUJOCO_GL", "egl")
    from worldolympiad.registries import GENERATORS
    from worldolympiad.suites import load_suite

    case = next(c for c in load_suite("smoke").cases if c.id == "smoke-realworld-carphone")
    ref = GENERATORS.get(case.metadata["generator"]).render(case).video
    still = Video(np.repeat(ref.frames[:1], len(ref.frames), 0), ref.fps, chunks=ref.chunks)
    track = InteractionTrack()
    clip = track.evaluate(ref, case, EvalContext(work_dir=Path(tmp_path) / "a", reference_loader=lambda: ref))
    frozen = track.evaluate(still, case, EvalContext(work_dir=Path(tmp_path) / "b", reference_loader=lambda: ref))
    assert clip.score > 0.9
    assert frozen.score == 0.0 and "stands still" in frozen.coverage["capped_at_chance"]["reason"]


def test_two_still_videos_keep_the_order_of_what_was_measured_on_them():
    """Version 20: a still video's score is scaled onto [0, chance], not clipped to it. On
    bench/suites/interaction_tune's Freeway case at crf 23, ``action_ignored`` 0.67 and 1.0 freeze the one chunk
    whose action asks for motion; at 0.67 the world still moves in a no-op chunk (world_response 0.333 against
    0.167), measured 0.317 and 0.250, and version 19's min(score, chance) scored both 0.222."""
    from tracks.interaction.track import capped_still_score

    chance = 2 / 9
    weaker, stronger = capped_still_score(0.317, chance), capped_still_score(0.250, chance)
    assert chance >= weaker > stronger > 0.0
    assert capped_still_score(1.0, chance) == pytest.approx(chance) and capped_still_score(0.0, chance) == 0.0
    # a still video measured below chance is not lifted to it either
    assert capped_still_score(0.1, chance) < 0.1
