"""Validity: the reference outscores action-ignored, action-inverted, delayed-response and seam-cut
videos of real game renders (ale-py Atari, the ray-cast maze from scenarios.gaming).

action_ignored / action_inverted re-render the case with the generator (all no-ops, or every
action replaced by its opposite); delayed_response shifts the world 4 frames late; seam_cut
jumps one second ahead at the first chunk boundary. The full sweep over seeds and games is
bench/bench_interaction.py (prints the pair table).
"""

from __future__ import annotations

import pytest

from tracks.interaction import InteractionTrack
from worldolympiad.track import EvalContext
from worldolympiad.types import Video

CASES = [("gaming.atari_breakout", 0), ("gaming.atari_pong", 1), ("gaming.maze", 0)]


def _score(track, frames, case, ref) -> float:
    out = track.evaluate(Video(frames, case.fps), case, EvalContext(reference_loader=lambda: Video(ref, case.fps)))
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
    perturbed = {
        "action_ignored": synth.game_case(generator, seed, ignored)[1],
        "action_inverted": synth.game_case(generator, seed, inverted)[1],
        "delayed_response": synth.delayed(ref, 4),
        "seam_cut": synth.seam_cut(ref, case.chunks[1].frame_start, int(case.fps)),
    }
    track = InteractionTrack()
    s_ref = _score(track, ref, case, ref)
    for name, frames in perturbed.items():
        s = _score(track, frames, case, ref)
        assert s_ref > s, f"{generator} seed {seed}: reference {s_ref:.3f} <= {name} {s:.3f}"
