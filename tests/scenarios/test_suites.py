"""Suites are data: fragments build valid cases; counts, sizes and errors are as documented."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from scenarios import suites
from scenarios.suites import build_suite, suite_counts, suite_entries
from worldolympiad.types import CaseError
from worldolympiad.validate import validate_case_dict

MY_PREFIXES = ("gaming.", "robotics.", "realworld.clip")


def _mine(entries):
    return [e for e in entries if e.generator.startswith(MY_PREFIXES)]


def test_counts_match_the_fragments_and_need_no_simulator():
    """suite_counts reads YAML only (instant `worldolympiad ls suites`), and matches the entries."""
    counts = suite_counts()
    for name in ("smoke", "gaming", "robotics", "realworld", "standard"):
        assert counts[name] == len(suite_entries(name))
    code = textwrap.dedent("""
        import sys
        from scenarios.suites import suite_counts
        suite_counts()
        heavy = [m for m in ("ale_py", "pybullet", "mujoco", "torch", "skvideo") if m in sys.modules]
        assert not heavy, heavy
    """)
    subprocess.run([sys.executable, "-c", code], check=True)


def test_my_families_register_without_heavy_imports():
    code = textwrap.dedent("""
        import sys
        from worldolympiad.registries import GENERATORS
        names = set(GENERATORS.names())
        mine = {"gaming.atari_breakout", "gaming.atari_pong", "gaming.atari_freeway", "gaming.maze",
                "robotics.push", "robotics.pick", "robotics.place", "robotics.stack", "realworld.clip"}
        assert mine <= names, mine - names
        for n in mine:
            GENERATORS.get(n)
        heavy = [m for m in ("ale_py", "pybullet", "torch", "skvideo") if m in sys.modules]
        assert not heavy, heavy
    """)
    subprocess.run([sys.executable, "-c", code], check=True)


def test_standard_has_at_least_70_of_my_cases_at_benchmark_size():
    entries = _mine(suite_entries("standard"))
    assert len(entries) >= 70
    cases = [suites.build_case(e, "standard") for e in entries]
    assert {c.scenario for c in cases} == {"gaming", "robotics", "realworld"}
    for c in cases:
        assert min(c.resolution) >= 128 and max(c.resolution) <= 256, (c.id, c.resolution)
        assert c.suite == "standard"
        assert validate_case_dict(c.to_dict()) == [], c.id
    seeds = {}
    for e in entries:
        seeds.setdefault(e.generator, set()).add(e.seed)
    assert all(len(s) >= 3 for g, s in seeds.items() if g != "realworld.clip")


def test_smoke_is_tiny_and_covers_every_family_of_mine():
    cases = [suites.build_case(e, "smoke") for e in _mine(suite_entries("smoke"))]
    assert {c.scenario for c in cases} == {"gaming", "robotics", "realworld"}
    assert {c.metadata["generator"].split(".")[0] for c in cases} >= {"gaming", "robotics", "realworld"}
    for c in cases:
        assert max(c.resolution) <= 64 and c.num_frames <= 32
        assert validate_case_dict(c.to_dict()) == [], c.id


def test_action_space_travels_with_action_cases():
    """Tracks read the action vocabulary from the case, never from scenarios."""
    for c in build_suite("gaming")[::5] + build_suite("robotics")[::5]:
        space = c.metadata["action_space"]
        for ch in c.chunks:
            name = ch.action["name"] if isinstance(ch.action, dict) else ch.action
            assert name in space["actions"], (c.id, name)


def test_ids_unique_and_families_are_subsets_of_standard():
    std = {e.id for e in suite_entries("standard")}
    for fam in ("gaming", "robotics"):
        ids = [e.id for e in suite_entries(fam)]
        assert len(ids) == len(set(ids))
        assert set(ids) <= std


def _write(tmp_path, text):
    d = tmp_path / "mysuite"
    d.mkdir(exist_ok=True)
    (d / "a.yaml").write_text(textwrap.dedent(text))
    return str(d)


def test_custom_fragment_folder_builds(tmp_path):
    d = _write(tmp_path, """
        cases:
          - {id: m1, generator: gaming.maze, seed: 2, params: {resolution: [32, 32], num_frames: 8, num_chunks: 2}}
    """)
    (c,) = build_suite(d)
    assert c.suite == "mysuite" and c.resolution == (32, 32) and c.metadata["seed"] == 2


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("cases:\n  - {id: a, generator: gaming.maze}\n  - {id: a, generator: gaming.maze}\n", "duplicate case id 'a'"),
        ("cases:\n  - {id: a, generator: gaming.mazz}\n", "Did you mean 'gaming.maze'"),
        ("cases:\n  - {id: a, generator: gaming.maze, resolution: [4, 4]}\n", "move them under 'params'"),
        ("cases:\n  - {generator: gaming.maze}\n", "lacks id"),
        ("cases: 3\n", "'cases' list"),
        ("cases:\n  - {id: a, generator: gaming.maze, params: {actions: [fly, fly, fly, fly]}}\n", "actions must be"),
        ("cases:\n  - {id: a, generator: robotics.push, params: {resolutoin: [64, 64]}}\n", "unknown params"),
    ],
)
def test_bad_fragments_name_the_file_and_fix(tmp_path, text, match):
    d = _write(tmp_path, text)
    with pytest.raises((CaseError, ValueError), match=match):
        build_suite(d)


def test_unknown_suite_lists_the_known_ones():
    with pytest.raises(CaseError, match="smoke"):
        suite_entries("nope")


def test_registry_survives_a_missing_subpackage(monkeypatch):
    import scenarios.registry as reg
    from worldolympiad.registry import Registry

    monkeypatch.setattr(reg, "SUBPACKAGES", ("scenarios.does_not_exist", "scenarios.gaming"))
    gens, perts = Registry("generators"), Registry("perturbations")
    ok = reg.register_all(gens, perts)
    assert ok == ["scenarios.gaming"]
    assert "scenarios.does_not_exist" in reg.UNAVAILABLE
    assert "gaming.maze" in gens.names()


@pytest.mark.parametrize("data, at_least", [("reference_world_data", 150), ("reference_world_physics_data", 480),
                                            ("reference_world_physics_data_more", 192),
                                            ("reference_world_physics_data_x2", 672)])
def test_the_reference_models_training_data_is_disjoint_from_every_evaluation_suite(data: str, at_least: int):
    """No training case of reference_world_lab/configs/reference_world_data (the main DiT's) or
    reference_world_physics_data / _more / _x2 (its physics expert's) is an evaluation case (same generator and
    seed), except the flythrough rooms that MODEL_CARD.md declares (seeds 100-105)."""
    from pathlib import Path

    from scenarios.suites import load_fragment

    folder = Path(__file__).parents[2] / "reference_world_lab" / "configs" / data
    train = [e for f in sorted(folder.glob("*.yaml")) for e in load_fragment(f)]
    assert len(train) >= at_least
    assert len({e.id for e in train}) == len(train)
    evaluated = {(e.generator, e.seed) for s in ("smoke", "gaming", "robotics", "realworld", "physics", "standard")
                 for e in suite_entries(s)}
    shared = {(e.generator, e.seed) for e in train} & evaluated
    assert all(g == "flythrough.room" and 100 <= s <= 105 for g, s in shared), sorted(shared)
