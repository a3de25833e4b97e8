"""Mechanics case generators (MuJoCo, RK4): free fall, projectile, bounce, collision,
sliding with friction, buoyancy (float/sink) and stacking/toppling.

Every generator:

* builds a :class:`~scenarios.mechanics.sim.SceneSpec` from ``seed`` and ``params``
  (explicit params win over seeded draws; common params: ``resolution``, ``num_frames``,
  ``fps``, ``num_chunks``, ``camera_distance``),
* simulates it once in :meth:`make_case` (cheap, no rendering) to write captions from the
  simulated state ("the red ball falls and bounces twice") and inline ground truth,
* renders in :meth:`render` by replaying the cached simulation: RGB, object masks, depth,
  exact ``K`` and camera-to-world pose (OpenCV), per-frame states, contact events and,
  where one exists, the closed-form trajectory beside the simulated one.

Buoyancy model (documented law, applied as an external force because MuJoCo's fluid
model fills the whole world): a sphere of radius ``r`` whose centre is at height ``z``
under a water surface at ``w`` has submerged cap height ``h = clip(w - (z - r), 0, 2r)``
and volume ``V = pi h^2 (3r - h) / 3``; it feels Archimedes' force ``rho_w g V`` up and a
quadratic drag ``-1/2 rho_w C_d A v|v| (h / 2r)`` with ``C_d = 0.47`` (sphere), applied at
the centre of mass before each RK4 step.
"""

from __future__ import annotations

import json
import logging
import math
from collections import OrderedDict
from typing import Any, ClassVar

import numpy as np

from scenarios._mujoco import intrinsics_from_fovy, project_points
from scenarios._params import choice_param, video_params
from scenarios.mechanics.sim import (
    COLORS,
    GRAVITY,
    IMPACT_STIFFNESS,
    IMPACT_TIMESTEP,
    BodySpec,
    SceneSpec,
    SimOutput,
    calibrate_restitution,
    camera_pose,
    render_states,
    simulate,
)
from scenarios.procedural.common import story
from worldolympiad.scenario import CaseGenerator, Rendered
from worldolympiad.types import CameraSpec, Case, PhysicsSpec, Video, even_chunks

logger = logging.getLogger(__name__)

_SIM_CACHE: OrderedDict[str, tuple[SceneSpec, SimOutput]] = OrderedDict()
_SIM_CACHE_SIZE = 16
_BALL_COLORS = ("red", "green", "blue", "yellow", "orange", "purple", "cyan")
WATER_DENSITY = 1000.0
SPHERE_DRAG = 0.47


def common_params(params: dict[str, Any]) -> tuple[tuple[int, int], int, float, int]:
    """``(resolution (H, W), num_frames, fps, num_chunks)``; MuJoCo draws down to 8 px, 24 fps default."""
    return video_params(params, min_side=8, default_fps=24.0)


