"""The 14-rule taxonomy is data: complete, well-formed, and wired to existing checks."""

from __future__ import annotations

import pytest

from tracks.physics.checks import CHECKS
from tracks.physics.rules import get_rule, list_rules, load_rules

EXPECTED = {
    "mechanics": {"gravity", "buoyancy", "compression", "impact"},
    "thermal": {"melting", "sublimation", "vaporization", "condensation", "deposition", "freezing"},
    "material": {"color_mixing", "solubility", "hardness", "combustibility"},
}


def test_all_14_rules_in_their_dimensions():
    rules = load_rules()
    assert len(rules) == 14
    for dim, ids in EXPECTED.items():
        assert {r.id for r in rules.values() if r.dimension == dim} == ids


def test_every_rule_has_both_questions_and_known_checks():
    for r in load_rules().values():
        assert r.applicability.endswith("?") and r.compliance.endswith("?"), r.id
        assert r.expected
        assert all(c in CHECKS for c in r.checks), (r.id, r.checks)


def test_unknown_rule_error_lists_known_ids():
    with pytest.raises(KeyError, match="gravity"):
        get_rule("levitation")


def test_list_rules_is_plain_data_for_ls():
    rows = list_rules()
    assert rows[0]["id"] == "gravity" and isinstance(rows[0]["checks"], list)


def test_malformed_rules_file_names_the_rule(tmp_path):
    bad = tmp_path / "rules.yaml"
    bad.write_text("rules:\n  - id: x\n    dimension: cosmic\n    description: d\n    applicability: a?\n"
                   "    compliance: c?\n    expected: e\n")
    with pytest.raises(ValueError, match="cosmic"):
        load_rules(str(bad))
