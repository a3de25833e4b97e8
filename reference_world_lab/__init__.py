"""The reference world model's lab: how ``inferix:reference-world`` was trained, outside the engine.

The engine (:mod:`inferix`) serves the shipped bundle and knows nothing of training. Everything
that made that bundle lives here and may import :mod:`inferix` and :mod:`worldolympiad`:

* :mod:`reference_world_lab.config` — the YAML recipe (:class:`TrainConfig`);
* :mod:`reference_world_lab.data` — clips read from folders written by ``worldolympiad scenarios render``;
* :mod:`reference_world_lab.recipe` — block-causal diffusion-forcing training, checkpoints, resume,
  the eval hook, export;
* :mod:`reference_world_lab.codec` — the learned ``tiny_ae`` codec's training stage;
* :mod:`reference_world_lab.bundles` — writing bundles and experts (the engine only loads them:
  :mod:`inferix.bundle`);
* :mod:`reference_world_lab.cli` — ``reference-world-lab train | expert | actions``;
* ``configs/`` — every recipe run so far; ``checkpoints/`` — earlier stages' weights (``init_from``
  of later recipes); ``bench/`` and ``records/`` — the model's experiments and their results;
  ``scripts/`` — GPU training rounds; ``HISTORY.md`` — the experiment history.

The model is frozen (NOTES.md): this is its record, not a place for new sessions to train it.
Nothing here imports torch at module import time.
"""

from __future__ import annotations

__all__ = ["TrainConfig", "load_config", "train"]


def __getattr__(name: str) -> object:
    if name in ("TrainConfig", "load_config"):
        from reference_world_lab import config

        return getattr(config, name)
    if name == "train":
        from reference_world_lab.recipe import train

        return train
    raise AttributeError(name)