def _count(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


#: downward speed (m/s) that counts as a fall for :meth:`MechanicsGenerator.case_rules`; a box
#: sliding on the floor stays under 0.2, a dropped body passes 2.
FALL_SPEED = 0.5


class MechanicsGenerator(CaseGenerator):
    """Shared machinery; subclasses implement :meth:`scene`, :meth:`caption` and optionally
    :meth:`closed_form`, :meth:`force_fn` and :meth:`extra_states`."""

    version: ClassVar[str] = "1"
    rules: ClassVar[tuple[str, ...]] = ("gravity",)
    tracks: ClassVar[tuple[str, ...]] = ("physics", "longvideo")
    summary: ClassVar[str] = ""

    # ----------------------------------------------------------- subclass hooks
    def scene(self, rng: np.random.Generator, params: dict[str, Any], fps: float) -> SceneSpec:
        raise NotImplementedError

    def caption(self, spec: SceneSpec, sim: SimOutput, start: int, end: int) -> str:
        raise NotImplementedError

    def closed_form(self, spec: SceneSpec, sim: SimOutput) -> dict[str, Any]:
        return {}

    def force_fn(self, spec: SceneSpec) -> Any:
        return None

    def extra_states(self, spec: SceneSpec, sim: SimOutput) -> dict[str, Any]:
        return {}

    def case_rules(self, spec: SceneSpec, sim: SimOutput) -> tuple[str, ...]:
        """The generator's rules that this clip shows: ``gravity`` only where a body falls
        (faster than :data:`FALL_SPEED`), ``impact`` only where the simulator records a contact
        within the clip. A stable stack shows no fall and a box sliding on the floor neither;
        a rule the reference does not show cannot be checked on a model's video either."""
        shown = {"gravity": bool(len(sim.velocities)) and float(sim.velocities[..., 2].min()) < -FALL_SPEED,
                 "impact": bool(sim.events)}
        return tuple(r for r in self.rules if shown.get(r, True))

    # ---------------------------------------------------------------- contract
    def _simulate(self, seed: int, params: dict[str, Any]) -> tuple[SceneSpec, SimOutput]:
        key = json.dumps([self.name, self.version, seed, params], sort_keys=True, default=str)
        if key in _SIM_CACHE:
            _SIM_CACHE.move_to_end(key)
            return _SIM_CACHE[key]
        _, T, fps, _ = common_params(params)
        rng = np.random.default_rng(seed)
        spec = self.scene(rng, dict(params), fps)
        if "camera_distance" in params:  # every scene's camera looks along +y; move it back or closer
            d = float(params["camera_distance"])
            if d <= 0.5:
                raise ValueError(f"camera_distance must be > 0.5 m, got {d}")
            spec.cam_eye = (spec.cam_eye[0], -d, spec.cam_eye[2])
        # what users' footage has behind and under its objects (tuning cases; defaults render as before)
        spec.floor = str(params.get("floor", spec.floor))
        spec.backdrop = str(params.get("backdrop", spec.backdrop))
        for body in spec.bodies:
            body.texture = str(params.get("texture", body.texture))
        sim = simulate(spec, fps, T, force_fn=self.force_fn(spec))
        _SIM_CACHE[key] = (spec, sim)
        if len(_SIM_CACHE) > _SIM_CACHE_SIZE:
            _SIM_CACHE.popitem(last=False)
        return spec, sim

    def make_case(self, case_id: str, *, seed: int = 0, **params: Any) -> Case:
        res, T, fps, nc = common_params(params)
        spec, sim = self._simulate(seed, params)
        bounds = even_chunks(T, nc)
        captions = [self.caption(spec, sim, c.frame_start, c.frame_end) for c in bounds]
        chunks = even_chunks(T, nc, captions=captions, actions=[None] * nc)
        K = intrinsics_from_fovy(spec.fovy, *res)
        c2w = camera_pose(spec)
        objects = []
        for i, b in enumerate(spec.bodies):
            corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float)
            half = np.array(b.size if b.shape == "box" else b.size * 3, float)
            uv = project_points(K, c2w, sim.positions[0, i] + corners * half)
            box = [float(uv[:, 0].min()), float(uv[:, 1].min()), float(uv[:, 0].max()), float(uv[:, 1].max())]
            objects.append({"name": b.name, "color": b.rgb255, "box": [round(x, 2) for x in box], "shape": b.shape,
                            "size_m": [round(2 * float(v), 6) for v in b.size]})
        gt = {
            "objects": {
                b.name: {
                    "position": np.round(sim.positions[:, i], 7).tolist(),
                    "velocity": np.round(sim.velocities[:, i], 7).tolist(),
                }
                for i, b in enumerate(spec.bodies)
            },
            "events": [{k: (round(v, 7) if isinstance(v, float) else v) for k, v in e.items()} for e in sim.events],
        }
        words = {f"c{i}": b.color for i, b in enumerate(spec.bodies)} | {f"n{i}": _noun(b) for i, b in enumerate(spec.bodies)}
        prompt = self.summary.format(**words) + " " + story(captions)
        return Case(
            id=case_id,
            scenario="realworld",
            fps=fps,
            num_frames=T,
            resolution=res,
            prompt=prompt.strip(),
            chunks=chunks,
            camera=CameraSpec.from_arrays(K, np.repeat(c2w[None], T, axis=0)),
            physics=PhysicsSpec(rules=self.case_rules(spec, sim), objects=tuple(objects), ground_truth=gt),
            tracks=self.tracks,
            metadata={"generator": self.name, "generator_version": self.version, "seed": seed, "params": dict(params)},
        )

    def render(self, case: Case) -> Rendered:
        seed = int(case.metadata.get("seed", 0))
        params = dict(case.metadata.get("params") or {})
        res, _, fps, _ = common_params(params)
        spec, sim = self._simulate(seed, params)
        sim = render_states(spec, sim, fps, res)
        states: dict[str, Any] = {
            "times": sim.times,
            "objects": {
                b.name: {"position": sim.positions[:, i], "velocity": sim.velocities[:, i], "quat": sim.quats[:, i],
                         "shape": b.shape, "size": list(b.size), "mass": b.mass}
                for i, b in enumerate(spec.bodies)
            },
            "events": sim.events,
            "closed_form": self.closed_form(spec, sim),
            **self.extra_states(spec, sim),
        }
        assert sim.frames is not None and sim.K is not None and sim.poses is not None
        return Rendered(
            video=Video(sim.frames, fps, chunks=case.chunks, metadata={"generator": self.name}),
            masks=sim.masks,
            object_ids={b.name: i + 1 for i, b in enumerate(spec.bodies)},
            depth=sim.depth,
            camera=CameraSpec.from_arrays(sim.K, sim.poses),
            states=states,
        )


