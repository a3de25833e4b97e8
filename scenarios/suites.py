"""Suites are data: ``scenarios/suites/<suite>/<family>.yaml`` fragments.

Each fragment is ``{cases: [{id, generator, seed, params: {...}}]}``; ids are unique
across the suite. A suite is every fragment of its folder, in file-name order, each entry
turned into a :class:`~worldolympiad.types.Case` by
``GENERATORS.get(generator).make_case(id, seed=seed, **params)`` with ``suite`` set.

``worldolympiad.registries.SUITES`` maps ``smoke`` → :func:`smoke_suite` etc.;
:func:`suite_counts` gives the case counts without building any case (for
``worldolympiad ls suites``).
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

from worldolympiad.types import Case, CaseError

logger = logging.getLogger(__name__)

SUITES_DIR = Path(__file__).resolve().parent / "suites"
SUITE_NAMES: tuple[str, ...] = ("smoke", "gaming", "robotics", "realworld", "physics", "standard")


@dataclasses.dataclass(frozen=True)
class SuiteEntry:
    """One line of a fragment: what to build, and where it was declared (for error messages)."""

    id: str
    generator: str
    seed: int
    params: dict[str, Any]
    source: str


def suite_dir(name: str) -> Path:
    """Folder of a suite's fragments: a built-in name, or a path to a folder of ``*.yaml`` fragments.

    Raises:
        CaseError: unknown suite name (the message lists the known ones).
    """
    if ("/" in name or name.startswith(".")) and Path(name).is_dir():
        return Path(name)
    d = SUITES_DIR / name
    if not d.is_dir():
        known = sorted(p.name for p in SUITES_DIR.iterdir() if p.is_dir())
        raise CaseError(f"unknown suite {name!r}; known suites: {', '.join(known)} (folders under {SUITES_DIR})")
    return d


def load_fragment(path: str | Path) -> list[SuiteEntry]:
    """Parse one fragment file into entries, checking every field it needs."""
    import yaml

    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise CaseError(f"{path}: not valid YAML ({e}); fix the file") from e
    if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
        raise CaseError(f"{path}: a suite fragment must be a mapping with a 'cases' list, got {type(data).__name__}")
    entries = []
    for i, item in enumerate(data["cases"]):
        where = f"{path}: cases[{i}]"
        if not isinstance(item, dict):
            raise CaseError(f"{where} must be a mapping {{id, generator, seed, params}}, got {item!r}")
        missing = [k for k in ("id", "generator") if k not in item]
        if missing:
            raise CaseError(f"{where} lacks {', '.join(missing)}; every case needs an id and a generator name")
        extra = set(item) - {"id", "generator", "seed", "params"}
        if extra:
            raise CaseError(f"{where} has unknown keys {sorted(extra)}; move them under 'params'")
        params = item.get("params") or {}
        if not isinstance(params, dict):
            raise CaseError(f"{where}.params must be a mapping, got {params!r}")
        entries.append(SuiteEntry(str(item["id"]), str(item["generator"]), int(item.get("seed", 0)), dict(params), where))
    return entries


def suite_entries(name: str) -> list[SuiteEntry]:
    """Every entry of a suite (all its fragments), checking ids are unique."""
    entries: list[SuiteEntry] = []
    seen: dict[str, str] = {}
    for frag in sorted(suite_dir(name).glob("*.yaml")):
        for e in load_fragment(frag):
            if e.id in seen:
                raise CaseError(f"{e.source}: duplicate case id {e.id!r} (also {seen[e.id]}); ids must be unique in a suite")
            seen[e.id] = e.source
            entries.append(e)
    return entries


def build_case(entry: SuiteEntry, suite: str) -> Case:
    """Turn one entry into a case through its generator."""
    from worldolympiad.registries import GENERATORS
    from worldolympiad.registry import UnknownNameError

    try:
        gen = GENERATORS.get(entry.generator)
    except UnknownNameError as e:
        raise CaseError(f"{entry.source}: {e}") from e
    if isinstance(gen, type):  # a generator class registered instead of an instance
        gen = gen()
    try:
        case = gen.make_case(entry.id, seed=entry.seed, **entry.params)
    except TypeError as e:  # an unknown param name
        raise CaseError(f"{entry.source}: generator {entry.generator!r} rejected params {entry.params}: {e}") from e
    return dataclasses.replace(case, suite=suite)


def build_suite(name: str) -> list[Case]:
    """All cases of the suite ``name`` (built-in name or fragment folder)."""
    suite = Path(name).name
    return [build_case(e, suite) for e in suite_entries(name)]


def suite_counts() -> dict[str, int]:
    """Suite name → number of cases, read from the fragments without building cases."""
    return {name: len(suite_entries(name)) for name in SUITE_NAMES if (SUITES_DIR / name).is_dir()}


def smoke_suite() -> list[Case]:
    """One tiny case per family (<= 64 px, <= ~32 frames); renders in seconds (CI)."""
    return build_suite("smoke")


def gaming_suite() -> list[Case]:
    """Atari games (ale-py) and the first-person maze."""
    return build_suite("gaming")


def robotics_suite() -> list[Case]:
    """A Franka Panda (pybullet) pushing, picking, placing and stacking cubes."""
    return build_suite("robotics")


def realworld_suite() -> list[Case]:
    """Real clips, fly-throughs, mechanics, thermal and material renders."""
    return build_suite("realworld")


def physics_suite() -> list[Case]:
    """Mechanics, thermal and material phenomena."""
    return build_suite("physics")


def standard_suite() -> list[Case]:
    """The benchmark: every family, 128-256 px, several seeds."""
    return build_suite("standard")
