"""Single-session block-diffusion generation: the reference semantics of the engine.

For one video, blocks of ``block_frames`` latent frames are generated in order::

    for block b (frames [b*bf, (b+1)*bf)):
        x = noise
        for i, t in enumerate(sampler.timesteps):      # cache read-only (commit = False)
            v  = model(x, t, text, backend, positions)  # attends to cached past + itself
            x  = x0 = x - sigma(t) * v                  # last step
                 or renoise(x0, t_next, fresh noise)    # other steps
        model(x0, t=0, text, backend, positions)        # commit = True: clean K/V into the cache
        pixels += decoder.decode(x0)                    # streamed VAE, causal state carried

``recompute=True`` runs the same loop without a cache: every model call is one forward over
all clean past frames (t = 0) plus the current block, with a block-causal mask. The two
give the same video (the equivalence test), and the recompute mode is the "no KV cache"
baseline of the benchmarks.

Image-to-video: ``first_frame`` (pixels ``[B, 3, 1, H, W]``) is encoded to one latent frame
that is committed as a clean 1-frame prefix block at position 0 (and decoded as the first
video frame); generated blocks start at position 1.

The engine (``inferix.engine``) generalises this loop to many sessions batched together.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from inferix.models.attention import AttentionBackend
    from inferix.models.causal_wan import CausalWanModel, CrossAttentionKV
    from inferix.schedulers import FlowMatchSampler

logger = logging.getLogger(__name__)

__all__ = ["GenerationOutput", "generate_blocks", "set_commit"]

TextInput = Any  # str | Tensor [B, L, D] | CrossAttentionKV


@dataclass
class GenerationOutput:
    """What :func:`generate_blocks` returns.

    Attributes:
        latents: ``[B, C, F, h, w]`` clean latents of the whole video (prefix included).
        frames: ``uint8 [B, T, H, W, 3]`` decoded video, or None when no codec was given.
        block_pixel_frames: pixel frames each decoded block contributed (prefix first, if any).
        timings: seconds per phase (``denoise``, ``commit``, ``decode``), summed over blocks.
    """

    latents: torch.Tensor
    frames: torch.Tensor | None
    block_pixel_frames: list[int] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)


def set_commit(backend: Any, commit: bool) -> None:
    """Tell a backend whether the next forward writes its k/v (``set_commit`` or a ``commit`` attribute)."""
    if hasattr(backend, "set_commit"):
        backend.set_commit(commit)
    else:
        backend.commit = commit


def _per_block(value: Any, num_blocks: int, name: str) -> list[Any]:
    """A single value for all blocks, or a list with one per block."""
    if isinstance(value, (list, tuple)):
        if len(value) != num_blocks:
            raise ValueError(f"{name} has {len(value)} entries; give one per block ({num_blocks}) or a single one")
        return list(value)
    return [value] * num_blocks


def _frame_action(action: torch.Tensor | None, frames: int) -> torch.Tensor | None:
    """Per-call action ``[B]`` / ``[B, A]`` -> per-frame ``[B, F]`` / ``[B, F, A]`` (recompute mode)."""
    if action is None:
        return None
    if action.dtype.is_floating_point:
        return action[:, None].expand(-1, frames, -1) if action.ndim == 2 else action
    return action[:, None].expand(-1, frames) if action.ndim == 1 else action


def generate_blocks(
    model: CausalWanModel,
    vae: Any | None,
    text: TextInput | Sequence[TextInput],
    num_blocks: int,
    block_frames: int,
    sampler: FlowMatchSampler,
    backend: AttentionBackend | None = None,
    *,
    latent_hw: tuple[int, int],
    batch_size: int = 1,
    text_encoder: Callable[[str], torch.Tensor] | None = None,
    action: torch.Tensor | Sequence[torch.Tensor | None] | None = None,
    negative_text: TextInput | None = None,
    uncond_backend: AttentionBackend | None = None,
    first_frame: torch.Tensor | None = None,
    first_latents: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
    recompute: bool = False,
    on_block: Callable[[int, torch.Tensor, torch.Tensor | None], None] | None = None,
    anchor_level: float = 0.0,
) -> GenerationOutput:
    """Generate one video (a batch of ``batch_size`` independent rows) block by block.

    Args:
        model: the DiT.
        vae: a codec (:mod:`inferix.models.vae`) or None to return latents only.
        text: prompt string (needs ``text_encoder``), embeddings ``[B|1, L, D]``, a precomputed
            :class:`CrossAttentionKV`, or a list with one of those per block (prompt changes
            between blocks; not with ``recompute``).
        num_blocks: blocks to generate.
        block_frames: latent frames per block.
        sampler: timesteps and guidance.
        backend: a KV-cache backend (default: a fresh :class:`ContiguousKVCache`).
        latent_hw: latent (h, w).
        batch_size: rows.
        text_encoder: ``str -> [1, L, D]`` for string prompts.
        action: model action input (``[B]`` ids / ``[B, A]``), or a list with one per block.
        negative_text: unconditional text for classifier-free guidance (``sampler.guidance_scale != 1``).
        uncond_backend: cache of the unconditional branch (default: a fresh one).
        first_frame: ``[B, 3, 1, H, W]`` pixels in [-1, 1] for image-to-video (needs ``vae``).
        first_latents: ``[B, C, f, h, w]`` clean latents of the prefix instead of ``first_frame``
            (already encoded, e.g. the training recipe's rollouts).
        generator: CPU generator for all noise (same generator state -> same video).
        recompute: no cache; every call recomputes the clean past with a block-causal mask.
        on_block: called after each block with ``(block_index, latents [B, C, bf, h, w], pixels or None)``.
        anchor_level: the noise std a model with an anchor-level input (``WanConfig.anchor_level``) is
            told its anchors and clean context carry, on every call (``SamplingConfig.anchor_level``).

    Returns:
        :class:`GenerationOutput`.
    """
    import time

    import torch

    from inferix.models.attention import BlockCausalAttention, ContiguousKVCache
    from inferix.models.causal_wan import CrossAttentionKV
    from inferix.models.vae import to_uint8

    cfg = model.config
    if num_blocks <= 0 or block_frames <= 0:
        raise ValueError(f"num_blocks and block_frames must be positive, got {num_blocks}, {block_frames}")
    if block_frames % cfg.patch_size[0]:
        raise ValueError(f"block_frames ({block_frames}) must be a multiple of the temporal patch {cfg.patch_size[0]}")
    h, w = latent_hw
    if h % cfg.patch_size[1] or w % cfg.patch_size[2]:
        raise ValueError(f"latent_hw {latent_hw} must be a multiple of the spatial patch {cfg.patch_size[1:]}")
    device, b, c = model.device, batch_size, cfg.out_channels
    if anchor_level and not cfg.anchor_level:
        raise ValueError(f"anchor_level={anchor_level} needs a model with an anchor-level input (WanConfig.anchor_level)")
    level = torch.full((batch_size,), float(anchor_level), device=device) if cfg.anchor_level else None
    guided = sampler.guidance_scale != 1.0
    if guided and negative_text is None:
        raise ValueError("sampler.guidance_scale != 1 needs negative_text (the unconditional prompt)")

    # -- conditioning -------------------------------------------------------------------------
    kv_memo: dict[Any, CrossAttentionKV] = {}

    def to_kv(t: TextInput) -> CrossAttentionKV:
        key = t if isinstance(t, str) else id(t)
        if key not in kv_memo:  # once per prompt (a prompt change recomputes)
            if isinstance(t, CrossAttentionKV):
                kv = t
            else:
                if isinstance(t, str):
                    if text_encoder is None:
                        raise ValueError("text is a string: pass text_encoder= (or precomputed embeddings)")
                    t_emb = text_encoder(t)
                else:
                    t_emb = t
                with torch.no_grad():
                    kv = model.cross_attention_kv(t_emb.to(device))
            kv_memo[key] = kv.expand(b)
        return kv_memo[key]

    texts = _per_block(text, num_blocks, "text")
    if recompute and len({t if isinstance(t, str) else id(t) for t in texts}) > 1:
        raise ValueError(
            "recompute=True needs one prompt for the whole video (past blocks keep their own prompt's K/V)"
        )
    actions = _per_block(action, num_blocks, "action")
    uncond_kv = to_kv(negative_text) if guided else None

    if not recompute:
        backend = backend if backend is not None else ContiguousKVCache()
        if guided:
            uncond_backend = uncond_backend if uncond_backend is not None else ContiguousKVCache()
    tokens_per_frame = (h // cfg.patch_size[1]) * (w // cfg.patch_size[2])
    pt = cfg.patch_size[0]

    decoder = vae.stream_decoder() if vae is not None else None
    timings = {"denoise": 0.0, "commit": 0.0, "decode": 0.0}
    clean: list[torch.Tensor] = []  # clean latents per block
    clean_actions: list[torch.Tensor | None] = []
    clean_anchors: list[torch.Tensor | None] = []  # per block: the frame it was conditioned on
    conditioned = cfg.conditions_on_previous_frame
    # the previous clean latent frame (models conditioned on it); zeros before the first frame
    anchor = torch.zeros(b, c, 1, h, w, device=device, dtype=model.dtype) if conditioned else None
    sizes: list[int] = []  # token-frames per block (after temporal patching)
    pixels: list[torch.Tensor] = []
    block_px: list[int] = []
    pos0 = 0

    def forward(
        x: torch.Tensor, t: float, kv: CrossAttentionKV, be: Any, act: torch.Tensor | None, pos: torch.Tensor
    ) -> torch.Tensor:
        """One model call for the current block (cached or recomputed)."""
        fp = x.shape[2] // pt
        if not recompute:
            return model(x, torch.full((b,), t, device=device), kv, be, pos, act, anchor, level)
        past = sum(sizes)
        seq = torch.cat([*clean, x], 2)
        ts = torch.cat([torch.zeros(b, past, device=device), torch.full((b, fp), t, device=device)], 1)
        acts = None
        if act is not None or any(a is not None for a in clean_actions):
            per_block = [_frame_action(a, n) for a, n in zip([*clean_actions, act], [*sizes, fp], strict=True)]
            given = [a for a in per_block if a is not None]
            if len(given) != len(per_block):
                raise ValueError("recompute mode needs an action for every block or for none")
            acts = torch.cat(given, 1)
        positions = torch.arange(past + fp, device=device).expand(b, -1)
        anchors = None
        if anchor is not None:
            anchors = torch.cat([a.expand(-1, -1, z.shape[2], -1, -1)  # type: ignore[union-attr]
                                 for a, z in zip([*clean_anchors, anchor], [*clean, x], strict=True)], 2)
        out = model(seq, ts, kv, BlockCausalAttention([*sizes, fp], tokens_per_frame), positions, acts, anchors, level)
        return out[:, :, past * pt :]

    def commit_block(x0: torch.Tensor, kv: CrossAttentionKV, act: torch.Tensor | None, pos: torch.Tensor,
                     anc: torch.Tensor | None) -> None:
        t0 = time.perf_counter()
        if not recompute:
            set_commit(backend, True)
            model(x0, torch.zeros(b, device=device), kv, backend, pos, act, anc, level)
            set_commit(backend, False)
            if guided:
                set_commit(uncond_backend, True)
                model(x0, torch.zeros(b, device=device), uncond_kv, uncond_backend, pos, act, anc, level)
                set_commit(uncond_backend, False)
        clean.append(x0)
        clean_actions.append(act)
        clean_anchors.append(anc)
        if conditioned:  # the next block is conditioned on this one's last frame
            nonlocal anchor
            anchor = x0[:, :, -1:]
        sizes.append(x0.shape[2] // pt)
        timings["commit"] += time.perf_counter() - t0

    def decode(x0: torch.Tensor) -> torch.Tensor | None:
        if decoder is None:
            return None
        t0 = time.perf_counter()
        px = decoder.decode(x0)
        pixels.append(px)
        block_px.append(int(px.shape[2]))
        timings["decode"] += time.perf_counter() - t0
        return px

    with torch.no_grad():
        # -- image-to-video prefix --------------------------------------------------------------
        if first_frame is not None and first_latents is not None:
            raise ValueError("give first_frame or first_latents, not both")
        if first_frame is not None:
            if vae is None:
                raise ValueError("first_frame needs a vae to encode it")
            first_latents = vae.encode(first_frame.to(device))  # [B, C, 1, h, w]
        if first_latents is not None:
            z = first_latents.to(device, model.dtype)
            if z.shape[0] != b or tuple(z.shape[-2:]) != (h, w):
                raise ValueError(f"first_frame encodes to {tuple(z.shape)}, expected batch {b} and latent {latent_hw}")
            if z.shape[2] % pt:
                raise ValueError(
                    f"first_frame gives {z.shape[2]} latent frames, not a multiple of the temporal patch {pt}"
                )
            pos = torch.arange(pos0, pos0 + z.shape[2] // pt, device=device).expand(b, -1)
            # conditioning frames are their own anchor (as the recipe trains its prefix)
            commit_block(z, to_kv(texts[0]), actions[0], pos, z[:, :, :1] if conditioned else None)
            decode(z)
            pos0 += z.shape[2] // pt

        # -- blocks -------------------------------------------------------------------------------
        for blk in range(num_blocks):
            kv, act = to_kv(texts[blk]), actions[blk]
            if act is not None:
                act = act.to(device)
            fp = block_frames // pt
            pos = torch.arange(pos0, pos0 + fp, device=device).expand(b, -1)
            t0 = time.perf_counter()
            x = torch.randn(b, c, block_frames, h, w, generator=generator).to(device, model.dtype)
            if not recompute:
                set_commit(backend, False)
            for i, t in enumerate(sampler.timesteps):
                v = forward(x, t, kv, backend, act, pos)
                if uncond_kv is not None:  # guided
                    v = sampler.guide(v, forward(x, t, uncond_kv, uncond_backend, act, pos))
                last = i + 1 == sampler.num_steps
                noise = None if last else torch.randn(x.shape, generator=generator).to(device, x.dtype)
                x = sampler.step(x, v, i, noise)
            timings["denoise"] += time.perf_counter() - t0
            commit_block(x, kv, act, pos, anchor)
            px = decode(x)
            pos0 += fp
            if on_block is not None:
                on_block(blk, x, px)

    latents = torch.cat(clean, 2)
    frames = to_uint8(torch.cat(pixels, 2)) if pixels else None
    return GenerationOutput(latents=latents, frames=frames, block_pixel_frames=block_px, timings=timings)
