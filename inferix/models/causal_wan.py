"""Block-causal Wan2.1-architecture video DiT.

The computation equals diffusers' ``WanTransformer3DModel`` (module names and parameter
shapes are the same, so its state dicts load as they are), with two differences that
make block-by-block generation possible:

* self-attention goes through an :class:`~inferix.models.attention.AttentionBackend`
  (full, masked, or a KV cache of earlier blocks), and RoPE positions are explicit
  (``frame_positions``), so a block at frame 300 is rotated as frame 300;
* timesteps may differ per latent frame (``[B, F]``), so a clean context block (t = 0)
  and a noisy block can share one forward.

Data flow of one call (B = batch, F = latent frames of the call, S = h*w tokens/frame)::

    latents [B, C, F, H, W] --patch_embedding--> x [B, F*S, dim]
    timestep [B, F] --sinusoid, time_embedder (+ action, + anchor level)--> temb [B, F, dim]
                    --SiLU, time_proj--> modulation [B, F, 6, dim]   (shared by all blocks)
    context [B, L_txt, text_dim] --text_embedder--> per-layer cross K/V (CrossAttentionKV, once per prompt)
    for each block: x += gate * SelfAttn(mod(norm1(x)))    (backend: cache / mask)
                    x += CrossAttn(norm2(x), text K/V)
                    x += gate * FFN(mod(norm3(x)))
    x --norm_out, modulation(temb), proj_out, unpatchify--> prediction [B, C, F, H, W] (flow velocity)

Action conditioning (optional, ``WanConfig.action_dim`` / ``num_actions``): the action is
embedded to ``dim`` and **added to the time embedding** before the shared time
projection, so it modulates every block (adaLN) without adding tokens; the last layer of
the action embedder is zero-initialised, so a model fine-tuned from plain Wan weights
starts out identical to them.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import cast

import torch
import torch.nn as nn
import torch.nn.functional as F

from inferix.models.attention import AttentionBackend, FullAttention, RopeApplier, attend
from inferix.models.configs import WanConfig

logger = logging.getLogger(__name__)

__all__ = ["CausalWanModel", "CrossAttentionKV", "velocity_to_x0"]

# Kept in float32 when the model is cast to bf16/fp16 (as diffusers does): timestep MLP,
# modulation tables and norms are small and precision-sensitive.
_FP32_MODULES = ("time_embedder", "anchor_level_embedder", "scale_shift_table", "norm1", "norm2", "norm3", "norm_out")


def timestep_sinusoid(t: torch.Tensor, dim: int) -> torch.Tensor:
    """Sinusoidal timestep features, ``cos`` half first (diffusers ``Timesteps(flip_sin_to_cos=True, shift=0)``).

    Args:
        t: ``[N]`` timesteps (float, 0-1000).
        dim: feature width (even).

    Returns:
        ``[N, dim]`` float32.
    """
    half = dim // 2
    freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    angles = t[:, None].float() * freqs[None]
    return torch.cat([angles.cos(), angles.sin()], -1)


def velocity_to_x0(x_t: torch.Tensor, velocity: torch.Tensor, timestep: torch.Tensor | float) -> torch.Tensor:
    """Clean sample from a flow-matching velocity: ``x0 = x_t - sigma * v`` with ``sigma = t / 1000``.

    Args:
        x_t: ``[B, C, F, H, W]`` noisy latents.
        velocity: model output, same shape.
        timestep: scalar, ``[B]`` or ``[B, F]`` (0-1000).
    """
    sigma = torch.as_tensor(timestep, dtype=torch.float32, device=x_t.device) / 1000.0
    if sigma.ndim == 1:
        sigma = sigma.view(-1, 1, 1, 1, 1)
    elif sigma.ndim == 2:
        sigma = sigma[:, None, :, None, None]
    return (x_t.float() - sigma * velocity.float()).to(x_t.dtype)


class FP32LayerNorm(nn.LayerNorm):
    """LayerNorm computed in float32 whatever the input dtype (Wan's norms)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.weight.float() if self.weight is not None else None
        b = self.bias.float() if self.bias is not None else None
        return F.layer_norm(x.float(), self.normalized_shape, w, b, self.eps).to(x.dtype)


class _MLP2(nn.Module):
    """linear_1 -> activation -> linear_2 (diffusers' TimestepEmbedding / PixArtAlphaTextProjection names)."""

    def __init__(self, d_in: int, d_out: int, act: nn.Module) -> None:
        super().__init__()
        self.linear_1 = nn.Linear(d_in, d_out)
        self.act = act
        self.linear_2 = nn.Linear(d_out, d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear_2(self.act(self.linear_1(x)))


class ConditionEmbedder(nn.Module):
    """Timestep MLP, the shared 6-way modulation projection, and the text projection."""

    def __init__(self, cfg: WanConfig) -> None:
        super().__init__()
        dim = cfg.dim
        self.freq_dim = cfg.freq_dim
        self.time_embedder = _MLP2(cfg.freq_dim, dim, nn.SiLU())
        self.act_fn = nn.SiLU()
        self.time_proj = nn.Linear(dim, dim * 6)
        self.text_embedder = _MLP2(cfg.text_dim, dim, nn.GELU(approximate="tanh"))


class ActionEmbedder(nn.Module):
    """Embeds an action into the time-embedding space (see the module docstring).

    Continuous (``action_dim``): ``[B, A]`` or ``[B, F, A]`` -> MLP. Discrete (``num_actions``):
    ids ``[B]`` or ``[B, F]`` -> table. The output layer starts at zero.
    """

    def __init__(self, cfg: WanConfig) -> None:
        super().__init__()
        dim = cfg.dim
        self.num_actions = cfg.num_actions
        self.action_dim = cfg.action_dim
        if cfg.num_actions is not None:
            self.table = nn.Embedding(cfg.num_actions, dim)
        else:
            assert cfg.action_dim is not None
            self.linear_1 = nn.Linear(cfg.action_dim, dim)
            self.act = nn.SiLU()
            self.linear_2 = nn.Linear(dim, dim)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Default init with a zero output layer (the embedding starts with no effect)."""
        if self.num_actions is not None:
            nn.init.zeros_(self.table.weight)
        else:
            self.linear_1.reset_parameters()
            nn.init.zeros_(self.linear_2.weight)
            nn.init.zeros_(self.linear_2.bias)

    def forward(self, action: torch.Tensor) -> torch.Tensor:
        """Returns ``[B, dim]`` for a per-call action or ``[B, F, dim]`` for per-frame actions."""
        if self.num_actions is not None:
            if action.dtype.is_floating_point:
                raise ValueError(f"action must be integer ids for a discrete-action model, got {action.dtype}")
            bad = (action < 0) | (action >= self.num_actions)
            if bool(bad.any()):
                raise ValueError(
                    f"unknown action id {int(action[bad][0])}: this model has num_actions={self.num_actions} "
                    f"(valid ids 0..{self.num_actions - 1})"
                )
            return self.table(action)
        if action.ndim not in (2, 3) or action.shape[-1] != self.action_dim:
            raise ValueError(
                f"action must be [B, action_dim={self.action_dim}] or [B, F, action_dim], got {tuple(action.shape)}"
            )
        return self.linear_2(self.act(self.linear_1(action.to(self.linear_1.weight.dtype))))


class AnchorLevelEmbedder(nn.Module):
    """Embeds the noise level of the anchor and clean context (:attr:`WanConfig.anchor_level`) into
    the time-embedding space: the timestep sinusoid of ``level * 1000``, then an MLP whose output
    layer starts at zero, so a model that gains it computes exactly what it did without."""

    def __init__(self, cfg: WanConfig) -> None:
        super().__init__()
        self.freq_dim = cfg.freq_dim
        self.linear_1 = nn.Linear(cfg.freq_dim, cfg.dim)
        self.act = nn.SiLU()
        self.linear_2 = nn.Linear(cfg.dim, cfg.dim)
        nn.init.zeros_(self.linear_2.weight)
        nn.init.zeros_(self.linear_2.bias)

    def forward(self, level: torch.Tensor) -> torch.Tensor:
        """``[B]`` or ``[B, F]`` noise stds -> ``[B, dim]`` or ``[B, F, dim]``."""
        feat = timestep_sinusoid(level.reshape(-1) * 1000.0, self.freq_dim).to(self.linear_1.weight.dtype)
        return self.linear_2(self.act(self.linear_1(feat))).view(*level.shape, -1)


class WanAttention(nn.Module):
    """Projections of one Wan attention layer (self or cross); attention itself is elsewhere."""

    def __init__(self, dim: int, heads: int, eps: float) -> None:
        super().__init__()
        self.heads = heads
        self.to_q = nn.Linear(dim, dim)
        self.to_k = nn.Linear(dim, dim)
        self.to_v = nn.Linear(dim, dim)
        self.to_out = nn.ModuleList([nn.Linear(dim, dim), nn.Dropout(0.0)])
        # qk-norm: RMSNorm across all heads (Wan's "rms_norm_across_heads").
        self.norm_q = nn.RMSNorm(dim, eps=eps, elementwise_affine=True)
        self.norm_k = nn.RMSNorm(dim, eps=eps, elementwise_affine=True)

    def qkv(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``x [B, L, dim]`` -> q, k, v each ``[B, L, H, D]`` (normed, un-roped)."""
        q = self.norm_q(self.to_q(x)).unflatten(2, (self.heads, -1))
        k = self.norm_k(self.to_k(x)).unflatten(2, (self.heads, -1))
        v = self.to_v(x).unflatten(2, (self.heads, -1))
        return q, k, v

    def kv(self, context: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Cross-attention K/V of projected text ``[B, L_txt, dim]`` -> each ``[B, L_txt, H, D]``."""
        k = self.norm_k(self.to_k(context)).unflatten(2, (self.heads, -1))
        v = self.to_v(context).unflatten(2, (self.heads, -1))
        return k, v

    def out(self, x: torch.Tensor) -> torch.Tensor:
        """``[B, L, H, D]`` -> ``[B, L, dim]``."""
        return self.to_out[0](x.flatten(2))


class _GELUProj(nn.Module):
    def __init__(self, d_in: int, d_out: int) -> None:
        super().__init__()
        self.proj = nn.Linear(d_in, d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.proj(x), approximate="tanh")


class FeedForward(nn.Module):
    """Linear -> GELU(tanh) -> Linear, with diffusers' ``net.0.proj`` / ``net.2`` names."""

    def __init__(self, dim: int, inner: int) -> None:
        super().__init__()
        self.net = nn.ModuleList([_GELUProj(dim, inner), nn.Dropout(0.0), nn.Linear(inner, dim)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.net:
            x = layer(x)
        return x


def _modulate(x: torch.Tensor, shift: torch.Tensor, scale: torch.Tensor, frames: int) -> torch.Tensor:
    """``x * (1 + scale) + shift`` with per-frame modulation.

    Args:
        x: ``[B, F*S, dim]`` float32.
        shift, scale: ``[B, F, dim]``.
    """
    b, n, d = x.shape
    x = x.view(b, frames, n // frames, d)
    return (x * (1 + scale[:, :, None]) + shift[:, :, None]).view(b, n, d)


def _gate(x: torch.Tensor, gate: torch.Tensor, frames: int) -> torch.Tensor:
    b, n, d = x.shape
    return (x.view(b, frames, n // frames, d) * gate[:, :, None]).view(b, n, d)


class WanBlock(nn.Module):
    """One Wan transformer block (self-attention via a backend, cross-attention, FFN, adaLN)."""

    def __init__(self, cfg: WanConfig) -> None:
        super().__init__()
        dim = cfg.dim
        self.norm1 = FP32LayerNorm(dim, cfg.eps, elementwise_affine=False)
        self.attn1 = WanAttention(dim, cfg.num_attention_heads, cfg.eps)
        self.attn2 = WanAttention(dim, cfg.num_attention_heads, cfg.eps)
        self.norm2 = FP32LayerNorm(dim, cfg.eps, elementwise_affine=True) if cfg.cross_attn_norm else nn.Identity()
        self.ffn = FeedForward(dim, cfg.ffn_dim)
        self.norm3 = FP32LayerNorm(dim, cfg.eps, elementwise_affine=False)
        self.scale_shift_table = nn.Parameter(torch.randn(1, 6, dim) / dim**0.5)

    def forward(
        self,
        x: torch.Tensor,  # [B, L, dim]
        modulation: torch.Tensor,  # [B, F, 6, dim]
        cross_kv: tuple[torch.Tensor, torch.Tensor],  # each [B, L_txt, H, D]
        backend: AttentionBackend,
        layer_idx: int,
        rope: RopeApplier,
    ) -> torch.Tensor:
        frames = modulation.shape[1]
        mod = self.scale_shift_table[:, None].float() + modulation.float()  # [B, F, 6, dim]
        shift_sa, scale_sa, gate_sa, shift_ff, scale_ff, gate_ff = mod.unbind(2)

        # 1. Self-attention (the backend decides what the queries see).
        h = _modulate(self.norm1(x.float()), shift_sa, scale_sa, frames).type_as(x)
        q, k, v = self.attn1.qkv(h)
        attn = self.attn1.out(backend.self_attention(layer_idx, q, k, v, rope).type_as(q))
        x = (x.float() + _gate(attn.float(), gate_sa, frames)).type_as(x)

        # 2. Cross-attention to the text (K/V precomputed once per prompt).
        h = self.norm2(x.float()).type_as(x)
        q = self.attn2.norm_q(self.attn2.to_q(h)).unflatten(2, (self.attn2.heads, -1))
        x = x + self.attn2.out(attend(q, *cross_kv).type_as(q))

        # 3. Feed-forward.
        h = _modulate(self.norm3(x.float()), shift_ff, scale_ff, frames).type_as(x)
        ff = self.ffn(h)
        return (x.float() + _gate(ff.float(), gate_ff, frames)).type_as(x)


@dataclass
class CrossAttentionKV:
    """Per-layer cross-attention keys/values of one batch of prompts (computed once per prompt).

    Attributes:
        k: per layer ``[B, L_txt, H, D]``.
        v: per layer ``[B, L_txt, H, D]``.
    """

    k: list[torch.Tensor]
    v: list[torch.Tensor]

    @property
    def batch_size(self) -> int:
        return int(self.k[0].shape[0])

    def expand(self, batch_size: int) -> CrossAttentionKV:
        """Broadcast a single prompt to ``batch_size`` rows."""
        if self.batch_size == batch_size:
            return self
        if self.batch_size != 1:
            raise ValueError(f"context has batch {self.batch_size}, latents have batch {batch_size}")
        return CrossAttentionKV(
            [t.expand(batch_size, -1, -1, -1) for t in self.k], [t.expand(batch_size, -1, -1, -1) for t in self.v]
        )

    def select(self, rows: list[int] | torch.Tensor) -> CrossAttentionKV:
        """The given batch rows."""
        return CrossAttentionKV([t[rows] for t in self.k], [t[rows] for t in self.v])

    @staticmethod
    def cat(items: list[CrossAttentionKV]) -> CrossAttentionKV:
        """Stack several prompts' K/V along the batch (equal text lengths required)."""
        lengths = {it.k[0].shape[1] for it in items}
        if len(lengths) != 1:
            raise ValueError(
                f"cannot batch prompts with different text lengths {sorted(lengths)}; pad them to text_len"
            )
        n = len(items[0].k)
        return CrossAttentionKV(
            [torch.cat([it.k[i] for it in items]) for i in range(n)],
            [torch.cat([it.v[i] for it in items]) for i in range(n)],
        )

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (*self.k, *self.v))


class CausalWanModel(nn.Module):
    """The block-causal Wan DiT (see the module docstring).

    Args:
        config: architecture.
    """

    def __init__(self, config: WanConfig) -> None:
        super().__init__()
        self.config = config
        cfg = config
        dim = cfg.dim
        self.patch_embedding = nn.Conv3d(cfg.in_channels, dim, kernel_size=cfg.patch_size, stride=cfg.patch_size)
        self.condition_embedder = ConditionEmbedder(cfg)
        self.action_embedder = ActionEmbedder(cfg) if (cfg.action_dim or cfg.num_actions) else None
        self.anchor_level_embedder = AnchorLevelEmbedder(cfg) if cfg.anchor_level else None
        self.blocks = nn.ModuleList([WanBlock(cfg) for _ in range(cfg.num_layers)])
        self.norm_out = FP32LayerNorm(dim, cfg.eps, elementwise_affine=False)
        self.proj_out = nn.Linear(dim, cfg.out_channels * math.prod(cfg.patch_size))
        self.scale_shift_table = nn.Parameter(torch.randn(1, 2, dim) / dim**0.5)

    # -- helpers ---------------------------------------------------------------------------------
    @property
    def device(self) -> torch.device:
        return self.patch_embedding.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.patch_embedding.weight.dtype

    def to_dtype(self, dtype: torch.dtype) -> CausalWanModel:
        """Cast to ``dtype`` but keep the precision-sensitive modules in float32 (as diffusers does)."""
        self.to(dtype)
        if dtype != torch.float32:
            for name, module in self.named_modules():
                if name.split(".")[-1] in _FP32_MODULES:
                    module.float()
            for name, p in self.named_parameters():
                if name.split(".")[-1] in _FP32_MODULES:
                    p.data = p.data.float()
        return self

    def tokens_grid(self, latent_hw: tuple[int, int]) -> tuple[int, int]:
        """(h_tokens, w_tokens) of a latent of spatial size ``latent_hw``."""
        _, ph, pw = self.config.patch_size
        return latent_hw[0] // ph, latent_hw[1] // pw

    def cross_attention_kv(self, context: torch.Tensor) -> CrossAttentionKV:
        """Project text embeddings once into every layer's cross-attention K/V.

        Args:
            context: ``[B, L_txt, text_dim]`` text-encoder embeddings (zero-padded to ``text_len``).
        """
        if context.ndim != 3 or context.shape[-1] != self.config.text_dim:
            raise ValueError(
                f"context must be [B, L_txt, text_dim={self.config.text_dim}] text embeddings, got {tuple(context.shape)}"
            )
        ctx = self.condition_embedder.text_embedder(context.to(self.dtype))  # [B, L_txt, dim]
        ks, vs = [], []
        for block in self.blocks:
            k, v = cast(WanBlock, block).attn2.kv(ctx)
            ks.append(k)
            vs.append(v)
        return CrossAttentionKV(ks, vs)

    def _check_latents(self, latents: torch.Tensor) -> None:
        cfg = self.config
        c = cfg.out_channels if cfg.conditions_on_previous_frame else cfg.in_channels
        if latents.ndim != 5 or latents.shape[1] != c:
            raise ValueError(f"latents must be [B, C={c}, F, H, W], got {tuple(latents.shape)}")
        for size, p, name in zip(latents.shape[2:], cfg.patch_size, ("frames", "height", "width"), strict=True):
            if size % p:
                raise ValueError(f"latent {name} ({size}) must be a multiple of the patch size {p} ({cfg.patch_size})")

    # -- forward ---------------------------------------------------------------------------------
    def forward(
        self,
        latents: torch.Tensor,  # [B, C, F, H, W]
        timestep: torch.Tensor | float,  # [B] or [B, F] (0-1000)
        context: torch.Tensor | CrossAttentionKV,
        backend: AttentionBackend | None = None,
        frame_positions: torch.Tensor | None = None,  # [B, F]
        action: torch.Tensor | None = None,
        anchor: torch.Tensor | None = None,  # [B, C, 1 | F, H, W]
        anchor_level: torch.Tensor | float | None = None,  # [B] or [B, F]
    ) -> torch.Tensor:
        """Predict the flow velocity of ``latents`` at ``timestep``.

        Args:
            latents: ``[B, C, F, H, W]`` latents of the current call (one or more blocks).
            timestep: flow-matching t in [0, 1000]: scalar, ``[B]``, or ``[B, F]`` per latent frame.
            context: text embeddings ``[B, L_txt, text_dim]`` or precomputed :class:`CrossAttentionKV`.
            backend: self-attention backend; default :class:`FullAttention` (no mask, like diffusers).
            frame_positions: ``LongTensor [B, F]`` temporal RoPE position of each latent frame
                (after temporal patching); default ``0..F-1``.
            action: ``[B, A]`` / ``[B, F, A]`` floats, or ids ``[B]`` / ``[B, F]`` when the config has actions.
            anchor: for a model that :attr:`~WanConfig.conditions_on_previous_frame`: the clean latent
                frame before the block, ``[B, C, 1, H, W]`` (broadcast over the call's frames) or one
                per frame ``[B, C, F, H, W]``; concatenated to ``latents`` along channels.
            anchor_level: for a model with :attr:`~WanConfig.anchor_level`: the std of the noise on
                ``anchor`` and on the clean context (scalar, ``[B]`` or ``[B, F]``; default 0, clean).

        Returns:
            ``[B, C_out, F, H, W]`` velocity (``noise - x0``); :func:`velocity_to_x0` converts.
        """
        cfg = self.config
        self._check_latents(latents)
        b, _, f, hh, ww = latents.shape
        pt, ph, pw = cfg.patch_size
        fp, hp, wp = f // pt, hh // ph, ww // pw
        device = latents.device
        backend = backend if backend is not None else FullAttention()

        if frame_positions is None:
            frame_positions = torch.arange(fp, device=device).expand(b, fp)
        if tuple(frame_positions.shape) != (b, fp):
            raise ValueError(f"frame_positions must be [B={b}, F={fp}], got {tuple(frame_positions.shape)}")

        # Timesteps -> per-frame modulation [B, F, 6, dim].
        t = torch.as_tensor(timestep, device=device, dtype=torch.float32)
        if t.ndim == 0:
            t = t.expand(b)
        if t.ndim == 1:
            if t.shape[0] != b:
                raise ValueError(f"timestep must be [B={b}] or [B, F={fp}], got {tuple(t.shape)}")
            t = t[:, None]
        elif t.ndim != 2 or t.shape[0] != b or t.shape[1] not in (1, fp):
            raise ValueError(f"timestep must be [B={b}] or [B, F={fp}], got {tuple(t.shape)}")
        nt = t.shape[1]
        ce = self.condition_embedder
        te = ce.time_embedder
        t_feat = timestep_sinusoid(t.reshape(-1), ce.freq_dim).to(te.linear_1.weight.dtype)
        # Cast like diffusers (temb in the model dtype before the shared projection).
        temb = te(t_feat).to(self.dtype).view(b, nt, -1)  # [B, Ft, dim]
        if self.action_embedder is not None:
            if action is None:
                raise ValueError(
                    "this model is action-conditioned: pass action= (see WanConfig.action_dim/num_actions)"
                )
            a = self.action_embedder(action.to(device))  # [B, dim] or [B, F, dim]
            if a.ndim == 2:
                temb = temb + a[:, None].to(temb.dtype)
            else:
                if a.shape[1] != fp:
                    raise ValueError(f"per-frame action has {a.shape[1]} frames, the call has {fp}")
                temb = temb.expand(b, fp, -1) + a.to(temb.dtype)
                nt = fp
        elif action is not None:
            raise ValueError("action given but this model has no action embedding (config action_dim/num_actions)")
        if self.anchor_level_embedder is not None:
            lv = torch.as_tensor(0.0 if anchor_level is None else anchor_level, device=device, dtype=torch.float32)
            if lv.ndim == 0:
                lv = lv.expand(b)
            if lv.shape[0] != b or lv.ndim > 2 or (lv.ndim == 2 and lv.shape[1] not in (1, fp)):
                raise ValueError(f"anchor_level must be a scalar, [B={b}] or [B, F={fp}], got {tuple(lv.shape)}")
            emb = self.anchor_level_embedder(lv if lv.ndim == 2 else lv[:, None]).to(temb.dtype)  # [B, 1 | F, dim]
            if emb.shape[1] > temb.shape[1]:
                temb = temb.expand(b, fp, -1)
                nt = fp
            temb = temb + emb
        elif anchor_level is not None:
            raise ValueError("anchor_level given but this model has no anchor-level input (config anchor_level)")
        modulation = ce.time_proj(ce.act_fn(temb)).unflatten(2, (6, -1))  # [B, Ft, 6, dim]
        if nt != fp:  # one timestep for the whole call: broadcast over frames
            modulation = modulation.expand(b, fp, 6, -1)
            temb = temb.expand(b, fp, -1)

        # Text.
        if isinstance(context, CrossAttentionKV):
            cross = context.expand(b)
        else:
            cross = self.cross_attention_kv(context).expand(b)

        noisy = latents
        if cfg.conditions_on_previous_frame:
            if anchor is None:
                raise ValueError("this model is conditioned on the previous frame: pass anchor= (the clean latent "
                                 "frame before the block, [B, C, 1, H, W])")
            if anchor.ndim != 5 or anchor.shape[0] != b or anchor.shape[1] != latents.shape[1] \
                    or anchor.shape[2] not in (1, f) or tuple(anchor.shape[3:]) != (hh, ww):
                raise ValueError(f"anchor must be [B={b}, C={latents.shape[1]}, 1 or {f}, {hh}, {ww}], "
                                 f"got {tuple(anchor.shape)}")
            anchor = anchor.to(latents).expand(-1, -1, f, -1, -1)
            latents = torch.cat([latents, anchor], 1)
        elif anchor is not None:
            raise ValueError("anchor given but this model is not conditioned on the previous frame "
                             "(in_channels != 2 * out_channels)")

        # Patchify: [B, C, F, H, W] -> [B, F*h*w, dim], frame-major.
        x = self.patch_embedding(latents.to(self.dtype)).flatten(2).transpose(1, 2).contiguous()
        rope = RopeApplier(cfg.attention_head_dim, (hp, wp), frame_positions, cfg.rope_theta)
        for i, block in enumerate(self.blocks):
            x = block(x, modulation, (cross.k[i], cross.v[i]), backend, i, rope)

        # Output norm, modulation, projection, unpatchify.
        shift, scale = (self.scale_shift_table[:, None].float() + temb[:, :, None].float()).unbind(2)  # [B, F, dim]
        x = _modulate(self.norm_out(x.float()), shift, scale, fp).type_as(x)
        x = self.proj_out(x)  # [B, L, pt*ph*pw*C]
        x = x.reshape(b, fp, hp, wp, pt, ph, pw, -1).permute(0, 7, 1, 4, 2, 5, 3, 6)
        x = x.flatten(6, 7).flatten(4, 5).flatten(2, 3)
        if cfg.prediction == "anchor_residual":
            # x0 = anchor + head; v = (x_t - x0) / sigma (sigma floored: the clean t = 0 passes that
            # commit K/V have no use for their velocity)
            assert anchor is not None
            sigma = (t / 1000.0).clamp(min=1e-3)  # [B, 1] or [B, F / pt]
            if sigma.shape[1] > 1:
                sigma = sigma.repeat_interleave(pt, dim=1)
            sigma = sigma[:, None, :, None, None]
            # in the wider of the model's and the latents' dtypes: under bf16 autocast the x0 the
            # sampler and the loss recover (x_t - sigma v) keeps the latents' precision
            out = torch.promote_types(x.dtype, noisy.dtype)
            x = ((noisy.float() - anchor.float() - x.float()) / sigma).to(out)
        return x
