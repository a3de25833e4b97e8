"""A first-person textured maze: a pinhole ray caster in numpy.

Why hand-written: the scene is a grid of wall blocks, so a per-column DDA (grid traversal)
plus closed-form floor/ceiling/sphere intersections gives an exact pinhole image with
exact depth in a few milliseconds per frame, with no OpenGL context (no display needed)
and bit-identical output on every machine. MuJoCo could render it too, but its offscreen
context needs EGL/OSMesa and is far slower for this purpose.

Geometry (all metres):

* World frame: x east, y north, z up. The maze is a grid of 1 m blocks (each maze cell is
  ``BLOCK x BLOCK`` blocks, so corridors are 3 m wide); block ``(i, j)`` covers
  ``x in [j, j+1]``, ``y in [i, i+1]``; wall blocks are solid from ``z = 0`` to ``WALL_HEIGHT``.
* Camera: OpenCV (x right, y down, z forward), level, at ``EYE_HEIGHT``; yaw ``psi`` is the
  angle of the view direction from +x, counter-clockwise. Camera-to-world rotation has
  columns ``[right, down, forward]`` = ``[(sin psi, -cos psi, 0), (0, 0, -1), (cos psi, sin psi, 0)]``.
* Intrinsics: pixel centres at integer coordinates, ``cx = (W-1)/2``, ``cy = (H-1)/2``,
  ``fx = fy = (W/2) / tan(hfov/2)``. A world point projects with ``K [R^T (X - C)]``.
* Landmarks: coloured spheres floating above eye height; they are the segmented objects
  (mask ids 1..n) and the 3-D points the geometry checks project.

Actions (``games.yaml``): the motion into frame ``t`` is the action of the chunk holding
``t``; translations are in the camera frame at frame ``t-1``, turns change the yaw.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from scenarios.gaming.vocab import maze_spec
from worldolympiad.scenario import CaseGenerator, Rendered
from worldolympiad.types import CameraSpec, Case, Video, even_chunks

logger = logging.getLogger(__name__)

WALL_HEIGHT = 2.0
EYE_HEIGHT = 1.0
BLOCK = 3  # a maze cell is BLOCK x BLOCK one-metre blocks: 3 m corridors leave room to turn and strafe
CLEARANCE = 0.3  # min distance from the camera centre to any wall block (m)
MIN_VIEW_DEPTH = 1.0  # planned chunks end looking at least this far down a corridor (m)
OPPOSITE = {"forward": "back", "back": "forward", "turn_left": "turn_right", "turn_right": "turn_left",
            "strafe_left": "strafe_right", "strafe_right": "strafe_left"}
TEXELS_PER_M = 64
TEXTURE_VARIANTS = 16  # versions of each texture, picked per one-metre cell (see make_textures)
LANDMARK_COLORS: dict[str, tuple[int, int, int]] = {
    "red_sphere": (230, 30, 30),
    "green_sphere": (30, 200, 60),
    "blue_sphere": (40, 80, 240),
}
LANDMARK_RADIUS = 0.25
LANDMARK_HEIGHT = 1.55


# ------------------------------------------------------------------ maze + textures


def make_maze(n: int, rng: np.random.Generator) -> np.ndarray:
    """A perfect maze (randomised depth-first search) on ``(2n+1) x (2n+1)`` cells, each cell
    ``BLOCK x BLOCK`` one-metre blocks: a ``(BLOCK (2n+1))^2`` int grid.

    0 = free; 1..4 = wall material (which texture the block wears).
    """
    size = 2 * n + 1
    grid = np.ones((size, size), dtype=np.int64)
    visited = np.zeros((n, n), dtype=bool)
    stack = [(0, 0)]
    visited[0, 0] = True
    grid[1, 1] = 0
    while stack:
        i, j = stack[-1]
        nbrs = [(i + di, j + dj) for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1))
                if 0 <= i + di < n and 0 <= j + dj < n and not visited[i + di, j + dj]]
        if not nbrs:
            stack.pop()
            continue
        ni, nj = nbrs[int(rng.integers(len(nbrs)))]
        visited[ni, nj] = True
        grid[2 * ni + 1, 2 * nj + 1] = 0
        grid[i + ni + 1, j + nj + 1] = 0  # knock down the wall between the two cells
        stack.append((ni, nj))
    # A few extra openings make loops, so the walk is less often stuck in dead ends.
    for _ in range(n):
        i, j = (int(v) for v in rng.integers(1, size - 1, size=2))
        if grid[i, j] and (i % 2) != (j % 2):
            grid[i, j] = 0
    walls = grid > 0
    grid[walls] = rng.integers(1, 5, size=int(walls.sum()))
    return np.repeat(np.repeat(grid, BLOCK, axis=0), BLOCK, axis=1)


def _brick(h: int, w: int, rng: np.random.Generator, base: tuple[int, int, int], mortar: int, rows: int) -> np.ndarray:
    tex = np.empty((h, w, 3), np.float64)
    tex[:] = mortar
    bh = h // rows
    for r in range(rows):
        off = (w // 4) if r % 2 else 0
        for c in range(-1, 3):
            x0, x1 = c * (w // 2) + off + 1, (c + 1) * (w // 2) + off - 1
            x0, x1 = max(x0, 0), min(x1, w)
            if x1 <= x0:
                continue
            shade = rng.uniform(0.75, 1.15)
            tex[r * bh + 1:(r + 1) * bh - 1, x0:x1] = np.asarray(base) * shade
    tex += rng.normal(0, 8, size=tex.shape)
    return tex


def _stains(s: int, rng: np.random.Generator, count: int) -> np.ndarray:
    """A multiplicative ``[s, s, 1]`` field of soft dark and light blobs (dirt, wear, lamp spots)."""
    yy, xx = np.mgrid[0:s, 0:s].astype(np.float64)
    field = np.ones((s, s))
    for _ in range(count):
        cx, cy = rng.uniform(0, s, size=2)
        r = rng.uniform(0.06, 0.2) * s
        field += rng.choice([-1.0, 1.0]) * rng.uniform(0.2, 0.4) * np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * r * r))
    return np.clip(field, 0.45, 1.5)[..., None]


def make_textures(variants: int = TEXTURE_VARIANTS) -> np.ndarray:
    """Four wall textures + floor + ceiling, each in ``variants`` versions: ``uint8 [6, V, 64, 64, 3]``.

    Fixed (seed-independent). Every one-metre wall block, floor tile and ceiling tile picks its
    version by a hash of its world cell (:func:`variant_index`), so the walls do not repeat with a
    one-metre period. Identical tiles made the scene ambiguous for SfM: a camera walking down a
    corridor was registered a whole tile (about ten steps) away from where it was.
    """
    rng = np.random.default_rng(1234)
    s = TEXELS_PER_M
    t = np.empty((6, variants, s, s, 3), np.float64)
    yy = np.arange(s)[:, None] * np.ones((1, s))
    checker = ((np.arange(s)[:, None] // 16 + np.arange(s)[None, :] // 16) % 2).astype(np.float64)
    floor = ((np.arange(s)[:, None] // 32 + np.arange(s)[None, :] // 32) % 2).astype(np.float64)
    for k in range(variants):
        t[0, k] = _brick(s, s, rng, (170, 70, 50), 200, 8)  # red brick
        t[1, k] = _brick(s, s, rng, (120, 120, 130), 60, 4)  # grey stone blocks
        t[2, k] = np.stack([140 + 30 * np.sin(yy / 3.0), 90 + 20 * np.sin(yy / 3.0), 50 + 0 * yy], -1)  # wood planks
        t[2, k][:, :: s // 4] = 60
        t[2, k] += rng.normal(0, 6, size=(s, s, 3))
        tile = 0.85 + 0.3 * rng.random((4, 4)).repeat(16, 0).repeat(16, 1)[..., None]  # each tile its own glaze
        t[3, k] = np.stack([60 + 120 * checker, 90 + 100 * checker, 160 + 60 * checker], -1) * tile  # blue tiles
        t[4, k] = np.stack([90 + 60 * floor] * 3, -1) + rng.normal(0, 10, size=(s, s, 3))  # floor: 0.5 m checker
        t[5, k] = np.stack([200 + 0 * floor, 195 + 0 * floor, 180 + 0 * floor], -1) + rng.normal(0, 4, size=(s, s, 3))
        for m in range(6):
            t[m, k] *= _stains(s, rng, 3 if m < 5 else 2)
    return np.clip(t, 0, 255).astype(np.uint8)


def variant_index(a: np.ndarray, b: np.ndarray, c: np.ndarray, variants: int = TEXTURE_VARIANTS) -> np.ndarray:
    """A fixed pseudo-random texture version for the integer world cell ``(a, b, c)`` (same shapes)."""
    h = (a.astype(np.int64) * 73856093) ^ (b.astype(np.int64) * 19349663) ^ (c.astype(np.int64) * 83492791)
    return np.mod(h, variants)


# ------------------------------------------------------------------ camera


def intrinsics(height: int, width: int, hfov_deg: float) -> np.ndarray:
    f = (width / 2.0) / math.tan(math.radians(hfov_deg) / 2.0)
    return np.array([[f, 0.0, (width - 1) / 2.0], [0.0, f, (height - 1) / 2.0], [0.0, 0.0, 1.0]])


def camera_to_world(x: float, y: float, yaw: float) -> np.ndarray:
    """4x4 camera-to-world pose (OpenCV axes) of a level camera at ``(x, y, EYE_HEIGHT)``."""
    c, s = math.cos(yaw), math.sin(yaw)
    T = np.eye(4)
    T[:3, 0] = (s, -c, 0.0)  # right
    T[:3, 1] = (0.0, 0.0, -1.0)  # down
    T[:3, 2] = (c, s, 0.0)  # forward
    T[:3, 3] = (x, y, EYE_HEIGHT)
    return T


def project(K: np.ndarray, c2w: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Pixel coordinates ``[N, 2]`` of world points ``[N, 3]`` (no visibility test)."""
    Xc = (np.asarray(X, np.float64) - c2w[:3, 3]) @ c2w[:3, :3]  # R^T (X - C)
    uvw = Xc @ K.T
    return uvw[:, :2] / uvw[:, 2:3]


