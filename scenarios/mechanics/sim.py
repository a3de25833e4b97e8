"""A small MuJoCo scene description, its simulation loop and its renderer.

A :class:`SceneSpec` is plain data (bodies, camera, contact law); :func:`simulate` steps
it with MuJoCo's RK4 integrator at a timestep that divides the frame period exactly (so
frame ``k`` is at ``t = k / fps`` and closed forms can be compared sample by sample),
records per-frame states and contact events; :func:`render_states` replays the states to
render RGB, object masks and metric depth from a fixed camera.

Contact law: every geom uses MuJoCo's *direct* soft-contact reference
``solref = (-k, -b)`` with a near-rigid impedance (``solimp`` 0.99), i.e. a linear
spring-damper on the contact coordinate. Its coefficient of restitution is set by the
damping ratio ``zeta = b / (2 sqrt(k))``; because the contact releases when the force
reaches zero (not when penetration does) the realised restitution is higher than the
textbook ``exp(-zeta pi / sqrt(1 - zeta^2))``, so :func:`calibrate_restitution` measures
it and solves for ``zeta`` (secant on the mean restitution of probe impacts at the case's
impact speeds and several sub-step phases). Measured (``bench/bench_scenarios_a.py``): within
2 % of the setting for every impact faster than 0.5 m/s for settings 0.6-0.9; for lower
settings within 2 % above 1 m/s and 2.3 % below.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scenarios._mujoco import (
    SceneRenderer,
    camera_to_world_cv,
    geom_object_lut,
    import_mujoco,
    intrinsics_from_fovy,
    look_at_quat_mj,
)

logger = logging.getLogger(__name__)

CONTACT_STIFFNESS = 2.5e5  # k in solref=(-k, -b): ~6 ms contacts, 0.04 mm static sag, ~8 mm dent at 4 m/s
MAX_TIMESTEP = 2.0e-4  # resolves the contact oscillation (period ~12.6 ms) with ~60 RK4 steps
# Impact scenes (bounce, collision) use 4x stiffer, 2x shorter contacts: gravity acts for
# less time during the touch, so the restitution stays within 2 % of its setting down to
# 0.5 m/s impacts.
IMPACT_STIFFNESS = 1.0e6
IMPACT_TIMESTEP = 1.0e-4
GRAVITY = 9.81
MIN_IMPACT_SPEED = 0.05  # m/s; slower touches are resting contact, not impacts

COLORS: dict[str, tuple[float, float, float]] = {
    "brown": (0.55, 0.35, 0.15),
    "grey": (0.45, 0.45, 0.48),
    "red": (0.85, 0.1, 0.1),
    "green": (0.1, 0.7, 0.2),
    "blue": (0.15, 0.3, 0.9),
    "yellow": (0.95, 0.85, 0.1),
    "orange": (0.95, 0.5, 0.05),
    "purple": (0.55, 0.2, 0.75),
    "cyan": (0.1, 0.8, 0.85),
    # colours users' objects have that the palette above avoids (tuning cases only; never drawn):
    "charcoal": (0.13, 0.13, 0.15),  # dark, near the floor's shadowed tones
    "silver": (0.66, 0.66, 0.68),  # between the checker floor's two greys
    "tan": (0.7, 0.55, 0.38),  # near the "wood" floor and the "bricks" backdrop
}

#: floors (``SceneSpec.floor``): MuJoCo builtin textures. ``checker`` is every case's default.
FLOORS: dict[str, str] = {
    "checker": '<texture name="grid" type="2d" builtin="checker" rgb1="0.55 0.55 0.55" rgb2="0.75 0.75 0.75" '
               'width="64" height="64"/>\n    <material name="floor" texture="grid" texrepeat="8 8" reflectance="0"/>',
    # planks in two browns with dark seams and grain speckle
    "wood": '<texture name="grid" type="2d" builtin="checker" rgb1="0.62 0.45 0.28" rgb2="0.52 0.36 0.22" '
            'mark="random" random="0.25" markrgb="0.3 0.2 0.12" width="128" height="128"/>\n'
            '    <material name="floor" texture="grid" texrepeat="14 3" reflectance="0"/>',
    # grey gravel: fine light and dark speckle over a mid grey
    "speckle": '<texture name="grid" type="2d" builtin="flat" rgb1="0.5 0.5 0.5" mark="random" random="0.35" '
               'markrgb="0.8 0.8 0.8" width="256" height="256"/>\n'
               '    <material name="floor" texture="grid" texrepeat="6 6" reflectance="0"/>',
}
#: backdrops (``SceneSpec.backdrop``): a wall behind the scene (never collides, never in the masks).
BACKDROPS: dict[str, str] = {
    "none": "",
    # red-brown bricks with dark mortar lines and dirt speckle
    "bricks": '<texture name="wall" type="2d" builtin="checker" rgb1="0.62 0.3 0.22" rgb2="0.55 0.38 0.3" '
              'mark="edge" markrgb="0.25 0.22 0.2" random="0.15" width="64" height="64"/>'
              '<material name="wall" texture="wall" texrepeat="12 8" reflectance="0"/>',
    # a busy poster wall: colourful blocks and speckle
    "posters": '<texture name="wall" type="2d" builtin="checker" rgb1="0.2 0.45 0.6" rgb2="0.85 0.8 0.55" '
               'mark="random" random="0.3" markrgb="0.9 0.3 0.2" width="128" height="128"/>'
               '<material name="wall" texture="wall" texrepeat="6 4" reflectance="0"/>',
}

#: body textures (``BodySpec.texture``): a pattern over the body's colour, as printed or painted
#: objects have; the case still declares the body's one colour (what a user would write).
BODY_TEXTURES: dict[str, str] = {
    "none": "",
    # a fine checker of the colour and the colour half-way to white (3 x 3 repeats over the body)
    "checker": '<texture name="tex_{name}" type="2d" builtin="checker" rgb1="{base}" rgb2="{pale}" '
               'width="64" height="64"/><material name="mat_{name}" texture="tex_{name}" texrepeat="3 3"/>',
    # large patches of the same two tones (a two-tone ball, a box with a pale corner)
    "patches": '<texture name="tex_{name}" type="cube" builtin="checker" rgb1="{base}" rgb2="{pale}" '
               'width="64" height="64"/><material name="mat_{name}" texture="tex_{name}"/>',
}


@dataclass
class BodySpec:
    """A free rigid body. ``size`` is the radius (sphere) or half-extents (box)."""

    name: str
    shape: str  # "sphere" | "box"
    size: tuple[float, ...]
    color: str
    pos: tuple[float, float, float]
    vel: tuple[float, float, float] = (0.0, 0.0, 0.0)
    density: float = 1000.0
    friction: float = 0.0  # 0 → frictionless contact (condim 1)
    texture: str = "none"  # a key of BODY_TEXTURES

    @property
    def rgb255(self) -> list[int]:
        return [int(round(255 * c)) for c in COLORS[self.color]]

    @property
    def volume(self) -> float:
        if self.shape == "sphere":
            return 4.0 / 3.0 * math.pi * self.size[0] ** 3
        return 8.0 * self.size[0] * self.size[1] * self.size[2]

    @property
    def mass(self) -> float:
        return self.density * self.volume


@dataclass
class SceneSpec:
    """Everything :func:`simulate` needs. Positions in metres, world z up."""

    bodies: list[BodySpec]
    cam_eye: tuple[float, float, float] = (0.0, -4.5, 1.0)
    cam_target: tuple[float, float, float] = (0.0, 0.0, 1.0)
    fovy: float = 45.0
    zeta: float = 1.0  # contact damping ratio (see module docstring)
    floor_friction: float = 0.0
    extra_xml: str = ""  # static decoration (e.g. a water volume in geom group 2)
    hide_groups_in_masks: tuple[int, ...] = ()
    gravity: float = GRAVITY
    meta: dict[str, Any] = field(default_factory=dict)  # scene settings worth exporting (e.g. restitution)
    track_contacts: bool = True  # record impact events (costs a Python check per physics step)
    stiffness: float = CONTACT_STIFFNESS
    max_timestep: float = MAX_TIMESTEP
    floor: str = "checker"  # a key of FLOORS
    backdrop: str = "none"  # a key of BACKDROPS: a textured wall behind the scene


@dataclass
class SimOutput:
    """Per-frame states (``[T, N, 3]`` arrays, bodies in spec order) and, if rendered, images."""

    times: np.ndarray  # [T]
    positions: np.ndarray  # [T, N, 3]
    velocities: np.ndarray  # [T, N, 3]
    quats: np.ndarray  # [T, N, 4] (w, x, y, z)
    qpos: np.ndarray  # [T, nq] full generalised positions (replayed by render_states)
    events: list[dict[str, Any]] = field(default_factory=list)
    frames: np.ndarray | None = None  # uint8 [T, H, W, 3]
    masks: np.ndarray | None = None  # int32 [T, H, W]
    depth: np.ndarray | None = None  # float32 [T, H, W]
    K: np.ndarray | None = None  # [3, 3]
    poses: np.ndarray | None = None  # [T, 4, 4] camera-to-world, OpenCV


def _fmt(v: Any) -> str:
    """Numbers (a sequence or array) as an MJCF attribute value, exactly (``repr``)."""
    return " ".join(repr(float(x)) for x in v)


def build_xml(spec: SceneSpec, timestep: float) -> str:
    """MJCF for ``spec``: checker floor, gradient sky, one light, a fixed camera, free bodies."""
    k = spec.stiffness
    b = 2.0 * spec.zeta * math.sqrt(k)
    contact = f'solref="{-k!r} {-b!r}" solimp="0.99 0.99 0.001"'
    floor_cd = 3 if spec.floor_friction > 0 else 1
    bodies, body_assets = [], []
    for body in spec.bodies:
        if body.texture not in BODY_TEXTURES:
            raise ValueError(f"texture must be one of {sorted(BODY_TEXTURES)}, got {body.texture!r}")
        rgb = np.array(COLORS[body.color])
        look = f'rgba="{_fmt((*rgb, 1.0))}"'
        if body.texture != "none":
            body_assets.append(BODY_TEXTURES[body.texture].format(
                name=body.name, base=_fmt(rgb), pale=_fmt(0.5 * rgb + 0.5)))
            look = f'material="mat_{body.name}"'
        size = _fmt(body.size)
        cd = 3 if body.friction > 0 else 1
        fr = f'friction="{body.friction!r} 0.005 0.0001"' if body.friction > 0 else ""
        bodies.append(
            f'<body name="{body.name}" pos="{_fmt(body.pos)}"><freejoint name="{body.name}_joint"/>'
            f'<geom name="{body.name}" type="{body.shape}" size="{size}" {look} density="{body.density!r}" '
            f'condim="{cd}" {fr} {contact}/></body>'
        )
    q = look_at_quat_mj(np.array(spec.cam_eye), np.array(spec.cam_target))
    ffr = f'friction="{spec.floor_friction!r} 0.005 0.0001"' if spec.floor_friction > 0 else ""
    if spec.floor not in FLOORS:
        raise ValueError(f"floor must be one of {sorted(FLOORS)}, got {spec.floor!r}")
    if spec.backdrop not in BACKDROPS:
        raise ValueError(f"backdrop must be one of {sorted(BACKDROPS)}, got {spec.backdrop!r}")
    wall_asset, wall = BACKDROPS[spec.backdrop], ""
    if wall_asset:  # 1.6 m behind the scene's centre line, 8 m wide, 5 m tall; visual only
        wall = ('<geom name="backdrop" type="box" pos="0 1.6 2.5" size="4 0.05 2.5" material="wall" '
                'contype="0" conaffinity="0"/>')
    return f"""<mujoco model="mechanics">
  <compiler angle="radian"/>
  <option integrator="RK4" timestep="{timestep!r}" gravity="0 0 {-spec.gravity!r}" cone="elliptic"/>
  <visual><quality shadowsize="0" offsamples="0"/><global offwidth="512" offheight="512"/>
    <headlight ambient="0.35 0.35 0.35" diffuse="0.5 0.5 0.5" specular="0 0 0"/></visual>
  <asset>
    <texture name="sky" type="skybox" builtin="gradient" rgb1="0.75 0.85 0.95" rgb2="0.95 0.95 0.95" width="64" height="64"/>
    {FLOORS[spec.floor]}
    {wall_asset}
    {''.join(body_assets)}
  </asset>
  <worldbody>
    <light name="sun" pos="0 -1 4" dir="0 0.3 -1" directional="true" castshadow="false" diffuse="0.6 0.6 0.6"/>
    <geom name="floor" type="plane" size="6 6 0.1" material="floor" condim="{floor_cd}" {ffr} {contact}/>
    <camera name="cam" pos="{_fmt(spec.cam_eye)}" quat="{_fmt(q)}" fovy="{spec.fovy!r}"/>
    {wall}
    {spec.extra_xml}
    {''.join(bodies)}
  </worldbody>
