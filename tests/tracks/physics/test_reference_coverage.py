"""A rule a case declares must be checkable on the case's own reference, and pass there.

Before these fixes 53 of the 123 rules declared by the standard suite got no verdict on the
simulator's own video (``python bench/bench_physics_coverage.py``): hardness and
compression (the block under a press is always in contact, and rigidity skipped contact
frames; a pale wall matching the steel hint crowded the block out of the segmentation),
impact on landings and sideways collisions (only vertical rebounds counted), and rules the
clip never shows (gravity on a box sliding on the floor, on a stable stack, on a held cube).
Such a rule can only ever fail a model — through the ride-along checks — never pass it.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from tracks.physics import synthetic as S
from tracks.physics.checks import CheckInput, run_check, subject
from tracks.physics.segmentation import OpenCVSegmenter, Segmentation
from tracks.physics.tracking import track_objects

os.environ.setdefault("MUJOCO_GL", "egl")


def _inp(scene: S.Scene, ref: S.Scene, rule: str = "impact", objects: list | None = None) -> CheckInput:
    return CheckInput(track_objects(scene.frames, scene.segmentation()), scene.frames, scene.fps, rule,
                      track_objects(ref.frames, ref.segmentation()), ref.frames, ref.fps, objects=objects or [])


def _balls(vb_after: float, *, hit: bool = True, T: int = 24, H: int = 32, W: int = 96) -> S.Scene:
    """Red ball rolling right at 2 px/frame into a resting blue ball at frame 12; after the hit red
    stops and blue leaves at ``vb_after`` px/frame. ``hit=False``: red passes through blue."""
    r, y = 4.0, H / 2
    xr = np.empty(T)
    xb = np.empty(T)
    for t in range(T):
        xr[t] = 10 + 2 * min(t, 12) if hit else 10 + 2 * t
        xb[t] = 10 + 24 + 2 * r + (vb_after * max(0, t - 12) if hit else 0)
    frames = np.full((T, H, W, 3), S.BACKGROUND, np.uint8)
    masks = np.zeros((T, H, W), np.int32)
    for t in range(T):
        for oid, x, col in ((2, xb[t], S.BLUE), (1, xr[t], S.RED)):
            m = S._disc(H, W, x, y, r)
            frames[t][m] = col
            masks[t][m] = oid
    return S.Scene(frames, masks, {"red": {"id": 1, "color": S.RED}, "blue": {"id": 2, "color": S.BLUE}})


def _pressed_block(squash: bool, T: int = 16, H: int = 48, W: int = 48, contact_from: int = 0) -> S.Scene:
    """A dark press coming down onto a grey block, touching it from frame ``contact_from`` on;
    ``squash`` then flattens the block (area kept, like clay)."""
    frames = np.full((T, H, W, 3), S.BACKGROUND, np.uint8)
    masks = np.zeros((T, H, W), np.int32)
    floor = 40
    for t in range(T):
        k = max(0, t - contact_from) / max(1, T - 1 - contact_from)
        h = int(round(16 - (8 * k if squash else 0)))
        w = int(round(12 * 16 / h))
        x0 = W // 2 - w // 2
        gap = max(0, contact_from - t)
        masks[t, floor - h : floor, x0 : x0 + w] = 1
        masks[t, floor - h - 4 - gap : floor - h - gap, 10:38] = 2
        for oid, col in ((1, (150, 155, 165)), (2, (60, 60, 70))):
            frames[t][masks[t] == oid] = col
    return S.Scene(frames, masks, {"block": {"id": 1, "color": (150, 155, 165)}, "press": {"id": 2, "color": (60, 60, 70)}})


def test_a_landing_without_rebound_is_a_collision_and_a_video_that_never_lands_fails():
    ball = S.bouncing_ball(T=48, H=64, W=64, restitution=0.0)  # falls and stops dead on the floor
    own = run_check("impact", _inp(ball, ball))
    assert own.status == "pass" and own.measured["collisions"] >= 1, own
    hover = run_check("impact", _inp(S.perturb(ball, "frozen", 1.0), ball))
    assert hover.status == "fail" and "no collision" in hover.reason, hover


def test_a_sideways_collision_is_checked_for_energy():
    ref = _balls(2.0)  # the struck ball takes the striker's speed
    own = run_check("impact", _inp(ref, ref))
    assert own.status == "pass" and own.measured["collisions"] >= 1, own
    fast = run_check("impact", _inp(_balls(5.0), ref))  # leaves 2.5x faster: energy from nowhere
    assert fast.status == "fail" and "added energy" in fast.reason and fast.score < 0.5, fast
    ghost = run_check("impact", _inp(_balls(0.0, hit=False), ref))  # rolls through, nothing moves
    assert ghost.status == "fail" and "no collision" in ghost.reason, ghost


def test_rigidity_measures_an_object_that_is_always_in_contact():
    """A soft block (the case says ``rigid: false``) under a press deforms while it is in contact;
    one that keeps its shape, or a still video in which nothing is pressed, fails compression."""
    soft = [{"name": "block", "rigid": False}, {"name": "press", "rigid": True}]
    ref = _pressed_block(squash=True)
    own = run_check("rigidity", _inp(ref, ref, "compression", soft))
    assert own.status == "pass" and own.measured["objects"]["block"]["soft"], own
    unsquashed = run_check("rigidity", _inp(_pressed_block(squash=False), ref, "compression", soft))
    assert unsquashed.status == "fail", unsquashed
    late = _pressed_block(squash=True, contact_from=5)
    assert run_check("rigidity", _inp(late, late, "compression", soft)).status == "pass"
    still = S.Scene(np.repeat(late.frames[:1], 16, 0), np.repeat(late.masks[:1], 16, 0), late.objects)
    frozen = run_check("rigidity", _inp(still, late, "compression", soft))
    assert frozen.status == "fail", frozen
    # Declared rigid, the same squash is a violation.
    rigid = run_check("rigidity", _inp(ref, ref, "compression", [{"name": "block", "rigid": True}]))
    assert rigid.status == "fail", rigid


def test_the_subject_is_a_named_object_not_an_unnamed_blob_that_moves_more():
    T, H, W = 12, 40, 64
    labels = np.zeros((T, H, W), np.int32)
    for t in range(T):
        labels[t, 20:24, 10 + t : 14 + t] = 1  # the named cube, pushed slowly
        labels[t, 2 * t : 2 * t + 6, 40:50] = 2  # an arm link sweeping down faster, unnamed
    frames = np.zeros((T, H, W, 3), np.uint8)
    tracks = track_objects(frames, Segmentation(labels, [{1: "cube", 2: ""}] * T, "test"))
    assert subject(CheckInput(tracks, frames, 15.0, "gravity")) == "cube"


def test_a_background_region_near_a_hint_colour_does_not_crowd_out_the_object():
    """The hardness scene: a pale wall 18 Lab units from the steel hint, cut in pieces by dark rams."""
    H, W = 64, 64
    frame = np.full((H, W, 3), (203, 203, 198), np.uint8)
    for x in (16, 32, 48):
        frame[:30, x : x + 3] = (60, 60, 70)
    frame[30:] = (110, 100, 90)
    frame[40:56, 26:38] = (150, 155, 165)  # the steel block
    frames = np.repeat(frame[None], 4, axis=0)
    seg = OpenCVSegmenter(max_objects=4).segment(frames, [{"name": "steel_block", "color": [150, 155, 165]}])
    lab = seg.labels[0][48, 32]
    assert lab > 0 and seg.names[0][int(lab)] == "steel_block"


@pytest.mark.parametrize(("case_id", "generator", "seed", "params", "expected"), [
    ("slide", "mechanics.sliding", 0, {}, ()),
    ("stable", "mechanics.stacking", 0, {"topple": False}, ()),
    ("topple", "mechanics.stacking", 1, {"topple": True}, ("gravity",)),
    ("drop", "mechanics.free_fall", 0, {}, ("gravity", "impact")),
])
def test_mechanics_cases_declare_only_the_rules_their_clip_shows(case_id, generator, seed, params, expected):
    pytest.importorskip("mujoco")
    from worldolympiad.registries import GENERATORS

    case = GENERATORS.get(generator).make_case(case_id, seed=seed, resolution=(32, 32), num_frames=48, fps=24, **params)
    assert case.physics.rules == expected


#: declared rules the model-free checks cannot yet verify on the smoke reference with no reference
#: to compare against (physics v3 judges the video alone); empty since mixing v4 reads
#: solubility as a deepening tint.
KNOWN_UNVERIFIED: set[tuple[str, str]] = set()


def test_every_rule_a_smoke_case_declares_passes_on_its_own_reference(tmp_path):
    pytest.importorskip("mujoco")
    pytest.importorskip("pybullet")
    from tracks.physics.track import PhysicsTrack, reference_rule_verdicts
    from worldolympiad.registries import GENERATORS
    from worldolympiad.suites import load_suite

    checked, unverified = 0, []
    for case in load_suite("smoke").cases:
        if PhysicsTrack().applicability(case):
            continue
        ref = GENERATORS.get(case.metadata["generator"]).render(case).video
        for r in reference_rule_verdicts(case, ref, tmp_path / case.id):
            if r["applicability_source"] == "case":
                checked += 1
                if r["verdict"] != "pass":
                    unverified.append((case.id, r["rule"], [c["reason"] for c in r["checks"] if c["status"] != "pass"]))
    new = [u for u in unverified if (u[0], u[1]) not in KNOWN_UNVERIFIED]
    fixed = KNOWN_UNVERIFIED - {(u[0], u[1]) for u in unverified}
    assert checked >= 15 and not new, new
    assert not fixed, f"now verified, remove from KNOWN_UNVERIFIED: {fixed}"
