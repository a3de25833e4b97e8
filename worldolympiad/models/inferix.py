"""``inferix:NAME_OR_PATH`` — any model the Inferix engine serves, as an interactive WorldModel.

The only bridge between WorldOlympiad and Inferix (DESIGN.md §2). :meth:`InferixModel.rollout`
opens one engine session per case and pulls each chunk's control (caption, action) only
when it is about to generate that chunk — the model never sees a future action.

What a case controls, and how:

* **Resolution** — the engine runs at the latent grid the model picks for the case's ``[H, W]``
  and its generator (``case.metadata["generator"]``): the closest grid (rounded to the patch
  size), or the model's own grid for that content (a bundle's ``content_grids``: a game screen
  it was trained on at another size). When the decoded size differs, frames are resized to
  ``[H, W]`` with OpenCV (area filter down, bilinear up); the chunk metadata records the
  generated size. ``native_size=True`` keeps the model's default grid and ``size=HxW``
  generates at ``H x W`` pixels; both only resize the output.
* **FPS / length** — the engine emits frames; one generated frame is one case frame, so
  each chunk gets exactly ``chunk.num_frames`` frames and the video carries the case fps
  (the model's native fps is reported in the metadata, not resampled).
* **Chunks vs blocks** — the engine works in blocks of frames. A block that straddles a
  chunk boundary was generated with the earlier chunk's control; its remaining frames
  open the next chunk (no frames are dropped, so motion stays continuous).
* **Experts** — a bundle may carry an expert DiT for some contents (``bundle.json`` ``experts``: the
  reference model's physics expert serves mechanics, thermal, material and robotics cases); the
  case's generator picks it, as it picks a content grid. Other contents, and a case without a
  generator, get the bundle's main DiT.
* **Text** — models with a local text encoder use it (``text_encoder=PATH``); tiny models
  use Inferix's documented hashed text embedding (``inferix.registry.HashedTextEncoder``).
* **Actions** — the model's action vocabulary; an action it does not know is a
  :class:`ModelError` naming the action and the vocabulary, unless
  ``unknown_action="default"`` maps it to the model's default action (recorded in the
  chunk metadata). A structured action with a world ``delta`` (``move_ee``) also carries
  ``delta_camera``, the delta in the camera frame of the case's first pose, when the case has a
  camera: a vocabulary listing ``move_ee@down``-style names picks the row for that on-screen
  direction (``inferix.registry.directional_name``); others read the plain name.
* **First frame** — the case's first frame is encoded and committed to the session's KV cache
  before the first block (image-to-video): ``case.conditioning`` (an image path) when the case
  has one, else frame 0 of its reference (a video file, or the simulator's render through the
  evaluator's reference cache), the same image ``repeat-first-frame`` starts from. Only a case with
  neither is generated from text and actions alone (logged).

Options (``--option model.KEY=VALUE``, declared in ``InferixModel.OPTIONS``): ``policy`` (``rolling:9``...),
the sampling knobs (``steps``, ``action_guidance``, ``action_guidance_rescale``, ``guidance_drops_caption``,
``context_timestep``, ``anchor_level``: declared once in :data:`inferix.sampling.KNOBS`, unset = the
model's own, for the case's generator where its bundle has its own, e.g. ``sampler.content_guidance``),
``text_encoder``, ``vae``, ``unknown_action`` (``error`` | ``default``), ``native_size``, ``size``,
``dtype`` (``bfloat16``: the DiT and its KV cache in bf16, faster on a GPU and on a CPU with bf16
matrix units; scores differ from the default float32 by rounding).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, ClassVar

import numpy as np

from inferix.sampling import KNOBS as SAMPLING_KNOBS
from worldolympiad.models.base import ChunkControl, ModelError, VideoChunk, WorldModel
from worldolympiad.options import OptionSpec
from worldolympiad.types import Case

logger = logging.getLogger(__name__)


def _bool(v: Any) -> bool:
    return v if isinstance(v, bool) else str(v).lower() in ("1", "true", "yes", "on")


def _pop_optional(options: dict[str, Any], key: str, cast: Callable[[Any], Any]) -> Any:
    """``cast(options.pop(key))``, or ``None`` when the option is absent or empty."""
    value = options.pop(key, None)
    return None if value in (None, "") else cast(value)


def _parse_hw(v: Any) -> tuple[int, int] | None:
    if v in (None, ""):
        return None
    try:
        h, w = (int(x) for x in str(v).lower().split("x"))
    except ValueError:
        h = w = 0
    if h <= 0 or w <= 0:
        raise ValueError(f"model.size must be HxW in pixels (e.g. 96x72), got {v!r}")
    return h, w


class InferixModel(WorldModel):
    """A WorldModel backed by an Inferix engine session per case.

    Args:
        arg: model name (``tiny``) or a config name / local checkpoint (the part after ``inferix:``).
        **options: see the module docstring.
    """

    interactive: ClassVar[bool] = True
    # ``--option model.KEY=VALUE``; None = the model's own (bundle.json's sampler section)
    OPTIONS: ClassVar[Mapping[str, OptionSpec]] = {
        "policy": OptionSpec("str", None, "KV-cache policy, e.g. full or rolling:9"),
        # the sampling knobs, declared once in inferix.sampling (a light module: no torch)
        **{k.name: OptionSpec(k.type, None, k.help) for k in SAMPLING_KNOBS.values()},
        "text_encoder": OptionSpec("path", None, "text encoder to load instead of the bundle's"),
        "vae": OptionSpec("path", None, "VAE to load instead of the bundle's"),
        "dtype": OptionSpec("str", None, "DiT and KV-cache dtype, e.g. bfloat16 (default float32)"),
        "vae_dtype": OptionSpec("str", None, "Wan VAE dtype, e.g. bfloat16 (default float32; `inferix bench --gpu` "
                                "measures its PSNR against float32)"),
        "unknown_action": OptionSpec("str", "error", "an action the model does not know: error or default "
                                     "(generate with the model's default action)", ("error", "default")),
        "native_size": OptionSpec("bool", False, "generate at the model's native size, not the case's"),
        "size": OptionSpec("str", None, "generate at HxW pixels (e.g. 96x72)"),
    }
    # bumped when the bridge changes what a model is given (2: the first frame of cases without a
    # conditioning image; 3: structured actions' camera-frame delta), so runs made before start anew
    # instead of resuming their rows
    BRIDGE_VERSION: ClassVar[int] = 3

    @classmethod
    def fingerprint(cls, arg: str | None) -> str | None:
        """Digest of the weights and configs behind ``inferix:ARG`` (``inferix.registry.model_fingerprint``)
        and the bridge's version."""
        from inferix.registry import model_fingerprint

        digest = model_fingerprint(arg) if arg else None
        return f"{digest or 'code'}+bridge{cls.BRIDGE_VERSION}"

    @classmethod
    def check(cls, arg: str | None) -> None:
        """Fail fast on a name Inferix does not know and a path that does not exist (nothing is loaded).

        Raises:
            ModelSpecError: with "did you mean" over the named models and configs, or the hub-id fix.
        """
        import difflib
        from pathlib import Path

        from inferix.models.configs import CONFIGS
        from inferix.registry import MODELS as NAMED
        from worldolympiad.models.base import ModelSpecError, hub_id_hint, looks_like_hub_id

        name = arg or "tiny"
        if name in NAMED or name in CONFIGS or Path(name).expanduser().exists():
            return
        if looks_like_hub_id(name):
            raise ModelSpecError(f"--model inferix:{name}: {hub_id_hint(name, 'inferix')}")
        known = sorted(set(NAMED) | set(CONFIGS))
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise ModelSpecError(f"--model inferix:{name}: no Inferix model or config {name!r} and no such path.{hint} "
                             f"Known: {', '.join(known)}; or a local checkpoint / bundle folder.")

    def __init__(self, arg: str | None, **options: Any) -> None:
        self.model_name = arg or "tiny"
        from worldolympiad.evaluator import resolve_device

        self.device = resolve_device(str(options.pop("device", "cpu") or "cpu"))
        # serving settings: None = the model's own (bundle.json's sampler section, LoadedModel.policy...)
        self.sampling = {k: _pop_optional(options, k, knob.parse) for k, knob in SAMPLING_KNOBS.items()}
        self.policy = _pop_optional(options, "policy", str)
        self.unknown_action = str(options.pop("unknown_action", "error"))
        if self.unknown_action not in ("error", "default"):
            raise ValueError(f"unknown_action must be 'error' or 'default', got {self.unknown_action!r}")
        self.native_size = _bool(options.pop("native_size", False))
        self.size = _parse_hw(options.pop("size", None))
        self.cache_dir = options.pop("cache_dir", None)  # the evaluator's reference cache (first frames)
        self.load_options = {k: options.pop(k) for k in ("text_encoder", "vae", "dtype", "vae_dtype") if options.get(k)}
        self.ignored_options = sorted(options)
        self._loaded: Any = None

    # ------------------------------------------------------------------ setup
    @property
    def loaded(self) -> Any:
        """The Inferix model bundle (loaded on first use: heavy imports stay out of `ls`)."""
        if self._loaded is None:
            from inferix.registry import load_model

            try:
                self._loaded = load_model(self.model_name, device=self.device, **self.load_options)
            except (ValueError, FileNotFoundError, KeyError) as e:
                raise ModelError(f"inferix:{self.model_name}: {e}") from e
        return self._loaded

    def _engine(self, latent_hw: tuple[int, int], max_frames: int, content: str | None = None) -> Any:
        from inferix.engine import Engine

        lm = self.loaded
        cfg = lm.engine_config(latent_hw, policy=self.policy, sampling=self.sampling, content=content, max_sessions=1, max_batch=1, max_frames=max_frames, device=self.device)
        return Engine(lm.model_for(content), lm.codec, lm.text_encoder, cfg, self._action_encoder())

    def _action_encoder(self) -> Any:
        enc = self.loaded.action_encoder
        if enc is None or self.unknown_action == "error":
            return enc

        def lenient(action: Any) -> Any:
            try:
                return enc(action)
            except ValueError:
                return enc(None)

        return lenient

    def _check_action(self, action: Any) -> bool:
        """True if the model knows ``action``; raises ModelError when it does not and that is an error."""
        enc = self.loaded.action_encoder
        if enc is None:
            if action is None:
                return True
            if self.unknown_action == "default":
                return False
            raise ModelError(f"inferix:{self.model_name} takes no actions, the case gives {action!r}; "
                             "use --option model.unknown_action=default to ignore them")
        try:
            enc(action)
            return True
        except ValueError as e:
            if self.unknown_action == "default":
                return False
            raise ModelError(f"inferix:{self.model_name}: {e} (or --option model.unknown_action=default)") from e

    def _first_image(self, case: Case, latent_hw: tuple[int, int]) -> Any:
        """The case's first frame as latents, or None for a case that has none (see the module docstring)."""
        from worldolympiad.models.baselines import first_frame_or_none

        img = first_frame_or_none(case, self.cache_dir)
        return None if img is None else self.loaded.encode_image(img, latent_hw)

    # ---------------------------------------------------------------- rollout
    def rollout(self, case: Case, controls: Iterable[ChunkControl], seed: int = 0) -> Iterator[VideoChunk]:
        """One engine session; each chunk's caption/action is taken just before its frames are made."""
        lm = self.loaded
        content = case.metadata.get("generator")
        if self.size is not None:
            latent_hw = lm.latent_hw_for(self.size)
        elif self.native_size:
            latent_hw = lm.latent_hw
        else:
            latent_hw = lm.latent_hw_for(case.resolution, content=content)
        engine = self._engine(latent_hw, max_frames=lm.block_frames * 2 + case.num_frames, content=content)
        it = iter(controls)
        ctl = next(it, None)
        if ctl is None:
            return
        action = self._camera_action(case, ctl.action)
        known = self._check_action(action)
        sid = engine.add_session(ctl.caption or case.prompt, num_blocks=None, seed=seed,
                                 action=action if (known and lm.action_encoder) else None,
                                 image_latents=self._first_image(case, latent_hw))
        leftover = np.zeros((0, *lm.pixel_hw(latent_hw), 3), np.uint8)
        try:
            while ctl is not None:
                need = ctl.num_frames
                parts = [leftover[:need]]
                have = len(parts[0])
                leftover = leftover[need:]
                blocks = 0
                while have < need:
                    out = self._next_block(engine, sid)
                    blocks += 1
                    take = out.frames[: need - have]
                    parts.append(take)
                    have += len(take)
                    leftover = out.frames[len(take):]
                frames = self._resize(np.concatenate(parts), case.resolution)
                meta = {"model": f"inferix:{self.model_name}", "blocks": blocks, "native_fps": lm.fps,
                        "generated_hw": list(lm.pixel_hw(latent_hw)), "action_known": known}
                yield VideoChunk(ctl.index, frames, meta)
                ctl = next(it, None)  # pulled only now: the next chunk's control is not seen earlier
                if ctl is not None:
                    action = self._camera_action(case, ctl.action)
                    known = self._check_action(action)
                    if ctl.caption:
                        engine.set_prompt(sid, ctl.caption)
                    if lm.action_encoder is not None:
                        engine.set_action(sid, action if known else None)
        finally:
            engine.cancel(sid)

    @staticmethod
    def _camera_action(case: Case, action: Any) -> Any:
        """A structured action's world ``delta`` also in the camera frame of the case's first pose
        (``delta_camera``), so a vocabulary with ``move_ee@down``-style entries can say which way it
        moves on screen (:func:`inferix.registry.directional_name`); other actions unchanged."""
        if case.camera is None or not len(case.camera.poses):
            return action
        from inferix.registry import with_camera_delta

        return with_camera_delta(action, case.camera.poses[0])

    @staticmethod
    def _next_block(engine: Any, sid: str) -> Any:
        s = engine.session(sid)
        while not s.outputs:
            if s.state.done:
                raise ModelError(f"inferix session failed: {s.error or s.state.value}")
            engine.step()
        return s.outputs.popleft()

    @staticmethod
    def _resize(frames: np.ndarray, hw: tuple[int, int]) -> np.ndarray:
        h, w = hw
        if frames.shape[1:3] == (h, w):
            return frames
        import cv2

        interp = cv2.INTER_AREA if frames.shape[1] >= h else cv2.INTER_LINEAR
        return np.stack([cv2.resize(f, (w, h), interpolation=interp) for f in frames])

    def close(self) -> None:
        self._loaded = None
