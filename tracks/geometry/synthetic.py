"""A tiny exact fly-through renderer for tests and benches (no simulator needed).

A camera flies inside a box room whose six walls carry random painted textures (discs and
bars on a noisy base, so SIFT finds corners and a splat fit can still reproduce them).
Every pixel is ray-cast analytically, so poses, intrinsics and depth are exact. The
scenario package's ``flythrough.*`` generators (MuJoCo) are the real cases; this exists so
the geometry track's own tests do not depend on another package's renderer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ROOM_LO = np.array([-2.0, -1.5, -2.5])
ROOM_HI = np.array([2.0, 1.5, 2.5])


@dataclass
class FlyThrough:
    """Frames ``uint8 [T, H, W, 3]``, intrinsics ``[3, 3]``, camera-to-world poses ``[T, 4, 4]``, depth ``[T, H, W]``."""

    frames: np.ndarray
    K: np.ndarray
    poses: np.ndarray
    depth: np.ndarray


def wall_textures(seed: int = 0, size: int = 256) -> list[np.ndarray]:
    """Six RGB float textures ``[size, size, 3]`` in [0, 1]."""
    import cv2

    rng = np.random.default_rng(seed)
    out = []
    for _ in range(6):
        base = rng.uniform(0.2, 0.8, 3)
        tex = np.ones((size, size, 3), np.float32) * base.astype(np.float32)
        noise = cv2.GaussianBlur(rng.normal(0, 0.15, (size, size, 3)).astype(np.float32), (0, 0), 6)
        tex = tex + noise
        for _ in range(40):
            c = rng.uniform(0, 1, 3).tolist()
            if rng.random() < 0.6:
                cv2.circle(tex, tuple(int(v) for v in rng.integers(0, size, 2)), int(rng.integers(6, 28)), c, -1)
            else:
                p = rng.integers(0, size, 2)
                q = p + rng.integers(8, 48, 2)
                cv2.rectangle(tex, tuple(int(v) for v in p), tuple(int(v) for v in q), c, -1)
        out.append(np.clip(cv2.GaussianBlur(tex, (0, 0), 1.0), 0, 1))
    return out


def look_at(eye: np.ndarray, target: np.ndarray, up: np.ndarray = np.array([0.0, -1.0, 0.0])) -> np.ndarray:
    """Camera-to-world pose (OpenCV: x right, y down, z forward) at ``eye`` looking at ``target``."""
    z = target - eye
    z = z / np.linalg.norm(z)
    x = np.cross(up, z)
    x = x / np.linalg.norm(x)
    y = np.cross(z, x)
    P = np.eye(4)
    P[:3, 0], P[:3, 1], P[:3, 2], P[:3, 3] = x, y, z, eye
    return P


def default_path(num_frames: int) -> np.ndarray:
    """A gentle curved fly-through ``[T, 4, 4]``: forward, sideways and a slow yaw."""
    s = np.linspace(0.0, 1.0, num_frames)
    eyes = np.stack([-0.9 + 1.6 * s, 0.25 * np.sin(np.pi * s), -1.2 + 1.4 * s], 1)
    targets = np.stack([0.6 * np.sin(1.5 * np.pi * s), 0.1 * np.cos(np.pi * s), np.full_like(s, 3.0)], 1)
    return np.stack([look_at(e, t) for e, t in zip(eyes, targets, strict=True)])


def render_poses(poses: np.ndarray, K: np.ndarray, height: int, width: int, textures: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Ray-cast the room for each pose: ``(frames uint8 [T, H, W, 3], depth float32 [T, H, W])``."""
    import cv2

    ys, xs = np.meshgrid(np.arange(height) + 0.5, np.arange(width) + 0.5, indexing="ij")
    pix = np.stack([xs, ys, np.ones_like(xs)], -1).reshape(-1, 3)  # [P, 3]
    rays_cam = pix @ np.linalg.inv(K).T  # [P, 3], z = 1
    frames, depths = [], []
    size = textures[0].shape[0]
    for P in poses:
        o = P[:3, 3]
        d = rays_cam @ P[:3, :3].T  # [P, 3]
        with np.errstate(divide="ignore", invalid="ignore"):
            t_hi = (ROOM_HI - o) / d
            t_lo = (ROOM_LO - o) / d
        t_exit = np.where(d > 0, t_hi, t_lo)
        t_exit = np.where(np.isfinite(t_exit) & (t_exit > 0), t_exit, np.inf)
        axis = np.argmin(t_exit, 1)
        t = t_exit[np.arange(len(d)), axis]
        hit = o + t[:, None] * d
        positive = d[np.arange(len(d)), axis] > 0
        wall = axis * 2 + positive.astype(int)  # 0..5
        img = np.zeros((len(d), 3), np.float32)
        for w in range(6):
            sel = wall == w
            if not sel.any():
                continue
            a = w // 2
            u_ax, v_ax = [i for i in range(3) if i != a]
            u = (hit[sel, u_ax] - ROOM_LO[u_ax]) / (ROOM_HI[u_ax] - ROOM_LO[u_ax]) * (size - 1)
            v = (hit[sel, v_ax] - ROOM_LO[v_ax]) / (ROOM_HI[v_ax] - ROOM_LO[v_ax]) * (size - 1)
            samp = cv2.remap(textures[w], u.astype(np.float32)[:, None], v.astype(np.float32)[:, None],
                             cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
            img[sel] = samp.reshape(-1, 3)
        frames.append((np.clip(img, 0, 1) * 255 + 0.5).astype(np.uint8).reshape(height, width, 3))
        depths.append((t * rays_cam[:, 2]).astype(np.float32).reshape(height, width))
    return np.stack(frames), np.stack(depths)


def intrinsics(height: int, width: int, fov_x_deg: float = 75.0) -> np.ndarray:
    f = 0.5 * width / np.tan(np.radians(fov_x_deg) / 2)
    return np.array([[f, 0, width / 2], [0, f, height / 2], [0, 0, 1.0]])


def fly_through(num_frames: int = 24, height: int = 64, width: int = 64, seed: int = 0) -> FlyThrough:
    """Render the default fly-through of the textured room."""
    K = intrinsics(height, width)
    poses = default_path(num_frames)
    frames, depth = render_poses(poses, K, height, width, wall_textures(seed))
    return FlyThrough(frames=frames, K=K, poses=poses, depth=depth)
