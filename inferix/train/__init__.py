"""Training recipe of Inferix's reference world model (``inferix train --config FILE``).

* :mod:`inferix.train.config` — the YAML recipe (:class:`TrainConfig`);
* :mod:`inferix.train.data` — clips read from folders written by ``worldolympiad scenarios render``
  (JSON + mp4 with PyAV; no import of the benchmark packages);
* :mod:`inferix.train.bundle` — the shipped model bundle (DiT + codec + actions + sampler) and
  its loader, used by ``inferix.registry`` for ``reference-world``;
* :mod:`inferix.train.recipe` — block-causal diffusion-forcing training, checkpoints, resume,
  the eval hook, export.

Nothing here imports torch at module import time.
"""

from __future__ import annotations

__all__ = ["TrainConfig", "load_bundle", "load_config", "train"]


def __getattr__(name: str) -> object:
    if name in ("TrainConfig", "load_config"):
        from inferix.train import config

        return getattr(config, name)
    if name == "load_bundle":
        from inferix.train.bundle import load_bundle

        return load_bundle
    if name == "train":
        from inferix.train.recipe import train

        return train
    raise AttributeError(name)
