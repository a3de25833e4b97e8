"""Each model-free check passes the law-abiding scene and fails the one perturbation it targets."""

from __future__ import annotations

import numpy as np
import pytest

from tracks.physics import synthetic as S
from tracks.physics.checks import CheckInput, run_check
from tracks.physics.checks._kinematics import bounce_frames, flights
from tracks.physics.tracking import track_objects


def _inp(scene, ref_scene, rule="gravity", use_ref=True, analyse=None):
    tracks = track_objects(scene.frames, scene.segmentation())
    rt = track_objects(ref_scene.frames, ref_scene.segmentation())
    if not use_ref:
        return CheckInput(tracks, scene.frames, scene.fps, rule)
    return CheckInput(tracks, scene.frames, scene.fps, rule, rt, ref_scene.frames, ref_scene.fps)


def test_flight_fit_recovers_simulated_gravity(ball):
    y = ball.states["y"] / 64
    a = [f.accel for f in flights(y, ball.fps)]
    g = ball.states["g"] * ball.fps**2 / 64  # px/frame^2 -> frame heights / s^2
    assert a and all(abs(x - g) / g < 0.05 for x in a)
    assert len(bounce_frames(y, ball.fps)) >= 2


@pytest.mark.parametrize("use_ref", [True, False])
def test_reference_passes_mechanics_checks(ball, use_ref):
    inp = _inp(ball, ball, use_ref=use_ref)
    for name in ("gravity", "impact", "continuity", "permanence", "rigidity"):
        r = run_check(name, inp)
        assert r.status == "pass" and r.score > 0.9, (name, r)


@pytest.mark.parametrize(("perturbation", "check"), [
    ("gravity_reversed", "gravity"),
    ("frozen", "gravity"),
    ("time_reversal", "impact"),
    ("teleport", "continuity"),
    ("vanish", "permanence"),
    ("shape_morph", "rigidity"),
])
def test_check_fails_its_perturbation_and_score_falls_with_strength(ball, perturbation, check):
    scores = []
    for s in (0.5, 1.0):
        r = run_check(check, _inp(S.perturb(ball, perturbation, s), ball))
        assert r.status == "fail", (s, r)
        scores.append(r.score)
    assert scores[1] <= scores[0] < 0.9


def test_occlusion_is_not_a_permanence_violation():
    scene = S.crossing_balls(T=32, H=48, W=64, occluder=True)
    r = run_check("permanence", _inp(scene, scene, use_ref=False))
    assert r.status == "pass", r


def test_phase_change_direction_follows_the_rule():
    melt = S.melting_block()
    ok = run_check("phase_change", _inp(melt, melt, rule="melting"))
    assert ok.status == "pass" and ok.score > 0.9
    # the same block growing instead (a video of melting played as freezing)
    grow = S.melting_block(freeze=True)
    bad = run_check("phase_change", _inp(grow, melt, rule="melting"))
    assert bad.status == "fail" and bad.score < 0.1
    # a frozen (static) block does not melt
    still = S.Scene(np.repeat(melt.frames[:1], len(melt.frames), 0), np.repeat(melt.masks[:1], len(melt.masks), 0),
                    melt.objects)
    assert run_check("phase_change", _inp(still, melt, rule="melting")).status == "fail"
    # without a reference the law alone decides
    assert run_check("phase_change", _inp(melt, melt, rule="melting", use_ref=False)).status == "pass"
    assert run_check("phase_change", _inp(melt, melt, rule="freezing", use_ref=False)).status == "fail"


def test_phase_change_not_applicable_to_mechanics_rule(ball):
    r = run_check("phase_change", _inp(ball, ball, rule="gravity"))
    assert r.status == "not_applicable" and r.reason


def _mixing_scene(T=24, H=32, W=32, reverse=False):
    frames = np.empty((T, H, W, 3), np.uint8)
    frames[:] = (40, 70, 220)  # blue water
    yy, xx = np.mgrid[0:H, 0:W]
    for t in range(T):
        frames[t, :6, 12:20] = (230, 220, 40)  # yellow dye source at the top
        r = 3 + 12 * t / (T - 1)
        frames[t][((xx - 16) ** 2 + (yy - 6) ** 2 <= r * r) & (yy >= 6)] = (40, 150, 120)  # green mix
    if reverse:
        frames = frames[::-1].copy()
    return S.Scene(frames, np.zeros((T, H, W), np.int32), {})


#: what a case declares about the mixing scene: the dye, the water and their mixture.
MIXING_OBJECTS = [{"name": "yellow_dye", "color": [230, 220, 40]}, {"name": "water", "color": [40, 70, 220]},
                  {"name": "mixture", "color": [40, 150, 120], "role": "product"}]


