"""Tiny random-init checkpoints of LV-Bench's signal models, written in the formats the loaders read.

The CI job (``worldolympiad lvbench --ci``) and the tests run every published signal's code path
with these: the real architectures (pyiqa ``MUSIQ``, transformers ``CLIPVisionModelWithProjection``
and ``ViTModel`` as DINO, torchvision ``raft_small``, the LAION linear head) at toy widths under a
fixed seed, and AMT-S at its published size (3 M parameters; :mod:`tracks.longvideo.amt` has no
other configuration) with :func:`amt_s_reference_init`, saved to disk and read back through
:mod:`tracks.longvideo.learned`. Their numbers mean nothing; they prove the path from weights on
disk to a VDE value works.

Layout written under ``root``::

    musiq.pth + musiq.json     pyiqa MUSIQ state dict (torch.save) and its constructor arguments
    clip/                      CLIPVisionModelWithProjection (safetensors), 32 px, background
    aesthetic_clip/            the same, the aesthetic head's CLIP
    aesthetic_head.safetensors Linear(projection_dim, 1): keys ``weight``, ``bias`` as LAION's file
    dino/                      ViTModel without pooler (safetensors), 32 px, subject
    raft_small.safetensors     torchvision raft_small(weights=None) state dict
    amt-s.pth                  AMT-S as the released checkpoint: ``{"state_dict": ...}``, torch.save
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import numpy as np

MUSIQ_TINY = {"hidden_size": 16, "mlp_dim": 32, "num_heads": 2, "num_layers": 1, "longer_side_lengths": [32, 48]}
IMAGE_SIZE = 32
PROJECTION_DIM = 8


def reference_tensor(name: str, shape: tuple[int, ...] | list[int]) -> np.ndarray:
    """A deterministic ``float32`` tensor for parameter ``name``: a function of the name and shape only.

    Unlike ``torch.manual_seed`` + module construction, it does not depend on the order modules are
    built in, so two implementations of one architecture with the same parameter names get the same
    weights (the AMT-S equality fixture relies on this). Convolution / linear weights are normal with
    standard deviation ``0.5 / sqrt(fan)`` (``fan`` = the product of all but the first dimension),
    biases ``0.02 * N(0, 1)``, other 1-D weights (PReLU slopes) ``0.25 + 0.05 * N(0, 1)``.
    """
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    z = rng.standard_normal(int(np.prod(shape)) if len(shape) else 1).reshape(tuple(shape))
    if len(shape) >= 2:
        return (0.5 * z / np.sqrt(np.prod(shape[1:]))).astype(np.float32)  # 1.0 clamps 40 % of AMT's output
    if name.endswith("bias"):
        return (0.02 * z).astype(np.float32)
    return (0.25 + 0.05 * z).astype(np.float32)


def amt_s_reference_init(model: Any) -> Any:
    """Fill every parameter of an AMT-S module (ours or VBench's, same names) with :func:`reference_tensor`."""
    import torch

    sd = model.state_dict()
    model.load_state_dict({k: torch.from_numpy(reference_tensor(k, tuple(v.shape))) for k, v in sd.items()}, strict=True)
    return model


def write_tiny_weights(root: str | Path, seed: int = 0) -> tuple[dict[str, str], dict[str, str]]:
    """Write the checkpoints and return ``(options, skipped)``.

    ``options`` maps ``longvideo.*`` option keys to the written paths; ``skipped`` maps a signal to
    why its checkpoint could not be written (MUSIQ needs pyiqa's architecture installed).
    """
    import torch
    from safetensors.torch import save_file
    from torchvision.models.optical_flow import raft_small
    from transformers import CLIPVisionConfig, CLIPVisionModelWithProjection, ViTConfig, ViTModel

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    opts: dict[str, str] = {}
    skipped: dict[str, str] = {}
    try:
        from pyiqa.archs.musiq_arch import MUSIQ

        musiq = MUSIQ(pretrained=False, **MUSIQ_TINY)  # type: ignore[arg-type]
        torch.save(musiq.state_dict(), root / "musiq.pth")
        (root / "musiq.json").write_text(json.dumps(MUSIQ_TINY))
        opts["longvideo.musiq_path"] = str(root / "musiq.pth")
    except ImportError as e:
        skipped["clarity"] = f"pyiqa is not installed ({e}); `pip install --no-deps pyiqa` provides MUSIQ's architecture"
    vision: dict[str, Any] = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                  image_size=IMAGE_SIZE, patch_size=8, projection_dim=PROJECTION_DIM)
    for name, key in (("clip", "longvideo.clip_path"), ("aesthetic_clip", "longvideo.aesthetic_clip_path")):
        CLIPVisionModelWithProjection(CLIPVisionConfig(**vision)).save_pretrained(root / name)
        opts[key] = str(root / name)
    head = torch.nn.Linear(PROJECTION_DIM, 1)
    save_file({k: v.contiguous() for k, v in head.state_dict().items()}, str(root / "aesthetic_head.safetensors"))
    opts["longvideo.aesthetic_head"] = str(root / "aesthetic_head.safetensors")
    ViTModel(ViTConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                       image_size=IMAGE_SIZE, patch_size=8), add_pooling_layer=False).save_pretrained(root / "dino")
    opts["longvideo.dino_path"] = str(root / "dino")
    raft = raft_small(weights=None)
    save_file({k: v.contiguous().clone() for k, v in raft.state_dict().items()}, str(root / "raft_small.safetensors"))
    opts["longvideo.raft_path"] = str(root / "raft_small.safetensors")
    from tracks.longvideo.amt import AMTS

    torch.save({"state_dict": amt_s_reference_init(AMTS()).state_dict()}, root / "amt-s.pth")
    opts["longvideo.amt_path"] = str(root / "amt-s.pth")
    return opts, skipped
