"""Contacts are found against the motion around them, so a parabola at a low frame rate is one flight.

Before this (physics v6), a contact was a velocity change above 3x the *median* change while moving.
Where most of a clip is a steady roll (a thrown ball that lands and rolls on), that median is the
roll's ~0, and at 15 fps every step of the flight changes velocity by a large share of gravity: the
clean throw counted four "collisions", one of them the fall after the apex, whose growing speed read
as "a collision added energy" (impact 0.78 on an exact MuJoCo render, `bench/suites/physics_tune`
`pt-projectile-15fps-far`). A ball that met the floor between two frames was the mirror case: the
landing step was too small against a median made of fall steps, so the flight kept a post-contact
sample and gravity read "path is not parabolic" (`pt-free-fall-12fps-big`).
"""

from __future__ import annotations

import numpy as np

from tracks.physics import synthetic as S
from tracks.physics.checks import CheckInput, run_check
from tracks.physics.checks._kinematics import collisions, contacts
from tracks.physics.tracking import track_objects


def _throw(fps: float, T: int = 32, H: int = 96, W: int = 200, vx: float = 5.0) -> S.Scene:
    """A red ball thrown up from the left at ``fps``: an arc, a dead landing, then a steady roll of
    ``vx`` px per frame. Gravity 290 px/s² (about a metre per third of the frame), launch 150 px/s up."""
    floor_h, r = 10, 4.0
    floor_y = H - floor_h - r
    ys = S.simulate_bounce(T, floor_y - 12, floor_y, 290.0 / fps**2, 0.0, vy0=-150.0 / fps)
    xs = 12 + vx * np.arange(T)
    frames = S._canvas(T, H, W, floor_h)
    masks = np.zeros((T, H, W), np.int32)
    for t in range(T):
        m = S._disc(H, W, xs[t], ys[t], r)
        frames[t][m] = S.RED
        masks[t][m] = 1
    return S.Scene(frames, masks, {"ball": {"id": 1, "color": S.RED}}, fps=fps, states={"x": xs, "y": ys})


def _inp(scene: S.Scene, rule: str) -> CheckInput:
    tracks = track_objects(scene.frames, scene.segmentation())
    return CheckInput(tracks, scene.frames, scene.fps, rule, tracks, scene.frames, scene.fps,
                      objects=[{"name": "ball", "color": list(S.RED)}])


def test_a_throw_at_15_fps_has_one_contact_and_passes_impact():
    scene = _throw(15.0)
    x, y = scene.states["x"], scene.states["y"]
    cen = np.stack([x, y], 1) / scene.frames.shape[1]
    landing = int(np.flatnonzero(np.diff(y) == 0)[0])  # the first step resting on the floor
    assert collisions(cen, scene.fps) in ([landing], [landing - 1])  # the contact fell inside a step
    res = run_check("impact", _inp(scene, "impact"))
    assert res.status == "pass" and res.measured["collisions"] == 1, res


def test_a_landing_between_two_frames_ends_the_flight():
    """12 fps drop whose contact falls between samples: the half-step sample is a contact."""
    y = np.array([0.193, 0.206, 0.245, 0.31, 0.4, 0.516, 0.646, 0.711, 0.715, 0.718] + [0.718] * 14)
    assert 6 in contacts(y, 12.0) or 5 in contacts(y, 12.0)
    # the flight before it is an exact parabola: every earlier step is free flight
    assert not [t for t in contacts(y, 12.0) if t < 5]


def test_a_landing_that_costs_the_ball_its_frame_is_still_a_collision():
    """A lossy video's small ball merges with the floor for the one frame of its landing; the
    velocity change that frame held is bridged (crf 35 x0.75 `pt-projectile-15fps-far`: impact
    read "no collision" on a clean throw)."""
    scene = _throw(15.0)
    x, y = scene.states["x"], scene.states["y"].copy()
    landing = int(np.flatnonzero(np.diff(y) == 0)[0])
    y[landing] = np.nan
    cen = np.stack([x, y], 1) / scene.frames.shape[1]
    cen[landing, 0] = np.nan
    found = collisions(cen, scene.fps)
    assert found and abs(found[0] - landing) <= 2, found