def test_mixing_spreads_monotonically():
    ref = _mixing_scene()
    inp = CheckInput([], ref.frames, 24.0, "color_mixing", objects=MIXING_OBJECTS)
    assert run_check("mixing", inp).status == "pass"
    bad = _mixing_scene(reverse=True)  # unmixing: the declared mixture shrinks
    r = run_check("mixing", CheckInput([], bad.frames, 24.0, "color_mixing", objects=MIXING_OBJECTS))
    assert r.status == "fail"


def test_mixing_counts_the_area_gained_not_what_already_has_the_mixture_colour():
    """standard-material-color_mixing-1: pale dye edges show the mixture's colour from frame 0
    (13 % of the frame), so the total never doubled and the reference "showed no mixing"."""
    ref = _mixing_scene()
    ref.frames[:, 20:, :] = (40, 150, 120)  # a band of the mixture colour, there from the start
    inp = CheckInput([], ref.frames, 24.0, "color_mixing", [], ref.frames, 24.0)
    assert run_check("mixing", inp).status == "pass"


def test_an_area_that_grows_and_shrinks_back_is_not_mixing():
    """A robot arm sweeping through the view: the changed area ends larger than it began, but
    it also shrinks on the way (a spreading dye does not)."""
    T, H, W = 24, 32, 32
    frames = np.empty((T, H, W, 3), np.uint8)
    frames[:] = (40, 70, 220)
    yy, xx = np.mgrid[0:H, 0:W]
    radii = np.r_[np.linspace(2, 14, 12), np.linspace(14, 8, 6), np.linspace(8, 14, 6)]
    for t in range(T):
        frames[t][(xx - 16) ** 2 + (yy - 16) ** 2 <= radii[t] ** 2] = (40, 150, 120)
    r = run_check("mixing", CheckInput([], frames, 24.0, "color_mixing"))
    assert r.status == "fail" and "nothing mixes" in r.reason, r


#: what a dissolving case declares: the crystal (the solute) and the tinted water.
SOLUBILITY_OBJECTS = [{"name": "crystal", "color": [30, 90, 200], "role": "subject"},
                      {"name": "solution", "color": [150, 190, 235], "role": "product"}]


