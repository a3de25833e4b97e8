"""Validity: the reference outscores action-ignored, action-inverted, delayed-response and seam-cut
videos of real game renders (ale-py Atari, the ray-cast maze from scenarios.gaming).

Two families of defects: the scenario library's perturbations (``PERTURBATIONS``, strength 1,
as ``perturbed:NAME`` uses them), and re-renders of the case with every action replaced by a
no-op or by its opposite (a model that ignores or inverts commands but stays a clean render).
The full sweep over seeds, games and strengths is bench/bench_interaction.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from tracks.interaction import InteractionTrack
from worldolympiad.registries import PERTURBATIONS
from worldolympiad.track import EvalContext
from worldolympiad.types import Video

CASES = [("gaming.atari_breakout", 0), ("gaming.atari_pong", 1), ("gaming.maze", 0)]
LIBRARY = ("action_ignored", "action_inverted", "delayed_response", "seam_cut")


def _score(track, frames, case, ref) -> float:
    out = track.evaluate(Video(frames, case.fps, chunks=case.chunks), case,
                         EvalContext(reference_loader=lambda: Video(ref, case.fps, chunks=case.chunks)))
    assert out.score is not None
    return out.score


@pytest.mark.parametrize("generator, seed", CASES)
def test_reference_outscores_interaction_perturbations(synth, generator, seed):
    case, ref = synth.game_case(generator, seed)
    actions = tuple(c.action for c in case.chunks)
    names = case.metadata["action_space"]["actions"]
    ignored = tuple("NOOP" for _ in actions) if "NOOP" in names else tuple(actions[0] for _ in actions)
    inverted = tuple(synth.INVERSE.get(a, a) for a in actions)
    assert inverted != actions
    rng = np.random.default_rng(0)
    ref_video = Video(ref, case.fps, chunks=case.chunks)
    perturbed = {name: PERTURBATIONS.get(name)(ref_video, case, 1.0, rng, None).frames for name in LIBRARY}
    for name, plan in (("rerender_ignored", ignored), ("rerender_inverted", inverted)):
        try:
            perturbed[name] = synth.game_case(generator, seed, plan)[1]
        except ValueError as e:  # the maze refuses plans that walk into its walls
            assert "wall" in str(e)
    track = InteractionTrack()
    s_ref = _score(track, ref, case, ref)
    for name, frames in perturbed.items():
        s = _score(track, frames, case, ref)
        assert s_ref > s, f"{generator} seed {seed}: reference {s_ref:.3f} <= {name} {s:.3f}"
