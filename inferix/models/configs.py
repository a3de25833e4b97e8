"""Architecture configs of the block-causal Wan DiT.

``WanConfig`` mirrors the constructor arguments of diffusers' ``WanTransformer3DModel``
(so a diffusers ``config.json`` maps 1:1) plus Inferix's action conditioning fields.
Named configs: ``tiny`` (tests), ``wan2.1-1.3b`` and ``wan2.1-14b`` (REFERENCE.md §C).
"""

from __future__ import annotations

import difflib
import json
import logging
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

__all__ = ["CONFIGS", "UnknownConfigError", "WanConfig", "get_config"]


class UnknownConfigError(KeyError):
    """An unknown model config name (a ``KeyError`` whose message prints without quotes)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class WanConfig:
    """Hyper-parameters of the Wan2.1-architecture DiT.

    Attributes:
        patch_size: (t, h, w) patch of the 3-D patch embedding.
        num_attention_heads: attention heads.
        attention_head_dim: channels per head (hidden size = heads x head_dim).
        in_channels: latent channels in.
        out_channels: latent channels out.
        text_dim: width of the text-encoder embeddings (umT5-XXL: 4096).
        freq_dim: width of the sinusoidal timestep features.
        ffn_dim: feed-forward inner width.
        num_layers: transformer blocks.
        cross_attn_norm: LayerNorm (affine) before cross-attention.
        eps: epsilon of every norm.
        rope_theta: RoPE base.
        action_dim: if set, a continuous action vector ``[B, action_dim]`` (or ``[B, F, action_dim]``)
            is embedded by an MLP and added to the time embedding (so it modulates every block).
        num_actions: if set, discrete action ids ``[B]`` (or ``[B, F]``) are embedded by a table and
            added to the time embedding. ``action_dim`` and ``num_actions`` are exclusive.
        text_len: text tokens the model was trained with (umT5: 512; prompts are zero-padded to it).
        prediction: what the output head predicts. ``velocity`` (Wan: ``noise - x0``);
            ``anchor_residual`` (needs :attr:`conditions_on_previous_frame`): the head predicts
            ``x0 - anchor``, the change from the previous clean frame, and the forward returns the
            velocity that implies, ``(x_t - anchor - out) / sigma``, so samplers, guidance and the
            engine are unchanged. With a zero head this is exactly "repeat the last frame".
        anchor_level: the forward takes ``anchor_level=``, the std of the Gaussian noise on the anchor
            and the clean context (0 = clean), embedded like a timestep and added to the time
            embedding (zero-initialised output layer, so a model that gains it starts unchanged).
            Unlabelled context noise leaves a model to denoise every anchor blindly; labelled, it can
            learn to copy a clean anchor and still restore a noisy one (at CPU scale, 210 fine-tune
            steps, the reference model did not yet use it: weights/reference_world/HISTORY.md).

    ``in_channels == 2 * out_channels`` means the model is conditioned on the previous clean latent
    frame by channel concatenation (:attr:`conditions_on_previous_frame`, the way Wan2.1-I2V
    concatenates its image latents): the forward then takes ``anchor=``.
    """

    patch_size: tuple[int, int, int] = (1, 2, 2)
    num_attention_heads: int = 12
    attention_head_dim: int = 128
    in_channels: int = 16
    out_channels: int = 16
    text_dim: int = 4096
    freq_dim: int = 256
    ffn_dim: int = 8960
    num_layers: int = 30
    cross_attn_norm: bool = True
    eps: float = 1e-6
    rope_theta: float = 10000.0
    action_dim: int | None = None
    num_actions: int | None = None
    text_len: int = 512
    prediction: str = "velocity"
    anchor_level: bool = False
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "patch_size", tuple(int(p) for p in self.patch_size))
        if len(self.patch_size) != 3:
            raise ValueError(f"patch_size must be (t, h, w), got {self.patch_size}")
        if self.action_dim is not None and self.num_actions is not None:
            raise ValueError("set either action_dim (continuous actions) or num_actions (discrete ids), not both")
        if self.prediction not in ("velocity", "anchor_residual"):
            raise ValueError(f"prediction must be 'velocity' or 'anchor_residual', got {self.prediction!r}")
        if self.prediction == "anchor_residual" and not self.conditions_on_previous_frame:
            raise ValueError("prediction 'anchor_residual' needs the previous-frame input "
                             f"(in_channels = 2 * out_channels), got {self.in_channels} / {self.out_channels}")
        if self.anchor_level and not self.conditions_on_previous_frame:
            raise ValueError("anchor_level needs the previous-frame input (in_channels = 2 * out_channels), "
                             f"got {self.in_channels} / {self.out_channels}")
        if self.attention_head_dim % 2 or self.attention_head_dim < 6:
            raise ValueError(f"attention_head_dim must be even and >= 6 for 3-axis RoPE, got {self.attention_head_dim}")

    @property
    def conditions_on_previous_frame(self) -> bool:
        """Whether the input carries, after the ``out_channels`` noisy latents, the previous clean
        latent frame (``anchor``; FrameBridge/InDI-style: the model sees where each pixel was and
        predicts what changed, so a static background is a per-token copy instead of a recall
        through attention)."""
        return self.in_channels == 2 * self.out_channels

    @property
    def dim(self) -> int:
        """Hidden size."""
        return self.num_attention_heads * self.attention_head_dim

    # -- diffusers interop -------------------------------------------------------------------
    _DIFFUSERS_KEYS = (
        "patch_size",
        "num_attention_heads",
        "attention_head_dim",
        "in_channels",
        "out_channels",
        "text_dim",
        "freq_dim",
        "ffn_dim",
        "num_layers",
        "cross_attn_norm",
        "eps",
    )

    @classmethod
    def from_dict(cls, cfg: dict[str, Any]) -> WanConfig:
        """Build from a diffusers ``WanTransformer3DModel`` config dict or one written by :meth:`to_dict`.

        Raises:
            ValueError: the config asks for a feature this model does not implement (image
                cross-attention of Wan-I2V, a qk-norm other than RMSNorm across heads).
        """
        if cfg.get("image_dim") or cfg.get("added_kv_proj_dim"):
            raise ValueError(
                "config has image_dim/added_kv_proj_dim (Wan2.1-I2V CLIP image cross-attention), which Inferix "
                "does not implement; use a T2V checkpoint (image conditioning goes through the first latent frame)"
            )
        qk_norm = cfg.get("qk_norm", "rms_norm_across_heads")
        if qk_norm not in (None, "rms_norm_across_heads"):
            raise ValueError(f"qk_norm={qk_norm!r} is not supported (only 'rms_norm_across_heads')")
        names = {f.name for f in fields(cls)} - {"extra"}
        kwargs = {k: v for k, v in cfg.items() if k in names}
        if kwargs.get("out_channels") is None:
            kwargs["out_channels"] = kwargs.get("in_channels", cls.in_channels)
        extra = {k: v for k, v in cfg.items() if k not in names and not k.startswith("_")}
        return cls(**kwargs, extra=extra)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict that :meth:`from_dict` and diffusers' ``WanTransformer3DModel`` both accept
        (diffusers ignores the Inferix-only fields with a warning)."""
        d = asdict(self)
        d.pop("extra")
        d["patch_size"] = list(self.patch_size)
        d["qk_norm"] = "rms_norm_across_heads"
        d["_class_name"] = "WanTransformer3DModel"
        return d

    def diffusers_kwargs(self) -> dict[str, Any]:
        """Constructor kwargs for diffusers' ``WanTransformer3DModel`` (used by the equivalence tests)."""
        if self.action_dim is not None or self.num_actions is not None:
            raise ValueError("diffusers' WanTransformer3DModel has no action conditioning")
        if self.anchor_level:
            raise ValueError("diffusers' WanTransformer3DModel has no anchor-level input")
        return {k: getattr(self, k) for k in self._DIFFUSERS_KEYS}

    @classmethod
    def from_json(cls, path: str | Path) -> WanConfig:
        return cls.from_dict(json.loads(Path(path).read_text()))

    def replace(self, **changes: Any) -> WanConfig:
        return replace(self, **changes)


