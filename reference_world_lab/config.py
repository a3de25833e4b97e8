"""The training recipe as data: one YAML file (see ``reference_world_lab/configs/reference_world.yaml``).

Sections::

    name: reference_world
    seed: 0
    out_dir: runs/reference_world        # checkpoints, samples, the exported model
    data:    roots (folders written by `worldolympiad scenarios render`), scenario weights,
             block_frames, blocks_per_clip, caption_dropout, crop, crop_steps, crop_motion
    model:   WanConfig fields of the DiT + codec_patch (pixels per latent cell of the identity codec)
             + max_side (largest generated side in pixels; bigger requests are generated smaller)
    actions: vocabulary (the model's action names), map (scenario action name -> vocabulary name),
             default (for chunks without an action)
    sampler: steps (on the [0, 1000] scale) + shift: the few-step list generation uses; serving
             settings copied into bundle.json (cache_policy, action guidance, content_grids)
    codec:   type identity (pixel patches of model.codec_patch) or tiny_ae (a learned 8x
             autoencoder, trained first as stage 0; see CodecConfig)
    init_from: optional exported bundle to start from (staged training, e.g. 32 px then 64 px)
    train:   steps, batch_size, lr, warmup, lr_decay, weight_decay, grad_clip, ema, timestep_shift,
             teacher_forcing, log_every, ckpt_every, eval_every, eval_videos, threads, autocast

Relative paths (``out_dir``, ``init_from``, ``data.roots``, ``codec.init_from``) are resolved
against the folder of the file that names them, so a committed config reproduces from any working
directory.

A staged recipe can be written as a difference from the stage before it::

    base: reference_world_gpu2.yaml      # relative to this file; read first, itself may have a base
    init_from: ../../weights/reference_world
    train: {lr: 0.0003, rollout: 0.3}    # mappings merge key by key ...
    data: {weights: {mechanics: 4.0}}    # ... so the other data.weights entries are kept
                                         # lists and scalars replace the base's value (null clears it)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

__all__ = ["ActionsConfig", "CodecConfig", "DataConfig", "OptimConfig", "SamplerConfig", "TrainConfig",
           "apply_overrides", "load_config", "merge_recipes", "read_recipe"]

LOSSES = ("mse", "l1", "pseudo_huber")  # train.loss: the per-pixel penalty on the prediction error


@dataclass
class DataConfig:
    """Where clips come from and how they are cut.

    Attributes:
        roots: folders written by ``worldolympiad scenarios render`` (each has ``suite.json``).
        weights: sampling weight per scenario family (``gaming``, ``robotics``...) or per generator
            (``gaming.atari_pong``: the case's ``metadata.generator``, which wins over its family's);
            1 if absent.
        block_frames: latent frames per generated block (= the engine's ``block_frames``).
        blocks_per_clip: generated blocks per training clip (after the 1-frame clean prefix).
        caption_dropout: probability of training a clip with the empty caption.
        max_videos: read at most this many videos (tests); None = all.
        crop: train on random ``crop`` x ``crop`` pixel windows of each clip (0 = whole frames): the
            DiT's RoPE is relative, so a model trained on crops of a large grid runs on the whole
            grid at the cost per step of the crop (a multiple of the token size in pixels).
        crop_steps: crop only for the first ``crop_steps`` steps, then whole frames (0 = crop
            throughout): a cheap warm-up, then the whole scene (a crop can miss a sprite at the edge).
        crop_motion: probability that a crop window is centred on a pixel drawn in proportion to how
            much it changes over the clip, instead of placed uniformly. A 2-px Atari paddle is in
            about 15 % of uniform 64 px windows of its frame; centred on change, the windows hold
            what the action moves (and, in a camera-motion scene, where everything changes, they
            stay about uniform).
    """

    roots: list[str] = field(default_factory=list)
    weights: dict[str, float] = field(default_factory=dict)
    block_frames: int = 2
    blocks_per_clip: int = 4
    caption_dropout: float = 0.1
    max_videos: int | None = None
    crop: int = 0
    crop_steps: int = 0
    crop_motion: float = 0.0


@dataclass
class ActionsConfig:
    """The model's action vocabulary and how scenario actions map onto it.

    Attributes:
        vocabulary: action names, in id order.
        map: scenario action name -> vocabulary name (names already in the vocabulary map to themselves).
        default: vocabulary name for chunks without an action.
    """

    vocabulary: list[str] = field(default_factory=lambda: ["idle"])
    map: dict[str, str] = field(default_factory=dict)
    default: str = "idle"


@dataclass
class SamplerConfig:
    """The few-step sampler shipped with the model (``inferix.schedulers.timesteps(steps, shift)``) and
    the KV policy it serves with by default (``cache_policy``, e.g. ``rolling:3`` = the context
    length seen in training; ``None`` = the engine default) and its classifier-free action guidance
    (``SamplingConfig.action_guidance``; ``None`` = off) with its rescale phi
    (``SamplingConfig.action_guidance_rescale``; 0 = off), optionally joint over the caption
    (``SamplingConfig.guidance_drops_caption``), and the timestep generated blocks are committed
    to the KV cache at (``SamplingConfig.context_timestep``; 0 = clean), and the noise std a model
    with an anchor-level input is told its anchors carry (``SamplingConfig.anchor_level``; 0 =
    exact). ``content_grids``
    (``{generator or family: [H, W]}``) names contents the model generates at one pixel grid whatever size is asked (the caller
    resizes): a game screen that a suite renders at another size is then drawn at the scale the
    model was trained on (:class:`inferix.bundle.BundleModel`). ``content_guidance``
    (``{generator or family: scale}``) serves a listed content at its own action guidance instead of
    ``action_guidance`` (an explicit ``model.action_guidance`` option still wins)."""

    steps: list[float] = field(default_factory=lambda: [1000.0, 750.0, 500.0, 250.0])
    shift: float = 3.0
    cache_policy: str | None = None
    action_guidance: float | None = None
    action_guidance_rescale: float = 0.0
    guidance_drops_caption: bool = False
    context_timestep: float = 0.0
    anchor_level: float = 0.0
    content_grids: dict[str, list[int]] = field(default_factory=dict)
    content_guidance: dict[str, float] = field(default_factory=dict)


@dataclass
class CodecConfig:
    """The latent codec (``inferix.models.tiny_ae``) and its training stage.

    Attributes:
        type: ``identity`` (pixel patches of ``model.codec_patch``; nothing to train) or
            ``tiny_ae`` (diffusers ``AutoencoderTiny`` per frame, trained before the DiT).
        latent_channels: latent channels (the DiT's in/out channels).
        channels: conv width of every level.
        levels: resolution levels (``2 ** (levels - 1)`` = spatial stride).
        steps: optimiser steps of the codec stage.
        batch_size: frames per step.
        crop: square random crop side (pixels, a multiple of the stride; whole frames when smaller).
        lr: AdamW learning rate.
        motion_weight: per-pixel loss weight ``1 + motion_weight * |x - median frame of its video|``:
            sprites and moving objects (what the tracks measure) count more than the static background.
        edge_weight: extra weight ``edge_weight * |x - 3x3 box blur of x|`` on local contrast, so small
            static sprites (a paddle at rest is part of the median frame) are kept too.
        latent_noise: std of Gaussian noise added to latents (in units of their running std) before
            decoding, so the decoder tolerates the small errors of generated latents.
        decoder_steps: steps that then train the decoder alone (encoder frozen: the latents the DiT
            learns on do not change), for fine detail and colour.
        init_from: a trained codec folder to use instead of training one (e.g. to retrain the DiT only).
    """

    type: str = "identity"
    latent_channels: int = 16
    channels: int = 32
    levels: int = 4
    steps: int = 1500
    batch_size: int = 16
    crop: int = 64
    lr: float = 1e-3
    motion_weight: float = 10.0
    edge_weight: float = 0.0
    latent_noise: float = 0.1
    decoder_steps: int = 0
    init_from: str | None = None


@dataclass
class OptimConfig:
    """Optimisation and bookkeeping.

    Attributes:
        steps: optimiser steps.
        batch_size: clips per step.
        lr: AdamW peak learning rate (linear warm-up over ``warmup`` steps, then ``lr_decay``).
        lr_mult: ``{parameter-name prefix: factor}``: those parameters train at ``factor`` times the
            rate (a layer a stage adds, such as ``anchor_level_embedder``, can learn faster than
            the trained trunk around it). The longest matching prefix wins; every prefix must match.
        warmup: warm-up steps.
        lr_decay: after the warm-up, ``constant`` or ``cosine`` (half a cosine from ``lr`` to 0 at
            ``steps``; a fine-tune that ends at a small step size settles into the minimum a constant
            rate keeps overshooting).
        weight_decay: AdamW weight decay.
        grad_clip: max gradient norm.
        ema: decay of the exponential moving average of the weights (the exported weights).
        timestep_shift: the flow-matching shift applied to uniform training noise levels
            (> 1 trains more at high noise, where a few-step sampler spends its first steps).
        teacher_forcing: probability that a clip's first ``j`` blocks are clean context (t = 0, no
            loss) and the rest noisy — the situation at generation time; otherwise every block
            has its own noise level (diffusion forcing).
        context_noise: clean context frames (the prefix and teacher-forced blocks, still labelled
            t = 0) get Gaussian noise of a std drawn from U(0, context_noise) per clip, so the model
            learns not to copy the small errors of its own generated context (which the engine
            commits at t = 0) — the main cause of drift in long rollouts.
        context_noise_clean: share of clips whose context stays clean while ``context_noise`` is on
            (with ``model.anchor_level: true`` the model is told each clip's std, so these clips
            are where level 0 means "copy what stands still").
        context_noise_from_step: step at which ``context_noise`` switches on (a curriculum: first
            learn to copy and move clean context).
        motion_weight: per-pixel loss weight ``1 + motion_weight * |x0_f - x0_(f-1)|`` (mean over
            channels): pixels that change between frames — where the action shows — count more than
            the static background a copying model already gets right.
        motion_weight_from_step: step at which ``motion_weight`` switches on.
        object_share: share of the loss weight the scene's objects get, from the render's
            ground-truth object masks (``metadata.ground_truth_files.arrays`` ``masks``: the Atari
            agent, the robot and its cubes, the falling ball, the dyes...). Per clip, the pixels
            covered by an object in a frame or the frame before it (where it is and where it was)
            weigh ``alpha`` times the others, ``alpha`` chosen so that they hold this share of the
            clip's weight (never below 1: objects that already cover more are not weighed down).
            Motion weighting multiplies on top. The background of a 96 x 72 Atari screen is 99.8 %
            of its pixels, so without it a 2-px sprite standing still weighs what the floor does,
            and the model lets it fade block by block (session 22). 0 = off; clips of videos
            without masks are unweighted.
        object_share_from_step: step at which ``object_share`` switches on (the masks are read from the
            start either way, so a run resumed across the switch draws the same clips).
        object_share_skip: generators, families or scenarios (``data.weights`` keys) whose videos
            ``object_share`` leaves unweighted (their masks are not read): content seen through a
            moving camera, such as ``gaming.maze`` and ``flythrough``, whose walls are the
            geometry the geometry track reconstructs; weighing their landmarks cost that track
            almost all of its score in session 22.
        rollout: probability per clip that its first blocks are the model's own few-step generation
            (no gradient) instead of the reference — scheduled sampling on the context: the model
            meets its own blurred, dimmed output as context and is taught to restore from it what
            the reference holds, instead of compounding it (what makes sprites and falling objects
            fade over a few blocks). Costs a no-grad rollout of up to K-1 blocks per step.
        anchor_start: probability per noisy block (of the clips ``anchor_start_only`` selects) that
            its input is the block's anchor (the clean frame before it) noised to
            ``anchor_start_sigma``, instead of its own frames at the drawn level; the target stays
            its own frames. That is what a model served with ``start: anchor`` meets
            (``SamplingConfig.start_from_anchor``, SDEdit per block) at its one step: trained only on
            its own frames noised to 0.2, it reads such an input as "the frame is already here" and
            keeps a falling ball where it was. Trained with it (session 42, 300-540 steps) the
            physics expert moved the ball, but drew it as a streak from where it was to the floor
            (one step from one frame predicts where the ball may be, not one place), and scored
            below the shipped expert. 0 = off.
        anchor_start_sigma: the noise level of those inputs: the serving's first timestep / 1000.
        anchor_start_only: generators, families or scenarios (``data.weights`` keys) whose clips
            get ``anchor_start``, e.g. the contents an expert serves from the anchor; empty = all.
        log_every, ckpt_every, eval_every: periods in steps (0 = never, except the final ones).
        eval_videos: videos the eval hook renders (generated with the sampler vs the reference).
        export_blend: share of the trained (EMA) weights in the exported bundle, the rest taken from
            the ``init_from`` weights tensor by tensor (WiSE-FT, Wortsman et al. 2022: a fine-tune
            averaged with its start keeps much of what it gained and of what it forgot). 1 = the
            trained weights alone. Needs ``init_from`` with exactly this model's tensors;
            ``reference-world-lab train --resume`` on a finished run only re-exports, so a recipe that changes
            only this re-blends a run without training it again.
        zero_head: start the ``anchor_residual`` head (``proj_out``) at zero after loading ``init_from``,
            so the stage starts as exactly "repeat the last frame" on the earlier stage's trunk (an
            expert for contents the earlier head serves worse than standing still).
        loss: the per-pixel penalty on the prediction error: ``mse`` (squared), ``l1`` (absolute) or
            ``pseudo_huber`` (``sqrt(e^2 + c^2) - c`` with ``c = huber_c``, the robust loss of
            Song & Dhariwal 2023's improved consistency training: quadratic below ``c``, absolute
            above). With an ``anchor_residual`` head the penalty decides what standing still costs:
            under ``mse`` a smaller error on a moving object pays for a small error on every static
            pixel, while an absolute penalty keeps pushing small residuals to exactly zero, so the
            head changes only what it is sure changes (the median, not the mean). Session 33, from a
            zero head on physics scenes, context noise in both: teacher-forced bounce error at
            sigma 0.2 was 2.2 grey levels after 50 ``pseudo_huber`` steps and 3.7 after 100 ``mse``
            steps (repeating the frame: 0.8).
        huber_c: ``c`` of ``pseudo_huber``, in latent units (pixels in [-1, 1]: 0.01 is 0.64 grey
            levels).
        threads: torch CPU threads (0 = leave torch's default).
        autocast: ``none`` (fp32) or ``bf16`` (the forward and loss under ``torch.autocast`` in
            bfloat16; weights, optimiser and EMA stay fp32). On CUDA the trainer also allows TF32
            matmuls. On a CPU it pays only with bf16 matrix units (``lscpu | grep amx``): there it
            made a step 1.6x faster (``reference_world_lab/bench/bench_train_step.py``, session 17); without them it is
            usually slower.
    """

    steps: int = 1000
    batch_size: int = 8
    lr: float = 1e-3
    lr_mult: dict[str, float] = field(default_factory=dict)
    warmup: int = 50
    lr_decay: str = "constant"
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    ema: float = 0.995
    timestep_shift: float = 3.0
    teacher_forcing: float = 0.5
    context_noise: float = 0.0
    context_noise_clean: float = 0.0
    context_noise_from_step: int = 0
    motion_weight: float = 0.0
    motion_weight_from_step: int = 0
    object_share: float = 0.0
    object_share_from_step: int = 0
    object_share_skip: list[str] = field(default_factory=list)
    rollout: float = 0.0
    anchor_start: float = 0.0
    anchor_start_sigma: float = 0.2
    anchor_start_only: list[str] = field(default_factory=list)
    log_every: int = 10
    ckpt_every: int = 200
    eval_every: int = 0
    eval_videos: int = 2
    export_blend: float = 1.0
    zero_head: bool = False
    loss: str = "mse"
    huber_c: float = 0.01
    threads: int = 0
    autocast: str = "none"


@dataclass
class TrainConfig:
    """The whole recipe (see the module docstring)."""

    name: str = "reference_world"
    seed: int = 0
    out_dir: str = "runs/reference_world"
    fps: float = 15.0
    data: DataConfig = field(default_factory=DataConfig)
    model: dict[str, Any] = field(default_factory=dict)
    actions: ActionsConfig = field(default_factory=ActionsConfig)
    sampler: SamplerConfig = field(default_factory=SamplerConfig)
    codec: CodecConfig = field(default_factory=CodecConfig)
    train: OptimConfig = field(default_factory=OptimConfig)
    init_from: str | None = None  # start from these weights (an exported bundle folder), e.g. a lower-resolution stage
    source: str | None = None  # the YAML file it was read from
    overrides: list[str] = field(default_factory=list)  # the ``--set`` items applied on top of it

    @property
    def codec_patch(self) -> int:
        return int(self.model.get("codec_patch", 8))

    @property
    def latent_channels(self) -> int:
        """Channels of the codec's latents (the DiT's in/out channels)."""
        return self.codec.latent_channels if self.codec.type == "tiny_ae" else 3 * self.codec_patch**2

    @property
    def spatial_stride(self) -> int:
        """Pixels per latent cell."""
        return 2 ** (self.codec.levels - 1) if self.codec.type == "tiny_ae" else self.codec_patch

    def wan_config(self) -> Any:
        """The DiT's :class:`~inferix.models.configs.WanConfig` (channels follow the codec, actions the vocabulary)."""
        from inferix.models.configs import WanConfig

        kw = {k: v for k, v in self.model.items() if k not in ("codec_patch", "max_side", "previous_frame")}
        ch = self.latent_channels
        return WanConfig(**kw, in_channels=2 * ch if self.previous_frame else ch, out_channels=ch,
                         num_actions=len(self.actions.vocabulary))

    @property
    def previous_frame(self) -> bool:
        """``model.previous_frame: true``: the DiT also sees the previous clean latent frame
        (:attr:`~inferix.models.configs.WanConfig.conditions_on_previous_frame`)."""
        return bool(self.model.get("previous_frame", False))

    @property
    def token_pixels(self) -> int:
        """Pixels per DiT token side (codec stride x spatial patch)."""
        return self.spatial_stride * int(self.wan_config().patch_size[1])

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        d = asdict(self)
        d.pop("source")
        d.pop("overrides")
        return d


