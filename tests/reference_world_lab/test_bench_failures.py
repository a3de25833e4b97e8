"""`bench_reference_world.py`'s failure breakdown: why a chunk's direction was wrong, and how long
the agent sprite survives, on synthetic sprite videos scored by the interaction track itself."""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import load_bench

AGENT = (40, 220, 240)


@pytest.fixture(scope="module")
def bench():
    return load_bench("bench_reference_world")


def _case(actions: list[str], frames_per_chunk: int = 8):
    from worldolympiad.types import Case, even_chunks

    n = frames_per_chunk * len(actions)
    space = {"kind": "image_translation", "agent_color": list(AGENT),
             "actions": {"RIGHT": {"translation": [1, 0]}, "LEFT": {"translation": [-1, 0]},
                         "NOOP": {"translation": [0, 0]}}}
    return Case(id="synthetic", scenario="gaming", fps=15.0, num_frames=n, resolution=(48, 48),
                chunks=even_chunks(n, len(actions), actions=actions),
                metadata={"generator": "gaming.atari_breakout", "action_space": space})


def _video(xs: list[float | None]) -> np.ndarray:
    """A 3 x 3 agent-coloured sprite at column ``x`` per frame on black (``None``: no sprite)."""
    frames = np.zeros((len(xs), 48, 48, 3), np.uint8)
    for t, x in enumerate(xs):
        if x is not None:
            frames[t, 20:23, int(x) : int(x) + 3] = AGENT
    return frames


def _reasons(bench, actions: list[str], xs: list[float | None]) -> list[str | None]:
    from tracks.interaction.following import TRANSLATE_FLOOR, analyze_following

    case = _case(actions)
    frames = _video(xs)
    rep = analyze_following(frames, case, case.chunks)
    found = bench.found_shares(frames, case)
    return [bench.failure_reason(ch, found[ch.index], TRANSLATE_FLOOR) for ch in rep.chunks]


def test_a_sprite_that_vanishes_fails_as_lost_not_as_a_wrong_move(bench):
    # moves right for a chunk, then is gone for the second (the model dissolved it)
    xs = [10.0 + t for t in range(8)] + [None] * 8
    assert _reasons(bench, ["RIGHT", "RIGHT"], xs) == [None, "lost"]


def test_a_sprite_found_in_a_few_frames_of_a_chunk_still_counts_as_lost(bench):
    # seen in 2 of 8 frames, drifting left: the track's mean motion is finite (a wrong way), but
    # what failed is that the sprite was lost
    xs = [10.0 + t for t in range(8)] + [16.0, 15.0] + [None] * 6
    assert _reasons(bench, ["RIGHT", "RIGHT"], xs)[1] == "lost"


def test_found_sprites_fail_as_still_moved_or_wrong_way(bench):
    still = [10.0] * 8                      # RIGHT asked, it stays
    moved = [10.0 + 2 * t for t in range(8)]  # NOOP asked, it moves
    wrong = [30.0 - t for t in range(8)]    # RIGHT asked, it goes left
    assert _reasons(bench, ["RIGHT", "NOOP", "RIGHT"], still + moved + wrong) == ["still", "moved", "wrong_way"]


def test_found_shares_count_the_frames_with_the_agent_per_chunk(bench):
    case = _case(["RIGHT", "RIGHT"])
    xs = [10.0 + t for t in range(8)] + [18.0, 19.0, 20.0, 21.0] + [None] * 4
    assert bench.found_shares(_video(xs), case) == [1.0, 0.5]


def test_a_case_without_an_agent_appearance_has_nothing_to_lose(bench):
    from worldolympiad.types import Case

    case = Case(id="maze", scenario="gaming", fps=15.0, num_frames=8, resolution=(48, 48),
                chunks=_case(["NOOP"]).chunks, metadata={"generator": "gaming.maze"})
    assert bench.found_shares(np.zeros((8, 48, 48, 3), np.uint8), case) == [None]


def test_a_model_is_above_chance_only_when_its_chunk_count_clears_the_binomial(bench):
    chance = {"direction_accuracy": 0.3}
    strong = bench.against_chance({"direction_accuracy": 0.45, "chunks": 144}, chance)
    level = bench.against_chance({"direction_accuracy": 0.34, "chunks": 144}, chance)
    assert strong["right"] == 65 and strong["p_above"] < 0.001
    assert level["right"] == 49 and level["p_above"] > 0.05  # 49 of 144 against 43 expected: chance
    assert bench.against_chance({"direction_accuracy": 0.1, "chunks": 144}, chance)["p_above"] > 0.99


def test_chance_is_tested_per_game_from_the_kept_rows(bench):
    # a game at chance is named even when the total clears chance on the other game's strength
    rows = {"a": {"game": "maze", "ok": [True] * 30}, "b": {"game": "freeway", "ok": [True] * 10 + [False] * 20}}
    summary = {"direction_accuracy": 40 / 60, "chunks": 60, "rows": rows}
    chance = {"direction_accuracy": 0.3, "per_chunk": {"maze": [0.3] * 30, "freeway": [1 / 3] * 30}}
    r = bench.against_chance(summary, chance)
    assert r["p_above"] < 0.001
    assert r["per_game"]["maze"]["right"] == 30 and r["per_game"]["maze"]["p_above"] < 0.001
    assert r["per_game"]["freeway"]["right"] == 10 and r["per_game"]["freeway"]["p_above"] > 0.5
