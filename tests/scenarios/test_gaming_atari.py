"""Atari generators: RAM ground truth agrees with the sprite, actions move the agent, determinism."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("ale_py")

from scenarios.gaming.atari import (  # noqa: E402
    agent_mask_native,
    agent_position_from_ram,
    breakout,
    freeway,
    native_to_output,
    pong,
)
from scenarios.gaming.vocab import atari_spec  # noqa: E402

GENS = {"breakout": breakout, "pong": pong, "freeway": freeway}
PLANS = {
    "breakout": ["LEFT", "RIGHT", "NOOP", "LEFT"],
    "pong": ["RIGHT", "LEFT", "NOOP", "LEFT"],
    "freeway": ["UP", "NOOP", "DOWN", "UP"],
}


@pytest.fixture(scope="module")
def rendered():
    out = {}
    for game, gen in GENS.items():
        case = gen.make_case(f"{game}-t", seed=3, num_frames=24, num_chunks=4, actions=PLANS[game], warmup=2)
        out[game] = (case, gen.render(case), gen.play(case)[0])
    return out


def _unclipped(spec, native_frame) -> np.ndarray | None:
    """The sprite mask, or None when it is absent or cut by the playfield border along its axis."""
    m = agent_mask_native(spec, native_frame)
    ys, xs = np.nonzero(m)
    if len(xs) == 0:
        return None
    win = spec["agent_window"]
    if spec["ram"]["axis"] == "x":
        clipped = xs.min() == win["cols"][0] or xs.max() == win["cols"][1] - 1
    else:
        clipped = ys.min() == win["rows"][0] or ys.max() == win["rows"][1] - 1
    return None if clipped else m


@pytest.mark.parametrize("game", list(GENS))
def test_ram_position_matches_sprite_pixels(rendered, game):
    """The RAM-derived agent centre lies on the sprite drawn in the emulator's own frame."""
    case, r, native = rendered[game]
    spec = atari_spec(game)
    pos = r.states["agent"]["position_native"]
    checked = 0
    for t in range(case.num_frames):
        m = _unclipped(spec, native[t])
        if m is None:  # at the playfield border the sprite is cut and its centroid biased
            continue
        ys, xs = np.nonzero(m)
        cx, cy = xs.mean(), ys.mean()
        # Pong's RAM leads the drawn paddle by up to one frame while it moves (games.yaml).
        assert abs(cx - pos[t, 0]) <= 1.0, (t, cx, pos[t])
        assert abs(cy - pos[t, 1]) <= 1.0, (t, cy, pos[t])
        checked += 1
    assert checked >= 5


@pytest.mark.parametrize("game", list(GENS))
def test_output_position_is_on_output_mask(rendered, game):
    """Ground truth in output pixels falls on (or next to) the resized agent mask."""
    case, r, native = rendered[game]
    pos = r.states["agent"]["position"]
    spec = atari_spec(game)
    hits = 0
    for t in range(case.num_frames):
        ys, xs = np.nonzero(r.masks[t] == 1)
        if len(xs) == 0 or _unclipped(spec, native[t]) is None:
            continue
        x, y = pos[t]
        assert xs.min() - 1.5 <= x <= xs.max() + 1.5 and ys.min() - 1.5 <= y <= ys.max() + 1.5
        hits += 1
    assert hits >= 5


@pytest.mark.parametrize("game", list(GENS))
def test_agent_moves_in_the_commanded_direction(rendered, game):
    """Over each chunk the RAM position moves along the vocabulary's motion sign (or rests at a wall)."""
    case, r, _ = rendered[game]
    pos = r.states["agent"]["position_native"]
    space = case.metadata["action_space"]["actions"]
    moved = 0
    for ch in case.chunks:
        expect = np.sign(space[ch.action]["translation"])
        a = pos[max(ch.frame_start - 1, 0)]
        b = pos[ch.frame_end - 1]
        d = np.sign(np.round(b - a, 6))
        for ax in range(2):
            if expect[ax] != 0:
                assert d[ax] in (expect[ax], 0), (ch, a, b)
                moved += int(d[ax] == expect[ax])
    assert moved >= 2


def test_same_seed_same_bytes():
    c1 = breakout.make_case("b", seed=5, num_frames=12, num_chunks=2)
    c2 = breakout.make_case("b", seed=5, num_frames=12, num_chunks=2)
    assert c1.to_dict() == c2.to_dict()
    r1, r2 = breakout.render(c1), breakout.render(c2)
    assert r1.video.frames.tobytes() == r2.video.frames.tobytes()
    assert r1.masks.tobytes() == r2.masks.tobytes()


