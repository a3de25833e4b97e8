"""Which cases may tune a track and which only report on it: the two splits, declared once.

* ``tuning`` — every suite the project ships (``scenarios/suites/*``: smoke, standard, gaming, robotics,
  realworld, physics) and the bench's tuning suites (``bench/suites/*``). Engineers look at these while
  changing a track (issue 56: "tune on nothing but the tuning split").
* ``heldout`` — ``scenarios/heldout/suite`` (the report's cases) and ``scenarios/heldout/quick`` (two tiny
  ones for ``--quick`` and CI): the new generators of this package (other shapes, colours, textures; real
  photos under large yaw sweeps and forward motion) and settings of the existing generators that no
  tuning suite uses (sizes 48-320 px, 8-30 fps, other fields of view, camera placements, agents, clip
  windows). ``bench/validity.py`` reports on these only.

A setting is a generator with its params, seed left out (another seed of a tuned setting is not held out).
:func:`overlap` lists held-out entries whose setting a tuning suite also has, and tuning entries that use a
held-out generator; ``tests/scenarios/test_heldout.py`` requires it to be empty.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

#: split name -> folders of suite fragments (``scenarios.suites`` format)
SPLITS: dict[str, tuple[Path, ...]] = {
    "tuning": (*sorted(p for p in (ROOT / "scenarios" / "suites").iterdir() if p.is_dir()),
               *sorted(p for p in (ROOT / "bench" / "suites").iterdir() if p.is_dir())),
    "heldout": (HERE / "suite", HERE / "quick"),
}
#: generators that exist only for the held-out split
HELDOUT_GENERATORS: tuple[str, ...] = ("heldout.shape_drop", "heldout.photo_camera")


def tuning_suite(name: str) -> Path | None:
    """The folder of a tuning-split suite given by name (``physics_tune``, ``smoke``) or by path; ``None`` for
    anything else (the held-out split's folders included)."""
    by_name = {p.name: p for p in SPLITS["tuning"]}
    by_path = {p.resolve(): p for p in SPLITS["tuning"]}
    return by_path.get(Path(name).resolve()) or by_name.get(name)


def setting_key(generator: str, params: dict[str, Any]) -> str:
    """A canonical string for a generator with its params (lists and tuples compare equal)."""
    return generator + " " + json.dumps(params, sort_keys=True, default=list)


def split_entries(split: str) -> list[Any]:
    """Every suite entry (:class:`scenarios.suites.SuiteEntry`) of every folder of ``split``."""
    from scenarios.suites import suite_entries

    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; known: {sorted(SPLITS)}")
    return [e for folder in SPLITS[split] for e in suite_entries(str(folder))]


def overlap() -> list[str]:
    """Held-out settings found in the tuning split, and tuning entries using a held-out generator."""
    tuning = split_entries("tuning")
    seen = {setting_key(e.generator, e.params): e.source for e in tuning}
    problems = [f"{e.source}: held-out setting also in the tuning split at {seen[setting_key(e.generator, e.params)]}"
                for e in split_entries("heldout") if setting_key(e.generator, e.params) in seen]
    problems += [f"{e.source}: tuning entry uses held-out generator {e.generator}"
                 for e in tuning if e.generator in HELDOUT_GENERATORS]
    return problems
