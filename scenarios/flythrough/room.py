"""Camera fly-throughs of a textured room rendered with MuJoCo: geometry ground truth.

The room (walls, floor, ceiling) and a few boxes and pillars carry procedural textures
generated from the seed (random coloured shapes over multi-scale noise), so every view
is rich in distinctive corners for structure-from-motion. The camera follows a smooth
path (a cubic Bezier through seeded control points) while looking at a smoothly moving
target; exact ``K`` and per-frame camera-to-world poses (OpenCV) are exported, as are
metric depth and per-pixel object ids of the furniture.

Per-chunk actions describe the camera motion over that chunk in the camera frame at the
chunk's start (OpenCV axes: x right, y down, z forward) plus the yaw change (positive =
turn left), e.g. ``{"name": "camera", "translation": [0.0, 0.0, 0.8], "yaw_deg": 12.0}``.
"""

from __future__ import annotations

import logging
import math
from typing import Any, ClassVar

import numpy as np

from scenarios._mujoco import (
    SceneRenderer,
    camera_to_world_cv,
    geom_object_lut,
    import_mujoco,
    intrinsics_from_fovy,
    look_at_quat_mj,
)
from scenarios._params import video_params
from scenarios.procedural.common import story
from worldolympiad.scenario import CaseGenerator, Rendered
from worldolympiad.types import CameraSpec, Case, Video, even_chunks

logger = logging.getLogger(__name__)

ROOM = (3.0, 3.0, 2.6)  # half-width x, half-depth y, height z (metres)
FOVY = 60.0
_PALETTE = np.array([[220, 60, 50], [50, 150, 220], [240, 200, 40], [60, 170, 90], [150, 80, 190], [240, 130, 40],
                     [30, 30, 35], [240, 240, 235], [120, 70, 40], [90, 200, 200]], np.float32)


