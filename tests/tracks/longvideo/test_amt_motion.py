"""LV-Bench's Motion signal: our AMT-S and motion smoothness equal LV-Bench's / VBench's own code.

The reference is a recorded fixture (``data/amt_s_reference.npz``, ``data/amt_s_state_dict.json``)
written by ``data/make_amt_reference.py`` from the upstream files themselves (LV-Bench's
``vbench/motion_smoothness.py`` and ``vbench/third_party/amt``, imported from an extracted copy: the
``vbench`` package does not install beside this project), on deterministic weights
(``tiny_weights.reference_tensor``, a function of each parameter's name and shape) and a deterministic
8-frame video (integer arithmetic). Tolerances: 1e-5 absolute on the float midpoints (float32
convolutions), 1e-6 relative on their sums, 1e-6 absolute on the motion smoothness values.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from tracks.longvideo import amt, learned
from tracks.longvideo.tiny_weights import amt_s_reference_init

DATA = Path(__file__).parent / "data"


def _maker():
    spec = importlib.util.spec_from_file_location("make_amt_reference", DATA / "make_amt_reference.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def reference():
    return dict(np.load(DATA / "amt_s_reference.npz"))


@pytest.fixture(scope="module")
def frames():
    return _maker().amt_frames()


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """The deterministic weights in the released checkpoint's format (``{"state_dict": ...}``, torch.save)."""
    path = tmp_path_factory.mktemp("amt") / "amt-s.pth"
    torch.save({"state_dict": amt_s_reference_init(amt.AMTS()).state_dict()}, path)
    return path


def test_state_dict_names_and_shapes_equal_the_published_amt_s():
    recorded = json.loads((DATA / "amt_s_state_dict.json").read_text())
    assert recorded["upstream"]["config"].endswith("AMT-S.yaml")
    assert [[k, s] for k, s in amt.state_dict_layout()] == recorded["state_dict"]
    assert sum(int(np.prod(s)) for _, s in recorded["state_dict"]) == 2990543  # AMT-S: 3.0 M parameters


def test_midpoints_equal_vbench_amt_s(checkpoint, frames, reference):
    mids = amt.MotionSmoothness(checkpoint).midpoints(frames[0:5:2]).double().numpy()
    assert mids.shape == (2, 120, 136, 3)
    sub = mids[:, ::8, ::8]
    assert np.abs(sub - reference["mid_sub"]).max() < 1e-5
    assert mids.sum(axis=(1, 2, 3)) == pytest.approx(reference["mid_sum"], rel=1e-6)
    assert (mids**2).sum(axis=(1, 2, 3)) == pytest.approx(reference["mid_sq_sum"], rel=1e-6)
    assert 0.05 < (reference["mid_sub"] == 0).mean() < 0.3  # the fixture is not a clamped, constant image


def test_motion_smoothness_equals_vbench_motion_score(checkpoint, frames, reference):
    got = learned.build_learned_signals({"longvideo.amt_path": str(checkpoint)})
    assert got.errors == [] and got.provenance["motion"].startswith("weights: AMT-S")
    chunks = _maker().CHUNKS
    for name, want in zip(reference["score_names"], reference["scores"], strict=True):
        a, b = chunks[str(name)]
        assert got.signals["motion"](frames[a:b]) == pytest.approx(float(want), abs=1e-6), name


def test_checkpoint_that_is_not_amt_s_is_refused_with_the_mismatch(tmp_path):
    sd = amt.AMTS().state_dict()
    sd.pop("comb_block.0.weight")
    torch.save({"state_dict": sd}, tmp_path / "broken.pth")
    with pytest.raises(ValueError, match="not an AMT-S checkpoint.*comb_block.0.weight"):
        amt.load_amt_s(tmp_path / "broken.pth")
    got = learned.build_learned_signals({"longvideo.amt_path": str(tmp_path / "broken.pth")})
    assert "motion" not in got.signals and any(e.startswith("longvideo.amt_path: ValueError") for e in got.errors)
    assert got.provenance["motion"].startswith("fallback: model-free half-way DIS-flow interpolation error")


def test_padding_is_vbench_input_padder_and_at_least_128_px():
    assert amt.pad_amounts(120, 136, 16, 128) == (4, 4, 4, 4)  # VBench: to multiples of 16, split evenly
    assert amt.pad_amounts(720, 1275, 16, 128) == (2, 3, 0, 0)
    assert amt.pad_amounts(64, 200, 16, 128) == (4, 4, 32, 32)  # small frames: further, to 128


def test_small_frames_are_padded_to_a_defined_result_where_vbench_returns_nan(checkpoint):
    model = amt.load_amt_s(checkpoint)
    x = torch.rand(1, 3, 64, 64)
    with torch.no_grad():
        assert torch.isnan(model(x, x.roll(2, -1), torch.tensor(0.5).view(1, 1, 1, 1))).all()  # the 1-px pyramid level
    video = np.random.default_rng(0).integers(0, 256, (3, 64, 48, 3), dtype=np.uint8)
    motion = amt.MotionSmoothness(checkpoint)
    mids = motion.midpoints(video[0::2])
    assert mids.shape == (1, 64, 48, 3) and torch.isfinite(mids).all()
    assert 0.0 < motion(video) <= 1.0


def test_chunk_of_two_frames_is_an_error_not_a_number(checkpoint):
    with pytest.raises(ValueError, match="at least 3 frames per chunk"):
        amt.MotionSmoothness(checkpoint)(np.zeros((2, 128, 128, 3), np.uint8))