@dataclass
class Pose2D:
    x: float
    y: float
    yaw: float  # radians


def step_pose(p: Pose2D, action: dict[str, Any]) -> Pose2D:
    """Apply one frame of an action (camera-frame translation [x, y, z], yaw in degrees)."""
    tx, _, tz = action["translation"]
    c, s = math.cos(p.yaw), math.sin(p.yaw)
    # camera right = (s, -c), forward = (c, s) in the world xy plane
    return Pose2D(p.x + tx * s + tz * c, p.y - tx * c + tz * s, p.yaw + math.radians(action["yaw_deg"]))


def clearance_ok(grid: np.ndarray, x: float, y: float, margin: float = CLEARANCE) -> bool:
    """True when the disc of radius ``margin`` around (x, y) touches no wall block."""
    i0, i1 = int(math.floor(y - margin)), int(math.floor(y + margin))
    j0, j1 = int(math.floor(x - margin)), int(math.floor(x + margin))
    for i in range(i0, i1 + 1):
        for j in range(j0, j1 + 1):
            if not (0 <= i < grid.shape[0] and 0 <= j < grid.shape[1]) or grid[i, j]:
                # distance from (x, y) to the block [j, j+1] x [i, i+1]
                dx = max(j - x, 0.0, x - (j + 1))
                dy = max(i - y, 0.0, y - (i + 1))
                if dx * dx + dy * dy < margin * margin:
                    return False
    return True