def texture_png(rng: np.random.Generator, size: int = 512) -> bytes:
    """A feature-rich texture: multi-scale noise under random coloured shapes, as PNG bytes."""
    import cv2

    base = rng.uniform(90, 200, 3).astype(np.float32)
    img = np.zeros((size, size, 3), np.float32) + base
    for cells in (4, 16, 64):  # multi-scale value noise
        g = rng.standard_normal((cells, cells, 3)).astype(np.float32)
        img += cv2.resize(g, (size, size), interpolation=cv2.INTER_CUBIC) * (40.0 if cells < 64 else 18.0)
    img = np.clip(img, 0, 255).astype(np.uint8)
    for _ in range(int(rng.integers(25, 40))):
        col = tuple(int(c) for c in _PALETTE[int(rng.integers(len(_PALETTE)))])
        x, y = (int(v) for v in rng.integers(0, size, 2))
        s = int(rng.integers(size // 40, size // 8))
        kind = int(rng.integers(3))
        if kind == 0:
            cv2.circle(img, (x, y), s, col, -1, cv2.LINE_AA)
        elif kind == 1:
            cv2.rectangle(img, (x, y), (x + s, y + int(s * rng.uniform(0.4, 1.6))), col, -1, cv2.LINE_AA)
        else:
            pts = (rng.integers(-s, s, (3, 2)) + [x, y]).astype(np.int32)
            cv2.fillPoly(img, [pts], col, cv2.LINE_AA)
    # no compression: the bytes only travel to MuJoCo's decoder in memory
    ok, buf = cv2.imencode(".png", cv2.cvtColor(img, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_PNG_COMPRESSION, 0])
    assert ok
    return buf.tobytes()


def room_xml(rng: np.random.Generator, wall_texture_size: int = 512) -> tuple[str, dict[str, bytes], list[str]]:
    """MJCF of the textured room, its texture assets and the furniture geom names.

    Wall textures are ``wall_texture_size`` px (a wall fills much of a view; small renders
    need less detail), furniture textures 256 px.
    """
    X, Y, Z = ROOM
    assets: dict[str, bytes] = {}
    mats = []
    for i in range(12):
        assets[f"tex{i}.png"] = texture_png(rng, wall_texture_size if i < 6 else 256)
        mats.append(f'<texture name="t{i}" type="2d" file="tex{i}.png"/>'
                    f'<material name="m{i}" texture="t{i}" texrepeat="1 1" '
                    f'texuniform="false" reflectance="0" specular="0.1"/>')
    t = 0.05
    walls = [
        ("floor", f"0 0 {-t}", f"{X} {Y} {t}", 0),
        ("ceiling", f"0 0 {Z + t}", f"{X} {Y} {t}", 1),
        ("wall_n", f"0 {Y + t} {Z / 2}", f"{X} {t} {Z / 2}", 2),
        ("wall_s", f"0 {-Y - t} {Z / 2}", f"{X} {t} {Z / 2}", 3),
        ("wall_e", f"{X + t} 0 {Z / 2}", f"{t} {Y} {Z / 2}", 4),
        ("wall_w", f"{-X - t} 0 {Z / 2}", f"{t} {Y} {Z / 2}", 5),
    ]
    geoms = [f'<geom name="{n}" type="box" pos="{p}" size="{s}" material="m{m}"/>' for n, p, s, m in walls]
    furniture = []
    for i in range(int(rng.integers(4, 7))):
        hx, hy, hz = rng.uniform(0.2, 0.45), rng.uniform(0.2, 0.45), rng.uniform(0.25, 0.9)
        ang = rng.uniform(0, 2 * np.pi)
        r = rng.uniform(1.8, 2.5)
        x, y = r * math.cos(ang), r * math.sin(ang)
        name = f"box_{i}"
        furniture.append(name)
        geoms.append(f'<geom name="{name}" type="box" pos="{x!r} {y!r} {hz!r}" size="{hx!r} {hy!r} {hz!r}" '
                     f'euler="0 0 {rng.uniform(0, np.pi)!r}" material="m{6 + i % 6}"/>')
    xml = f"""<mujoco model="room">
  <compiler angle="radian"/>
  <visual><quality shadowsize="0" offsamples="0"/><global offwidth="512" offheight="512"/>
    <headlight ambient="0.55 0.55 0.55" diffuse="0.45 0.45 0.45" specular="0 0 0"/></visual>
  <asset>{''.join(mats)}</asset>
  <worldbody>
    <light pos="0 0 {Z - 0.1}" dir="0 0 -1" directional="false" castshadow="false" diffuse="0.3 0.3 0.3"/>
    {''.join(geoms)}
    <camera name="cam" pos="0 0 1.5" fovy="{FOVY}"/>
  </worldbody>
</mujoco>"""
    return xml, assets, furniture


def _bezier(ctrl: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Cubic Bezier ``[len(u), 3]`` through 4 control points ``[4, 3]``."""
    u = u[:, None]
    return ((1 - u) ** 3) * ctrl[0] + 3 * ((1 - u) ** 2) * u * ctrl[1] + 3 * (1 - u) * u**2 * ctrl[2] + u**3 * ctrl[3]


def camera_path(rng: np.random.Generator, T: int, path_length: float) -> tuple[np.ndarray, np.ndarray]:
    """Eye positions and look-at targets ``[T, 3]`` along a smooth path of about ``path_length`` metres."""
    ang = rng.uniform(0, 2 * np.pi)
    start = np.array([0.9 * math.cos(ang), 0.9 * math.sin(ang), rng.uniform(1.2, 1.6)])
    heading = ang + math.pi + rng.uniform(-0.6, 0.6)  # walk roughly across the room centre
    d = np.array([math.cos(heading), math.sin(heading), 0.0])
    side = np.array([-d[1], d[0], 0.0])
    ctrl = np.stack([
        start,
        start + d * path_length / 3 + side * rng.uniform(-0.3, 0.3),
        start + d * 2 * path_length / 3 + side * rng.uniform(-0.3, 0.3),
        start + d * path_length + np.array([0, 0, rng.uniform(-0.2, 0.2)]),
    ])
    u = np.linspace(0.0, 1.0, T)
    eye = _bezier(ctrl, u)
    # look at a point that sweeps along the far walls: smooth pan
    look_ang = heading + rng.uniform(-0.5, 0.5) + rng.uniform(-0.8, 0.8) * u
    target = np.stack([2.6 * np.cos(look_ang), 2.6 * np.sin(look_ang), np.full(T, 1.1)], axis=1)
    target[:, :2] = np.clip(target[:, :2], -2.9, 2.9)
    return eye, target


def _yaw(c2w: np.ndarray) -> float:
    fwd = c2w[:3, 2]
    return math.degrees(math.atan2(fwd[1], fwd[0]))


class RoomFlythrough(CaseGenerator):
    """A camera walks through a textured room (geometry and long-video ground truth)."""

    name: ClassVar[str] = "flythrough.room"
    version: ClassVar[str] = "1"
    tracks: ClassVar[tuple[str, ...]] = ("geometry", "interaction", "longvideo")

    def _setup(self, seed: int, params: dict[str, Any]) -> dict[str, Any]:
        res, T, fps, nc = video_params(params, min_side=16, default_fps=12.0)
        length = float(params.get("path_length", 1.6))
        if not 0.0 < length <= 2.5:
            raise ValueError(f"path_length must be in (0, 2.5] metres (the room is 6 m wide), got {length}")
        rng = np.random.default_rng([seed, 7])
        eye, target = camera_path(rng, T, length)
        H, W = int(res[0]), int(res[1])
        K = intrinsics_from_fovy(FOVY, H, W)
        poses = np.zeros((T, 4, 4))
        quats = np.zeros((T, 4))
        for k in range(T):
            q = look_at_quat_mj(eye[k], target[k])
            quats[k] = q
            R = _quat_to_mat(q)
            poses[k] = camera_to_world_cv(eye[k], R.reshape(-1))
        return {"res": (H, W), "T": T, "fps": fps, "nc": nc, "eye": eye, "target": target, "quats": quats, "K": K,
                "poses": poses, "length": length}

    def make_case(self, case_id: str, *, seed: int = 0, **params: Any) -> Case:
        s = self._setup(seed, params)
        bounds = even_chunks(s["T"], s["nc"])
        actions, captions = [], []
        for c in bounds:
            a, b = c.frame_start, c.frame_end - 1
            rel = np.linalg.inv(s["poses"][a]) @ s["poses"][b]
            dyaw = (_yaw(s["poses"][b]) - _yaw(s["poses"][a]) + 180.0) % 360.0 - 180.0
            tr = rel[:3, 3]
            actions.append({"name": "camera", "translation": np.round(tr, 4).tolist(), "yaw_deg": round(dyaw, 3)})
            captions.append(_describe(tr, dyaw))
        return Case(
            id=case_id,
            scenario="realworld",
            fps=s["fps"],
            num_frames=s["T"],
            resolution=s["res"],
            prompt="A camera walks through a furnished room with colourful patterned walls. " + story(captions),
            chunks=even_chunks(s["T"], s["nc"], captions=captions, actions=actions),
            camera=CameraSpec.from_arrays(s["K"], s["poses"]),
            tracks=self.tracks,
            metadata={"generator": self.name, "generator_version": self.version, "seed": seed, "params": dict(params),
                      "path_length_m": float(np.linalg.norm(np.diff(s["eye"], axis=0), axis=1).sum())},
        )

    def render(self, case: Case) -> Rendered:
        seed = int(case.metadata.get("seed", 0))
        params = dict(case.metadata.get("params") or {})
        s = self._setup(seed, params)
        mujoco = import_mujoco()
        # textures scale with the render: ~4 texels per pixel across a wall
        tex = 256 if max(s["res"]) <= 128 else 512
        xml, assets, furniture = room_xml(np.random.default_rng([seed, 3]), tex)
        model = mujoco.MjModel.from_xml_string(xml, assets)
        data = mujoco.MjData(model)
        cam = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, "cam")
        geom_ids = {n: mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, n) for n in furniture}
        lut = geom_object_lut(model, {g: i + 1 for i, g in enumerate(geom_ids.values())})
        (H, W), T = s["res"], s["T"]
        frames = np.zeros((T, H, W, 3), np.uint8)
        masks = np.zeros((T, H, W), np.int32)
        depth = np.zeros((T, H, W), np.float32)
        poses = np.zeros((T, 4, 4))
        with SceneRenderer(model, H, W) as r:
            for k in range(T):
                model.cam_pos[cam] = s["eye"][k]
                model.cam_quat[cam] = s["quats"][k]
                mujoco.mj_kinematics(model, data)
                mujoco.mj_camlight(model, data)  # camera poses are computed here, not in mj_kinematics
                fb = r.render(data, "cam")
                frames[k], masks[k], depth[k] = fb.rgb, lut[fb.geom + 1], fb.depth
                poses[k] = camera_to_world_cv(data.cam_xpos[cam], data.cam_xmat[cam])
        return Rendered(
            video=Video(frames, s["fps"], chunks=case.chunks, metadata={"generator": self.name}),
            masks=masks,
            object_ids={n: i + 1 for i, n in enumerate(furniture)},
            depth=depth,
            camera=CameraSpec.from_arrays(s["K"], poses),
            states={"camera_position": s["eye"], "look_at": s["target"], "room_half_extents": list(ROOM),
                    "path_length_m": case.metadata.get("path_length_m")},
        )


def _quat_to_mat(q: np.ndarray) -> np.ndarray:
    w, x, y, z = q
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def _describe(tr: np.ndarray, dyaw: float) -> str:
    """Caption of a camera move from its translation (camera frame at chunk start) and yaw change."""
    parts = []
    fwd, right = tr[2], tr[0]
    if abs(fwd) > 0.1:
        parts.append("moves forward" if fwd > 0 else "moves backward")
    if abs(right) > 0.1:
        parts.append("slides right" if right > 0 else "slides left")
    if abs(dyaw) > 5:
        parts.append(f"turns {'left' if dyaw > 0 else 'right'} by about {int(round(abs(dyaw)))} degrees")
    if not parts:
        parts.append("holds almost still")
    return "the camera " + " and ".join(parts)


ROOM_FLYTHROUGH = RoomFlythrough()
