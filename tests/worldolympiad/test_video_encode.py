"""The users' encoder (``encode_like_users``) and the encoding probe (``probe_encoding``)."""

from __future__ import annotations

import numpy as np
import pytest

from worldolympiad.video.io import encode_like_users, probe_encoding, read_video, write_video


@pytest.fixture(scope="module")
def frames() -> np.ndarray:
    """A 12-frame pan over a real photo with a saturated 2 px dot (what 4:2:0 smears)."""
    import cv2
    from skimage import data

    base = cv2.resize(data.astronaut(), (64, 64), interpolation=cv2.INTER_AREA)
    out = np.stack([np.roll(base, t, axis=1) for t in range(12)])
    out[:, 10:12, 10:12] = (255, 0, 0)
    return out


def test_crf23_writes_lossy_420_that_decodes_at_the_same_size(frames, tmp_path):
    path = encode_like_users(tmp_path / "a.mp4", frames, 15.0, crf=23)
    info = probe_encoding(path)
    assert (info["codec"], info["pix_fmt"], info["chroma"], info["lossless"]) == ("h264", "yuv420p", "4:2:0", False)
    assert "crf=23" in info["settings"]
    dec = read_video(path).frames
    assert dec.shape == frames.shape
    err = np.abs(dec.astype(int) - frames.astype(int)).mean()
    assert 0.5 < err < 10.0  # lossy, but the same picture


def test_crf35_with_resize_rounds_to_even_size(frames, tmp_path):
    path = encode_like_users(tmp_path / "b.mp4", frames[:, :, :62], 15.0, crf=35, scale=0.75)
    info = probe_encoding(path)
    assert (info["height"], info["width"]) == (48, 46)  # 64 * 0.75 = 48, 62 * 0.75 = 46.5 -> 46
    assert "crf=35" in info["settings"]
    assert read_video(path).frames.shape == (12, 48, 46, 3)


def test_lossless_stays_exact_and_is_reported_lossless(frames, tmp_path):
    path = write_video(tmp_path / "c.mp4", frames, 15.0, lossless=True)
    info = probe_encoding(path)
    assert info["lossless"] is True and info["chroma"] == "4:4:4"
    assert np.array_equal(read_video(path).frames, frames)


def test_evaluator_storage_qp18_444_is_lossy_but_full_chroma(frames, tmp_path):
    info = probe_encoding(write_video(tmp_path / "d.mp4", frames, 15.0, pix_fmt="yuv444p"))
    assert info["chroma"] == "4:4:4" and info["lossless"] is False


def test_encoder_rejects_bad_arguments(frames, tmp_path):
    with pytest.raises(ValueError, match="crf must be in 0..51"):
        encode_like_users(tmp_path / "e.mp4", frames, 15.0, crf=60)
    with pytest.raises(ValueError, match="scale must be positive"):
        encode_like_users(tmp_path / "e.mp4", frames, 15.0, scale=0)
    with pytest.raises(ValueError, match="uint8"):
        encode_like_users(tmp_path / "e.mp4", frames.astype(np.float32), 15.0)


_REPEAT_SCRIPT = """
import hashlib, sys
import cv2, numpy as np
from skimage import data
from worldolympiad.video.io import encode_like_users
base = data.astronaut()  # a 32-frame zoom into a photo: content that made x264's SIMD paths differ
frames = np.stack([cv2.resize(base[8 * t:512 - 8 * t, 8 * t:512 - 8 * t], (96, 96), interpolation=cv2.INTER_AREA)
                   for t in range(32)])
print(hashlib.sha256(encode_like_users(sys.argv[1], frames, 8.0, crf=23).read_bytes()).hexdigest())
"""


def test_the_users_encoder_writes_the_same_bytes_whatever_the_heap_holds(tmp_path):
    """x264's SIMD paths read uninitialised memory: with them, a 96 px clip encoded to other bytes when the
    heap held other garbage (MALLOC_PERTURB_ here; a MuJoCo render earlier in the process did the same in
    CI, and a geometry score moved by 0.05). The encoder must repeat byte for byte."""
    import os
    import subprocess
    import sys

    digests = set()
    for k, perturb in enumerate(("", "1", "77", "165")):
        env = {**os.environ, "MALLOC_PERTURB_": perturb}
        out = subprocess.run([sys.executable, "-c", _REPEAT_SCRIPT, str(tmp_path / f"{k}.mp4")], env=env,
                             capture_output=True, text=True, check=True)
        digests.add(out.stdout.strip())
    assert len(digests) == 1, digests
