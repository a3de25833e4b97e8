"""A solid that shrinks where it rests stays on its support (physics v22, ``checks/support.py``).

Before v22 a melt whose vertical motion is mirrored (``gravity_reversed``: the ice lifts off its plate
as it shrinks) passed the melting rule at 1.0 at every strength: its area still shrinks steadily,
which is all ``phase_change`` reads. On the tuning split that was 12 of the 28 lossless pairs
`physics_tune` lost or tied (the melting and dissolving cases, every strength tied with the clean video).
"""

from __future__ import annotations

import numpy as np
import pytest

from tracks.physics import synthetic as S
from tracks.physics.checks import CheckInput, run_check
from tracks.physics.rules import load_rules
from tracks.physics.scoring import RuleVerdict
from tracks.physics.synthetic import track_from_path
from tracks.physics.tracking import track_objects


def _inp(scene: S.Scene, rule: str = "melting", **kw) -> CheckInput:
    return CheckInput(track_objects(scene.frames, scene.segmentation()), scene.frames, scene.fps, rule,
                      objects=scene.object_hints(), **kw)


def _rule_score(scene: S.Scene, rule: str = "melting") -> float:
    """The rule's combined check score, from every check ``rules.yaml`` lists for it."""
    r = load_rules()[rule]
    inp = _inp(scene, rule)
    v = RuleVerdict(r, "case", [run_check(c, inp) for c in r.checks])
    assert v.check_score is not None
    return v.check_score


def test_a_melt_that_lifts_off_its_plate_fails_the_melting_rule_and_a_stronger_lift_scores_lower():
    clean = S.melting_block()
    assert run_check("support", _inp(clean)).status == "pass"
    assert _rule_score(clean) == pytest.approx(1.0)
    scores = [_rule_score(S.perturb(clean, "gravity_reversed", s)) for s in (0.67, 1.0)]
    # v21: [1.0, 1.0] (phase_change and permanence pass a shrinking body that floats up; continuity is not applicable)
    assert scores[0] < 0.9 and scores[1] < scores[0], scores
    r = run_check("support", _inp(S.perturb(clean, "gravity_reversed", 1.0)))
    assert r.status == "fail" and r.measured["lift_share"] > 0.9 and "lifts off its support" in r.reason


def _box_track(name: str, top: np.ndarray, bottom: np.ndarray, x0: float = 10.0, x1: float = 30.0, tid: int = 1):
    """A track whose box spans ``top``..``bottom`` (pixels, per frame) between ``x0`` and ``x1``."""
    T = len(top)
    cen = np.stack([np.full(T, (x0 + x1) / 2), (top + bottom) / 2], axis=1)
    area = (x1 - x0) * (bottom - top)
    tr = track_from_path(tid, name, cen, area, (48, 64))
    tr.bbox[:] = np.stack([np.full(T, x0), top, np.full(T, x1), bottom], axis=1)
    return tr


def _frames(T: int) -> np.ndarray:
    return np.zeros((T, 48, 64, 3), np.uint8)


def test_a_shrink_toward_the_middle_as_seen_from_above_passes():
    # a camera looking straight down at the plate: the base rises as much as the top comes down
    T = 20
    top, bottom = np.linspace(10, 18, T), np.linspace(40, 32, T)
    r = run_check("support", CheckInput([_box_track("ice", top, bottom)], _frames(T), 10.0, "melting"))
    assert r.status == "pass" and r.measured["lift_share"] == pytest.approx(0.5)
    # the same body rising by two thirds of its height change: it left the plate
    top, bottom = np.linspace(10, 14, T), np.linspace(40, 32, T)
    r = run_check("support", CheckInput([_box_track("ice", top, bottom)], _frames(T), 10.0, "melting"))
    assert r.status == "fail" and r.measured["lift_share"] == pytest.approx(2 / 3, abs=1e-4)


def test_a_body_that_may_float_is_not_judged():
    T = 20
    top, bottom = np.linspace(10, 14, T), np.linspace(30, 22, T)  # the base rises: floating ice does that
    ice = _box_track("ice", top, bottom)
    water = _box_track("water", np.full(T, 20.0), np.full(T, 44.0), x0=0.0, x1=60.0, tid=2)  # larger, reaches below
    r = run_check("support", CheckInput([ice, water], _frames(T), 10.0, "melting"))
    assert r.status == "not_applicable" and "'water'" in r.reason
    # a puddle the melt leaves is there neither from the start nor larger: the check still judges
    puddle_top = np.where(np.arange(T) < 3, np.nan, 30.0)
    puddle = _box_track("water", puddle_top, puddle_top + 4, x0=0.0, x1=40.0, tid=2)
    assert run_check("support", CheckInput([ice, puddle], _frames(T), 10.0, "melting")).status == "fail"
    # buoyancy declared, a moving camera, a liquid's rule: not judged
    for kw, rule in (({"case_rules": ("melting", "buoyancy")}, "melting"), ({"camera_moves": True}, "melting"),
                     ({}, "vaporization"), ({}, "freezing")):
        r = run_check("support", CheckInput([ice], _frames(T), 10.0, rule, **kw))
        assert r.status == "not_applicable", (kw, rule, r)


def test_a_body_whose_height_barely_changes_is_not_judged():
    T = 20
    top, bottom = np.full(T, 10.0), np.linspace(30, 29, T)
    r = run_check("support", CheckInput([_box_track("ice", top, bottom)], _frames(T), 10.0, "melting"))
    assert r.status == "not_applicable" and "too little" in r.reason