def free_ahead(grid: np.ndarray, p: Pose2D) -> float:
    """Distance (m) from the camera to the wall straight ahead."""
    D = np.array([[math.cos(p.yaw), math.sin(p.yaw)]])
    return float(_cast_columns(grid, np.array([p.x, p.y]), D)[0][0])


# ------------------------------------------------------------------ renderer


def render_view(grid: np.ndarray, textures: np.ndarray, K: np.ndarray, c2w: np.ndarray, height: int, width: int,
                landmarks: list[tuple[np.ndarray, float, tuple[int, int, int]]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ray-cast one frame.

    Returns:
        rgb ``uint8 [H, W, 3]``, depth ``float32 [H, W]`` (camera z, m), mask ``int32 [H, W]``
        (landmark index + 1, 0 elsewhere).
    """
    R, C = c2w[:3, :3], c2w[:3, 3]
    u = np.arange(width, dtype=np.float64)
    v = np.arange(height, dtype=np.float64)
    xc = (u - K[0, 2]) / K[0, 0]  # [W]
    yc = (v - K[1, 2]) / K[1, 1]  # [H]
    # Horizontal direction per column in world xy, scaled so the DDA parameter is camera depth z.
    D = xc[:, None] * R[:2, 0][None, :] + R[:2, 2][None, :]  # [W, 2]
    wall_z, tex_u, side, material = _cast_columns(grid, C[:2], D)  # [W] each
    hx, hy = C[0] + wall_z * D[:, 0], C[1] + wall_z * D[:, 1]  # where each column's ray meets its wall
    # ---- walls: the ray through (u, v) reaches the wall at depth wall_z with height C_z - yc * z
    Z = np.broadcast_to(wall_z[None, :], (height, width)).copy()  # [H, W]
    hz = C[2] - yc[:, None] * Z
    is_wall = (hz >= 0.0) & (hz <= WALL_HEIGHT)
    s = TEXELS_PER_M
    tv = np.mod(np.floor((WALL_HEIGHT - hz) * s).astype(np.int64), s)  # textures tile every metre
    tu = np.clip((tex_u * s).astype(np.int64), 0, s - 1)
    mat = np.clip(material - 1, 0, 3)
    # the one-metre tile of the face that was hit: the wall block's cell along the face, the face's
    # boundary line across it, and the storey (walls are two tiles high)
    along = np.floor(np.where(side == 0, hy, hx)).astype(np.int64)  # [W]
    across = np.rint(np.where(side == 0, hx, hy)).astype(np.int64) * 2 + side  # [W]
    storey = np.floor(np.clip(hz, 0.0, WALL_HEIGHT - 1e-9)).astype(np.int64)  # [H, W]
    var = variant_index(along[None, :], across[None, :], storey, textures.shape[1])
    rgb = textures[mat[None, :], var, tv, tu[None, :]].astype(np.float64)  # [H, W, 3]
    rgb *= np.where(side == 1, 0.8, 1.0)[None, :, None]  # y-facing walls darker: corners read as corners
    # ---- floor (rays going down) and ceiling (rays going up) in front of the wall
    with np.errstate(divide="ignore", invalid="ignore"):
        z_floor = np.where(yc > 0, C[2] / yc, np.inf)  # [H]
        z_ceil = np.where(yc < 0, (C[2] - WALL_HEIGHT) / yc, np.inf)
    z_plane = np.minimum(z_floor, z_ceil)[:, None] * np.ones((1, width))
    plane = ~is_wall
    Z[plane] = z_plane[plane]
    px = C[0] + Z * (xc[None, :] * R[0, 0] + R[0, 2])
    py = C[1] + Z * (xc[None, :] * R[1, 0] + R[1, 2])
    fu = np.mod(np.floor(px * s).astype(np.int64), s)
    fv = np.mod(np.floor(py * s).astype(np.int64), s)
    which = np.where(yc[:, None] > 0, 4, 5) * np.ones((1, width), np.int64)
    var = variant_index(np.floor(px).astype(np.int64), np.floor(py).astype(np.int64), which, textures.shape[1])
    rgb[plane] = textures[which[plane], var[plane], fv[plane], fu[plane]]
    # ---- landmark spheres: |C + z d - S|^2 = r^2 with d = R [xc, yc, 1]
    mask = np.zeros((height, width), np.int32)
    d = np.stack([np.broadcast_to(xc[None, :], (height, width)), np.broadcast_to(yc[:, None], (height, width)),
                  np.ones((height, width))], -1) @ R.T  # [H, W, 3]
    a = np.einsum("hwc,hwc->hw", d, d)
    for k, (S, r, color) in enumerate(landmarks):
        oc = C - S
        b = 2.0 * d @ oc
        c = float(oc @ oc - r * r)
        disc = b * b - 4 * a * c
        hit = disc >= 0
        zs = np.where(hit, (-b - np.sqrt(np.maximum(disc, 0))) / (2 * a), np.inf)
        hit &= (zs > 0) & (zs < Z)
        if not hit.any():
            continue
        n = (C[None, None, :] + zs[..., None] * d - S) / r  # unit normals
        shade = 0.55 + 0.45 * np.clip(n[..., 2] * 0.6 + 0.4, 0, 1)  # lit from above
        rgb[hit] = np.asarray(color, np.float64)[None, :] * shade[hit][:, None]
        Z[hit] = zs[hit]
        mask[hit] = k + 1
    # distance attenuation: a depth cue that keeps far corridors from looking like near walls
    rgb *= (1.0 / (1.0 + 0.08 * Z))[..., None] * 1.1
    return np.clip(rgb, 0, 255).astype(np.uint8), Z.astype(np.float32), mask


def _cast_columns(grid: np.ndarray, origin: np.ndarray, D: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Grid traversal (Amanatides & Woo) of one ray per column, all columns at once.

    Args:
        grid: maze grid, non-zero = wall block.
        origin: camera position ``[2]`` (x, y).
        D: per-column direction ``[W, 2]`` scaled so the parameter is camera depth.

    Returns:
        depth of the first wall ``[W]``, texture coordinate along the wall in [0, 1) ``[W]``,
        side (0 = hit an x-facing face, 1 = y-facing) ``[W]``, wall material ``[W]``.
    """
    W = D.shape[0]
    cell = np.floor(origin).astype(np.int64)[None, :].repeat(W, 0)  # [W, 2] (x=j, y=i)
    with np.errstate(divide="ignore"):
        delta = np.abs(1.0 / D)  # depth to cross one cell along x / y
    step = np.where(D >= 0, 1, -1)
    next_b = np.where(D >= 0, cell + 1 - origin, origin - cell) * delta  # depth to the first boundary
    depth = np.full(W, np.inf)
    side = np.zeros(W, np.int64)
    material = np.zeros(W, np.int64)
    active = np.ones(W, bool)
    for _ in range(4 * sum(grid.shape)):
        if not active.any():
            break
        go_x = next_b[:, 0] < next_b[:, 1]
        z_now = np.where(go_x, next_b[:, 0], next_b[:, 1])
        cell[:, 0] += np.where(active & go_x, step[:, 0], 0)
        cell[:, 1] += np.where(active & ~go_x, step[:, 1], 0)
        next_b[:, 0] += np.where(active & go_x, delta[:, 0], 0)
        next_b[:, 1] += np.where(active & ~go_x, delta[:, 1], 0)
        inside = (cell[:, 0] >= 0) & (cell[:, 0] < grid.shape[1]) & (cell[:, 1] >= 0) & (cell[:, 1] < grid.shape[0])
        m = np.where(inside, grid[np.clip(cell[:, 1], 0, grid.shape[0] - 1), np.clip(cell[:, 0], 0, grid.shape[1] - 1)], 1)
        hit = active & (m > 0)
        depth[hit] = z_now[hit]
        side[hit] = np.where(go_x[hit], 0, 1)
        material[hit] = m[hit]
        active &= ~hit
    hx = origin[0] + depth * D[:, 0]
    hy = origin[1] + depth * D[:, 1]
    tex_u = np.where(side == 0, hy - np.floor(hy), hx - np.floor(hx))
    return depth, tex_u, side, material


# ------------------------------------------------------------------ generator


class MazeGenerator(CaseGenerator):
    """First-person walk through a textured maze; the camera moves with the actions.

    Params (all optional): ``resolution`` [H, W] (64x64), ``num_frames`` (32), ``fps`` (15),
    ``num_chunks`` (4), ``maze_size`` (cells per side, 4), ``hfov_deg`` (90), ``actions``
    (one action name per chunk; default: a seeded collision-free plan).
    """

    name: ClassVar[str] = "gaming.maze"
    version: ClassVar[str] = "2"
    accepted_params: ClassVar[frozenset[str]] = frozenset({'actions', 'fps', 'hfov_deg', 'maze_size', 'num_chunks', 'num_frames', 'resolution'})

    def _world(self, seed: int, n: int) -> tuple[np.ndarray, Pose2D, list[tuple[str, np.ndarray]]]:
        rng = np.random.default_rng([seed, 7])
        grid = make_maze(n, rng)
        # room centres: the middle of the maze cells with odd indices (always free)
        cells = np.array([(i, j) for i in range(1, 2 * n + 1, 2) for j in range(1, 2 * n + 1, 2)])
        centre = lambda c: (BLOCK * (c[1] + 0.5), BLOCK * (c[0] + 0.5))  # noqa: E731 - (x, y) metres
        order = rng.permutation(len(cells))
        x, y = centre(cells[order[0]])
        # face the most open of the four directions
        yaws = (0.0, 0.5 * math.pi, math.pi, 1.5 * math.pi)
        best_yaw = max(yaws, key=lambda yaw: free_ahead(grid, Pose2D(x, y, yaw)))
        start = Pose2D(x, y, best_yaw)
        landmarks = []
        # the first landmark floats down the starting corridor (seen from frame 0), the others in random rooms
        ahead = free_ahead(grid, start)
        side = float(rng.uniform(-0.6, 0.6))
        d = min(max(1.5, ahead - 1.0), 3.5)
        first = (x + d * math.cos(best_yaw) - side * math.sin(best_yaw), y + d * math.sin(best_yaw) + side * math.cos(best_yaw))
        for k, name in enumerate(LANDMARK_COLORS):
            lx, ly = first if k == 0 else centre(cells[order[k]])
            landmarks.append((name, np.array([lx, ly, LANDMARK_HEIGHT])))
        return grid, start, landmarks

    def _plan(self, grid: np.ndarray, start: Pose2D, chunks_len: list[int], rng: np.random.Generator,
              vocab: dict[str, Any], fixed: list[str] | None) -> tuple[list[str], list[Pose2D]]:
        """Choose one held action per chunk: collision-free, ending with a view down a corridor.

        Among the actions whose whole chunk keeps ``CLEARANCE`` from every wall, the score
        prefers walking forward, a long free view at the end, variety (not repeating or undoing
        the previous chunk); a seeded jitter breaks ties, so seeds give different walks.
        """
        poses = [start]
        actions: list[str] = []
        for k, n in enumerate(chunks_len):
            moves = n if k > 0 else n - 1  # frame 0 is the start pose
            best: tuple[float, str, list[Pose2D]] | None = None
            for name in (fixed[k],) if fixed is not None else tuple(vocab):
                trial = [poses[-1]]
                for _ in range(moves):
                    trial.append(step_pose(trial[-1], vocab[name]))
                if not all(clearance_ok(grid, p.x, p.y) for p in trial[1:]):
                    if fixed is not None:
                        raise ValueError(f"{self.name}: the given action {name!r} of chunk {k} walks into a wall of "
                                         "this seed's maze; change it or omit 'actions' to let the planner choose")
                    continue
                view = min(free_ahead(grid, trial[-1]), 6.0)
                repeats = 0
                while repeats < len(actions) and actions[-1 - repeats] == name:
                    repeats += 1
                score = 0.3 * min(view, 4.0) + (0.5 if name == "forward" else 0.0) - (0.5 if name == "back" else 0.0)
                score -= 3.0 if actions and OPPOSITE[name] == actions[-1] else 0.0
                score -= 1.5 * repeats  # variety: every action should be seen being followed
                score -= 2.0 if view < MIN_VIEW_DEPTH else 0.0
                score += float(rng.uniform(0.0, 3.0))
                if best is None or score > best[0]:
                    best = (score, name, trial)
            if best is None:  # boxed in (not seen with 3 m corridors): turning in place is always safe
                name = "turn_left"
                trial = [poses[-1]]
                for _ in range(moves):
                    trial.append(step_pose(trial[-1], vocab[name]))
                best = (0.0, name, trial)
            actions.append(best[1])
            poses.extend(best[2][1:])
        return actions, poses

    def make_case(self, case_id: str, *, seed: int = 0, **params: Any) -> Case:
        unknown = set(params) - self.accepted_params
        if unknown:
            raise ValueError(f"{self.name}: unknown params {sorted(unknown)}; accepted: {sorted(self.accepted_params)}")
        spec = maze_spec()
        vocab = spec["actions"]
        h, w = (int(v) for v in params.get("resolution", (64, 64)))
        num_frames = int(params.get("num_frames", 32))
        fps = float(params.get("fps", 15))
        num_chunks = int(params.get("num_chunks", 4))
        n = int(params.get("maze_size", 4))
        hfov = float(params.get("hfov_deg", 90.0))
        fixed = params.get("actions")
        if fixed is not None:
            fixed = [str(a) for a in fixed]
            bad = [a for a in fixed if a not in vocab]
            if bad or len(fixed) != num_chunks:
                raise ValueError(f"{self.name}: actions must be {num_chunks} names from {sorted(vocab)}, got {fixed}")
        grid, start, landmarks = self._world(seed, n)
        chunks0 = even_chunks(num_frames, num_chunks)
        actions, poses = self._plan(grid, start, [c.num_frames for c in chunks0], np.random.default_rng([seed, 11]),
                                    vocab, fixed)
        captions = [vocab[a]["caption"] + " through the maze" for a in actions]
        chunks = even_chunks(num_frames, num_chunks, captions=captions, actions=actions)
        K = intrinsics(h, w, hfov)
        traj = np.stack([camera_to_world(p.x, p.y, p.yaw) for p in poses])
        resolved = {"resolution": [h, w], "num_frames": num_frames, "fps": fps, "num_chunks": num_chunks,
                    "maze_size": n, "hfov_deg": hfov, "actions": actions}
        return Case(
            id=case_id,
            scenario="gaming",
            fps=fps,
            num_frames=num_frames,
            resolution=(h, w),
            prompt="First-person view walking through a maze of brick, stone, wood and tiled walls with floating "
                   "coloured spheres: " + "; then ".join(vocab[a]["caption"] for a in actions) + ".",
            chunks=chunks,
            camera=CameraSpec.from_arrays(K, traj),
            tracks=("geometry", "interaction", "longvideo"),
            metadata={
                "generator": self.name,
                "generator_version": self.version,
                "seed": seed,
                "params": resolved,
                "game": "maze",
                "action_space": {
                    "kind": "camera",
                    "units": "per video frame: translation metres in the camera frame (OpenCV: x right, "
                             "y down, z forward), yaw_deg degrees (+ = turn left)",
                    "actions": {k: {"translation": list(v["translation"]), "yaw_deg": v["yaw_deg"],
                                    "caption": v["caption"]} for k, v in vocab.items()},
                },
                "landmarks": {name: {"position": [float(c) for c in pos], "radius": LANDMARK_RADIUS,
                                     "color": list(LANDMARK_COLORS[name])} for name, pos in landmarks},
                "ground_truth": {"camera": "exact K and camera-to-world poses", "depth": "camera z (m)",
                                 "masks": "landmark spheres 1..3"},
            },
        )

    def render(self, case: Case) -> Rendered:
        p = case.metadata["params"]
        grid, _, landmarks = self._world(int(case.metadata["seed"]), int(p["maze_size"]))
        assert case.camera is not None
        K, poses = case.camera.K, case.camera.poses
        h, w = case.resolution
        textures = make_textures()
        lms = [(pos, LANDMARK_RADIUS, LANDMARK_COLORS[name]) for name, pos in landmarks]
        frames = np.empty((case.num_frames, h, w, 3), np.uint8)
        depth = np.empty((case.num_frames, h, w), np.float32)
        masks = np.empty((case.num_frames, h, w), np.int32)
        for t in range(case.num_frames):
            frames[t], depth[t], masks[t] = render_view(grid, textures, K, poses[t], h, w, lms)
        states = {
            "camera": {"position": poses[:, :3, 3], "yaw_deg": np.degrees(np.arctan2(poses[:, 1, 2], poses[:, 0, 2]))},
            "objects": {name: {"position": np.repeat(pos[None], case.num_frames, 0)} for name, pos in landmarks},
            "maze_grid": grid,
        }
        return Rendered(video=Video(frames=frames, fps=case.fps, chunks=case.chunks), masks=masks,
                        object_ids={name: k + 1 for k, (name, _) in enumerate(landmarks)}, depth=depth,
                        camera=case.camera, states=states)


maze = MazeGenerator()
