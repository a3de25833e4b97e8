"""Shared fixtures: small real-texture videos (scikit-image photos panned by a moving crop)."""

from __future__ import annotations

import numpy as np
import pytest


def pan_video(num_frames: int = 100, size: int = 48, speed: float = 1.0, image: str = "astronaut",
              oscillate: bool = False) -> np.ndarray:
    """A camera pan over a real photo: ``uint8 [T, size, size, 3]``, ``speed`` pixels per frame.

    ``oscillate=True`` pans back and forth (period 20 frames) so the content statistics are
    stationary: the clean video then has (almost) no drift of its own.
    """
    import cv2
    from skimage import data

    img = getattr(data, image)()
    img = cv2.resize(img, (size * 3, size * 3), interpolation=cv2.INTER_AREA)
    frames = []
    for t in range(num_frames):
        x = 10.0 * speed * np.sin(2 * np.pi * t / 20) + 10.0 if oscillate else speed * t
        m = np.float32([[1, 0, -x], [0, 1, -size * 0.5]])
        frames.append(cv2.warpAffine(img, m, (size, size), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT))
    return np.stack(frames)


def blur_drift(frames: np.ndarray, strength: float) -> np.ndarray:
    """Gaussian blur growing linearly in time up to sigma = 3 * strength at the last frame."""
    import cv2

    out = frames.copy()
    for t in range(len(frames)):
        sigma = 3.0 * strength * t / max(1, len(frames) - 1)
        if sigma > 0.05:
            out[t] = cv2.GaussianBlur(frames[t], (0, 0), sigma)
    return out


def color_drift(frames: np.ndarray, strength: float) -> np.ndarray:
    """A warm colour cast growing linearly in time (R up, B down by up to 80 * strength)."""
    out = frames.astype(np.float32)
    ramp = np.linspace(0, 1, len(frames))[:, None, None] * 80.0 * strength
    out[..., 0] += ramp
    out[..., 2] -= ramp
    return np.clip(out, 0, 255).astype(np.uint8)


@pytest.fixture(scope="session")
def pan() -> np.ndarray:
    return pan_video()


@pytest.fixture(scope="session")
def stationary() -> np.ndarray:
    return pan_video(oscillate=True)


class _Synth:
    pan_video = staticmethod(pan_video)
    blur_drift = staticmethod(blur_drift)
    color_drift = staticmethod(color_drift)


@pytest.fixture(scope="session")
def synth() -> type[_Synth]:
    """The helpers above (conftest is not importable under --import-mode=importlib)."""
    return _Synth
