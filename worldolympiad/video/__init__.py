"""Video IO (PyAV) and frame utilities."""

from worldolympiad.video.io import (
    VideoError,
    probe_video,
    read_chunk_timestamps,
    read_video,
    sample_indices,
    write_chunk_timestamps,
    write_video,
)

__all__ = [
    "VideoError",
    "probe_video",
    "read_chunk_timestamps",
    "read_video",
    "sample_indices",
    "write_chunk_timestamps",
    "write_video",
]
