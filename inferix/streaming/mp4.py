"""Write frames to an H.264 mp4 as blocks arrive (PyAV), so a long video never sits in memory."""

from __future__ import annotations

import logging
from fractions import Fraction
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)


class Mp4Writer:
    """Streaming H.264 writer, deterministic: one x264 thread at a constant quantizer, so the same
    frames give the same bytes (x264's CRF rate control did not: its macroblock tree encoded one
    clip to several different files from call to call; ``worldolympiad.video.io.write_video``
    has the measurements).

    Args:
        path: output ``.mp4``.
        fps: frames per second.
        qp: x264 constant quantizer (lower = better; 0 = lossless in yuv420p; 18 is about as good
            as CRF 18, visually lossless).

    Odd frame sizes are padded by one pixel (yuv420p needs even sizes); the first frame
    fixes the size.
    """

    def __init__(self, path: str | Path, fps: float, qp: int = 18) -> None:
        import av

        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fps = fps
        self._container: Any = av.open(str(self.path), mode="w")
        self._stream: Any = None
        self._qp = qp
        self.frames_written = 0

    def write(self, frames: np.ndarray) -> None:
        """Append ``uint8 [T, H, W, 3]`` frames."""
        import av

        if frames.dtype != np.uint8 or frames.ndim != 4 or frames.shape[-1] != 3:
            raise ValueError(f"frames must be uint8 [T, H, W, 3], got {frames.dtype} {frames.shape}")
        h, w = frames.shape[1:3]
        ph, pw = h + h % 2, w + w % 2
        if self._stream is None:
            rate = Fraction(self.fps).limit_denominator(1001)
            self._stream = self._container.add_stream("libx264", rate=rate)
            self._stream.width, self._stream.height = pw, ph
            self._stream.pix_fmt = "yuv420p"
            self._stream.options = {"qp": str(self._qp), "threads": "1"}
            self._stream.codec_context.thread_count = 1
        if (ph, pw) != (self._stream.height, self._stream.width):
            raise ValueError(f"frame size changed from {self._stream.height}x{self._stream.width} to {ph}x{pw}")
        if (ph, pw) != (h, w):
            frames = np.pad(frames, ((0, 0), (0, ph - h), (0, pw - w), (0, 0)), mode="edge")
        for f in frames:
            for packet in self._stream.encode(av.VideoFrame.from_ndarray(np.ascontiguousarray(f), format="rgb24")):
                self._container.mux(packet)
            self.frames_written += 1

    def close(self) -> None:
        if self._container is None:
            return
        if self._stream is not None:
            for packet in self._stream.encode():
                self._container.mux(packet)
        self._container.close()
        self._container = None

    def __enter__(self) -> Mp4Writer:
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