def _param(params: dict[str, Any], key: str, draw: float) -> float:
    """Explicit param if given, else the seeded draw (always consumed so draws stay aligned)."""
    return float(params[key]) if key in params else float(draw)


def _color(params: dict[str, Any], rng: np.random.Generator, key: str = "color", exclude: tuple[str, ...] = ()) -> str:
    choices = [c for c in _BALL_COLORS if c not in exclude]
    drawn = choices[int(rng.integers(len(choices)))]
    return choice_param(params, key, drawn, sorted(COLORS))


#: body shapes a thrown or dropped object may have (``shape`` param): MuJoCo geom, half-extents per radius.
SHAPES: dict[str, tuple[str, tuple[float, ...]]] = {
    "sphere": ("sphere", (1.0,)),
    "box": ("box", (1.0, 1.0, 1.0)),
    "plate": ("box", (1.6, 1.6, 0.45)),  # a flat slab: wide and low as the camera sees it
}
_NOUNS = {"sphere": "ball", "box": "box", "plate": "plate"}


def _body(params: dict[str, Any], color: str, r: float, pos: tuple[float, float, float],
          vel: tuple[float, float, float] = (0.0, 0.0, 0.0), **kw: Any) -> BodySpec:
    """The thrown/dropped body: a ``shape`` (default sphere) of size ``r``, resting height ``pos[2]``
    above its half-height (a box or plate starts as low as a ball of radius ``r`` would)."""
    shape = choice_param(params, "shape", "sphere", sorted(SHAPES))
    geom, scale = SHAPES[shape]
    size = tuple(r * k for k in scale)
    return BodySpec(f"{color}_{_NOUNS[shape]}", geom, size, color, pos, vel, **kw)


def _noun(b: BodySpec) -> str:
    """What a caption calls the body: its name after the colour (``ball``, ``box``, ``plate``)."""
    return b.name.split("_", 1)[1] if "_" in b.name else b.shape


def _half_height(b: BodySpec) -> float:
    return float(b.size[0] if b.shape == "sphere" else b.size[2])


def _ballistic(p0: np.ndarray, v0: np.ndarray, t: np.ndarray, g: float = GRAVITY) -> np.ndarray:
    """Closed-form position under constant gravity ``[T, 3]``."""
    acc = np.array([0.0, 0.0, -g])
    return p0[None] + v0[None] * t[:, None] + 0.5 * acc[None] * t[:, None] ** 2


def _first_floor_contact_time(p0: np.ndarray, v0: np.ndarray, radius: float, g: float = GRAVITY) -> float:
    """When a ballistic sphere first touches z = 0 (its centre reaches ``radius``)."""
    # z0 + vz t - g t^2 / 2 = r  → positive root
    a, b, c = -0.5 * g, v0[2], p0[2] - radius
    return float((-b - math.sqrt(b * b - 4 * a * c)) / (2 * a))