def _screens(entries):
    from scenarios.suites import build_case

    out = {}
    for e in entries:
        case = build_case(e, "t")
        gen = GENS[case.metadata["game"]]
        out[e.id] = gen.play(case)[0].tobytes()
    return out


@pytest.mark.parametrize("suite", ["gaming", "smoke"])
def test_every_atari_case_of_a_suite_plays_its_own_video(suite):
    """No two seeds of a suite render the same game (generator v1 gave Breakout seeds 0 and 2 one video)."""
    from scenarios.suites import suite_entries

    entries = [e for e in suite_entries(suite) if e.generator.startswith("gaming.atari_")]
    screens = _screens(entries)
    by_bytes: dict[bytes, list[str]] = {}
    for case_id, b in screens.items():
        by_bytes.setdefault(b, []).append(case_id)
    assert [ids for ids in by_bytes.values() if len(ids) > 1] == []
    assert len(screens) == len(entries) >= 2


def test_breakout_seeds_start_the_paddle_in_different_places():
    """Breakout ignores a NOOP warm-up before the serve; the seeded warm-up moves still spread the start."""
    starts = set()
    for seed in range(12):
        case = breakout.make_case("b", seed=seed, num_frames=1, num_chunks=1)
        starts.add(float(breakout.render(case).states["agent"]["position_native"][0, 0]))
    assert len(starts) >= 5


def test_breakout_warmup_moves_are_validated_and_recorded():
    case = breakout.make_case("b", seed=0, num_chunks=1, warmup_moves=["LEFT", "LEFT"])
    assert case.metadata["params"]["warmup_moves"] == ["LEFT", "LEFT"]
    with pytest.raises(ValueError, match="warmup_moves"):
        breakout.make_case("b", warmup_moves=["JUMP"], num_chunks=1)


def test_games_without_warmup_moves_keep_their_version_1_draws():
    """Pong and freeway cases are unchanged by generator v2: same actions and warm-up for a seed."""
    for seed in range(5):
        p = pong.make_case("p", seed=seed).metadata["params"]
        assert p["warmup_moves"] == []
        rng = np.random.default_rng(seed)
        plan = list(atari_spec("pong")["plan_actions"])
        order = [plan[int(i)] for i in rng.permutation(len(plan))]
        assert p["actions"] == [order[i % 3] for i in range(4)]
        assert p["warmup"] == int(rng.integers(0, 20))


def test_native_to_output_maps_pixel_centres():
    # native pixel centre 0 and 159 map to the centres of the first/last output half-pixels
    out = native_to_output(np.array([[-0.5, -0.5], [159.5, 209.5]]), 105, 80)
    np.testing.assert_allclose(out, [[-0.5, -0.5], [79.5, 104.5]])


def test_ram_mapping_uses_declared_address():
    spec = atari_spec("freeway")
    ram = np.zeros((1, 128), np.uint8)
    ram[0, 14] = 100
    np.testing.assert_allclose(agent_position_from_ram(spec, ram), [[46.5, 96.5]])


def test_bad_action_names_the_vocabulary():
    with pytest.raises(ValueError, match="UP"):
        freeway.make_case("f", actions=["JUMP"], num_chunks=1)


@pytest.mark.parametrize("game", list(GENS))
def test_agent_window_in_metadata_contains_the_output_mask(rendered, game):
    """Tracks find the agent from case metadata alone: its colour and output-pixel window."""
    case, r, _ = rendered[game]
    space = case.metadata["action_space"]
    win = space["agent_window"]
    ys, xs = np.nonzero(r.masks.any(axis=0))
    assert win["rows"][0] <= ys.min() and ys.max() < win["rows"][1]
    assert win["cols"][0] <= xs.min() and xs.max() < win["cols"][1]
    assert space["agent_color"] == atari_spec(game)["agent_color"]


def test_freeway_mask_follows_the_chicken_across_the_road():
    """The chicken is masked all the way up (its window spans the road), on the RAM-derived row."""
    case = freeway.make_case("f", seed=0, num_frames=120, num_chunks=1, actions=["UP"], warmup=0)
    r = freeway.render(case)
    y_native = r.states["agent"]["position_native"][:, 1]
    assert y_native.min() < 60  # it got past the centre line
    for t in range(0, case.num_frames, 10):
        ys, _ = np.nonzero(r.masks[t])
        assert len(ys) > 0, t
        assert abs(ys.mean() - r.states["agent"]["position"][t, 1]) < 2.0, t


def test_fps_sets_a_real_time_frame_skip():
    assert breakout.make_case("b", fps=30).metadata["params"]["frame_skip"] == 2
    assert breakout.make_case("b").metadata["params"]["frame_skip"] == 4
