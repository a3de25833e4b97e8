"""``build_model``: a named config (random weights) or a local checkpoint -> :class:`CausalWanModel`."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from inferix.models.configs import CONFIGS, WanConfig, get_config

if TYPE_CHECKING:
    import torch

    from inferix.models.causal_wan import CausalWanModel

logger = logging.getLogger(__name__)

__all__ = ["build_model"]


def _looks_like_path(name: str) -> bool:
    return Path(name).expanduser().exists() or "/" in name or name.endswith((".safetensors", ".pt", ".pth"))


def build_model(
    name_or_path: str | Path,
    device: str | torch.device = "cpu",
    dtype: torch.dtype | None = None,
    config: WanConfig | None = None,
    seed: int = 0,
    strict: bool = True,
    checkpoint_key: str | None = None,
) -> CausalWanModel:
    """Build the block-causal Wan DiT.

    Args:
        name_or_path: a config name (``tiny``, ``wan2.1-1.3b``, ``wan2.1-14b``: random weights from
            ``seed``) or a local checkpoint (diffusers directory, ``.safetensors``, Self-Forcing /
            CausVid ``.pt``; see :mod:`inferix.models.loading`).
        device: target device.
        dtype: parameter dtype (default float32); norms, timestep MLP and modulation tables stay
            float32.
        config: architecture override for a checkpoint without ``config.json``.
        seed: seed of the random init for named configs.
        strict: fail on missing / unexpected checkpoint keys.
        checkpoint_key: which nested weights of a training checkpoint to load (``"generator"`` for
            Self-Forcing's non-EMA weights); default: ``generator_ema`` when present, else ``generator``.

    Returns:
        The model in eval mode.

    Raises:
        UnknownConfigError: an unknown config name (with the known names).
        FileNotFoundError: a path that does not exist.
        CheckpointError: a checkpoint in the wrong layout or with mismatched shapes.
    """
    import torch

    from inferix.models.causal_wan import CausalWanModel
    from inferix.models.loading import infer_config, load_model_weights, resolve_checkpoint

    dtype = dtype or torch.float32
    name = str(name_or_path)
    if name.lower() in CONFIGS and not Path(name).exists():
        cfg = config or get_config(name)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = CausalWanModel(cfg)
        return model.to(device).to_dtype(dtype).eval()
    if not _looks_like_path(name):
        get_config(name)  # raises UnknownConfigError with the known names

    state, cfg_dict = resolve_checkpoint(name, checkpoint_key)
    if config is not None:
        cfg = config
    elif cfg_dict is not None:
        cfg = WanConfig.from_dict(cfg_dict)
    else:
        cfg = infer_config(state)
        logger.info("no config.json for %s: inferred %s", name, cfg)
    # Build without allocating random weights (a 14B init on CPU takes minutes), then load.
    # Cast on meta first so the device copy is allocated once, in the target dtype (14B bf16 = 28 GB).
    with torch.device("meta"):
        model = CausalWanModel(cfg).to_dtype(dtype)
    model = model.to_empty(device=device)
    if model.action_embedder is not None:
        model.action_embedder.reset_parameters()  # kept if the checkpoint has no action weights
    load_model_weights(model, state, strict=strict)  # copy_ casts each tensor to the parameter's dtype
    return model.eval()
