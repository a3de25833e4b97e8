"""Print the long-video track's metrics without weights (the model-free fallbacks) for four synthetic videos.

Run it against two checkouts and compare the output byte for byte, e.g. before and after a change to
tracks/longvideo/ that must leave the default run's numbers alone
(bench/records/longvideo_published_signals_s46.md)::

    git worktree add /tmp/before COMMIT
    python bench/longvideo_fallback_identity.py /tmp/before > before.json
    python bench/longvideo_fallback_identity.py . > after.json && cmp before.json after.json
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np


def pan(n: int, size: int = 64, speed: float = 1.0) -> np.ndarray:
    import cv2
    from skimage import data

    img = cv2.resize(data.astronaut(), (size * 3, size * 3), interpolation=cv2.INTER_AREA)
    return np.stack([cv2.warpAffine(img, np.float32([[1, 0, -speed * t], [0, 1, -size * 0.5]]), (size, size),
                                    borderMode=cv2.BORDER_REFLECT) for t in range(n)])


def main(root: str) -> None:
    import cv2

    root = str(Path(root).resolve())
    sys.path.insert(0, root)
    import tracks.longvideo.track as track_module

    assert track_module.__file__ and track_module.__file__.startswith(root), track_module.__file__
    from worldolympiad.track import EvalContext
    from worldolympiad.types import Case, Video, even_chunks

    videos = {"pan": pan(80),
              "blur": np.stack([cv2.GaussianBlur(f, (0, 0), 0.05 + 3 * t / 80) for t, f in enumerate(pan(80))]),
              "still": np.repeat(pan(1), 80, 0),
              "noise": np.random.default_rng(0).integers(0, 255, (80, 64, 64, 3), dtype=np.uint8)}
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, frames in videos.items():
            case = Case(id=name, scenario="realworld", fps=10.0, num_frames=80, resolution=(64, 64),
                        chunks=even_chunks(80, 4), tracks=("longvideo",))
            res = track_module.LongVideoTrack().evaluate(Video(frames, 10.0), case,
                                                          EvalContext(work_dir=Path(tmp) / name, options={}))
            out[name] = {"score": res.score, **{m.name: m.raw for m in res.metrics}}
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
