"""Block-causal diffusion-forcing training of the engine's own DiT (``reference-world-lab train``).

One step, for a batch of clips (``reference_world_lab.data``: a clean prefix frame + K blocks)::

    x0      = codec.encode(pixels)                          [B, C, F, h, w], F = 1 + K * bf
    sigma_k ~ shift(U(0, 1)) per block and row               diffusion forcing: every block its own level
              (teacher forcing, prob p: blocks < j clean)    the generation-time situation
    sigma_f = [0, sigma_0 x bf, sigma_1 x bf, ...]           [B, F]   prefix always clean
    x_t     = (1 - sigma_f) x0 + sigma_f noise
    v       = model(x_t, 1000 sigma_f, caption, block-causal mask, positions, per-frame action ids)
    loss    = mean over noisy frames of |v - (noise - x0)|^2  (flow-matching velocity target)

(after ``context_noise_from_step``, clean context frames carry a little Gaussian noise while
still labelled t = 0: generated context is never exact, and a model that trusts it fully drifts.
Unless the model has an anchor-level input (``model.anchor_level: true``), which is told each
clip's std, it must then denoise every anchor blindly, and smooths a clean one a little each block;
``train.context_noise_clean`` leaves a share of clips clean.
With ``train.rollout`` the leading context blocks of some clips are the model's own few-step
generation instead — :func:`rollout_context`, scheduled sampling on the context.)
With ``train.anchor_start`` some noisy blocks start from their anchor noised to the serving's level
instead of from their own frames: how an expert served with ``start: anchor`` meets them.

With ``model.previous_frame: true`` the DiT's input also carries, per frame, the clean frame before
its block (``anchor``: frame ``k * bf`` for block k, the prefix for itself — what the engine feeds
it at generation time), concatenated along channels like Wan2.1-I2V's image latents. A static pixel
is then a copy within its own token; the loss is spent on what moves. A stage that adds these
channels to an earlier stage's weights (``init_from``) starts them at zero (:func:`load_init_weights`).
``data.crop`` trains on random windows of the grid (the RoPE is relative; generation runs on the
whole grid); ``data.crop_motion`` centres most of them on what changes, so a 2-px sprite is not
left to the few uniform windows that happen to hold it. ``train.lr_decay: cosine`` ends a stage at
a small step size.

The model, the block-causal attention (``BlockCausalAttention``: the masked attention of the
pipeline's recompute mode, computed block by block), the codec, the text embedding and, in the eval hook, the generation loop
(``inferix.pipeline.generate_blocks`` with the KV cache and the few-step sampler) are the
engine's own — training and serving share every line of model code.

With ``codec.type: tiny_ae`` a stage 0 comes first (:mod:`reference_world_lab.codec`): the learned
codec is trained on the same frames and saved to ``OUT/codec/`` (a resumed run, or
``codec.init_from``, reuses it), then every frame is encoded once and the DiT trains on the
cached latents.

Checkpoints (``OUT/checkpoints/step_NNNNNN/``, all safetensors + JSON)::

    model.safetensors       training weights
    ema.safetensors         EMA weights (what gets exported)
    optimizer.safetensors   AdamW moments/steps ("state.<param>.<key>") + the data/noise RNG ("rng")
    state.json              step, AdamW param groups, config, recent losses

``--resume`` restores all of it, so a resumed run continues exactly where it stopped (same
batches, same noise, same optimiser state). ``OUT/model/`` is the exported bundle
(:mod:`inferix.bundle`); ``OUT/samples/step_NNNNNN/`` holds the eval hook's videos
(generated | reference side by side) and ``metrics.json`` (rollout MSE per video).
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferix.models.tiny_ae import is_tiny_ae
from reference_world_lab.config import LOSSES, TrainConfig

if TYPE_CHECKING:
    import torch

    from inferix.registry import LoadedModel
    from reference_world_lab.data import Clip, ClipDataset

logger = logging.getLogger(__name__)

__all__ = ["TrainState", "Trainer", "anchor_frames", "block_forward", "param_groups", "device_generator", "diffusion_forcing_loss", "export_checkpoint",
           "object_weights", "still_anchor_error", "teacher_forced_error", "train"]


def sample_block_sigmas(batch: int, blocks: int, shift: float, teacher_forcing: float,
                        generator: torch.Generator) -> torch.Tensor:
    """Per-block noise levels ``[B, K]`` in (0, 1], zero for teacher-forced clean context blocks."""
    import torch

    u = torch.rand(batch, blocks, generator=generator)
    sigma = shift * u / (1 + (shift - 1) * u)
    sigma = sigma.clamp(min=0.02)
    tf = torch.rand(batch, generator=generator) < teacher_forcing
    j = torch.randint(0, blocks, (batch,), generator=generator)  # first noisy block (at least one stays noisy)
    clean = tf[:, None] & (torch.arange(blocks)[None] < j[:, None])
    return sigma.masked_fill(clean, 0.0)


def device_generator(generator: torch.Generator, device: torch.device | str) -> torch.Generator:
    """A generator for the batch-sized noise draws of one step, on the model's ``device``.

    On CPU it is ``generator`` itself (the draws are bit-identical to drawing there directly). On an
    accelerator it is a fresh generator there, seeded by one draw from ``generator``: the two
    ``[B, C, F, h, w]`` noise tensors of a step are then drawn where the model runs instead of on one
    host core, serial with the step (47-100 ms each for the GPU recipe's batch on one core of the
    2-core workstation), and every draw still follows from the CPU generator's state, which the
    checkpoint keeps, so a resumed run draws the same noise.
    """
    import torch

    device = torch.device(device)
    if device.type == "cpu":
        return generator
    seed = int(torch.randint(0, 2**62, (1,), generator=generator))
    return torch.Generator(device=device).manual_seed(seed)


def rollout_context(lm: LoadedModel, clip: Clip, x0: torch.Tensor, block_frames: int, num_blocks: int, text: Any,
                    generator: torch.Generator) -> torch.Tensor:
    """The model's own generation of a clip's first ``num_blocks`` blocks ``[B, C, num_blocks * bf, h, w]``:
    from the clean prefix ``x0[:, :, :1]``, with each block's action and the clip's caption, through the
    engine's pipeline (KV cache, the bundle's few-step sampler; no gradients) — the context the model
    will meet at generation time."""
    from inferix.pipeline import generate_blocks
    from inferix.schedulers import FlowMatchSampler

    acts = [clip.actions[:, 1 + k * block_frames] for k in range(num_blocks)]
    res = generate_blocks(lm.model, None, text, num_blocks, block_frames, FlowMatchSampler(lm.sampling.timesteps),
                          latent_hw=(int(x0.shape[-2]), int(x0.shape[-1])), batch_size=int(x0.shape[0]),
                          action=acts, first_latents=x0[:, :, :1], generator=generator)
    return res.latents[:, :, 1:].to(x0.dtype)


def anchor_frames(blocks: int, block_frames: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """Per frame of a clip (a prefix + ``blocks`` blocks), the index of its anchor: the clean frame
    before its block (frame ``k * bf`` for block k; the prefix is its own), what generation feeds."""
    import torch

    return torch.tensor([0] + [k * block_frames for k in range(blocks) for _ in range(block_frames)], device=device)


def block_forward(model: Any, x_t: torch.Tensor, sig_f: torch.Tensor, text: Any, actions: torch.Tensor,
                  seen: torch.Tensor, block_frames: int, offset: int = 0,
                  anchor_level: torch.Tensor | None = None) -> torch.Tensor:
    """The DiT's velocity for a clip laid out as in training (a prefix frame + K blocks), under the
    block-causal mask: ``x_t`` ``[B, C, F, h, w]`` at per-frame noise levels ``sig_f`` ``[B, F]``,
    actions ``[B, F]``, frame positions from ``offset``. A model that conditions on the previous
    frame gets, for every frame of block k, frame ``k * bf`` of ``seen`` (the clean context as the
    model sees it; the prefix is its own anchor), as generation feeds the last frame it committed;
    a model with :attr:`~inferix.models.configs.WanConfig.anchor_level` also gets the std of the
    noise on ``seen`` (``[B]``; default 0, clean)."""
    import torch

    from inferix.models.attention import BlockCausalAttention

    device = x_t.device
    b, _, f, h, w = x_t.shape
    blocks = (f - 1) // block_frames
    anchor = None
    if model.config.conditions_on_previous_frame:
        anchor = seen[:, :, anchor_frames(blocks, block_frames, device)]
    pos = (torch.arange(f, device=device) + offset).expand(b, f)
    ph, pw = model.config.patch_size[1:]
    backend = BlockCausalAttention([1] + [block_frames] * blocks, (h // ph) * (w // pw))
    level = None
    if model.config.anchor_level:
        level = torch.zeros(b, device=device) if anchor_level is None else anchor_level.to(device)
    return model(x_t, sig_f.to(device) * 1000.0, text.to(device), backend, pos, actions.to(device), anchor, level)


def _first_block_error(lm: LoadedModel, x0: torch.Tensor, seen: torch.Tensor, noise: torch.Tensor,
                       truth: torch.Tensor, actions: torch.Tensor, text: Any, block_frames: int, sigma: float,
                       level: torch.Tensor | None = None) -> list[float]:
    """Mean abs error in grey levels, per row, of the x0 the model implies for the first block of
    ``x0`` noised to ``sigma`` (later blocks pure noise, hidden by the mask), with ``seen`` as the
    clean prefix and anchor, against ``truth`` (the decoded first block, ``[B, T, H, W, 3]``)."""
    import torch

    from inferix.models.vae import to_uint8

    b, _, f = x0.shape[:3]
    sig_f = torch.ones(b, f)
    sig_f[:, 0] = 0.0
    sig_f[:, 1 : 1 + block_frames] = float(sigma)
    s = sig_f.to(x0)[:, None, :, None, None]
    x_t = torch.where(s == 0, seen, (1 - s) * x0 + s * noise)
    with torch.no_grad():
        v = block_forward(lm.model, x_t, sig_f, text, actions, seen, block_frames, anchor_level=level)
    pred = (x_t - s * v.to(x_t))[:, :, 1 : 1 + block_frames]
    return (to_uint8(lm.codec.decode(pred)).float() - truth).abs().mean(dim=(1, 2, 3, 4)).tolist()


def teacher_forced_error(lm: LoadedModel, clip: Clip, block_frames: int, text: Any = None,
                         sigmas: tuple[float, ...] = (1.0, 0.2, 0.05, 0.01), seed: int = 0) -> dict[str, Any]:
    """How well the model predicts a clip's first block from the clean prefix, per noise level
    (``text``: the caption embeddings, by default the model's own of ``clip.captions``).

    The first block is noised to each ``sigma`` (the later blocks are pure noise, which the
    block-causal mask hides from it), and the x0 that the returned velocity implies is compared
    with the truth. Returns mean abs errors in grey levels (0-255) per row: ``copy`` (the
    prefix frame repeated, which is what a zero ``anchor_residual`` head gives) and
    ``x0[sigma]``. An ``x0`` above ``copy`` means the model is worse than standing still; an
    ``x0`` that does not fall as sigma does means the model ignores its noisy input.
    """
    import torch

    from inferix.models.vae import to_uint8

    if text is None:
        text = torch.cat([lm.text_encoder(c) for c in clip.captions])
    x0 = (clip.latents if clip.latents is not None else lm.codec.encode(clip.pixels)).to(lm.model.device)
    noise = torch.randn(x0.shape, generator=torch.Generator().manual_seed(seed)).to(x0)
    truth = to_uint8(lm.codec.decode(x0[:, :, 1 : 1 + block_frames])).float()  # [B, T, H, W, 3]
    prefix = to_uint8(lm.codec.decode(x0[:, :, :1])).float()
    copy = (prefix.expand_as(truth) - truth).abs().mean(dim=(1, 2, 3, 4)).tolist()
    return {"copy": copy, "x0": {float(sigma): _first_block_error(lm, x0, x0, noise, truth, clip.actions, text,
                                                                  block_frames, sigma) for sigma in sigmas}}


def still_anchor_error(lm: LoadedModel, clip: Clip, block_frames: int, action_id: int, text: Any = None,
                       stds: tuple[float, ...] = (0.0, 0.03, 0.075, 0.15), sigma: float = 1.0,
                       tell: bool = True, seed: int = 0) -> dict[float, list[float]]:
    """The still-content floor: how far the model's first block is from a frame that does not move.

    Every frame of ``clip`` is replaced by its first, every action by ``action_id`` (a no-op), and
    the clean context (prefix and anchor) carries Gaussian noise of each std in ``stds`` (latent
    units, as ``train.context_noise`` puts it there); the first block is noised to ``sigma``. A model
    with an anchor-level input is told the std (``tell=False`` tells it 0 whatever the noise: how
    much it relies on the label). Returns, per std, the mean abs error in grey levels (0-255) of the
    x0 the model implies against the still frame, one value per row. Copying the anchor scores 0
    at std 0 and the noise's own size above it. Session 21 measured the shipped model at std 0, where
    its input holds the answer, on the smoke renders: 2.7 grey levels on Atari, 6 on physics and
    robotics content (``reference_world_lab/bench/bench_teacher_forced.py --still``).
    """
    import torch

    from inferix.models.vae import to_uint8

    px = clip.pixels if clip.pixels is not None else lm.codec.decode(clip.latents)
    if text is None:
        text = torch.cat([lm.text_encoder(c) for c in clip.captions])
    x0 = lm.codec.encode(px[:, :, :1].expand_as(px).contiguous()).to(lm.model.device)
    draw = torch.Generator().manual_seed(seed)
    noise = torch.randn(x0.shape, generator=draw).to(x0)
    ctx_noise = torch.randn(x0.shape, generator=draw).to(x0)
    acts = torch.full_like(clip.actions, int(action_id))
    truth = to_uint8(lm.codec.decode(x0[:, :, 1 : 1 + block_frames])).float()
    b = x0.shape[0]
    return {float(std): _first_block_error(lm, x0, x0 + float(std) * ctx_noise, noise, truth, acts, text, block_frames,
                                           sigma, torch.full((b,), float(std) if tell else 0.0))
            for std in stds}


def object_weights(objects: torch.Tensor, grid: tuple[int, int, int], share: float) -> torch.Tensor:
    """Per-cell loss weights ``[B, 1, F, h, w]`` that give a clip's objects ``share`` of its weight.

    ``objects`` ``[B, 1, F, H, W]`` is the share of each pixel an object covers; it is averaged onto
    the latent ``grid`` ``(F, h, w)``, and a cell counts where an object is or was a frame earlier
    (leaving a place is as much the object's motion as arriving). Per clip, with ``p`` the mean
    cover over the noisy frames (all but the prefix), covered cells weigh
    ``alpha = share (1 - p) / ((1 - share) p)`` times the rest, so they hold ``share`` of the weight,
    never less than 1 (objects that already cover more than ``share`` are not weighed down); a
    clip without objects keeps weight 1 everywhere.
    """
    import torch
    import torch.nn.functional as F

    m = F.adaptive_avg_pool3d(objects.float(), grid)  # [B, 1, F, h, w]
    m = torch.maximum(m, torch.cat([m[:, :, :1], m[:, :, :-1]], 2))
    p = m[:, :, 1:].mean(dim=(1, 2, 3, 4))  # [B]
    alpha = torch.where(p > 0, share * (1 - p) / ((1 - share) * p.clamp_min(1e-12)), torch.ones_like(p))
    alpha = alpha.clamp_min(1.0)
    return 1 + (alpha - 1)[:, None, None, None, None] * m


def penalty(error: torch.Tensor, loss: str = "mse", huber_c: float = 0.01) -> torch.Tensor:
    """Elementwise penalty of ``error`` under ``train.loss``: ``mse`` = e^2, ``l1`` = |e|,
    ``pseudo_huber`` = sqrt(e^2 + c^2) - c (quadratic below ``huber_c``, absolute above)."""
    import torch

    if loss == "mse":
        return error**2
    if loss == "l1":
        return error.abs()
    if loss == "pseudo_huber":
        return torch.sqrt(error**2 + huber_c**2) - huber_c
    raise ValueError(f"unknown loss {loss!r} (known: {', '.join(LOSSES)})")


def diffusion_forcing_loss(lm: LoadedModel, clip: Clip, block_frames: int, text: Any, *, shift: float,
                           teacher_forcing: float, generator: torch.Generator,
                           context_noise: float = 0.0, motion_weight: float = 0.0,
                           rollout: float = 0.0, context_noise_clean: float = 0.0,
                           object_share: float = 0.0, loss: str = "mse", huber_c: float = 0.01,
                           anchor_start: float = 0.0, anchor_start_sigma: float = 0.2,
                           anchor_start_rows: torch.Tensor | None = None) -> torch.Tensor:
    """The training loss of one batch (see the module docstring).

    Args:
        lm: the model bundle (DiT + codec).
        clip: the batch.
        block_frames: latent frames per block.
        text: ``[B, L, text_dim]`` caption embeddings.
        shift: flow-matching shift of the noise-level distribution.
        teacher_forcing: probability of clean leading context blocks.
        generator: CPU generator for noise levels, noise and positions.
        context_noise: max std of the noise put on clean (t = 0) context frames (0 = none).
        motion_weight: extra loss weight on pixels that change from the previous frame (0 = none).
        rollout: probability per clip that its first ``j`` blocks (``j`` uniform in 1..K-1) are the
            model's own generation (:func:`rollout_context`) instead of the reference, as clean
            context for the rest, whose targets stay the reference (0 = never).
        context_noise_clean: share of clips whose context stays clean while ``context_noise`` is on.
            A model with :attr:`~inferix.models.configs.WanConfig.anchor_level` is told each clip's
            std, so these clips are where level 0 means "copy what stands still".
        object_share: share of each clip's loss weight on its ground-truth objects (``clip.objects``,
            where an object is or was a frame earlier; :func:`object_weights`). 0 = off.
        loss: the penalty on each element's error: ``mse``, ``l1`` or ``pseudo_huber`` with
            ``huber_c`` (:class:`~reference_world_lab.config.OptimConfig`).
        anchor_start: probability per noisy block that its input is its anchor (the clean context
            frame before it, :func:`anchor_frames`) noised to ``anchor_start_sigma`` rather than its
            own frames: the block as an expert served with ``start: anchor`` meets it. 0 = never.
        anchor_start_sigma: that input's noise level.
        anchor_start_rows: ``bool [B]``, the rows ``anchor_start`` may pick (``None`` = all).
    """
    import torch

    model = lm.model
    device = model.device
    x0 = (clip.latents if clip.latents is not None else lm.codec.encode(clip.pixels)).to(device)  # [B, C, F, h, w]
    b, _, f = x0.shape[:3]
    blocks = (f - 1) // block_frames
    sig_b = sample_block_sigmas(b, blocks, shift, teacher_forcing, generator)  # [B, K]
    ctx = x0  # the clean frames as the model sees them in its context
    if rollout > 0 and blocks > 1:
        roll = torch.rand(b, generator=generator) < rollout
        j = torch.randint(1, blocks, (b,), generator=generator)  # generated context blocks; >= 1 stays noisy
        if bool(roll.any()):
            n = int(j[roll].max())
            gen = rollout_context(lm, clip, x0, block_frames, n, text, generator)  # [B, C, n * bf, h, w], no grad
            own = roll[:, None] & (torch.arange(blocks)[None] < j[:, None])  # [B, K] blocks to replace
            sig_b = sig_b.masked_fill(own, 0.0)
            use = own.repeat_interleave(block_frames, 1)[:, : n * block_frames].to(device)[:, None, :, None, None]
            ctx = x0.clone()
            ctx[:, :, 1 : 1 + n * block_frames] = torch.where(use, gen, x0[:, :, 1 : 1 + n * block_frames])
    start = None
    if anchor_start > 0:
        pick = (torch.rand(b, blocks, generator=generator) < anchor_start) & (sig_b > 0)
        if anchor_start_rows is not None:
            pick &= anchor_start_rows.bool()[:, None]
        sig_b = sig_b.masked_fill(pick, anchor_start_sigma)
        start = torch.cat([torch.zeros(b, 1, dtype=torch.bool), pick.repeat_interleave(block_frames, 1)], 1)
    sig_f = torch.cat([torch.zeros(b, 1), sig_b.repeat_interleave(block_frames, 1)], 1).to(device)  # [B, F]
    draw = device_generator(generator, device)
    noise = torch.randn(x0.shape, generator=draw, device=device)
    s = sig_f[:, None, :, None, None]
    base = ctx
    if start is not None:  # those blocks start from their anchor
        anchors = ctx[:, :, anchor_frames(blocks, block_frames, device)]
        base = torch.where(start.to(device)[:, None, :, None, None], anchors, ctx)
    x_t = (1 - s) * base + s * noise
    seen = ctx
    std = torch.zeros(b)
    if context_noise > 0:  # corrupt the t = 0 context only; the targets stay the clean x0
        std = torch.rand(b, generator=generator) * context_noise
        if context_noise_clean > 0:
            std = std.masked_fill(torch.rand(b, generator=generator) < context_noise_clean, 0.0)
        extra = torch.randn(x0.shape, generator=draw, device=device) * std.to(device)[:, None, None, None, None]
        x_t = torch.where(s == 0, x_t + extra, x_t)
        seen = ctx + extra
    # RoPE is relative, but the engine runs at growing absolute positions: train at random offsets
    offset = int(torch.randint(0, 64, (1,), generator=generator))
    v = block_forward(model, x_t, sig_f, text, clip.actions, seen, block_frames, offset, anchor_level=std)
    if model.config.prediction == "anchor_residual":
        # the head predicts x0 - anchor: an x0 loss (the velocity error is that over sigma, which
        # would weigh the last steps by 1 / sigma^2)
        err = penalty(x_t.float() - s * v.float() - x0, loss, huber_c)
    else:
        err = penalty(v.float() - (noise - x0), loss, huber_c)  # [B, C, F, h, w]
    wmap = None
    if motion_weight > 0:
        change = torch.zeros_like(x0[:, :1])  # [B, 1, F, h, w]; the prefix has no loss anyway
        change[:, :, 1:] = (x0[:, :, 1:] - x0[:, :, :-1]).abs().mean(1, keepdim=True)
        wmap = 1 + motion_weight * change
    if object_share > 0 and clip.objects is not None:
        omap = object_weights(clip.objects.to(device), tuple(x0.shape[2:]), object_share)
        wmap = omap if wmap is None else wmap * omap
    if wmap is not None:
        err = err * (wmap / wmap[:, :, 1:].mean(dim=(2, 3, 4), keepdim=True))
    per_frame = err.mean(dim=(1, 3, 4))  # [B, F]
    weight = (sig_f > 0).float()
    return (per_frame * weight).sum() / weight.sum()


def load_init_weights(model: torch.nn.Module, state: dict[str, torch.Tensor],
                      vocabulary: Sequence[str] | None = None, init_vocabulary: Sequence[str] | None = None) -> None:
    """Load ``init_from`` weights; a model that adds previous-frame input channels or the
    anchor-level input to an earlier stage gets zero weights (or a zero output layer) for them,
    so it starts as exactly that stage's model. A model whose action ``vocabulary`` differs from
    the earlier stage's (``init_vocabulary``; default: the first rows of ``vocabulary``) gets its
    action table rebuilt by name (:func:`~reference_world_lab.bundles.remap_action_rows`: a new
    ``move_ee@down`` starts as ``move_ee``).

    Raises:
        ValueError: any other shape mismatch (the message names the tensor).
    """
    import torch

    from reference_world_lab.bundles import remap_action_rows

    own = model.state_dict()
    table = "action_embedder.table.weight"
    if vocabulary is not None and table in state and table in own and state[table].shape != own[table].shape:
        old_names = list(init_vocabulary) if init_vocabulary is not None else list(vocabulary)[: state[table].shape[0]]
        state = {**state, table: remap_action_rows(state[table], old_names, list(vocabulary), own[table])}
        logger.info("init_from: action table %d -> %d rows by name", len(old_names), len(vocabulary))
    key = "patch_embedding.weight"
    if key in state and key in own and state[key].shape != own[key].shape:
        old, new = state[key], own[key]
        if old.shape[0] == new.shape[0] and 2 * old.shape[1] == new.shape[1] and old.shape[2:] == new.shape[2:]:
            logger.info("init_from: %s %s -> %s, previous-frame channels start at zero", key,
                        tuple(old.shape), tuple(new.shape))
            state = {**state, key: torch.cat([old, torch.zeros_like(old)], 1)}
    gained = [k for k in own if k not in state and k.startswith("anchor_level_embedder.")]
    if gained:  # a stage that adds the anchor-level input keeps its zero-output init
        logger.info("init_from: %s start at their init (the anchor-level input adds nothing yet)", ", ".join(gained))
        state = {**state, **{k: own[k] for k in gained}}
    bad = [k for k in own if k in state and state[k].shape != own[k].shape]
    if bad:
        raise ValueError("init_from weights do not fit this model: "
                         + ", ".join(f"{k} {tuple(state[k].shape)} vs {tuple(own[k].shape)}" for k in bad))
    model.load_state_dict(state)


def blend_with_start(model: torch.nn.Module, cfg: TrainConfig) -> torch.nn.Module:
    """``model`` with ``train.export_blend`` of its weights and the rest from ``init_from`` (a new
    module; ``model`` itself is unchanged). Returns ``model`` when the blend is 1.

    Raises:
        ValueError: the ``init_from`` weights lack a tensor of the model, add one, or differ in a
            shape (a stage that grew the model cannot be blended with its start).
    """
    import copy

    import torch
    from safetensors.torch import load_file

    share = cfg.train.export_blend
    if share >= 1.0:
        return model
    if not cfg.init_from:
        raise ValueError("train.export_blend < 1 blends with the init_from weights: set init_from")
    start = load_file(str(Path(cfg.init_from) / "diffusion_pytorch_model.safetensors"))
    own = model.state_dict()
    bad = sorted(set(own) ^ set(start)) + [k for k in own if k in start and start[k].shape != own[k].shape]
    if bad:
        raise ValueError(f"train.export_blend: the init_from weights ({cfg.init_from}) do not match the trained "
                         f"model's tensors ({', '.join(bad[:5])}); blend only a fine-tune of the same architecture")
    blended = copy.deepcopy(model)
    with torch.no_grad():
        blended.load_state_dict({k: (share * v.float() + (1.0 - share) * start[k].float()).to(v.dtype)
                                 for k, v in own.items()})
    return blended


def _blend_meta(cfg: TrainConfig) -> dict[str, Any]:
    if cfg.train.export_blend >= 1.0:
        return {}
    return {"export_blend": cfg.train.export_blend, "blended_with": str(cfg.init_from)}


def param_groups(model: torch.nn.Module, lr_mult: dict[str, float]) -> list[dict[str, Any]]:
    """AdamW parameter groups for ``train.lr_mult``: one group per factor (``lr_mult`` kept in the
    group, so a checkpoint restores it), each parameter in the group of its longest matching name
    prefix, the rest at factor 1.

    Raises:
        ValueError: a prefix that matches no parameter (the message lists the top-level modules).
    """
    def under(name: str, prefix: str) -> bool:
        return name == prefix or name.startswith(prefix.rstrip(".") + ".")

    names = [n for n, _ in model.named_parameters()]
    unused = [p for p in lr_mult if not any(under(n, p) for n in names)]
    if unused:
        tops = sorted({n.split(".")[0] for n in names})
        raise ValueError(f"train.lr_mult prefixes {unused} match no parameter of the model (its modules: "
                         f"{', '.join(tops)})")
    groups: dict[float, list[Any]] = {}
    for n, p in model.named_parameters():
        hits = [k for k in lr_mult if under(n, k)]
        factor = float(lr_mult[max(hits, key=len)]) if hits else 1.0
        groups.setdefault(factor, []).append(p)
    return [{"params": ps, "lr_mult": f} for f, ps in sorted(groups.items())]


@dataclass
class TrainState:
    """Bookkeeping that a checkpoint restores."""

    step: int = 0
    losses: list[float] = field(default_factory=list)
    wall_s: float = 0.0


class Trainer:
    """Holds the model, EMA, optimiser, data and RNG of one training run.

    Args:
        cfg: the recipe.
        device: ``cpu`` or ``cuda``.
    """

    def __init__(self, cfg: TrainConfig, device: str = "cpu", progress: bool = False) -> None:
        import copy

        import torch

        from inferix.models.configs import WanConfig
        from reference_world_lab.bundles import bundle_from_config, codec_from_config
        from reference_world_lab.data import ClipDataset

        if cfg.train.threads > 0:
            torch.set_num_threads(cfg.train.threads)
        self.cfg = cfg
        self.device = device
        if device.startswith("cuda"):  # fp32 matmuls on tensor cores (diffusers' --allow_tf32)
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
        self.out = Path(cfg.out_dir)
        codec = None
        if cfg.codec.type == "tiny_ae" and not cfg.codec.init_from and is_tiny_ae(Path(cfg.out_dir) / "codec"):
            from inferix.models.tiny_ae import TinyAECodec

            codec = TinyAECodec.from_pretrained(Path(cfg.out_dir) / "codec", device=device)  # stage 0 done
        self.lm = bundle_from_config(cfg, device=device, codec=codec if codec is not None else
                                     codec_from_config(cfg, device))
        if cfg.init_from:
            from safetensors.torch import load_file

            weights = Path(cfg.init_from) / "diffusion_pytorch_model.safetensors"
            if not weights.is_file():
                raise FileNotFoundError(f"init_from {cfg.init_from!r} has no {weights.name} (give an exported bundle)")
            init_info = Path(cfg.init_from) / "bundle.json"
            init_vocab = (json.loads(init_info.read_text()).get("actions", {}).get("vocabulary")
                          if init_info.is_file() else None)
            load_init_weights(self.lm.model, load_file(str(weights)), cfg.actions.vocabulary, init_vocab)
        if self.lm.model.config.prediction == "anchor_residual" and (cfg.train.zero_head or not (
                cfg.init_from and WanConfig.from_json(Path(cfg.init_from) / "config.json").prediction == "anchor_residual")):
            # a fresh change head: the stage starts as "repeat the last frame" (on an earlier stage's trunk)
            import torch

            with torch.no_grad():
                self.lm.model.proj_out.weight.zero_()
                self.lm.model.proj_out.bias.zero_()
        self.lm.model.train()
        self.ema = copy.deepcopy(self.lm.model).eval().requires_grad_(False)
        self.data: ClipDataset = ClipDataset(cfg.data, cfg.actions,
                                             lambda hw, content: self.lm.pixel_hw(self.lm.latent_hw_for(hw, content)),
                                             object_masks=cfg.train.object_share > 0,
                                             object_skip=cfg.train.object_share_skip)
        self.codec_info: dict[str, Any] | None = None
        if cfg.codec.type == "tiny_ae":
            if codec is None and not cfg.codec.init_from:
                from reference_world_lab.codec import train_codec

                logger.info("stage 0: training the codec (%d steps)", cfg.codec.steps)
                self.codec_info = train_codec(self.lm.codec, self.data, cfg.codec, self.out, seed=cfg.seed,
                                              progress=progress)
            self.lm.codec.ae.requires_grad_(False)
            self.data.encode_latents(self.lm.codec, progress=progress)
        self.opt = torch.optim.AdamW(param_groups(self.lm.model, cfg.train.lr_mult), lr=cfg.train.lr,
                                     weight_decay=cfg.train.weight_decay, betas=(0.9, 0.99))
        self.gen = torch.Generator().manual_seed(cfg.seed)
        self.state = TrainState()
        self._text_memo: dict[str, torch.Tensor] = {}

    # ------------------------------------------------------------------ pieces
    def text(self, captions: list[str]) -> torch.Tensor:
        """``[B, L, text_dim]`` embeddings of ``captions`` (memoised per caption)."""
        import torch

        for c in captions:
            if c not in self._text_memo:
                self._text_memo[c] = self.lm.text_encoder(c)
        return torch.cat([self._text_memo[c] for c in captions])

    def lr_at(self, step: int) -> float:
        """Linear warm-up, then constant or (``train.lr_decay: cosine``) half a cosine down to 0 at ``train.steps``."""
        t = self.cfg.train
        if step < t.warmup or t.lr_decay == "constant":
            return t.lr * min(1.0, (step + 1) / max(1, t.warmup))
        progress = min(1.0, (step - t.warmup) / max(1, t.steps - t.warmup))
        return t.lr * 0.5 * (1.0 + math.cos(math.pi * progress))

    def train_step(self) -> float:
        """One optimiser step; returns the loss."""
        import torch

        t = self.cfg.train
        d = self.cfg.data
        self.data.crop = d.crop if not d.crop_steps or self.state.step < d.crop_steps else 0
        clip = self.data.sample(t.batch_size, self.gen)
        for g in self.opt.param_groups:
            g["lr"] = self.lr_at(self.state.step) * g.get("lr_mult", 1.0)
        ctx_noise = t.context_noise if self.state.step >= t.context_noise_from_step else 0.0
        motion = t.motion_weight if self.state.step >= t.motion_weight_from_step else 0.0
        with torch.autocast(torch.device(self.device).type, dtype=torch.bfloat16, enabled=t.autocast == "bf16"):
            loss = diffusion_forcing_loss(self.lm, clip, self.cfg.data.block_frames, self.text(clip.captions),
                                          shift=t.timestep_shift, teacher_forcing=t.teacher_forcing,
                                          generator=self.gen, context_noise=ctx_noise, motion_weight=motion,
                                          rollout=t.rollout, context_noise_clean=t.context_noise_clean,
                                          object_share=t.object_share if self.state.step >= t.object_share_from_step else 0.0,
                                          loss=t.loss, huber_c=t.huber_c, anchor_start=t.anchor_start,
                                          anchor_start_sigma=t.anchor_start_sigma,
                                          anchor_start_rows=self._rows_matching(clip, t.anchor_start_only))
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.lm.model.parameters(), t.grad_clip)
        self.opt.step()
        self._update_ema()
        self.state.step += 1
        value = float(loss.detach())
        self.state.losses.append(value)
        del self.state.losses[:-1000]
        return value

    @staticmethod
    def _rows_matching(clip: Clip, keys: Sequence[str]) -> torch.Tensor | None:
        """``bool [B]``: the rows whose video matches one of ``keys`` (generator, family or
        scenario); ``None`` (every row) when ``keys`` is empty."""
        import torch

        if not keys:
            return None
        if len(clip.content_keys) != len(clip.case_ids):
            raise ValueError("train.anchor_start_only needs each clip row's content (Clip.content_keys, "
                             "which ClipDataset.sample fills)")
        wanted = set(keys)
        return torch.tensor([bool(wanted.intersection(k)) for k in clip.content_keys], dtype=torch.bool)

    def _update_ema(self) -> None:
        import torch

        # warm-up of the decay, so early EMA weights are not dominated by the random init
        d = min(self.cfg.train.ema, (1 + self.state.step) / (10 + self.state.step))
        with torch.no_grad():
            for pe, p in zip(self.ema.parameters(), self.lm.model.parameters(), strict=True):
                pe.lerp_(p.detach(), 1 - d)

    # ------------------------------------------------------------------ checkpoints
    def save_checkpoint(self) -> Path:
        """Write ``OUT/checkpoints/step_NNNNNN/`` and point ``latest`` at it."""
        from safetensors.torch import save_file

        d = self.out / "checkpoints" / f"step_{self.state.step:06d}"
        d.mkdir(parents=True, exist_ok=True)
        save_file({k: v.detach().contiguous().cpu() for k, v in self.lm.model.state_dict().items()},
                  str(d / "model.safetensors"))
        save_file({k: v.detach().contiguous().cpu() for k, v in self.ema.state_dict().items()},
                  str(d / "ema.safetensors"))
        sd = self.opt.state_dict()
        tensors = {"rng": self.gen.get_state()}
        scalars: dict[str, Any] = {}
        for idx, st in sd["state"].items():
            for key, val in st.items():
                if hasattr(val, "shape"):
                    tensors[f"state.{idx}.{key}"] = val.detach().contiguous().cpu()
                else:
                    scalars[f"{idx}.{key}"] = val
        save_file(tensors, str(d / "optimizer.safetensors"))
        meta = {"step": self.state.step, "param_groups": sd["param_groups"], "scalars": scalars,
                "losses": self.state.losses[-200:], "wall_s": self.state.wall_s, "config": self.cfg.to_dict()}
        (d / "state.json").write_text(json.dumps(meta, indent=1))
        (self.out / "checkpoints" / "latest").write_text(d.name)
        logger.info("checkpoint %s", d)
        return d

    def latest_checkpoint(self) -> Path | None:
        ptr = self.out / "checkpoints" / "latest"
        if not ptr.is_file():
            return None
        d = self.out / "checkpoints" / ptr.read_text().strip()
        return d if d.is_dir() else None

    def load_checkpoint(self, path: str | Path | None = None) -> int:
        """Restore weights, EMA, optimiser and RNG from ``path`` (default: the latest); returns its step.

        Raises:
            FileNotFoundError: no checkpoint to resume from.
        """
        from safetensors.torch import load_file

        d = Path(path) if path is not None else self.latest_checkpoint()
        if d is None or not (d / "state.json").is_file():
            raise FileNotFoundError(f"no checkpoint to resume from under {self.out / 'checkpoints'}")
        meta = json.loads((d / "state.json").read_text())
        self.lm.model.load_state_dict(load_file(str(d / "model.safetensors")))
        self.ema.load_state_dict(load_file(str(d / "ema.safetensors")))
        tensors = load_file(str(d / "optimizer.safetensors"))
        self.gen.set_state(tensors.pop("rng"))
        state: dict[int, dict[str, Any]] = {}
        for name, val in tensors.items():
            _, idx, key = name.split(".", 2)
            state.setdefault(int(idx), {})[key] = val
        for name, val in meta["scalars"].items():
            idx, key = name.split(".", 1)
            state.setdefault(int(idx), {})[key] = val
        self.opt.load_state_dict({"state": state, "param_groups": meta["param_groups"]})
        self.state = TrainState(step=int(meta["step"]), losses=list(meta["losses"]), wall_s=float(meta["wall_s"]))
        logger.info("resumed from %s (step %d)", d, self.state.step)
        return self.state.step

    # ------------------------------------------------------------------ eval hook
    def eval_videos(self) -> list[int]:
        """Indices of the videos the eval hook renders: the first of each grid, then more, by case id."""
        order = sorted(range(len(self.data.videos)), key=lambda i: self.data.videos[i].case_id)
        firsts = [min(g, key=lambda i: self.data.videos[i].case_id) for g in self.data.groups.values()]
        picked = sorted(firsts, key=lambda i: self.data.videos[i].case_id)
        picked += [i for i in order if i not in picked]
        return picked[: self.cfg.train.eval_videos]

    def evaluate(self, max_blocks: int = 8) -> dict[str, Any]:
        """Eval hook: roll the EMA model out from each eval video's first frame with its actions and
        captions, through the engine's pipeline (KV cache + the few-step sampler); write
        generated | reference mp4s and the rollout MSE."""
        import numpy as np
        import torch

        from inferix.pipeline import generate_blocks
        from inferix.schedulers import FlowMatchSampler
        from inferix.streaming.mp4 import Mp4Writer

        out = self.out / "samples" / f"step_{self.state.step:06d}"
        out.mkdir(parents=True, exist_ok=True)
        bf = self.cfg.data.block_frames
        sampler = FlowMatchSampler(self.lm.sampling.timesteps)
        metrics: dict[str, Any] = {}
        for i in self.eval_videos():
            v = self.data.videos[i]
            n = min(max_blocks, (len(v.frames) - 1) // bf)
            starts = [1 + k * bf for k in range(n)]
            pixels = torch.from_numpy(v.frames[:1]).permute(3, 0, 1, 2)[None].float() / 127.5 - 1.0
            latent_hw = self.lm.latent_hw_for(v.hw)
            res = generate_blocks(self.ema, self.lm.codec, [v.captions[s] for s in starts], n, bf, sampler,
                                  latent_hw=latent_hw, text_encoder=self.lm.text_encoder,
                                  action=[torch.tensor([int(v.action_ids[s])]) for s in starts],
                                  first_frame=pixels, generator=torch.Generator().manual_seed(0))
            assert res.frames is not None  # a codec was given
            gen = res.frames[0].numpy()  # [T, H, W, 3]
            ref = v.frames[: len(gen)]
            mse = float(np.mean((gen[1:].astype(np.float32) - ref[1:].astype(np.float32)) ** 2) / 255.0**2)
            metrics[v.case_id] = {"rollout_mse": mse, "frames": len(gen)}
            with Mp4Writer(out / f"{v.case_id}.mp4", fps=self.cfg.fps) as wr:
                wr.write(np.concatenate([gen, ref], axis=2))
        if metrics:
            metrics["mean_rollout_mse"] = float(np.mean([m["rollout_mse"] for m in metrics.values()]))
        (out / "metrics.json").write_text(json.dumps({"step": self.state.step, **metrics}, indent=1))
        return metrics

    def export(self, out: str | Path | None = None) -> Path:
        """Write the EMA weights (blended with the start by ``train.export_blend``) as a bundle
        (default ``OUT/model``)."""
        from reference_world_lab.bundles import write_bundle

        path = write_bundle(blend_with_start(self.ema, self.cfg), self.cfg, out or self.out / "model",
                            codec=self.lm.codec)
        meta = {"step": self.state.step, "wall_s": round(self.state.wall_s, 1),
                "final_loss": (sum(self.state.losses[-50:]) / max(1, len(self.state.losses[-50:])))
                if self.state.losses else None, "config": self.cfg.source, "overrides": self.cfg.overrides,
                **_blend_meta(self.cfg)}
        (path / "training.json").write_text(json.dumps(meta, indent=1))
        return path


def export_checkpoint(cfg: TrainConfig, checkpoint: str | Path, out: str | Path) -> Path:
    """Export a checkpoint's EMA weights (blended with the start by ``train.export_blend``) as a
    bundle without loading the training data (e.g. to ship the best checkpoint of a run that was
    stopped)."""
    import torch
    from safetensors.torch import load_file

    from inferix.models.causal_wan import CausalWanModel
    from reference_world_lab.bundles import write_bundle

    codec = None
    if cfg.codec.type == "tiny_ae":
        from inferix.models.tiny_ae import TinyAECodec

        codec = TinyAECodec.from_pretrained(cfg.codec.init_from or Path(cfg.out_dir) / "codec")
    ckpt = Path(checkpoint)
    with torch.device("meta"):
        model = CausalWanModel(cfg.wan_config())
    model = model.to_empty(device="cpu")
    model.load_state_dict(load_file(str(ckpt / "ema.safetensors")))
    path = write_bundle(blend_with_start(model, cfg), cfg, out, codec=codec)
    meta = json.loads((ckpt / "state.json").read_text())
    losses = meta.get("losses") or []
    (path / "training.json").write_text(json.dumps({
        "step": meta["step"], "wall_s": round(float(meta.get("wall_s", 0.0)), 1),
        "final_loss": sum(losses[-50:]) / len(losses[-50:]) if losses else None,
        "config": cfg.source, "overrides": cfg.overrides, "checkpoint": str(ckpt), **_blend_meta(cfg)}, indent=1))
    return path


def _hardware() -> str:
    import os
    import platform

    import torch

    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs visible, torch threads {torch.get_num_threads()}"


def train(cfg: TrainConfig, *, resume: bool = False, steps: int | None = None, device: str = "cpu",
          progress: bool = True) -> Trainer:
    """Run the recipe (see the module docstring); returns the trainer (its exported model in ``OUT/model``).

    Args:
        cfg: the recipe.
        resume: continue from the latest checkpoint under ``cfg.out_dir``.
        steps: stop at this step instead of ``cfg.train.steps``.
        device: training device.
        progress: show a tqdm progress bar.
    """
    from tqdm import tqdm

    trainer = Trainer(cfg, device=device, progress=progress)
    if resume:
        trainer.load_checkpoint()
    total = cfg.train.steps if steps is None else steps
    t = cfg.train
    trainer.out.mkdir(parents=True, exist_ok=True)
    log = (trainer.out / "log.jsonl").open("a")
    logger.info("training %s on %s for %d steps", cfg.name, _hardware(), total)
    bar = tqdm(total=total, initial=trainer.state.step, disable=not progress, desc=cfg.name, unit="step")
    try:
        while trainer.state.step < total:
            t0 = time.perf_counter()
            loss = trainer.train_step()
            trainer.state.wall_s += time.perf_counter() - t0
            step = trainer.state.step
            bar.update(1)
            if not math.isfinite(loss):
                raise FloatingPointError(f"loss became {loss} at step {step}; lower train.lr in the config")
            if t.log_every and step % t.log_every == 0:
                recent = trainer.state.losses[-t.log_every:]
                avg = sum(recent) / len(recent)
                bar.set_postfix(loss=f"{avg:.4f}")
                log.write(json.dumps({"step": step, "loss": avg, "lr": trainer.lr_at(step - 1),
                                      "wall_s": round(trainer.state.wall_s, 2)}) + "\n")
                log.flush()
            if t.ckpt_every and step % t.ckpt_every == 0:
                trainer.save_checkpoint()
            if t.eval_every and step % t.eval_every == 0:
                m = trainer.evaluate()
                log.write(json.dumps({"step": step, "eval": m}) + "\n")
                log.flush()
    finally:
        bar.close()
        log.close()
    if not (t.ckpt_every and trainer.state.step % t.ckpt_every == 0):
        trainer.save_checkpoint()
    trainer.export()
    return trainer