</mujoco>"""


def steps_per_frame(fps: float, max_timestep: float = MAX_TIMESTEP) -> int:
    """Physics substeps per frame so that the timestep is <= ``max_timestep`` and divides 1/fps."""
    return max(1, math.ceil(1.0 / (fps * max_timestep)))


ForceFn = Callable[[Any, Any, list[int]], None]  # (model, data, body ids) → writes data.xfrc_applied


def _load(spec: SceneSpec, fps: float) -> tuple[Any, Any, Any, int]:
    mujoco = import_mujoco()
    nsub = steps_per_frame(fps, spec.max_timestep)
    model = mujoco.MjModel.from_xml_string(build_xml(spec, 1.0 / (fps * nsub)))
    return mujoco, model, mujoco.MjData(model), nsub


def simulate(
    spec: SceneSpec,
    fps: float,
    num_frames: int,
    *,
    force_fn: ForceFn | None = None,
    stop_after_events: int | None = None,
) -> SimOutput:
    """Step ``spec`` for ``num_frames`` frames (no rendering; see :func:`render_states`).

    Contact events are recorded at physics-step resolution: for each pair of touching
    geoms, the normal relative velocity at the last step before the touch (``v_in``) and
    at the first step after it ends (``v_out``); ``e = -v_out / v_in``. Touches slower
    than :data:`MIN_IMPACT_SPEED` are resting contact and not recorded.
    """
    mujoco, model, data, nsub = _load(spec, fps)
    body_ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, b.name) for b in spec.bodies]
    geom_ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, b.name) for b in spec.bodies]
    floor_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "floor")
    geom_name = {g: b.name for g, b in zip(geom_ids, spec.bodies, strict=True)} | {floor_id: "floor"}
    qadr = [int(model.jnt_qposadr[model.body_jntadr[i]]) for i in body_ids]
    vadr = [int(model.jnt_dofadr[model.body_jntadr[i]]) for i in body_ids]
    for b, va in zip(spec.bodies, vadr, strict=True):
        data.qvel[va : va + 3] = b.vel
    mujoco.mj_forward(model, data)

    n = len(spec.bodies)
    T = num_frames
    pos = np.zeros((T, n, 3))
    vel = np.zeros((T, n, 3))
    quat = np.zeros((T, n, 4))
    qpos = np.zeros((T, model.nq))

    def normal_velocity(pair: tuple[int, int], normal: np.ndarray, qv: np.ndarray) -> float:
        """Relative velocity of geom pair[1] w.r.t. pair[0] along the contact normal (positive = separating)."""
        v = []
        for g in pair:
            if g == floor_id:
                v.append(np.zeros(3))
            else:
                i = geom_ids.index(g)
                v.append(qv[vadr[i] : vadr[i] + 3])
        return float(np.dot(v[1] - v[0], normal))

    def contacts() -> dict[tuple[int, int], np.ndarray]:
        if data.ncon == 0:
            return {}
        con = data.contact  # struct-of-arrays view: vectorised access avoids per-contact Python objects
        sel = np.nonzero(con.dist < 0)[0]
        frames = con.frame[sel, :3]  # normal points from geom1 to geom2
        return {(a, b): frames[i] for i, (a, b) in enumerate(zip(con.geom1[sel].tolist(), con.geom2[sel].tolist(), strict=True))}

    events: list[dict[str, Any]] = []
    active: dict[tuple[int, int], dict[str, Any]] = {}
    for k in range(T):
        qpos[k] = data.qpos
        for i in range(n):
            pos[k, i] = data.xpos[body_ids[i]]
            vel[k, i] = data.qvel[vadr[i] : vadr[i] + 3]
            quat[k, i] = data.qpos[qadr[i] + 3 : qadr[i] + 7]
        if k == T - 1:
            break
        if stop_after_events is not None and len(events) >= stop_after_events:
            pos, vel, quat, qpos = pos[: k + 1], vel[: k + 1], quat[: k + 1], qpos[: k + 1]
            break
        if not spec.track_contacts and force_fn is None:
            mujoco.mj_step(model, data, nsub)  # nothing to watch between frames: step in C
            continue
        for _ in range(nsub):
            if force_fn is not None:
                force_fn(model, data, body_ids)
            # approach velocity = the last pre-contact step's (sampled before the touch)
            qvel_before = data.qvel.copy()
            mujoco.mj_step(model, data)
            now = contacts()
            for pair, nrm in now.items():
                if pair not in active:
                    active[pair] = {"t_start": float(data.time), "normal": nrm, "v_in": normal_velocity(pair, nrm, qvel_before)}
            for pair in list(active):
                if pair not in now:
                    ev = active.pop(pair)
                    v_in = ev["v_in"]
                    if v_in > -MIN_IMPACT_SPEED:
                        continue  # resting contact chatter, not an impact
                    v_out = normal_velocity(pair, ev["normal"], data.qvel)
                    events.append({
                        "pair": [geom_name[pair[0]], geom_name[pair[1]]],
                        "t_start": ev["t_start"],
                        "t_end": float(data.time),
                        "v_in": v_in,
                        "v_out": v_out,
                        "restitution": -v_out / v_in,
                    })
            if stop_after_events is not None and len(events) >= stop_after_events:
                break  # the caller only wants the events (calibration): stop mid-frame
    return SimOutput(times=np.arange(pos.shape[0]) / fps, positions=pos, velocities=vel, quats=quat, qpos=qpos, events=events)


def render_states(spec: SceneSpec, sim: SimOutput, fps: float, size: tuple[int, int]) -> SimOutput:
    """Render the simulated frames of ``sim`` (replaying its ``qpos``) at ``size`` ``(H, W)``.

    Fills ``frames``, ``masks`` (object ids = 1 + index in ``spec.bodies``), ``depth``,
    ``K`` and ``poses`` of ``sim`` and returns it.
    """
    mujoco, model, data, _ = _load(spec, fps)
    geom_ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, b.name) for b in spec.bodies]
    lut = geom_object_lut(model, {g: i + 1 for i, g in enumerate(geom_ids)})
    T = sim.qpos.shape[0]
    H, W = size
    frames = np.zeros((T, H, W, 3), np.uint8)
    masks = np.zeros((T, H, W), np.int32)
    depth = np.zeros((T, H, W), np.float32)
    with SceneRenderer(model, H, W) as renderer:
        for k in range(T):
            data.qpos[:] = sim.qpos[k]
            mujoco.mj_kinematics(model, data)
            mujoco.mj_camlight(model, data)
            fb = renderer.render(data, "cam", hide_groups_in_masks=spec.hide_groups_in_masks)
            frames[k], masks[k], depth[k] = fb.rgb, lut[fb.geom + 1], fb.depth
    cam_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, "cam")
    c2w = camera_to_world_cv(data.cam_xpos[cam_id], data.cam_xmat[cam_id])
    sim.frames, sim.masks, sim.depth = frames, masks, depth
    sim.K = intrinsics_from_fovy(spec.fovy, H, W)
    sim.poses = np.repeat(c2w[None], T, axis=0)
    return sim


def camera_pose(spec: SceneSpec) -> np.ndarray:
    """OpenCV camera-to-world 4x4 of the scene's fixed camera (as MuJoCo computes it)."""
    mujoco, model, data, _ = _load(spec, 24.0)
    mujoco.mj_kinematics(model, data)
    mujoco.mj_camlight(model, data)
    cam_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, "cam")
    return camera_to_world_cv(data.cam_xpos[cam_id], data.cam_xmat[cam_id])


