"""Read a local weights file as a state dict, safely (the tracks' model-based metrics load through it).

safetensors, or ``torch.load(..., weights_only=True)``: a checkpoint is data, never code. Nothing is
downloaded; paths come from the user's options.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def read_state_dict(path: str | Path, *, nested_key: str | None = None, strip_module: bool = False) -> dict[str, Any]:
    """The tensors of ``path`` by name.

    Args:
        path: a ``.safetensors`` file, or a torch file read with ``weights_only=True``.
        nested_key: a torch checkpoint that keeps its weights under this key (``"model"`` for SAM,
            ``"params"`` for MUSIQ's releases) is unwrapped.
        strip_module: drop the ``module.`` prefix ``DataParallel`` checkpoints carry (torch files).

    Raises:
        ValueError: the torch file does not hold a mapping of names to tensors.
    """
    path = Path(path)
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        return dict(load_file(str(path)))
    import torch

    obj = torch.load(str(path), map_location="cpu", weights_only=True)
    if nested_key is not None and isinstance(obj, Mapping) and isinstance(obj.get(nested_key), Mapping):
        obj = obj[nested_key]
    if not isinstance(obj, Mapping):
        raise ValueError(f"{path}: expected a state dict (name -> tensor), got {type(obj).__name__}")
    if strip_module:
        return {(k[7:] if k.startswith("module.") else k): v for k, v in obj.items()}
    return dict(obj)
