"""``diffusers:PATH`` — any local diffusers text/image-to-video pipeline.

The pipeline is loaded with ``DiffusionPipeline.from_pretrained(PATH)`` (local files only,
safetensors preferred) on first use. Per case it is called with the case's prompt,
``num_frames``, ``height``/``width`` (rounded up to what the pipeline can make), ``fps``
when the pipeline accepts it, the case's first frame when the pipeline accepts ``image``
(the conditioning image, else frame 0 of the case's reference, as ``repeat-first-frame``
starts from), and ``generator=torch.Generator("cpu").manual_seed(seed)`` (a CPU generator
gives the same noise on every device). Only arguments the pipeline's
``__call__`` declares are passed, so any video pipeline works.

The output is brought back to the case's resolution (area resize) and frame count
(extra frames dropped; a shorter video is kept and reported in ``metadata``).

Options (``--option model.KEY=VALUE``): ``num_inference_steps``, ``guidance_scale``,
``negative_prompt``, ``dtype`` (``float32``/``bfloat16``/``float16``; default float32 on
CPU, bfloat16 on CUDA), ``size_multiple`` (default: the VAE's spatial factor × 2, else 16).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from worldolympiad.models.base import ModelError, WorldModel
from worldolympiad.options import OptionSpec
from worldolympiad.types import Case, Video

logger = logging.getLogger(__name__)


class DiffusersModel(WorldModel):
    """A local diffusers video pipeline as a :class:`WorldModel`.

    Args:
        arg: the pipeline folder (``model_index.json`` inside).
        device: ``cpu`` or ``cuda`` (resolved by the evaluator).
        num_inference_steps: denoising steps per video.
        guidance_scale: classifier-free guidance scale (pipelines that take it).
        negative_prompt: optional negative prompt.
        dtype: torch dtype name; default float32 on CPU, bfloat16 on CUDA.
        size_multiple: height/width are rounded up to a multiple of this.
        cache_dir: reference cache root (given by the evaluator), for first frames of cases
            without a conditioning image.
    """

    interactive = False
    OPTIONS: ClassVar[Mapping[str, OptionSpec]] = {
        "num_inference_steps": OptionSpec("int", 30, "denoising steps per video"),
        "guidance_scale": OptionSpec("float", None, "classifier-free guidance scale (pipelines that take it)"),
        "negative_prompt": OptionSpec("str", None, "negative prompt (pipelines that take it)"),
        "dtype": OptionSpec("str", None, "torch dtype name; default float32 on CPU, bfloat16 on CUDA"),
        "size_multiple": OptionSpec("int", None, "height and width are rounded up to a multiple of this"),
    }

    @classmethod
    def fingerprint(cls, arg: str | None) -> str | None:
        """Digest of the pipeline folder's weights and configs (part of the run hash, so new weights in the
        same folder start a new run instead of reusing the old rows)."""
        from worldolympiad.inputs import folder_fingerprint

        return folder_fingerprint(Path(arg)) if arg else None

    @classmethod
    def check(cls, arg: str | None) -> None:
        """Fail fast on a folder without a pipeline, or a hub id (weights are never downloaded).

        Raises:
            ModelSpecError: with the fix.
        """
        from worldolympiad.models.base import ModelSpecError, hub_id_hint, looks_like_hub_id

        if arg and looks_like_hub_id(arg):
            raise ModelSpecError(f"--model diffusers:{arg}: {hub_id_hint(arg)}")
        try:
            cls(arg)
        except (ModelError, ValueError) as e:
            raise ModelSpecError(f"--model diffusers:{arg}: {e}") from e

    def __init__(
        self,
        arg: str | None,
        *,
        device: str = "cpu",
        num_inference_steps: int = 30,
        guidance_scale: float | None = None,
        negative_prompt: str | None = None,
        dtype: str | None = None,
        size_multiple: int | None = None,
        cache_dir: str | Path | None = None,
        **options: Any,
    ) -> None:
        if not arg:
            raise ValueError("diffusers needs a local pipeline folder: --model diffusers:PATH")
        self.path = Path(arg).expanduser()
        if not (self.path / "model_index.json").is_file():
            raise ModelError(f"diffusers:{arg}: {self.path}/model_index.json not found; pass a folder written by "
                             "pipeline.save_pretrained() (weights are never downloaded)")
        self.device = device
        self.num_inference_steps = int(num_inference_steps)
        self.guidance_scale = guidance_scale
        self.negative_prompt = negative_prompt
        self.dtype_name = dtype or ("bfloat16" if str(device).startswith("cuda") else "float32")
        self.size_multiple = size_multiple
        self.cache_dir = cache_dir  # the evaluator's reference cache (first frames of generator cases)
        self._pipe: Any = None
        self._params: set[str] = set()

    def pipeline(self) -> Any:
        """The loaded pipeline (loaded once, on first use)."""
        if self._pipe is None:
            import torch
            from diffusers import DiffusionPipeline

            dtype = getattr(torch, self.dtype_name, None)
            if not isinstance(dtype, torch.dtype):
                raise ValueError(f"model.dtype must be a torch dtype name like float32 or bfloat16, got {self.dtype_name!r}")
            try:
                pipe = DiffusionPipeline.from_pretrained(str(self.path), dtype=dtype, local_files_only=True)
            except Exception as e:  # noqa: BLE001 - many loader errors; one clear message
                raise ModelError(f"diffusers:{self.path}: could not load the pipeline ({type(e).__name__}: {e}); "
                                 "check the folder is a complete save_pretrained() output") from e
            pipe.to(self.device)
            if hasattr(pipe, "set_progress_bar_config"):
                pipe.set_progress_bar_config(disable=True)
            self._pipe = pipe
            self._params = set(inspect.signature(pipe.__call__).parameters)
        return self._pipe

    def _multiple(self, pipe: Any) -> int:
        if self.size_multiple:
            return int(self.size_multiple)
        f = getattr(pipe, "vae_scale_factor_spatial", None) or getattr(pipe, "vae_scale_factor", None)
        return int(f) * 2 if f else 16

    def call_kwargs(self, case: Case, seed: int) -> dict[str, Any]:
        """The keyword arguments passed to the pipeline for ``case`` (only those it accepts)."""
        import torch

        pipe = self.pipeline()
        m = self._multiple(pipe)
        h = -(-case.height // m) * m
        w = -(-case.width // m) * m
        prompt = case.prompt or " ".join(c.caption for c in case.chunks if c.caption)
        want: dict[str, Any] = {
            "prompt": prompt,
            "num_frames": case.num_frames,
            "height": h,
            "width": w,
            "num_inference_steps": self.num_inference_steps,
            "generator": torch.Generator("cpu").manual_seed(int(seed)),
            "output_type": "np",
        }
        if "fps" in self._params:
            want["fps"] = int(round(case.fps))
        elif "frame_rate" in self._params:
            want["frame_rate"] = case.fps
        if self.guidance_scale is not None:
            want["guidance_scale"] = float(self.guidance_scale)
        if self.negative_prompt is not None:
            want["negative_prompt"] = self.negative_prompt
        if "image" in self._params:
            from PIL import Image

            from worldolympiad.models.baselines import first_frame_or_none

            first = first_frame_or_none(case, self.cache_dir)
            if first is not None:
                want["image"] = Image.fromarray(first).resize((w, h))
            elif self._image_required(pipe):
                raise ModelError(f"{self.path}: this pipeline needs a first frame but case {case.id!r} has neither a "
                                 "conditioning image nor a reference; set the case's 'conditioning' or use a "
                                 "text-to-video pipeline")
        return {k: v for k, v in want.items() if k in self._params}

    def _image_required(self, pipe: Any) -> bool:
        p = inspect.signature(pipe.__call__).parameters.get("image")
        return p is not None and p.default is inspect.Parameter.empty

    def generate(self, case: Case, seed: int = 0) -> Video:
        pipe = self.pipeline()
        kwargs = self.call_kwargs(case, seed)
        import torch

        with torch.inference_mode():
            out = pipe(**kwargs)
        frames = _to_uint8_frames(getattr(out, "frames", out))  # [T, H, W, 3]
        meta: dict[str, Any] = {"model": self.name, "pipeline": type(pipe).__name__,
                                "call": {k: v for k, v in kwargs.items() if isinstance(v, (int, float, str))}}
        if frames.shape[1:3] != (case.height, case.width):
            frames = _resize(frames, case.height, case.width)
        if len(frames) > case.num_frames:
            frames = frames[: case.num_frames]
        elif len(frames) < case.num_frames:
            meta["short_by_frames"] = case.num_frames - len(frames)
        return Video(frames=np.ascontiguousarray(frames), fps=case.fps, chunks=case.chunks, metadata=meta)

    def close(self) -> None:
        self._pipe = None


def _to_uint8_frames(x: Any) -> np.ndarray:
    """Pipeline output (np float [B, T, H, W, C] in [0, 1], torch, or lists of PIL images) → uint8 [T, H, W, 3]."""
    if isinstance(x, (list, tuple)):
        x = x[0]
        if isinstance(x, (list, tuple)):
            x = np.stack([np.asarray(im.convert("RGB")) if hasattr(im, "convert") else np.asarray(im) for im in x])
    if hasattr(x, "detach"):
        x = x.detach().float().cpu().numpy()
    arr = np.asarray(x)
    if arr.ndim == 5:
        arr = arr[0]
    if arr.ndim != 4:
        raise ModelError(f"pipeline returned frames of shape {arr.shape}; expected [T, H, W, C]")
    if arr.shape[-1] not in (1, 3, 4) and arr.shape[1] in (1, 3, 4):
        arr = np.moveaxis(arr, 1, -1)  # [T, C, H, W] → [T, H, W, C]
    if arr.dtype != np.uint8:
        arr = np.clip(np.round(arr.astype(np.float32) * 255.0), 0, 255).astype(np.uint8)
    if arr.shape[-1] == 1:
        arr = np.repeat(arr, 3, axis=-1)
    return arr[..., :3]


def _resize(frames: np.ndarray, h: int, w: int) -> np.ndarray:
    import cv2

    return np.stack([cv2.resize(f, (w, h), interpolation=cv2.INTER_AREA) for f in frames])
