"""Suites: named lists of cases, from a JSON file or from the ``SUITES`` registry.

A suite file (schema ``worldolympiad/schema/suite.schema.json``) looks like::

    {"name": "mine", "version": "1", "description": "...",
     "cases": [{...inline case...}, "cases/other_case.json"]}

Paths inside a suite are relative to the suite file. A single case JSON file is also
accepted as a one-case suite. A bare name (``smoke``) is looked up in
:data:`worldolympiad.registries.SUITES` (the scenarios package provides
``scenarios.suites:<name>_suite``).

Two ways to load:

* :func:`load_suite` (strict): any broken item or duplicate id raises :class:`SuiteError`
  listing every problem.
* :func:`load_suite_lenient` (the evaluator): good cases load, and each broken item comes
  back as a :class:`BrokenItem` so the run records it as a failed row and goes on.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from worldolympiad.types import Case, CaseError

logger = logging.getLogger(__name__)


class SuiteError(CaseError):
    """A suite cannot be loaded (not found, not JSON, broken items, duplicate ids)."""


@dataclass(frozen=True)
class BrokenItem:
    """A suite item that could not become a :class:`Case`.

    Attributes:
        case_id: the id to record it under (the item's ``id`` if readable, else the file
            stem or ``cases[i]``; duplicates get ``<id>#<i>`` so rows stay unique).
        error: what is wrong, naming the file/JSON path and the fix.
        scenario: the item's scenario if it could be read (for grouping), else ``""``.
    """

    case_id: str
    error: str
    scenario: str = ""


@dataclass
class Suite:
    """A loaded suite.

    Attributes:
        name: suite name (file ``name`` field, file stem, or registry name).
        version: suite version string.
        cases: the valid cases, in file order.
        description: free text.
        source: the file path or ``"registry:<name>"``.
        broken: items that could not be loaded (lenient loading only).
    """

    name: str
    version: str
    cases: list[Case]
    description: str = ""
    source: str = ""
    broken: list[BrokenItem] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.cases)

    def case(self, case_id: str) -> Case:
        for c in self.cases:
            if c.id == case_id:
                return c
        raise KeyError(f"suite {self.name!r} has no case {case_id!r}")


def load_suite(name_or_path: str | Path) -> Suite:
    """Load a suite strictly.

    Args:
        name_or_path: a suite JSON file, a single case JSON file, or a registered suite name.

    Raises:
        SuiteError: the file/name is unknown, or any item is broken, or ids repeat; the
            message lists every problem with its location and the fix.
    """
    suite = load_suite_lenient(name_or_path)
    if suite.broken:
        lines = "\n  ".join(b.error for b in suite.broken)
        raise SuiteError(f"suite {suite.source or suite.name} has {len(suite.broken)} problem(s):\n  {lines}")
    return suite


def load_suite_lenient(name_or_path: str | Path) -> Suite:
    """Load a suite, keeping broken items as :class:`BrokenItem` instead of raising.

    Raises:
        SuiteError: only when nothing at all can be loaded (unknown name, unreadable file).
    """
    text = str(name_or_path)
    path = Path(text)
    looks_like_path = path.suffix.lower() == ".json" or "/" in text or path.is_file()
    if looks_like_path:
        return _load_file(path)
    return _load_registered(text)


# ------------------------------------------------------------------ registry


def _load_registered(name: str) -> Suite:
    from worldolympiad.registries import SUITES
    from worldolympiad.registry import UnknownNameError

    try:
        factory = SUITES.get(name)
    except UnknownNameError as e:
        raise SuiteError(f"{e} Or pass a suite/case JSON file path.") from e
    except ImportError as e:
        raise SuiteError(f"suite {name!r} is registered but its provider failed to import: {e}") from e
    cases = list(factory())
    desc = SUITES.describe(name).get("description", "")
    suite = Suite(name=name, version=str(getattr(factory, "version", "1")), cases=[], description=desc,
                  source=f"registry:{name}")
    _add_unique(suite, [(c, f"{name}[{i}]") for i, c in enumerate(cases)])
    return suite


# ---------------------------------------------------------------------- file


def _load_file(path: Path) -> Suite:
    if not path.exists():
        raise SuiteError(f"{path}: suite file not found; pass a suite/case JSON file or a suite name "
                         "(see `worldolympiad ls suites`)")
    if path.is_dir():
        raise SuiteError(f"{path}: is a folder; pass a suite JSON file (e.g. written by `worldolympiad import` "
                         "or `worldolympiad scenarios render`) or a suite name")
    from worldolympiad.validate import parse_json

    try:
        d = parse_json(path.read_text())
    except UnicodeDecodeError as e:
        raise SuiteError(f"{path}: not a text file; pass a suite or case JSON file") from e
    except json.JSONDecodeError as e:
        from worldolympiad.validate import json_error_hint

        raise SuiteError(f"{path}: not valid JSON ({e.msg} at line {e.lineno} col {e.colno}); "
                         f"{json_error_hint(e, path)}") from e
    base = path.parent.resolve()
    if isinstance(d, Mapping) and "cases" in d:
        items = d["cases"]
        if not isinstance(items, list) or not items:
            raise SuiteError(f"{path}: $.cases must be a non-empty list of case objects or case file paths")
        suite = Suite(
            name=str(d.get("name") or path.stem),
            version=str(d.get("version", "1")),
            cases=[],
            description=str(d.get("description", "")),
            source=str(path),
        )
        loaded: list[tuple[Case, str]] = []
        for i, item in enumerate(items):
            where = f"{path}: $.cases[{i}]"
            case_or_broken = _load_item(item, base, where, fallback_id=f"cases[{i}]")
            if isinstance(case_or_broken, BrokenItem):
                suite.broken.append(case_or_broken)
            else:
                loaded.append((case_or_broken, where))
        _add_unique(suite, loaded)
        if not suite.name:
            suite.name = path.stem
        for c in suite.cases:
            if not c.suite:
                object.__setattr__(c, "suite", suite.name)  # frozen dataclass: fill the default once
        return suite
    # A single case file.
    case_or_broken = _load_item(d, base, str(path), fallback_id=path.stem)
    suite = Suite(name=path.stem, version="1", cases=[], source=str(path))
    if isinstance(case_or_broken, BrokenItem):
        suite.broken.append(case_or_broken)
    else:
        suite.cases.append(case_or_broken)
    return suite


def _load_item(item: Any, base: Path, where: str, fallback_id: str) -> Case | BrokenItem:
    """One suite item (inline object or relative path) → Case, or a BrokenItem naming the problem."""
    from worldolympiad.validate import parse_json, validate_case_dict

    item_base = base
    if isinstance(item, str):
        f = (base / item).resolve()
        fallback_id = Path(item).stem
        if not f.exists():
            return BrokenItem(fallback_id, f"{where}: case file {f} not found; fix the path (relative to the suite file)")
        try:
            item = parse_json(f.read_text())
        except json.JSONDecodeError as e:
            return BrokenItem(fallback_id, f"{f}: malformed case JSON ({e.msg} at line {e.lineno} col {e.colno}); "
                                           "fix the file")
        except (UnicodeDecodeError, OSError) as e:
            return BrokenItem(fallback_id, f"{f}: cannot be read as a JSON case file ({type(e).__name__}); "
                                           "fix the path or the file")
        where = str(f)
        item_base = f.parent
    cid = fallback_id
    scenario = ""
    if isinstance(item, Mapping):
        if isinstance(item.get("id"), str) and item["id"]:
            cid = item["id"]
        scenario = str(item.get("scenario") or "") if isinstance(item.get("scenario"), str) else ""
    problems = validate_case_dict(item)
    if problems:
        msg = "; ".join(str(p) for p in problems)
        return BrokenItem(cid, f"{where}: invalid case {cid!r}: {msg} (run `worldolympiad validate` on the file)",
                          scenario)
    return Case.from_dict(item, base_dir=item_base)


def _add_unique(suite: Suite, loaded: Sequence[tuple[Case, str]]) -> None:
    first: dict[str, str] = {}
    for case, where in loaded:
        if case.id in first:
            suite.broken.append(BrokenItem(
                f"{case.id}#{len(suite.cases) + len(suite.broken)}",
                f"{where}: duplicate case id {case.id!r} (first defined at {first[case.id]}); "
                "ids must be unique within a suite — rename one of them",
                case.scenario,
            ))
            continue
        first[case.id] = where
        suite.cases.append(case)


def write_suite(path: str | Path, name: str, cases: Sequence[Case], *, version: str = "1",
                description: str = "") -> Path:
    """Write ``cases`` inline into a suite JSON file (paths stay as the cases hold them)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"name": name, "version": version, "description": description,
               "cases": [c.to_dict() for c in cases]}
    path.write_text(json.dumps(payload, indent=2))
    return path
