"""Inferix models: the block-causal Wan DiT, its attention boundary, VAE and text encoder.

Modules:

* ``attention``   — the model/KV-cache boundary: ``AttentionBackend``, ``RopeApplier`` (3-axis RoPE
  on the fly, un-roped cache), ``FullAttention``, ``ContiguousKVCache``, ``block_causal_mask``.
* ``causal_wan``  — ``CausalWanModel`` (Wan2.1 DiT, diffusers-identical math), ``CrossAttentionKV``.
* ``configs``     — ``WanConfig`` and the named configs ``tiny``, ``wan2.1-1.3b``, ``wan2.1-14b``.
* ``loading``     — diffusers / original-Wan (Self-Forcing, CausVid) checkpoints, the key map, errors.
* ``factory``     — ``build_model(name_or_path, device, dtype)``.
* ``vae``         — ``WanVAECodec`` (block-streamed causal decode), ``IdentityCodec``.
* ``text_encoder``— ``UMT5TextEncoder``, ``PrecomputedTextEncoder``, ``load_text_encoder``.

Import-light: torch-heavy modules load only when their names are used.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "AttentionBackend": "inferix.models.attention",
    "ContiguousKVCache": "inferix.models.attention",
    "FullAttention": "inferix.models.attention",
    "RopeApplier": "inferix.models.attention",
    "block_causal_mask": "inferix.models.attention",
    "CausalWanModel": "inferix.models.causal_wan",
    "CrossAttentionKV": "inferix.models.causal_wan",
    "velocity_to_x0": "inferix.models.causal_wan",
    "CONFIGS": "inferix.models.configs",
    "WanConfig": "inferix.models.configs",
    "get_config": "inferix.models.configs",
    "build_model": "inferix.models.factory",
    "CheckpointError": "inferix.models.loading",
    "load_model_weights": "inferix.models.loading",
    "load_text_encoder": "inferix.models.text_encoder",
    "UMT5TextEncoder": "inferix.models.text_encoder",
    "PrecomputedTextEncoder": "inferix.models.text_encoder",
    "WanVAECodec": "inferix.models.vae",
    "IdentityCodec": "inferix.models.vae",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'inferix.models' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