def _impacts_in(sim: SimOutput, start: int, end: int, pair_has: str | None = None) -> list[dict[str, Any]]:
    t0 = sim.times[start]
    t1 = sim.times[end - 1] + (sim.times[1] - sim.times[0] if len(sim.times) > 1 else 0.0)
    return [e for e in sim.events if t0 <= e["t_start"] < t1 and (pair_has is None or pair_has in e["pair"])]


# ----------------------------------------------------------------- free fall


class FreeFall(MechanicsGenerator):
    """A ball dropped from rest falls under gravity and lands on the floor."""

    name: ClassVar[str] = "mechanics.free_fall"
    rules: ClassVar[tuple[str, ...]] = ("gravity", "impact")
    summary: ClassVar[str] = "A {c0} {n0} is released from rest above a tiled floor."

    def scene(self, rng: np.random.Generator, params: dict[str, Any], fps: float) -> SceneSpec:
        color = _color(params, rng)
        h = _param(params, "height", rng.uniform(0.9, 1.5))
        x = _param(params, "x", rng.uniform(-0.5, 0.5))
        r = _param(params, "radius", 0.15)
        b = _body(params, color, r, (x, 0.0, 0.0))
        b.pos = (x, 0.0, h + _half_height(b))
        return SceneSpec(bodies=[b],
                         cam_eye=(0.0, -3.2, 0.85), cam_target=(0.0, 0.0, 0.85))

    def closed_form(self, spec: SceneSpec, sim: SimOutput) -> dict[str, Any]:
        b = spec.bodies[0]
        p0, v0 = np.array(b.pos), np.array(b.vel)
        tc = _first_floor_contact_time(p0, v0, _half_height(b), spec.gravity)
        valid = sim.times < tc
        return {b.name: {"position": _ballistic(p0, v0, sim.times, spec.gravity)[valid], "valid_frames": int(valid.sum()),
                         "contact_time": tc, "law": "z(t) = z0 - g t^2 / 2 until the ball touches the floor"}}

    def caption(self, spec: SceneSpec, sim: SimOutput, start: int, end: int) -> str:
        name = spec.bodies[0].color + " " + _noun(spec.bodies[0])
        hits = _impacts_in(sim, start, end)
        vz = sim.velocities[start:end, 0, 2]
        if hits:
            first = "falls and hits the floor" if sim.events and hits[0] is sim.events[0] else "hits the floor"
            extra = f", bouncing {_count(len(hits) - 1)}" if len(hits) > 1 else ""
            return f"the {name} {first}{extra}"
        if np.all(np.abs(vz) < 0.05):
            return f"the {name} rests on the floor"
        return f"the {name} falls faster and faster" if vz.mean() < 0 else f"the {name} rises after bouncing"


# ----------------------------------------------------------------- projectile


class Projectile(MechanicsGenerator):
    """A ball thrown at an angle follows a parabola and lands."""

    name: ClassVar[str] = "mechanics.projectile"
    rules: ClassVar[tuple[str, ...]] = ("gravity", "impact")
    summary: ClassVar[str] = "A {c0} {n0} is thrown from the left across a tiled floor."

    def scene(self, rng: np.random.Generator, params: dict[str, Any], fps: float) -> SceneSpec:
        color = _color(params, rng)
        speed = _param(params, "speed", rng.uniform(3.0, 3.8))
        angle = math.radians(_param(params, "angle_deg", rng.uniform(45.0, 65.0)))
        r = _param(params, "radius", 0.15)
        return SceneSpec(
            bodies=[_body(params, color, r, (-1.1, 0.0, 0.35), (speed * math.cos(angle), 0.0, speed * math.sin(angle)))],
            cam_eye=(0.0, -3.6, 0.9), cam_target=(0.0, 0.0, 0.9),
        )

    closed_form = FreeFall.closed_form

    def caption(self, spec: SceneSpec, sim: SimOutput, start: int, end: int) -> str:
        name = spec.bodies[0].color + " " + _noun(spec.bodies[0])
        hits = _impacts_in(sim, start, end)
        vz = sim.velocities[start:end, 0, 2]
        if hits:
            bounce = f", bouncing {_count(len(hits) - 1)}" if len(hits) > 1 else ""
            if start == 0 or (vz[0] > 0 and hits[0] is sim.events[0]):
                return f"the {name} flies up in an arc and comes down onto the floor{bounce}"
            return f"the {name} hits the floor again{bounce}" if hits[0] is not sim.events[0] else f"the {name} comes down and hits the floor{bounce}"
        if vz[0] > 0 and vz[-1] < 0:
            return f"the {name} rises, reaches the top of its arc and starts to fall"
        if vz.mean() > 0:
            return f"the {name} flies up and to the right, slowing as it rises"
        if np.all(np.abs(sim.velocities[start:end, 0]) < 0.05):
            return f"the {name} rests on the floor"
        return f"the {name} falls along a curved path"