@functools.lru_cache(maxsize=64)
def calibrate_restitution(target: float, drop_height: float, fps: float, radius: float = 0.1, iters: int = 6,
                          stiffness: float = IMPACT_STIFFNESS, max_timestep: float = IMPACT_TIMESTEP) -> float:
    """Damping ratio ``zeta`` whose mean measured restitution equals ``target``.

    The soft contact's restitution depends a little on the impact speed (gravity acts
    during the touch) and on where the touch falls within an RK4 step. So a frictionless
    probe ball is sent into the floor at the speeds of the case's first three impacts
    (``sqrt(2 g h)``, then times ``e`` and ``e^2``), each touching down at three sub-step
    phases, under gravity and on the case's step grid; ``e(zeta)``, the mean over those
    nine impacts, is solved for ``target`` by the secant method from the linear
    spring-damper guess. Cached: suites reuse settings.
    """
    if not 0.0 < target < 1.0:
        raise ValueError(f"restitution must be in (0, 1), got {target}; use e.g. 0.7")
    dt = 1.0 / (fps * steps_per_frame(fps, max_timestep))
    v1 = math.sqrt(2.0 * GRAVITY * drop_height)
    starts = []
    for v in (v1, v1 * target, v1 * target**2):
        for phase in (0.0, 1.0 / 3.0, 2.0 / 3.0):
            # start (3 + phase) steps before touch-down, moving so as to arrive at speed v;
            # free flight is exact under RK4, so only the touch's phase differs
            tau = (3.0 + phase) * dt
            v_start = v - GRAVITY * tau
            starts.append((radius + v_start * tau + 0.5 * GRAVITY * tau * tau, -v_start))

    def measure(zeta: float) -> float:
        es = []
        for z, vz in starts:
            spec = SceneSpec(bodies=[BodySpec("probe", "sphere", (radius,), "red", (0.0, 0.0, z), (0.0, 0.0, vz))],
                             zeta=zeta, stiffness=stiffness, max_timestep=max_timestep)
            out = simulate(spec, fps=fps, num_frames=int(fps) + 2, stop_after_events=1)
            if not out.events:
                raise RuntimeError("restitution calibration: the probe ball never bounced")
            es.append(float(out.events[0]["restitution"]))
        return float(np.mean(es))

    ln = math.log(target)
    z0 = -ln / math.sqrt(math.pi**2 + ln**2)
    z1 = z0 * 0.6
    e0, e1 = measure(z0) - target, measure(z1) - target
    for _ in range(iters):
        if abs(e1) < 1e-5 or e1 == e0:
            break
        z0, z1 = z1, max(1e-4, z1 - e1 * (z1 - z0) / (e1 - e0))
        e0, e1 = e1, measure(z1) - target
    return z1

