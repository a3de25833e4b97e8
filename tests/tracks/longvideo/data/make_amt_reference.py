"""Write the AMT-S reference fixture from LV-Bench's / VBench's own code (not part of the project).

The fixture (``amt_s_reference.npz``, ``amt_s_state_dict.json`` beside this file) records what the
upstream ``MotionSmoothness.motion_score`` and ``networks/AMT-S.py`` compute on a small deterministic
video with deterministic weights (:func:`tracks.longvideo.tiny_weights.reference_tensor`, a function of
each parameter's name and shape), so ``test_amt_motion.py`` can check our AMT-S against it without the
``vbench`` package (which pins numpy<2 and does not install beside the project).

Reproduce (the upstream files are imported from an extracted copy; nothing of them is committed)::

    git -C /work/.mirror/alibaba-damo-academy+Inferix/repo archive a8cb31dbf9ac804805e79bfc0a0d27cdc21c48fd \\
        LV-Bench/vbench/third_party LV-Bench/vbench/motion_smoothness.py LV-Bench/vbench/distributed.py \\
        LV-Bench/pretrained/amt_model/AMT-S.yaml | tar -x -C /tmp/amtref
    python -m venv --system-site-packages /tmp/amtref/venv && /tmp/amtref/venv/bin/pip install omegaconf
    PYTHONPATH=. /tmp/amtref/venv/bin/python tests/tracks/longvideo/data/make_amt_reference.py /tmp/amtref/LV-Bench

(``github:alibaba-damo-academy/Inferix`` ``LV-Bench/`` is LV-Bench's code; the AMT files it runs,
``networks/AMT-S.py``, ``networks/blocks/*`` and ``utils/*``, are byte-identical to ``github:Vchitect/VBench``
45e79ec's, and its ``motion_score`` is VBench's plus accepting an array of frames, as LV-Bench's
``metrics.py`` passes each chunk.) Only ``vbench/__init__.py`` and
``vbench/utils.py`` are not imported: they pull in decord, clip and the other dimensions; the module
objects stand in for them (``motion_smoothness`` imports ``load_dimension_info`` from ``vbench.utils``
but does not call it on this path).
"""

from __future__ import annotations

import json
import sys
import tempfile
import types
from pathlib import Path

import numpy as np

UPSTREAM = {"repo": "github:alibaba-damo-academy/Inferix", "commit": "a8cb31dbf9ac804805e79bfc0a0d27cdc21c48fd",
            "files": "LV-Bench/vbench/motion_smoothness.py, LV-Bench/vbench/third_party/amt/networks/AMT-S.py",
            "config": "LV-Bench/pretrained/amt_model/AMT-S.yaml"}
CHUNKS = {"first5": (0, 5), "first6": (0, 6), "odd7": (1, 8)}  # odd and even lengths
SUB = 8  # the float midpoints are stored every SUB-th pixel


def amt_frames() -> np.ndarray:
    """8 frames ``uint8 [8, 120, 136, 3]`` in integer arithmetic only (the same on every platform): a
    horizontal ramp drifting 5 levels a frame, a vertical ramp, and a 16-px checkerboard moving 3 px a
    frame right and 1 px down. 120 x 136 pads to 128 x 144 (VBench's multiple of 16, both sides)."""
    yy, xx = np.mgrid[0:120, 0:136]
    out = np.empty((8, 120, 136, 3), np.uint8)
    for t in range(8):
        out[t, ..., 0] = (2 * xx + 5 * t) % 256
        out[t, ..., 1] = (2 * yy) % 256
        out[t, ..., 2] = 255 * ((((xx - 3 * t) // 16) + ((yy - t) // 16)) % 2)
    return out


def _import_upstream(root: Path) -> types.ModuleType:
    vb = types.ModuleType("vbench")
    vb.__path__ = [str(root / "vbench")]  # a namespace for the submodules, without vbench/__init__.py
    utils = types.ModuleType("vbench.utils")
    utils.load_dimension_info = None  # type: ignore[attr-defined]  # not called by motion_score
    sys.modules.update({"vbench": vb, "vbench.utils": utils})
    sys.path.insert(0, str(root / "vbench" / "third_party" / "amt"))  # build_from_cfg imports 'networks.AMT-S'
    import vbench.motion_smoothness as ms  # type: ignore[import-not-found]

    return ms


def main(root: str, out_dir: str) -> None:
    import torch

    from tracks.longvideo.tiny_weights import amt_s_reference_init

    ms = _import_upstream(Path(root))
    from vbench.third_party.amt.utils.build_utils import build_from_cfg  # type: ignore[import-not-found]
    from vbench.third_party.amt.utils.utils import InputPadder, img2tensor  # type: ignore[import-not-found]

    cfg = Path(root) / "pretrained" / "amt_model" / "AMT-S.yaml"
    from omegaconf import OmegaConf

    model = amt_s_reference_init(build_from_cfg(OmegaConf.load(cfg).network))
    layout = [[k, list(v.shape)] for k, v in model.state_dict().items()]
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = Path(tmp) / "amt-s.pth"
        torch.save({"state_dict": model.state_dict()}, ckpt)  # the released checkpoint's format
        motion = ms.MotionSmoothness(str(cfg), str(ckpt), "cpu")  # upstream loader and forward, unmodified
    frames = amt_frames()
    scores = {k: float(motion.motion_score(frames[a:b])) for k, (a, b) in CHUNKS.items()}
    # the float midpoints of frames 0-2 and 2-4, as motion_score computes them before the uint8 cast
    even = [img2tensor(f) for f in frames[0:5:2]]
    padder = InputPadder(even[0].shape, 16)
    even = padder.pad(*even)
    mids = []
    with torch.no_grad():
        for a, b in zip(even[:-1], even[1:], strict=True):
            mids.append(padder.unpad(motion.model(a, b, motion.embt, scale_factor=1.0, eval=True)["imgt_pred"])[0].permute(1, 2, 0).numpy())
    mids_arr = np.stack(mids).astype(np.float64)
    out = Path(out_dir)
    np.savez_compressed(out / "amt_s_reference.npz", score_names=np.array(list(scores)),
                        scores=np.array(list(scores.values())), mid_sub=mids_arr[:, ::SUB, ::SUB].astype(np.float32),
                        mid_sum=mids_arr.sum(axis=(1, 2, 3)), mid_sq_sum=(mids_arr ** 2).sum(axis=(1, 2, 3)))
    rows = ",\n".join(json.dumps(r) for r in layout)  # one tensor a line
    (out / "amt_s_state_dict.json").write_text(f'{{"upstream": {json.dumps(UPSTREAM)},\n"state_dict": [\n{rows}\n]}}\n')
    print(json.dumps({"scores": scores, "params": sum(int(np.prod(s)) for _, s in layout), "tensors": len(layout)}))


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: make_amt_reference.py EXTRACTED_LV_BENCH_DIR [OUT_DIR (default: beside this file)]")
    main(sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else str(Path(__file__).parent))