# ----------------------------------------------------------------- bounce


class Bounce(MechanicsGenerator):
    """A ball dropped on the floor bounces with a set coefficient of restitution."""

    name: ClassVar[str] = "mechanics.bounce"
    rules: ClassVar[tuple[str, ...]] = ("gravity", "impact")
    summary: ClassVar[str] = "A {c0} rubber {n0} is dropped onto a hard floor."

    def scene(self, rng: np.random.Generator, params: dict[str, Any], fps: float) -> SceneSpec:
        color = _color(params, rng)
        e = _param(params, "restitution", round(float(rng.uniform(0.6, 0.9)), 2))  # 2 % accurate in [0.6, 0.95]
        h = _param(params, "height", rng.uniform(0.9, 1.3))
        x = _param(params, "x", rng.uniform(-0.4, 0.4))
        r = _param(params, "radius", 0.15)
        zeta = calibrate_restitution(round(e, 4), round(h, 6), fps, r)
        b = _body(params, color, r, (x, 0.0, 0.0))
        b.pos = (x, 0.0, h + _half_height(b))
        return SceneSpec(bodies=[b], zeta=zeta,
                         cam_eye=(0.0, -3.2, 0.8), cam_target=(0.0, 0.0, 0.8), meta={"restitution": e},
                         stiffness=IMPACT_STIFFNESS, max_timestep=IMPACT_TIMESTEP)

    def extra_states(self, spec: SceneSpec, sim: SimOutput) -> dict[str, Any]:
        return {"restitution_setting": spec.meta["restitution"], "contact_damping_ratio": spec.zeta,
                "restitution_measured": [{"impact_speed": -e["v_in"], "restitution": e["restitution"]} for e in sim.events]}

    closed_form = FreeFall.closed_form

    def caption(self, spec: SceneSpec, sim: SimOutput, start: int, end: int) -> str:
        name = spec.bodies[0].color + " " + _noun(spec.bodies[0])
        hits = _impacts_in(sim, start, end)
        if not hits:
            vz = sim.velocities[start:end, 0, 2]
            if np.all(np.abs(vz) < 0.05):
                return f"the {name} rests on the floor"
            return f"the {name} falls toward the floor" if start == 0 else f"the {name} flies up and falls back"
        first = sim.events and hits[0] is sim.events[0]
        if first:
            return f"the {name} falls and bounces {_count(len(hits))}"
        return f"the {name} keeps bouncing, {_count(len(hits))} more, each bounce lower"


# ----------------------------------------------------------------- collision


