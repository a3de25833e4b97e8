"""The track with LV-Bench's published signals: tiny random-init models written to disk, loaded back,
and every vde_* metric saying what computed it (weights or the model-free fallback, with why)."""

from __future__ import annotations

import numpy as np
import pytest

from tracks.longvideo.learned import build_learned_signals, load_linear_stack
from worldolympiad.track import EvalContext
from worldolympiad.types import Case, Video, even_chunks

SIX = ("clarity", "motion", "aesthetic", "background", "subject", "dynamic")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from tracks.longvideo.tiny_weights import write_tiny_weights

    opts, skipped = write_tiny_weights(tmp_path_factory.mktemp("weights"))
    return opts, skipped


def _case(n: int) -> Case:
    return Case(id="p", scenario="realworld", fps=10.0, num_frames=n, resolution=(32, 32),
                chunks=even_chunks(n, 2), tracks=("longvideo",))


def _evaluate(frames, options, tmp_path):
    from tracks.longvideo import LongVideoTrack

    return LongVideoTrack().evaluate(Video(frames, 10.0), _case(len(frames)), EvalContext(work_dir=tmp_path, options=options))


def test_linear_stack_matches_hand_composition(tmp_path):
    import torch
    from safetensors.torch import save_file

    sd = {"layers.0.weight": torch.randn(4, 8), "layers.0.bias": torch.randn(4),
          "layers.2.weight": torch.randn(1, 4), "layers.2.bias": torch.randn(1)}
    save_file(sd, str(tmp_path / "head.safetensors"))
    x = np.random.default_rng(0).normal(size=(3, 8))
    want = (x @ sd["layers.0.weight"].numpy().T + sd["layers.0.bias"].numpy()) @ sd["layers.2.weight"].numpy().T + sd["layers.2.bias"].numpy()
    assert load_linear_stack(tmp_path / "head.safetensors")(x) == pytest.approx(want[:, 0], rel=1e-5)


def test_track_runs_every_available_signal_on_weights_and_says_so(tiny, synth, tmp_path):
    opts, skipped = tiny
    if "clarity" in skipped:
        pytest.skip(skipped["clarity"])
    out = _evaluate(synth.pan_video(30, size=32, oscillate=True), opts, tmp_path)  # 3 frames a chunk (AMT's minimum)
    assert all(m.status == "ok" for m in out.metrics), out.errors
    vde = {m.name[4:]: m.details for m in out.metrics if m.name.startswith("vde_")}
    assert sorted(vde) == sorted(SIX)
    for s in SIX:
        assert vde[s]["source"] == "learned" and vde[s]["provenance"].startswith("weights: "), (s, vde[s])
    assert vde["motion"]["provenance"] == f"weights: AMT-S (VBench motion smoothness) from {opts['longvideo.amt_path']}"


def test_motion_on_chunks_of_two_frames_fails_with_the_reason(tiny, synth, tmp_path):
    opts, _ = tiny
    out = _evaluate(synth.pan_video(20, size=32), {"longvideo.amt_path": opts["longvideo.amt_path"]}, tmp_path)
    motion = next(m for m in out.metrics if m.name == "vde_motion")
    assert motion.status == "failed" and "at least 3 frames per chunk" in motion.reason, motion
    assert all(m.status == "ok" for m in out.metrics if m.name != "vde_motion")


def test_without_weights_every_signal_falls_back_with_its_reason_and_the_numbers_are_the_model_free_ones(synth, tmp_path):
    from tracks.longvideo.drift import measure_drift

    frames = synth.pan_video(40, size=32, oscillate=True)
    out = _evaluate(frames, {}, tmp_path)
    plain = measure_drift(frames)  # the model-free path as it was before the published signals
    for s in SIX:
        m = next(m for m in out.metrics if m.name == f"vde_{s}")
        assert m.raw == plain.signals[s].vde_linear
        assert m.details["provenance"].startswith("fallback: model-free"), m.details
    clarity = next(m for m in out.metrics if m.name == "vde_clarity")
    assert "no longvideo.musiq_path given" in clarity.details["provenance"]


def test_weights_that_do_not_load_are_reported_and_fall_back(tmp_path):
    (tmp_path / "raft.pth").write_bytes(b"not a checkpoint")
    got = build_learned_signals({"longvideo.dino_path": str(tmp_path / "none"), "longvideo.aesthetic_head": str(tmp_path / "h.pt"),
                                 "longvideo.raft_path": str(tmp_path / "raft.pth")})
    assert got.signals == {}
    assert any("longvideo.dino_path" in e and "does not exist" in e for e in got.errors)
    assert any("needs a CLIP" in e and "aesthetic_clip_path" in e for e in got.errors)
    assert any(e.startswith("longvideo.raft_path: ") for e in got.errors)
    assert got.provenance["subject"].startswith("fallback: model-free SSIM consistency (longvideo.dino_path did not load")
    assert got.provenance["dynamic"].startswith("fallback: ")


def test_every_weight_option_is_declared_in_track_yaml():
    from pathlib import Path

    import yaml

    from tracks.longvideo.learned import SIGNAL_OPTIONS

    declared = yaml.safe_load((Path(__file__).parents[3] / "tracks" / "longvideo" / "track.yaml").read_text())["options"]
    assert set(SIGNAL_OPTIONS) == set(SIX) and SIGNAL_OPTIONS["motion"] == ("amt_path",)
    for keys in SIGNAL_OPTIONS.values():
        for k in keys:
            assert declared[k]["type"] == "path" and declared[k]["default"] is None, k
