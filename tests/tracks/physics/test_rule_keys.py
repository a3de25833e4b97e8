"""A case's rules share a ride-along check's run only where the check reads the same of each rule.

Until physics v23 the track ran continuity, permanence and rigidity once per case, whichever rule
came first, although they follow other bodies for a thermal or material rule (``followed``) and
rigidity demands a load for a loading rule: of a case declaring ``hardness`` (material) and
``compression`` (mechanics), the rule listed second was judged on the bodies the first follows.
"""

from __future__ import annotations

import json

import pytest

from tracks.physics import synthetic as S
from tracks.physics.track import PhysicsTrack
from worldolympiad.track import EvalContext
from worldolympiad.types import Case, PhysicsSpec, Video


def _evidence(scene, rules, tmp_path):
    T, H, W = scene.frames.shape[:3]
    # The blue ball is the subject: a material rule follows only it, a mechanics rule both balls.
    objects = tuple(dict(o, role="subject") if o["name"] == "blue" else dict(o) for o in scene.object_hints())
    case = Case(id="balls", scenario="robotics", fps=scene.fps, num_frames=T, resolution=(H, W),
                physics=PhysicsSpec(rules=tuple(rules), objects=objects), tracks=("physics",))
    ctx = EvalContext(work_dir=tmp_path, reference_loader=lambda: Video(scene.frames, scene.fps))
    PhysicsTrack().evaluate(Video(scene.frames, scene.fps), case, ctx)
    ev = json.loads((tmp_path / "physics_evidence.json").read_text())
    return {r["rule"]: {c["check"]: (c["status"], c["score"]) for c in r["checks"]} for r in ev["rules"]}


@pytest.mark.parametrize("rules", [("hardness", "compression"), ("compression", "hardness")])
def test_each_rule_gets_the_ride_along_checks_it_would_get_alone(tmp_path, rules):
    vanished = S.perturb(S.crossing_balls(), "vanish", 1.0)  # the red ball vanishes
    both = _evidence(vanished, rules, tmp_path / "both")
    for rule in rules:
        alone = _evidence(vanished, (rule,), tmp_path / rule)
        assert both[rule] == alone[rule], rule
    # and the two rules do differ here: only the mechanics rule follows the vanished red ball
    assert both["compression"]["permanence"][0] == "fail"
    assert both["hardness"]["permanence"] == ("pass", 1.0)
    assert both["hardness"]["continuity"][0] == "not_applicable"  # a material rule's looser path test
    assert both["compression"]["continuity"] == ("pass", 1.0)


def test_rule_keys_say_what_each_check_reads():
    from tracks.physics.checks import CHECKS, rule_key

    assert rule_key("permanence", "hardness") != rule_key("permanence", "compression")
    assert rule_key("permanence", "gravity") == rule_key("permanence", "compression")  # both mechanics
    assert rule_key("continuity", "melting") == rule_key("continuity", "freezing")  # both thermal
    assert rule_key("rigidity", "compression") != rule_key("rigidity", "gravity")  # a loading rule demands a load
    assert rule_key("phase_change", "melting") != rule_key("phase_change", "freezing")
    assert rule_key("gravity", "gravity") == rule_key("gravity", "impact") == ""
    with pytest.raises(KeyError, match="known"):
        rule_key("nope", "gravity")
    assert set(CHECKS) >= {"continuity", "permanence", "rigidity"}