CONFIGS: dict[str, WanConfig] = {
    # Tests: 64-wide, 2 layers, 2 heads x 32; a 16 x 16 latent is 64 tokens per frame.
    "tiny": WanConfig(
        num_attention_heads=2,
        attention_head_dim=32,
        in_channels=4,
        out_channels=4,
        text_dim=32,
        freq_dim=32,
        ffn_dim=128,
        num_layers=2,
        text_len=16,
    ),
    # Wan2.1-T2V-1.3B (the Self-Forcing / CausVid backbone): dim 1536, 30 layers, 12 x 128, FFN 8960.
    "wan2.1-1.3b": WanConfig(),
    # Wan2.1-T2V-14B: dim 5120, 40 layers, 40 x 128, FFN 13824.
    "wan2.1-14b": WanConfig(num_attention_heads=40, ffn_dim=13824, num_layers=40),
}


def get_config(name: str) -> WanConfig:
    """A named config.

    Raises:
        UnknownConfigError: unknown name; the message lists the known names and the closest match.
    """
    key = name.lower()
    if key in CONFIGS:
        return CONFIGS[key]
    close = difflib.get_close_matches(key, list(CONFIGS), n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise UnknownConfigError(
        f"unknown model config {name!r}.{hint} Known configs: {', '.join(CONFIGS)}; "
        "or pass a local checkpoint directory / .safetensors / .pt file"
    )