def _section(cls: type, raw: Any, where: str) -> Any:
    if raw is None:
        return cls()
    if not isinstance(raw, dict):
        raise ValueError(f"config section {where!r} must be a mapping, got {type(raw).__name__}")
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(raw) - names)
    if unknown:
        raise ValueError(f"config section {where!r}: unknown keys {unknown}; known: {sorted(names)}")
    return cls(**raw)


def config_from_dict(raw: dict[str, Any], base: Path | None = None) -> TrainConfig:
    """Build and validate a :class:`TrainConfig`; relative paths resolve against ``base`` (for
    :func:`load_config`, whose file values are already absolute, this places the defaults, e.g. ``out_dir``)."""
    top = {f.name for f in fields(TrainConfig)} - {"source", "overrides"}
    unknown = sorted(set(raw) - top)
    if unknown:
        raise ValueError(f"config: unknown top-level keys {unknown}; known: {sorted(top)}")
    cfg = TrainConfig(
        name=str(raw.get("name", "reference_world")),
        seed=int(raw.get("seed", 0)),
        out_dir=str(raw.get("out_dir", "runs/reference_world")),
        fps=float(raw.get("fps", 15.0)),
        init_from=raw.get("init_from"),
        data=_section(DataConfig, raw.get("data"), "data"),
        model=dict(raw.get("model") or {}),
        actions=_section(ActionsConfig, raw.get("actions"), "actions"),
        sampler=_section(SamplerConfig, raw.get("sampler"), "sampler"),
        codec=_section(CodecConfig, raw.get("codec"), "codec"),
        train=_section(OptimConfig, raw.get("train"), "train"),
    )
    if base is not None:
        cfg.out_dir = str((base / cfg.out_dir).resolve()) if not Path(cfg.out_dir).is_absolute() else cfg.out_dir
        cfg.data.roots = [r if Path(r).is_absolute() else str((base / r).resolve()) for r in cfg.data.roots]
        if cfg.init_from and not Path(cfg.init_from).is_absolute():
            cfg.init_from = str((base / cfg.init_from).resolve())
        if cfg.codec.init_from and not Path(cfg.codec.init_from).is_absolute():
            cfg.codec.init_from = str((base / cfg.codec.init_from).resolve())
    if cfg.codec.type not in ("identity", "tiny_ae"):
        raise ValueError(f"codec.type must be 'identity' or 'tiny_ae', got {cfg.codec.type!r}")
    if cfg.codec.type == "tiny_ae" and cfg.codec.crop % cfg.spatial_stride:
        raise ValueError(f"codec.crop {cfg.codec.crop} must be a multiple of the codec stride {cfg.spatial_stride}")
    acts = cfg.actions
    if acts.default not in acts.vocabulary:
        raise ValueError(f"actions.default {acts.default!r} is not in actions.vocabulary {acts.vocabulary}")
    bad = {k: v for k, v in acts.map.items() if v not in acts.vocabulary}
    if bad:
        raise ValueError(f"actions.map targets {bad} are not in actions.vocabulary {acts.vocabulary}")
    bad_weights = {k: v for k, v in cfg.data.weights.items()
                   if isinstance(v, bool) or not isinstance(v, int | float) or v < 0}
    if bad_weights:
        raise ValueError(f"data.weights values must be numbers >= 0, got {bad_weights}; a generator is one "
                         "key with its dot (data.weights: {gaming.maze: 2.0}, or --set data.weights.gaming.maze=2)")
    if cfg.data.block_frames < 1 or cfg.data.blocks_per_clip < 1:
        raise ValueError("data.block_frames and data.blocks_per_clip must be >= 1")
    wan = cfg.wan_config()  # raises on a bad model section
    if not 0.0 <= cfg.data.crop_motion <= 1.0:
        raise ValueError(f"data.crop_motion {cfg.data.crop_motion} is a probability: give a value in [0, 1]")
    if not 0.0 <= cfg.train.context_noise_clean <= 1.0:
        raise ValueError(f"train.context_noise_clean {cfg.train.context_noise_clean} is a share of clips: "
                         "give a value in [0, 1]")
    if not 0.0 <= cfg.train.object_share < 1.0:
        raise ValueError(f"train.object_share {cfg.train.object_share} is the objects' share of the loss weight: "
                         "give a value in [0, 1) (0 = off)")
    if not 0.0 <= cfg.train.anchor_start <= 1.0:
        raise ValueError(f"train.anchor_start {cfg.train.anchor_start} is a probability per block: give a value "
                         "in [0, 1] (0 = off)")
    if not 0.0 < cfg.train.anchor_start_sigma <= 1.0:
        raise ValueError(f"train.anchor_start_sigma {cfg.train.anchor_start_sigma} is a noise level: give a value "
                         "in (0, 1], the serving's first timestep / 1000 (0.2 for steps [200])")
    if cfg.train.context_noise_clean > 0 and not wan.anchor_level:
        logger.warning("train.context_noise_clean without model.anchor_level: the model is not told which "
                       "clips are clean, so it still has to denoise every anchor blindly")
    bad_mult = {k: v for k, v in cfg.train.lr_mult.items()
                if isinstance(v, bool) or not isinstance(v, int | float) or v <= 0}
    if bad_mult:
        raise ValueError(f"train.lr_mult factors must be numbers > 0, got {bad_mult}")
    if not 0.0 <= cfg.train.export_blend <= 1.0:
        raise ValueError(f"train.export_blend {cfg.train.export_blend} is the trained weights' share of the "
                         "export: give a value in [0, 1] (1 = off)")
    if cfg.train.export_blend < 1.0 and not cfg.init_from:
        raise ValueError("train.export_blend < 1 blends the trained weights with the init_from weights: "
                         "set init_from (the bundle the run starts from)")
    if cfg.train.zero_head and cfg.model.get("prediction") != "anchor_residual":
        raise ValueError("train.zero_head starts an anchor_residual head at zero (repeat the last frame); "
                         "set model.prediction: anchor_residual")
    if cfg.train.loss not in LOSSES:
        raise ValueError(f"train.loss must be one of {', '.join(LOSSES)}, got {cfg.train.loss!r}")
    if not cfg.train.huber_c > 0:
        raise ValueError(f"train.huber_c {cfg.train.huber_c} is pseudo_huber's c in latent units: give a value > 0 "
                         "(0.01 is 0.64 grey levels)")
    if cfg.train.autocast not in ("none", "bf16"):
        raise ValueError(f"train.autocast must be 'none' or 'bf16', got {cfg.train.autocast!r}")
    if cfg.train.lr_decay not in ("constant", "cosine"):
        raise ValueError(f"train.lr_decay must be 'constant' or 'cosine', got {cfg.train.lr_decay!r}")
    if cfg.data.crop and (cfg.data.crop < 0 or cfg.data.crop % cfg.token_pixels):
        raise ValueError(f"data.crop {cfg.data.crop} must be a positive multiple of the token size "
                         f"({cfg.token_pixels} px = codec stride x DiT patch)")
    return cfg


