"""Shared MuJoCo helpers: headless GL selection, camera maths and an RGB/mask/depth renderer.

Used by :mod:`scenarios.mechanics` and :mod:`scenarios.flythrough` (and read-only by any
other family that wants a MuJoCo scene). Importing this module does not import MuJoCo;
:func:`import_mujoco` does, after picking a headless GL backend.

Camera conventions:

* MuJoCo cameras look down their local ``-z`` axis with ``+y`` up; OpenCV cameras look
  down ``+z`` with ``+y`` down. So ``R_cv = R_mj @ diag(1, -1, -1)`` (same centre).
* MuJoCo renders a symmetric OpenGL frustum whose *vertical* field of view is
  ``fovy``. Pixel ``i`` spans ``[i, i + 1)`` in continuous image coordinates, so in
  OpenCV's convention (pixel centres at integers) ``cx = (W - 1) / 2`` and
  ``cy = (H - 1) / 2``; ``fx = fy = (H / 2) / tan(fovy / 2)``.

System libraries for headless rendering on Debian: ``libegl1`` + ``libgl1-mesa-dri``
(EGL on Mesa's llvmpipe) or ``libosmesa6`` (OSMesa). No display is needed.
"""

from __future__ import annotations

import ctypes.util
import logging
import math
import os
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

_GL_HINT = (
    "MuJoCo offscreen rendering needs a headless GL: on Debian/Ubuntu "
    "`apt-get install libegl1 libgl1-mesa-dri` (MUJOCO_GL=egl) or `apt-get install libosmesa6` "
    "(MUJOCO_GL=osmesa); no X display is needed"
)


def _backend_works(backend: str) -> bool:
    """Whether MuJoCo can open an offscreen GL context with ``backend`` (checked in a child
    process, because PyOpenGL fixes its platform at first import)."""
    env = dict(os.environ, MUJOCO_GL=backend, PYOPENGL_PLATFORM=backend)
    code = "import mujoco; c = mujoco.GLContext(8, 8); c.make_current(); c.free()"
    try:
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def choose_gl_backend() -> str:
    """Set ``MUJOCO_GL`` (if the user has not) to a headless backend that works here.

    EGL is preferred (faster with llvmpipe); OSMesa is the fallback when EGL's library
    is missing or cannot open a context (probed once in a child process; the choice is
    exported in ``MUJOCO_GL`` so child processes inherit it). The choice must happen
    before MuJoCo (and PyOpenGL) are first imported in this process.
    """
    if "MUJOCO_GL" not in os.environ:
        has_egl = bool(ctypes.util.find_library("EGL"))
        has_osmesa = bool(ctypes.util.find_library("OSMesa"))
        if has_egl and (not has_osmesa or _backend_works("egl")):
            os.environ["MUJOCO_GL"] = "egl"
        elif has_osmesa:
            logger.info("EGL unavailable or broken; rendering MuJoCo with OSMesa")
            os.environ["MUJOCO_GL"] = "osmesa"
        else:
            os.environ["MUJOCO_GL"] = "egl"  # fails later with a message naming the apt packages
    if os.environ["MUJOCO_GL"] in ("egl", "osmesa"):
        os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])
    return os.environ["MUJOCO_GL"]


def _preload_triton() -> None:
    """Load triton's ``libtriton.so`` before Mesa's GL is loaded.

    Mesa's llvmpipe (EGL and OSMesa alike) and libtriton each carry their own LLVM. When
    Mesa's comes first, a later ``import triton`` — which torch performs lazily, e.g. via
    ``torch._dynamo`` in the geometry track — segfaults inside ``dlopen``. In the other
    order both work, so render-then-evaluate processes (``evaluate-model``) stay alive.
    """
    import contextlib

    with contextlib.suppress(Exception):  # no triton (CPU-only torch): nothing to preload
        import triton._C.libtriton  # noqa: F401