class Collision(MechanicsGenerator):
    """A moving ball hits a resting ball on a frictionless floor (1-D impact)."""

    name: ClassVar[str] = "mechanics.collision"
    rules: ClassVar[tuple[str, ...]] = ("impact",)
    summary: ClassVar[str] = "A {c0} ball slides toward a {c1} ball resting on a smooth floor."

    def scene(self, rng: np.random.Generator, params: dict[str, Any], fps: float) -> SceneSpec:
        ca = _color(params, rng, "color_a")
        cb = _color(params, rng, "color_b", exclude=(ca,))
        v0 = _param(params, "speed", rng.uniform(1.5, 2.5))
        ratio = _param(params, "mass_ratio", rng.choice([0.5, 1.0, 2.0]))  # m_b / m_a
        e = _param(params, "restitution", round(float(rng.uniform(0.6, 0.9)), 2))
        r = 0.15
        zeta = calibrate_restitution(round(e, 4), 0.3, fps, r)
        return SceneSpec(
            bodies=[
                BodySpec(f"{ca}_ball", "sphere", (r,), ca, (-1.2, 0.0, r), (v0, 0.0, 0.0), density=1000.0),
                BodySpec(f"{cb}_ball", "sphere", (r,), cb, (0.0, 0.0, r), (0.0, 0.0, 0.0), density=1000.0 * ratio),
            ],
            zeta=zeta, cam_eye=(0.0, -3.2, 0.7), cam_target=(0.0, 0.0, 0.3), meta={"restitution": e},
            stiffness=IMPACT_STIFFNESS, max_timestep=IMPACT_TIMESTEP,
        )

    def closed_form(self, spec: SceneSpec, sim: SimOutput) -> dict[str, Any]:
        a, b = spec.bodies
        hits = [e for e in sim.events if set(e["pair"]) == {a.name, b.name}]
        e = -hits[0]["v_out"] / hits[0]["v_in"] if hits else float("nan")
        ma, mb, va = a.mass, b.mass, a.vel[0]
        return {
            "law": "momentum conservation with restitution e: va' = (ma - e mb) va / (ma + mb), vb' = (1 + e) ma va / (ma + mb)",
            "restitution": e,
            a.name: {"velocity_after": (ma - e * mb) * va / (ma + mb)},
            b.name: {"velocity_after": (1 + e) * ma * va / (ma + mb)},
        }

    def caption(self, spec: SceneSpec, sim: SimOutput, start: int, end: int) -> str:
        a, b = spec.bodies
        hits = [e for e in _impacts_in(sim, start, end) if "floor" not in e["pair"]]
        vb = sim.velocities[end - 1, 1, 0]
        va = sim.velocities[end - 1, 0, 0]
        if hits:
            after = "stops" if abs(va) < 0.1 else ("bounces back" if va < 0 else "keeps moving more slowly")
            return f"the {a.color} ball hits the {b.color} ball, which moves off to the right while the {a.color} ball {after}"
        if abs(vb) > 0.05:
            return f"the {b.color} ball slides away to the right"
        return f"the {a.color} ball slides to the right toward the {b.color} ball"


# ----------------------------------------------------------------- sliding


class Sliding(MechanicsGenerator):
    """A box pushed along the floor decelerates under kinetic friction and stops."""

    name: ClassVar[str] = "mechanics.sliding"
    rules: ClassVar[tuple[str, ...]] = ("gravity",)
    summary: ClassVar[str] = "A {c0} box is pushed along a tiled floor and let go."

    def scene(self, rng: np.random.Generator, params: dict[str, Any], fps: float) -> SceneSpec:
        color = _color(params, rng)
        mu = _param(params, "friction", rng.uniform(0.25, 0.6))
        v0 = _param(params, "speed", rng.uniform(2.0, 3.0))
        h = 0.14
        return SceneSpec(
            bodies=[BodySpec(f"{color}_box", "box", (h, h, h), color, (-1.2, 0.0, h), (v0, 0.0, 0.0), friction=mu)],
            floor_friction=mu, cam_eye=(0.0, -3.3, 0.8), cam_target=(0.0, 0.0, 0.3), track_contacts=False,
        )

    def closed_form(self, spec: SceneSpec, sim: SimOutput) -> dict[str, Any]:
        b = spec.bodies[0]
        mu = b.friction
        v0 = b.vel[0]
        a = mu * spec.gravity
        ts = v0 / a
        t = np.minimum(sim.times, ts)
        x = b.pos[0] + v0 * t - 0.5 * a * t**2
        return {b.name: {"x": x, "stop_time": ts, "stop_distance": v0**2 / (2 * a),
                         "law": "x(t) = x0 + v0 t - mu g t^2 / 2 until v = 0 (Coulomb friction)"}}

    def caption(self, spec: SceneSpec, sim: SimOutput, start: int, end: int) -> str:
        name = spec.bodies[0].color + " box"
        v = np.abs(sim.velocities[start:end, 0, 0])
        if v[0] < 0.02:
            return f"the {name} rests on the floor"
        if v[-1] < 0.02:
            return f"the {name} slides, slows down and comes to a stop"
        return f"the {name} slides to the right, slowing down because of friction"