# keys whose relative values an override gives against the working directory (the YAML's own
# resolve against the folder of the file that names them)
_PATH_KEYS = {"out_dir", "init_from", "data.roots", "codec.init_from"}
# section.key mappings whose own keys are names that may hold dots (generator ids such as ``gaming.maze``)
_NAMED_MAPPINGS = {("data", "weights"), ("sampler", "content_grids"), ("sampler", "content_guidance"), ("actions", "map"),
                   ("train", "lr_mult")}


def apply_overrides(raw: dict[str, Any], overrides: list[str]) -> None:
    """Set ``section.key=VALUE`` overrides (VALUE parsed as YAML: ``train.steps=3000``,
    ``data.roots=[/data/train]``) on a raw recipe dict, in place. Relative paths in path keys
    (``out_dir``, ``init_from``, ``data.roots``, ``codec.init_from``) are taken from the working
    directory. Unknown keys are caught by :func:`config_from_dict`. In a mapping keyed by content
    names (``data.weights``, ``sampler.content_grids``, ``actions.map``) the rest of the key is one
    name, dots included: ``data.weights.gaming.maze=2`` sets the weight of ``gaming.maze``.

    Raises:
        ValueError: an override without ``=`` or that nests under a non-mapping.
    """
    import yaml

    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"override {item!r} must look like section.key=VALUE (e.g. train.steps=3000)")
        key = key.strip()
        if key == "base":
            raise ValueError(f"override {item!r}: base is read with the file; point --config at another recipe instead")
        value = yaml.safe_load(text)
        if key in _PATH_KEYS and value is not None:
            value = ([str(Path(v).expanduser().resolve()) for v in value] if isinstance(value, list)
                     else str(Path(str(value)).expanduser().resolve()))
        parts = key.split(".")
        if len(parts) > 2 and tuple(parts[:2]) in _NAMED_MAPPINGS:
            parts = [*parts[:2], ".".join(parts[2:])]
        *parents, leaf = parts
        node = raw
        for name in parents:
            node = node.setdefault(name, {})
            if not isinstance(node, dict):
                raise ValueError(f"override {item!r}: {name!r} is not a section")
        node[leaf] = value