def import_mujoco() -> Any:
    """Import MuJoCo with a headless GL backend selected."""
    choose_gl_backend()
    _preload_triton()
    import mujoco

    return mujoco


# ------------------------------------------------------------------ camera maths


def intrinsics_from_fovy(fovy_deg: float, height: int, width: int) -> np.ndarray:
    """OpenCV ``K`` (3x3) of a MuJoCo camera with vertical field of view ``fovy_deg``."""
    f = (height / 2.0) / math.tan(math.radians(fovy_deg) / 2.0)
    return np.array([[f, 0.0, (width - 1) / 2.0], [0.0, f, (height - 1) / 2.0], [0.0, 0.0, 1.0]])


_MJ_TO_CV = np.diag([1.0, -1.0, -1.0])


def camera_to_world_cv(xpos: np.ndarray, xmat: np.ndarray) -> np.ndarray:
    """OpenCV camera-to-world 4x4 from MuJoCo's ``cam_xpos`` [3] and ``cam_xmat`` [9]."""
    c2w = np.eye(4)
    c2w[:3, :3] = np.asarray(xmat, dtype=np.float64).reshape(3, 3) @ _MJ_TO_CV
    c2w[:3, 3] = np.asarray(xpos, dtype=np.float64)
    return c2w


def project_points(K: np.ndarray, c2w: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Pinhole projection of world points ``[N, 3]`` to OpenCV pixels ``[N, 2]``."""
    pts = np.atleast_2d(np.asarray(points, dtype=np.float64))
    w2c = np.linalg.inv(c2w)
    cam = pts @ w2c[:3, :3].T + w2c[:3, 3]  # [N, 3]
    uv = cam @ np.asarray(K).T
    return uv[:, :2] / uv[:, 2:3]


def sphere_image_centre(K: np.ndarray, c2w: np.ndarray, centre: np.ndarray, radius: float) -> np.ndarray:
    """Centre (= area centroid) of the ellipse a sphere projects to, in OpenCV pixels ``[2]``.

    A sphere off the optical axis images as an ellipse whose centre lies slightly
    further from the principal point than the projected sphere centre. With the tangent
    cone of half-angle ``a`` (``sin a = r / d``) around a ray at angle ``t`` from the
    optical axis, the ellipse's extreme points along the meridian are at normalised
    radii ``tan(t - a)`` and ``tan(t + a)``; their midpoint is the ellipse centre.
    """
    w2c = np.linalg.inv(c2w)
    p = w2c[:3, :3] @ np.asarray(centre, dtype=np.float64) + w2c[:3, 3]  # camera frame
    d = float(np.linalg.norm(p))
    if radius >= d:
        raise ValueError(f"sphere of radius {radius} contains the camera (distance {d})")
    a = math.asin(radius / d)
    rho = math.hypot(p[0], p[1])
    t = math.atan2(rho, p[2])
    if rho < 1e-12:
        xn, yn = 0.0, 0.0
    else:
        mid = 0.5 * (math.tan(t + a) + math.tan(t - a))
        xn, yn = mid * p[0] / rho, mid * p[1] / rho
    uv = np.asarray(K) @ np.array([xn, yn, 1.0])
    return uv[:2]


def look_at_quat_mj(eye: np.ndarray, target: np.ndarray, up: np.ndarray = np.array([0.0, 0.0, 1.0])) -> np.ndarray:
    """MuJoCo quaternion (w, x, y, z) of a camera at ``eye`` looking at ``target``."""
    fwd = np.asarray(target, float) - np.asarray(eye, float)
    fwd /= np.linalg.norm(fwd)
    right = np.cross(fwd, up)
    right /= np.linalg.norm(right)
    cam_up = np.cross(right, fwd)
    R = np.stack([right, cam_up, -fwd], axis=1)  # columns: camera x, y, z in world
    return mat_to_quat(R)


def mat_to_quat(R: np.ndarray) -> np.ndarray:
    """Rotation matrix → unit quaternion (w, x, y, z) (Shepperd's method, numerically safe)."""
    m = np.asarray(R, dtype=np.float64)
    tr = m[0, 0] + m[1, 1] + m[2, 2]
    if tr > 0:
        s = 2.0 * math.sqrt(tr + 1.0)
        q = [0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = 2.0 * math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        q = [(m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s]
    elif m[1, 1] > m[2, 2]:
        s = 2.0 * math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        q = [(m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s]
    else:
        s = 2.0 * math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        q = [(m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s]
    qa = np.array(q)
    return qa / np.linalg.norm(qa)


# ---------------------------------------------------------------------- renderer


@dataclass
class FrameBuffers:
    """One rendered view: ``rgb`` uint8 [H, W, 3], ``geom`` int32 [H, W] (-1 = nothing), ``depth`` float32 [H, W]."""

    rgb: np.ndarray
    geom: np.ndarray
    depth: np.ndarray


class SceneRenderer:
    """Offscreen RGB + geom-id segmentation + metric depth of a MuJoCo model, shadows off.

    Args:
        model: an ``mujoco.MjModel``.
        height, width: image size in pixels.
    """

    def __init__(self, model: Any, height: int, width: int) -> None:
        mujoco = import_mujoco()
        self._mujoco = mujoco
        # The offscreen framebuffer must be at least the image size.
        model.vis.global_.offwidth = max(int(model.vis.global_.offwidth), width)
        model.vis.global_.offheight = max(int(model.vis.global_.offheight), height)
        try:
            self._r = mujoco.Renderer(model, height, width)
        except Exception as e:  # noqa: BLE001 - GL init raises several types
            raise RuntimeError(f"MuJoCo renderer failed with MUJOCO_GL={os.environ.get('MUJOCO_GL')}: {e}. {_GL_HINT}") from e
        self.height, self.width = height, width

    def render(self, data: Any, camera: str | int, *, hide_groups_in_masks: tuple[int, ...] = ()) -> FrameBuffers:
        """Render ``data`` from a model camera (name or id).

        Args:
            hide_groups_in_masks: geom groups drawn in RGB but left out of the mask and
                depth passes (e.g. translucent water, so submerged objects keep their masks).
        """
        mj = self._mujoco
        r = self._r
        r.update_scene(data, camera=camera)
        self._no_shadows()
        rgb = r.render().copy()
        if hide_groups_in_masks:
            opt = mj.MjvOption()
            for g in hide_groups_in_masks:
                opt.geomgroup[g] = 0
            r.update_scene(data, camera=camera, scene_option=opt)
            self._no_shadows()
        r.enable_segmentation_rendering()
        try:
            seg = r.render()
        finally:
            r.disable_segmentation_rendering()
        # seg[..., 1] is the object type; keep only geoms (mjOBJ_GEOM).
        geom = np.where(seg[..., 1] == int(mj.mjtObj.mjOBJ_GEOM), seg[..., 0], -1).astype(np.int32)
        r.enable_depth_rendering()
        try:
            depth = r.render().astype(np.float32)
        finally:
            r.disable_depth_rendering()
        depth[geom < 0] = np.inf
        return FrameBuffers(rgb=rgb, geom=geom, depth=depth)

    def _no_shadows(self) -> None:
        # Shadows and reflections cost most of the llvmpipe time and add nothing the tracks measure.
        flags = self._r.scene.flags
        flags[self._mujoco.mjtRndFlag.mjRND_SHADOW] = 0
        flags[self._mujoco.mjtRndFlag.mjRND_REFLECTION] = 0

    def close(self) -> None:
        self._r.close()

    def __enter__(self) -> SceneRenderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def geom_object_lut(model: Any, geom_to_object: dict[int, int]) -> np.ndarray:
    """Lookup table geom id → object id (0 for unlisted geoms); index with ``geom + 1``."""
    lut = np.zeros(int(model.ngeom) + 1, dtype=np.int32)
    for g, o in geom_to_object.items():
        lut[g + 1] = o
    return lut
