"""Tiny random-init checkpoints of LV-Bench's signal models, written in the formats the loaders read.

The CI job (``worldolympiad lvbench --ci``) and the tests run every published signal's code path
with these: the real architectures (pyiqa ``MUSIQ``, transformers ``CLIPVisionModelWithProjection``
and ``ViTModel`` as DINO, torchvision ``raft_small``, the LAION linear head) at toy widths under a
fixed seed, saved to disk and read back through :mod:`tracks.longvideo.learned`. Their numbers
mean nothing; they prove the path from weights on disk to a VDE value works.

Layout written under ``root``::

    musiq.pth + musiq.json     pyiqa MUSIQ state dict (torch.save) and its constructor arguments
    clip/                      CLIPVisionModelWithProjection (safetensors), 32 px, background
    aesthetic_clip/            the same, the aesthetic head's CLIP
    aesthetic_head.safetensors Linear(projection_dim, 1): keys ``weight``, ``bias`` as LAION's file
    dino/                      ViTModel without pooler (safetensors), 32 px, subject
    raft_small.safetensors     torchvision raft_small(weights=None) state dict
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MUSIQ_TINY = {"hidden_size": 16, "mlp_dim": 32, "num_heads": 2, "num_layers": 1, "longer_side_lengths": [32, 48]}
IMAGE_SIZE = 32
PROJECTION_DIM = 8


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
    return opts, skipped