# ----------------------------------------------------------------- buoyancy


def submerged_volume(z: float, r: float, surface: float) -> float:
    """Volume of a sphere (centre height ``z``, radius ``r``) below a horizontal water surface."""
    h = min(max(surface - (z - r), 0.0), 2 * r)
    return math.pi * h * h * (3 * r - h) / 3.0


class Buoyancy(MechanicsGenerator):
    """A light ball floats and a dense ball sinks in a water tank (Archimedes' law)."""

    name: ClassVar[str] = "mechanics.buoyancy"
    rules: ClassVar[tuple[str, ...]] = ("buoyancy", "gravity")
    summary: ClassVar[str] = "A light wooden ball and a heavy stone ball are dropped into a tank of water."
    water_level: ClassVar[float] = 0.7

    def scene(self, rng: np.random.Generator, params: dict[str, Any], fps: float) -> SceneSpec:
        rho_light = _param(params, "light_density", rng.uniform(350.0, 700.0))
        rho_heavy = _param(params, "heavy_density", rng.uniform(1800.0, 2800.0))
        r = 0.13
        xl = _param(params, "light_x", rng.uniform(-0.8, -0.3))
        xh = _param(params, "heavy_x", rng.uniform(0.3, 0.8))
        w = self.water_level
        water = (f'<geom name="water" type="box" pos="0 0 {w / 2!r}" size="1.6 0.7 {w / 2!r}" rgba="0.2 0.45 0.9 0.3" '
                 'contype="0" conaffinity="0" group="2"/>')
        return SceneSpec(
            bodies=[
                BodySpec("wooden_ball", "sphere", (r,), "brown", (xl, 0.0, 1.15), density=rho_light),
                BodySpec("stone_ball", "sphere", (r,), "grey", (xh, 0.0, 1.15), density=rho_heavy),
            ],
            zeta=1.0, extra_xml=water, hide_groups_in_masks=(2,), cam_eye=(0.0, -3.4, 0.75), cam_target=(0.0, 0.0, 0.55),
        )

    def force_fn(self, spec: SceneSpec) -> Any:
        radii = [b.size[0] for b in spec.bodies]
        w = self.water_level

        def apply(model: Any, data: Any, body_ids: list[int]) -> None:
            for bid, r in zip(body_ids, radii, strict=True):
                z = float(data.xpos[bid][2])
                vol = submerged_volume(z, r, w)
                frac = vol / (4.0 / 3.0 * math.pi * r**3)
                jnt = model.body_jntadr[bid]
                v = data.qvel[model.jnt_dofadr[jnt] : model.jnt_dofadr[jnt] + 3]
                drag = -0.5 * WATER_DENSITY * SPHERE_DRAG * math.pi * r * r * frac * np.linalg.norm(v) * v
                data.xfrc_applied[bid, :3] = drag + np.array([0.0, 0.0, WATER_DENSITY * spec.gravity * vol])
                data.xfrc_applied[bid, 3:] = 0.0

        return apply

    def extra_states(self, spec: SceneSpec, sim: SimOutput) -> dict[str, Any]:
        out: dict[str, Any] = {"water_level": self.water_level, "water_density": WATER_DENSITY}
        for i, b in enumerate(spec.bodies):
            r = b.size[0]
            frac = [submerged_volume(z, r, self.water_level) / b.volume for z in sim.positions[:, i, 2]]
            out.setdefault("submerged_fraction", {})[b.name] = frac
        return out

    def closed_form(self, spec: SceneSpec, sim: SimOutput) -> dict[str, Any]:
        out: dict[str, Any] = {"law": "Archimedes: a body floats where rho_w V_submerged = m, sinks if rho > rho_w"}
        for b in spec.bodies:
            ratio = b.density / WATER_DENSITY
            out[b.name] = {"floats": ratio < 1.0, "equilibrium_submerged_fraction": min(ratio, 1.0)}
        return out

    def caption(self, spec: SceneSpec, sim: SimOutput, start: int, end: int) -> str:
        parts = []
        w = self.water_level
        for i, b in enumerate(spec.bodies):
            z0, z1 = sim.positions[start, i, 2], sim.positions[end - 1, i, 2]
            r = b.size[0]
            label = "wooden ball" if "wood" in b.name else "stone ball"
            if z0 - r > w and z1 - r <= w:
                parts.append(f"the {label} splashes into the water")
            elif b.density < WATER_DENSITY and z1 - r <= w:
                parts.append(f"the {label} bobs and floats at the surface")
            elif b.density >= WATER_DENSITY and z1 - r < 0.02:
                parts.append(f"the {label} sinks to the bottom")
            elif b.density >= WATER_DENSITY and z1 < w:
                parts.append(f"the {label} sinks through the water")
            else:
                parts.append(f"the {label} falls toward the water")
        return " and ".join(parts)


