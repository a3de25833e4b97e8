"""``heldout.photo_camera``: a real photograph seen by a pinhole camera that yaws and walks forward.

Held out from every tuning scene: the camera tracks were tuned on MuJoCo room fly-throughs and a
ray-cast maze, the long-video tests on a crop panned over scikit-image's astronaut. Here a real photo
(``coffee``, ``chelsea``, ``rocket``, ``immunohistochemistry``, ``hubble_deep_field``; never the
astronaut) hangs as a plane 1 m in front of a pinhole camera; each chunk the camera either turns (large
yaw sweeps, + = left) or walks forward toward the plane. Frames are the exact plane-induced homography
of each pose (OpenCV ``remap``; the photo is mirrored beyond its edges so sweeps never show a border).

Actions use the fly-through's camera vocabulary: ``{"name": "camera", "translation": [x, y, z] (metres,
camera frame at the chunk's start, z forward), "yaw_deg": d}`` per chunk. Tracks: interaction and long
video (a plane seen under pure rotation has no parallax, so geometry does not apply).

Params: ``resolution`` [H, W], ``num_frames``, ``fps``, ``num_chunks``, ``photo``, ``motions`` (one of
``yaw_left | yaw_right | forward`` per chunk, default alternating sweeps), ``yaw_deg`` (per chunk, 30),
``forward_m`` (per chunk, 0.25), ``hfov_deg`` (60).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from scenarios._params import choice_param, video_params
from worldolympiad.scenario import CaseGenerator, Rendered
from worldolympiad.types import CameraSpec, Case, Video, even_chunks

PHOTOS: tuple[str, ...] = ("coffee", "chelsea", "rocket", "immunohistochemistry", "hubble_deep_field")
MOTIONS: tuple[str, ...] = ("yaw_left", "yaw_right", "forward")
PLANE_DEPTH = 1.0  # metres from the first camera position to the photo plane
CAPTIONS = {"yaw_left": "the camera turns left", "yaw_right": "the camera turns right",
            "forward": "the camera moves forward"}


def _rot_y(yaw_deg: float) -> np.ndarray:
    """Camera-to-world rotation after turning ``yaw_deg`` left (OpenCV: x right, y down, z forward)."""
    a = math.radians(yaw_deg)
    # turning left swings the forward axis toward -x
    return np.array([[math.cos(a), 0.0, -math.sin(a)], [0.0, 1.0, 0.0], [math.sin(a), 0.0, math.cos(a)]])


class PhotoCamera(CaseGenerator):
    """A virtual camera turning and walking in front of a real photograph."""

    name: ClassVar[str] = "heldout.photo_camera"
    version: ClassVar[str] = "1"
    tracks: ClassVar[tuple[str, ...]] = ("interaction", "longvideo")

    def _setup(self, seed: int, params: dict[str, Any]) -> dict[str, Any]:
        res, T, fps, nc = video_params(params, min_side=32, default_fps=15.0)
        rng = np.random.default_rng([seed, 77])
        photo = choice_param(params, "photo", PHOTOS[int(rng.integers(len(PHOTOS)))], PHOTOS, " (scikit-image data)")
        motions = list(params.get("motions") or [("yaw_left", "yaw_right")[i % 2] for i in range(nc)])
        if len(motions) != nc or any(m not in MOTIONS for m in motions):
            raise ValueError(f"motions must list one of {MOTIONS} per chunk ({nc}), got {motions!r}")
        yaw_step, fwd_step = float(params.get("yaw_deg", 30.0)), float(params.get("forward_m", 0.25))
        hfov = float(params.get("hfov_deg", 60.0))
        H, W = res
        fx = 0.5 * W / math.tan(math.radians(hfov) / 2)
        K = np.array([[fx, 0.0, (W - 1) / 2], [0.0, fx, (H - 1) / 2], [0.0, 0.0, 1.0]])
        chunks = even_chunks(T, nc)
        yaw, pos = np.zeros(T), np.zeros((T, 3))
        for c, m in zip(chunks, motions, strict=True):
            n = c.frame_end - c.frame_start
            base_yaw, base_pos = (yaw[c.frame_start - 1], pos[c.frame_start - 1]) if c.frame_start else (0.0, np.zeros(3))
            # chunk k moves from its first frame's pose to its last; the step is spread over the chunk's frames
            u = np.arange(1, n + 1) / n if c.frame_start else np.arange(n) / max(1, n - 1)
            d_yaw = {"yaw_left": yaw_step, "yaw_right": -yaw_step}.get(m, 0.0)
            yaw[c.frame_start:c.frame_end] = base_yaw + d_yaw * u
            heading = _rot_y(base_yaw)[:, 2]  # walk along the camera's own forward axis
            pos[c.frame_start:c.frame_end] = base_pos + (fwd_step if m == "forward" else 0.0) * u[:, None] * heading
        if pos[:, 2].max() >= 0.8 * PLANE_DEPTH:
            raise ValueError(f"the camera walks to {pos[:, 2].max():.2f} m of a photo plane {PLANE_DEPTH} m away; "
                             "use a smaller forward_m")
        poses = np.repeat(np.eye(4)[None], T, axis=0)
        for k in range(T):
            poses[k, :3, :3] = _rot_y(yaw[k])
            poses[k, :3, 3] = pos[k]
        return {"res": res, "T": T, "fps": fps, "nc": nc, "photo": photo, "motions": motions, "K": K, "poses": poses,
                "chunks": chunks, "hfov": hfov}

    def make_case(self, case_id: str, *, seed: int = 0, **params: Any) -> Case:
        s = self._setup(seed, params)
        actions, captions = [], []
        for c, m in zip(s["chunks"], s["motions"], strict=True):
            a, b = s["poses"][c.frame_start], s["poses"][c.frame_end - 1]
            rel = np.linalg.inv(a) @ b
            dyaw = math.degrees(math.atan2(-rel[0, 2], rel[2, 2]))  # + = the forward axis swung toward -x (left)
            actions.append({"name": "camera", "translation": np.round(rel[:3, 3], 4).tolist(), "yaw_deg": round(dyaw, 3)})
            captions.append(CAPTIONS[m])
        return Case(
            id=case_id, scenario="realworld", fps=s["fps"], num_frames=s["T"], resolution=s["res"],
            prompt=f"A camera looks at a photograph ({s['photo'].replace('_', ' ')}) on a wall. "
                   + " ".join(("First, " if i == 0 else "Then, ") + c + "." for i, c in enumerate(captions)),
            chunks=even_chunks(s["T"], s["nc"], captions=captions, actions=actions),
            camera=CameraSpec.from_arrays(s["K"], s["poses"]),
            tracks=self.tracks,
            metadata={"generator": self.name, "generator_version": self.version, "seed": seed, "params": dict(params),
                      "split": "heldout"},
        )

    def render(self, case: Case) -> Rendered:
        import cv2
        from skimage import data

        s = self._setup(int(case.metadata.get("seed", 0)), dict(case.metadata.get("params") or {}))
        H, W = s["res"]
        img = getattr(data, s["photo"])()
        if img.ndim == 2:
            img = np.repeat(img[..., None], 3, axis=2)
        img = np.ascontiguousarray(img[..., :3])
        ph, pw = img.shape[:2]
        # the photo spans the first view's width at the plane (1.15 x, so the first frame is all photo)
        half_w = 1.15 * PLANE_DEPTH * math.tan(math.radians(s["hfov"]) / 2)
        px_per_m = (pw / 2) / half_w
        Kinv = np.linalg.inv(s["K"])
        u, v = np.meshgrid(np.arange(W, dtype=np.float64), np.arange(H, dtype=np.float64))
        rays = np.stack([u, v, np.ones_like(u)], -1) @ Kinv.T  # [H, W, 3] camera frame
        frames = np.empty((s["T"], H, W, 3), np.uint8)
        for k, pose in enumerate(s["poses"]):
            d = rays @ pose[:3, :3].T  # world directions
            c = pose[:3, 3]
            t = (PLANE_DEPTH - c[2]) / np.maximum(d[..., 2], 1e-6)
            X, Y = c[0] + t * d[..., 0], c[1] + t * d[..., 1]
            mx = (pw / 2 + X * px_per_m).astype(np.float32)
            my = (ph / 2 + Y * px_per_m).astype(np.float32)
            frames[k] = cv2.remap(img, mx, my, cv2.INTER_AREA if px_per_m > W else cv2.INTER_LINEAR,
                                  borderMode=cv2.BORDER_REFLECT_101)
        return Rendered(video=Video(frames, s["fps"], chunks=case.chunks, metadata={"generator": self.name}),
                        camera=CameraSpec.from_arrays(s["K"], s["poses"]),
                        states={"yaw_deg": [float(math.degrees(math.atan2(-p[0, 2], p[2, 2]))) for p in s["poses"]],
                                "forward_m": s["poses"][:, 2, 3]})


PHOTO_CAMERA = PhotoCamera()