def merge_recipes(base: dict[str, Any], child: dict[str, Any]) -> dict[str, Any]:
    """``child`` on top of ``base``: mappings merge key by key (recursively); any other value of
    ``child`` (a list, a scalar, null) replaces the base's. Neither input is modified."""
    out = dict(base)
    for key, value in child.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_recipes(out[key], value)
        else:
            out[key] = value
    return out


def _resolve_paths(raw: dict[str, Any], folder: Path) -> None:
    """Make the relative path values of one recipe file absolute against its folder (in place)."""
    for key in _PATH_KEYS:
        *parents, leaf = key.split(".")
        node: Any = raw
        for name in parents:
            node = node.get(name) if isinstance(node, dict) else None
        if not isinstance(node, dict) or node.get(leaf) is None:
            continue
        value = node[leaf]
        if isinstance(value, list):
            node[leaf] = [v if Path(str(v)).is_absolute() else str((folder / str(v)).resolve()) for v in value]
        elif not Path(str(value)).is_absolute():
            node[leaf] = str((folder / str(value)).resolve())


def read_recipe(path: str | Path, _chain: tuple[Path, ...] = ()) -> dict[str, Any]:
    """One YAML recipe as a raw dict, its ``base`` chain merged underneath (:func:`merge_recipes`);
    relative paths already resolved against the folder of the file that names them.

    Raises:
        FileNotFoundError: the file, or a ``base`` it names, does not exist.
        ValueError: not a mapping, a ``base`` that is not a path, or a ``base`` chain that loops.
    """
    import yaml

    p = Path(path).expanduser().resolve()
    asked = f" (the base of {str(_chain[-1])!r})" if _chain else ""
    if p in _chain:
        loop = " -> ".join(str(c) for c in (*_chain, p))
        raise ValueError(f"training config base chain loops: {loop}")
    if not p.is_file():
        raise FileNotFoundError(f"training config {str(p)!r} not found{asked}")
    raw = yaml.safe_load(p.read_text()) or {}
    if not isinstance(raw, dict):
        raise ValueError(f"training config {str(p)!r} must be a YAML mapping{asked}")
    parent = raw.pop("base", None)
    _resolve_paths(raw, p.parent)
    if parent is None:
        return raw
    if not isinstance(parent, str) or not parent.strip():
        raise ValueError(f"training config {str(p)!r}: base must be the path of another recipe YAML "
                         f"(relative to this file), got {parent!r}")
    return merge_recipes(read_recipe(p.parent / parent, (*_chain, p)), raw)


def load_config(path: str | Path, overrides: list[str] | None = None) -> TrainConfig:
    """Read a YAML recipe and its ``base`` chain (:func:`read_recipe`), then apply ``overrides``
    (see :func:`apply_overrides`).

    Raises:
        FileNotFoundError: no such file (or no such base).
        ValueError: unknown keys or inconsistent values (the message names them).
    """
    p = Path(path).expanduser()
    raw = read_recipe(p)
    apply_overrides(raw, overrides or [])
    cfg = config_from_dict(raw, base=p.resolve().parent)
    cfg.source = str(p.resolve())
    cfg.overrides = list(overrides or [])
    return cfg