def _dissolving_scene(T=16, H=32, W=32, tint_until=1.0):
    """A well-mixed glass: the whole glass tints from the first frames on (the tinted *area*
    never grows after that, only its depth), while the crystal at the bottom shrinks."""
    frames = np.empty((T, H, W, 3), np.uint8)
    frames[:] = (200, 180, 150)  # table / wall
    for t in range(T):
        tint = min(t / (T - 1), tint_until)
        frames[t, 4:30, 6:26] = np.round(np.multiply((225, 235, 245), 1 - tint) + np.multiply((70, 120, 215), tint))
        side = int(round(10 * (1 - 0.9 * t / (T - 1))))
        frames[t, 30 - side:30, 16 - side // 2:16 - side // 2 + side] = (30, 90, 200)
    return frames


def test_solubility_reads_a_deepening_tint_not_a_spreading_area():
    """smoke-material-dissolving scored 0 on every model, its own reference included: the glass
    tints at once, so the tinted area never 'spreads' the way a dye drop does."""
    clean = _dissolving_scene()
    r = run_check("mixing", CheckInput([], clean, 8.0, "solubility", objects=SOLUBILITY_OBJECTS))
    assert r.status == "pass" and r.measured["tint_gain"] > 20, r
    cleared = run_check("mixing", CheckInput([], clean[::-1].copy(), 8.0, "solubility", objects=SOLUBILITY_OBJECTS))
    assert cleared.status == "fail" and cleared.score == 0.0, cleared  # played backwards: the water clears
    still = run_check("mixing", CheckInput([], np.repeat(clean[:1], 16, 0), 8.0, "solubility", objects=SOLUBILITY_OBJECTS))
    assert still.status == "fail" and still.score == 0.0, still
    # the colour-mixing reading of the same video is unchanged: a tint is not a spreading dye
    assert run_check("mixing", CheckInput([], clean, 8.0, "color_mixing", objects=SOLUBILITY_OBJECTS)).status == "fail"


def test_moving_rigid_ball_is_not_mixing(ball):
    r = run_check("mixing", CheckInput([], ball.frames, 24.0, "color_mixing"))
    assert r.status == "fail" and "nothing mixes" in r.reason, r


def _fire_scene(T=24, H=32, W=32, flame=True, flickers=True):
    frames = np.full((T, H, W, 3), 30, np.uint8)
    masks = np.zeros((T, H, W), np.int32)
    rng = np.random.default_rng(0)
    for t in range(T):
        h = int(12 * (1 - 0.6 * t / (T - 1)))
        frames[t, H - 4 - h : H - 4, 10:22] = (110, 70, 30)  # log burning down
        masks[t, H - 4 - h : H - 4, 10:22] = 1
        if flame:
            tall, x0 = (int(rng.integers(3, 9)), int(rng.integers(10, 14))) if flickers else (6, 12)
            frames[t, H - 4 - h - tall : H - 4 - h, x0 : x0 + 8] = (255, 140, 20)
    return S.Scene(frames, masks, {"log": {"id": 1, "color": (110, 70, 30)}})


def test_combustion_needs_flame_and_shrinking_fuel():
    ref = _fire_scene()
    assert run_check("combustion", _inp(ref, ref, rule="combustibility")).status == "pass"
    no_flame = _fire_scene(flame=False)
    assert run_check("combustion", _inp(no_flame, ref, rule="combustibility")).status == "fail"
    # the rule applies, so a video without a flame fails it, reference or not
    assert run_check("combustion", _inp(no_flame, no_flame, rule="combustibility", use_ref=False)).status == "fail"
    # a flame that never flickers (a painted or frozen one) is not fire
    still_flame = _fire_scene(flickers=False)
    r = run_check("combustion", _inp(still_flame, still_flame, rule="combustibility", use_ref=False))
    assert r.status == "fail" and "flicker" in r.reason, r
    # a fire that un-burns (the log grows back) fails too
    back = S.Scene(ref.frames[::-1].copy(), ref.masks[::-1].copy(), ref.objects)
    assert run_check("combustion", _inp(back, ref, rule="combustibility", use_ref=False)).status == "fail"


def test_buoyancy_needs_a_body_that_moves_to_a_level_and_settles():
    """Densities are not in the video, so sinking and floating both pass; a body that never moves
    toward a level (a still video) fails, as one that never settles does."""
    ball = S.bouncing_ball(T=72, H=48, W=48, restitution=0.3)
    assert run_check("buoyancy", _inp(ball, ball, rule="buoyancy", use_ref=False)).status == "pass"
    still = S.perturb(ball, "frozen", 1.0)
    r = run_check("buoyancy", _inp(still, ball, rule="buoyancy", use_ref=False))
    assert r.status == "fail" and r.score < 0.5, r


@pytest.mark.parametrize(("scene_fn", "checks"), [
    (lambda: S.bouncing_ball(T=48, H=64, W=64), {"gravity": "gravity", "impact": "impact", "continuity": "gravity",
                                                 "permanence": "gravity", "rigidity": "gravity"}),
    (lambda: S.crossing_balls(occluder=True), {"continuity": "gravity", "permanence": "gravity"}),
    (S.melting_block, {"phase_change": "melting", "permanence": "melting"}),
    (_fire_scene, {"combustion": "combustibility", "permanence": "combustibility"}),
])
def test_a_lawful_scene_passes_the_checks_of_its_own_rules_without_a_reference(scene_fn, checks):
    scene = scene_fn()
    for name, rule in checks.items():
        r = run_check(name, _inp(scene, scene, rule=rule, use_ref=False))
        assert r.status == "pass", (name, r)


def test_a_rule_whose_phenomenon_never_happens_fails_rather_than_being_not_applicable():
    """A still video must not escape a rule the case says applies (issue 56: stillness rewarded)."""
    melt = S.melting_block()
    still = S.Scene(np.repeat(melt.frames[:1], len(melt.frames), 0), np.repeat(melt.masks[:1], len(melt.masks), 0),
                    melt.objects)
    for name, rule in {"gravity": "gravity", "impact": "impact", "phase_change": "melting",
                       "buoyancy": "buoyancy", "combustion": "combustibility", "mixing": "color_mixing"}.items():
        r = run_check(name, _inp(still, still, rule=rule, use_ref=False))
        assert r.status == "fail", (name, r)


def test_a_rigid_body_that_tumbles_keeps_its_shape():
    """A bar spinning as it falls keeps its shape; its bounding box's aspect ratio swings from 4 to
    1/4, which the bounding-box rigidity measure read as morphing (a toppling block, a tumbling
    shape). Stretching the same bar is still a violation."""
    import cv2

    from tracks.physics.segmentation import Segmentation

    T, H, W = 24, 64, 64

    def bar(stretch: float) -> list:
        frames = np.full((T, H, W, 3), 200, np.uint8)
        labels = np.zeros((T, H, W), np.int32)
        for t in range(T):
            w = 24 * (1 + stretch * t / (T - 1))
            pts = cv2.boxPoints(((32.0, 16.0 + t), (w, 24 * 6 / w * 1.0 if stretch else 6.0), 15.0 * t)).astype(np.int32)
            m = np.zeros((H, W), np.uint8)
            cv2.fillPoly(m, [pts], 1)
            labels[t][m > 0] = 1
            frames[t][m > 0] = (200, 40, 40)
        seg = Segmentation(labels, [{1: "bar"}] * T, "test")
        return CheckInput(track_objects(frames, seg), frames, 24.0, "gravity", objects=[{"name": "bar", "rigid": True}])

    spun = run_check("rigidity", bar(0.0))
    assert spun.status == "pass", spun
    stretched = run_check("rigidity", bar(1.0))
    assert stretched.status == "fail", stretched


def _track(tid, name, centroids, area=100.0):
    """An ObjectTrack seen where ``centroids`` (``[T, 2]``, nan rows unseen) is finite."""
    from tracks.physics.tracking import ObjectTrack

    cen = np.asarray(centroids, float)
    seen = ~np.isnan(cen[:, 0])
    T = len(cen)
    return ObjectTrack(id=tid, name=name, centroid=cen, area=np.where(seen, area, np.nan),
                       bbox=np.where(seen[:, None], np.c_[cen - 3, cen + 3], np.nan),
                       color=np.full((T, 3), 120.0), state=["visible" if v else "missing" for v in seen],
                       touching=np.zeros(T, bool), frame_size=(64, 64))


def test_a_consumed_body_is_judged_on_its_main_track_not_on_the_pieces_it_sheds():
    """standard-material-combustion-0: the tracker linked two charred fragments of the burning
    log across the frame (a 0.16 frame-height jump) and the reference scored 0.021."""
    T = 24
    log = np.tile([32.0, 40.0], (T, 1))
    piece = np.full((T, 2), np.nan)
    piece[10:15], piece[15:20] = [20.0, 44.0], [50.0, 44.0]  # one "track" over two fragments
    objects = [{"name": "wood", "color": [120, 80, 40], "role": "subject", "shrinks": True}]
    frames = np.zeros((T, 64, 64, 3), np.uint8)
    ok = run_check("continuity", CheckInput([_track(1, "wood", log), _track(2, "wood", piece, 30.0)], frames, 12.0,
                                            "combustibility", objects=objects))
    assert ok.status == "pass", ok
    jumped = log.copy()
    jumped[12:] += [0.0, 12.0]  # the log itself teleports
    bad = run_check("continuity", CheckInput([_track(1, "wood", jumped), _track(2, "wood", piece, 30.0)], frames, 12.0,
                                             "combustibility", objects=objects))
    assert bad.status == "fail", bad
    # a rigid object keeps every track: two presses are two paths, each judged
    rigid = [{"name": "wood", "color": [120, 80, 40], "role": "subject", "rigid": True}]
    both = run_check("continuity", CheckInput([_track(1, "wood", log), _track(2, "wood", piece, 30.0)], frames, 12.0,
                                              "combustibility", objects=rigid))
    assert both.status == "fail", both


def test_hardness_fails_when_the_soft_object_is_never_seen():
    """smoke-material-hardness, seed 2: a random-weight video in which the clay never appears
    passed hardness with 1.0 (its steel kept still, nothing else was followed); the reference's
    clay is seen, so the rule is judged on it."""
    T = 16
    steel = np.tile([20.0, 40.0], (T, 1))
    press = np.c_[np.full(T, 20.0), np.linspace(10.0, 30.0, T)]  # the load: the press comes down
    objects = [{"name": "steel_block", "color": [150, 155, 165], "rigid": True},
               {"name": "clay_block", "color": [190, 110, 70], "rigid": False},
               {"name": "press", "color": [60, 60, 70], "rigid": True}]
    frames = np.zeros((T, 64, 64, 3), np.uint8)
    tracks = [_track(1, "steel_block", steel), _track(2, "press", press, 60.0)]
    r = run_check("rigidity", CheckInput(tracks, frames, 12.0, "hardness", objects=objects))
    assert r.status == "fail" and "clay_block" in r.reason and r.score == 0.0, r
    clay = np.tile([44.0, 40.0], (T, 1))
    seen = run_check("rigidity", CheckInput([*tracks, _track(3, "clay_block", clay)], frames, 12.0, "hardness",
                                            objects=objects))
    assert "never seen" not in seen.reason
