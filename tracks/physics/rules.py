"""The 14 physical rules, loaded from ``rules.yaml`` (data, not code).

``worldolympiad ls rules`` lists them through :func:`list_rules`; the track reads
applicability/compliance questions and the model-free checks of each rule from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

Dimension = Literal["mechanics", "thermal", "material"]
DIMENSIONS: tuple[Dimension, ...] = ("mechanics", "thermal", "material")
RULES_FILE = Path(__file__).with_name("rules.yaml")


@dataclass(frozen=True)
class Rule:
    """One rule of the taxonomy.

    Attributes:
        id: rule id (``"gravity"``).
        dimension: ``mechanics``, ``thermal`` or ``material``.
        description: what the rule says.
        applicability: stage-1 question (does the rule apply to this scene?).
        compliance: stage-2 question (does the video obey it?).
        expected: the behaviour a compliant video shows.
        checks: names of model-free checks giving evidence for the rule (may be empty).
    """

    id: str
    dimension: Dimension
    description: str
    applicability: str
    compliance: str
    expected: str
    checks: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "dimension": self.dimension,
            "description": self.description,
            "applicability": self.applicability,
            "compliance": self.compliance,
            "expected": self.expected,
            "checks": list(self.checks),
        }


@lru_cache(maxsize=1)
def load_rules(path: str | None = None) -> dict[str, Rule]:
    """Rules by id, in taxonomy order. Raises ``ValueError`` naming a malformed entry."""
    import yaml

    src = Path(path) if path else RULES_FILE
    data = yaml.safe_load(src.read_text())
    rules: dict[str, Rule] = {}
    required = ("id", "dimension", "description", "applicability", "compliance", "expected")
    for i, r in enumerate(data.get("rules") or ()):
        missing = [k for k in required if not r.get(k)]
        if missing:
            raise ValueError(f"{src}: rule #{i} lacks {missing}; every rule needs {list(required)}")
        if r["dimension"] not in DIMENSIONS:
            raise ValueError(f"{src}: rule {r['id']!r} has dimension {r['dimension']!r}; use one of {DIMENSIONS}")
        if r["id"] in rules:
            raise ValueError(f"{src}: rule id {r['id']!r} appears twice")
        rules[r["id"]] = Rule(
            id=r["id"],
            dimension=r["dimension"],
            description=r["description"],
            applicability=r["applicability"],
            compliance=r["compliance"],
            expected=r["expected"],
            checks=tuple(r.get("checks") or ()),
        )
    return rules


def get_rule(rule_id: str) -> Rule:
    """The rule ``rule_id``; unknown ids raise ``KeyError`` listing the known ones."""
    rules = load_rules()
    if rule_id not in rules:
        raise KeyError(f"unknown physical rule {rule_id!r}; known: {', '.join(rules)}")
    return rules[rule_id]


def list_rules() -> list[dict[str, Any]]:
    """Plain dicts for ``worldolympiad ls rules`` (id, dimension, description, checks)."""
    return [r.to_dict() for r in load_rules().values()]