# ----------------------------------------------------------------- stacking


class Stacking(MechanicsGenerator):
    """Three stacked blocks either stand (small offsets) or topple (centre of mass past the edge)."""

    name: ClassVar[str] = "mechanics.stacking"
    rules: ClassVar[tuple[str, ...]] = ("gravity",)
    summary: ClassVar[str] = "Three blocks ({c0}, {c1}, {c2} from the bottom) are stacked with offsets."

    def scene(self, rng: np.random.Generator, params: dict[str, Any], fps: float) -> SceneSpec:
        topple = bool(params.get("topple", bool(rng.integers(2))))
        hw = 0.15
        # The top two blocks' combined centre of mass sits 1.5 * shift past the bottom block's
        # centre; they topple when that exceeds the half-width.
        drawn = rng.uniform(0.78, 0.95) if topple else rng.uniform(0.0, 0.4)
        shift = _param(params, "shift", drawn) * hw
        colors = [_color({}, rng, exclude=()) for _ in range(3)]
        for i in (1, 2):
            while colors[i] in colors[:i]:
                colors[i] = _BALL_COLORS[(_BALL_COLORS.index(colors[i]) + 1) % len(_BALL_COLORS)]
        bodies = [
            BodySpec(f"{c}_block", "box", (hw, hw, hw), c, (i * shift - 0.2, 0.0, hw + 2 * hw * i + 1e-4 * i), friction=0.9)
            for i, c in enumerate(colors)
        ]
        return SceneSpec(bodies=bodies, floor_friction=0.9, zeta=1.0, cam_eye=(0.0, -3.0, 0.6), cam_target=(0.0, 0.0, 0.45),
                         track_contacts=False)

    def extra_states(self, spec: SceneSpec, sim: SimOutput) -> dict[str, Any]:
        return {"tilt_deg": {b.name: _tilt_deg(sim.quats[:, i]) for i, b in enumerate(spec.bodies)}}

    def closed_form(self, spec: SceneSpec, sim: SimOutput) -> dict[str, Any]:
        hw = spec.bodies[0].size[0]
        shift = spec.bodies[1].pos[0] - spec.bodies[0].pos[0]
        return {"law": "a stack stands while every sub-stack's centre of mass lies over its support",
                "predicted_topple": bool(1.5 * shift > hw or shift > hw)}

    def caption(self, spec: SceneSpec, sim: SimOutput, start: int, end: int) -> str:
        tilt = _tilt_deg(sim.quats[end - 1, 2:3, :].reshape(1, 4))[0]
        tilt0 = _tilt_deg(sim.quats[start, 2:3, :].reshape(1, 4))[0]
        if tilt < 5:
            return "the stack of three blocks stands still"
        if tilt0 < 5:
            return "the top blocks tip over the edge and fall"
        return "the fallen blocks tumble onto the floor and settle"


def _tilt_deg(quats: np.ndarray) -> list[float]:
    """Angle between each body's z axis and world up, degrees."""
    x, y = quats[:, 1], quats[:, 2]
    zz = 1 - 2 * (x * x + y * y)  # R[2, 2]
    return np.degrees(np.arccos(np.clip(zz, -1, 1))).tolist()

