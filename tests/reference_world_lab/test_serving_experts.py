"""The engine serves an expert the lab wrote: ``inferix generate --content`` picks the bundle's
expert for that content (moved from tests/inferix/test_cli.py: the expert is made with
``reference-world-lab expert``)."""

from __future__ import annotations

import json

import av
import numpy as np
from PIL import Image

from inferix.cli import main
from reference_world_lab.cli import main as lab_main


def _probe(path):
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        frames = [f.to_ndarray(format="rgb24") for f in c.decode(s)]
        return len(frames), float(s.average_rate), frames


def test_generate_content_picks_the_bundles_expert(tmp_path, capsys):
    """``--content`` names what the video shows; a bundle with an expert for it generates with the
    expert (here a zero head, which repeats the first frame), and without it with the main DiT."""
    import shutil

    import torch
    from safetensors.torch import load_file, save_file

    from inferix.registry import REFERENCE_WORLD_DIR

    bundle, tuned = tmp_path / "bundle", tmp_path / "tuned"
    for folder in (bundle, tuned):
        shutil.copytree(REFERENCE_WORLD_DIR, folder, ignore=shutil.ignore_patterns("experts"))
        info = json.loads((folder / "bundle.json").read_text())
        info.pop("experts", None)
        (folder / "bundle.json").write_text(json.dumps(info))
    weights = load_file(str(tuned / "diffusion_pytorch_model.safetensors"))
    for key in ("proj_out.weight", "proj_out.bias"):
        weights[key] = torch.zeros_like(weights[key])
    save_file(weights, str(tuned / "diffusion_pytorch_model.safetensors"))
    assert lab_main(["expert", str(bundle), str(tuned), "--name", "still", "--contents", "mechanics", "--rank", "4"]) == 0
    img = np.full((32, 32, 3), 90, np.uint8)
    img[8:24, 8:24] = (200, 40, 40)
    Image.fromarray(img).save(tmp_path / "first.png")

    def change(*content):
        out = tmp_path / f"{'-'.join(content) or 'main'}.mp4"
        assert main(["generate", "--model", str(bundle), "--seconds", "0.5", "--out", str(out), "--height", "32",
                     "--width", "32", "--steps", "1", "--image", str(tmp_path / "first.png"), *content]) == 0
        frames = np.stack(_probe(out)[2]).astype(int)
        return float(np.abs(frames[1:] - frames[:1]).mean())

    assert change("--content", "mechanics.bounce") < 1.0
    assert change() > 2.0
