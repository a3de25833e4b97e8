"""Ulysses sequence parallel on gloo CPU processes == single-process output (forwards, cache, engine, CLI)."""

from __future__ import annotations

import os
import socket

import pytest
import torch
import torch.multiprocessing as mp

from inferix.kv_cache import CachePolicy, KVCacheManager
from inferix.kv_cache.backend import BlockPoolAttention, RowSpec
from inferix.kv_cache.storage import KVStorage
from inferix.models.attention import FullAttention
from inferix.models.causal_wan import CausalWanModel
from inferix.models.configs import get_config

BF, HW = 2, (8, 4)  # 4 token rows -> 2 per rank


def _inputs():
    torch.manual_seed(0)
    model = CausalWanModel(get_config("tiny")).eval()
    ctx = torch.randn(1, 16, 32)
    lat = torch.randn(3, 1, 4, BF, *HW)  # three blocks
    return model, ctx, lat


def _conditioned():
    """The tiny model conditioned on the previous frame, with the anchor-residual head."""
    torch.manual_seed(1)
    model = CausalWanModel(get_config("tiny").replace(in_channels=8, prediction="anchor_residual")).eval()
    return model, torch.randn(1, 4, 1, *HW)


def _blockwise(model, ctx, lat, backend_fn):
    """Denoise pass + committing clean pass per block through a block-pool KV cache."""
    m = KVCacheManager(BF, 8, 0, CachePolicy("rolling", window=2))
    be = BlockPoolAttention(m, KVStorage(8, 0, BF))
    m.add_session("s")
    outs = []
    with torch.no_grad():
        for x in lat:
            be.prepare([RowSpec("s")])
            outs.append(backend_fn(model, x, torch.tensor([700.0]), ctx, be, be.frame_positions(BF)))
            m.reserve("s", BF)
            be.prepare([RowSpec("s", commit=True)])
            backend_fn(model, x, torch.tensor([0.0]), ctx, be, be.frame_positions(BF))
            m.commit("s", BF)
    return torch.stack(outs)


def _worker(rank, world, port, out_path):
    import torch.distributed as dist

    from inferix.parallel import sequence_parallel_forward

    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        model, ctx, lat = _inputs()
        with torch.no_grad():
            full = sequence_parallel_forward(model, lat[0], torch.tensor([500.0]), ctx,
                                             FullAttention.block_causal(BF, BF, 8))
        cached = _blockwise(model, ctx, lat, lambda mdl, x, t, c, be, pos: sequence_parallel_forward(
            mdl, x, t, c, be, pos))
        cmodel, anchor = _conditioned()
        with torch.no_grad():
            cond = sequence_parallel_forward(cmodel, lat[0], torch.tensor([500.0]), ctx, anchor=anchor)
        engine = _engine_latents(sequence_parallel=True)
        if rank == 0:
            torch.save({"full": full, "cached": cached, "conditioned": cond, "engine": engine}, out_path)
    finally:
        dist.destroy_process_group()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ulysses_over_three_gloo_processes_pads_rows_and_heads_and_equals_one_process(tmp_path):
    """3 ranks: the token rows (4 here, 8 in the engine) and the tiny model's 2 heads divide by none, so
    both are padded; the padding never becomes a key, and the forwards, the block-pool cache and the
    whole engine (image prefix, actions, rolling cache) equal one process."""
    out = tmp_path / "rank0.pt"
    mp.start_processes(_worker, args=(3, _free_port(), str(out)), nprocs=3, join=True, start_method="spawn")
    got = torch.load(out, weights_only=True)
    model, ctx, lat = _inputs()
    with torch.no_grad():
        ref_full = model(lat[0], torch.tensor([500.0]), ctx, FullAttention.block_causal(BF, BF, 8))
    ref_cached = _blockwise(model, ctx, lat, lambda mdl, x, t, c, be, pos: mdl(x, t, c, be, pos))
    torch.testing.assert_close(got["full"], ref_full, atol=1e-5, rtol=0)
    torch.testing.assert_close(got["cached"], ref_cached, atol=1e-5, rtol=0)
    cmodel, anchor = _conditioned()  # the anchor is split with the latents' token rows
    with torch.no_grad():
        torch.testing.assert_close(got["conditioned"], cmodel(lat[0], torch.tensor([500.0]), ctx, anchor=anchor),
                                   atol=1e-5, rtol=0)
    torch.testing.assert_close(got["engine"], _engine_latents(sequence_parallel=False), atol=1e-5, rtol=0)


def test_world_of_one_equals_plain_forward():
    import torch.distributed as dist

    from inferix.parallel.ulysses import sequence_parallel_forward

    if dist.is_initialized():
        pytest.skip("a process group is already initialised")
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()))
    dist.init_process_group("gloo", rank=0, world_size=1)
    try:
        model, ctx, _ = _inputs()
        x = torch.randn(1, 4, BF, 6, 4)
        with torch.no_grad():
            torch.testing.assert_close(sequence_parallel_forward(model, x, 500.0, ctx), model(x, 500.0, ctx),
                                       atol=1e-6, rtol=0)
    finally:
        dist.destroy_process_group()


def _engine_latents(sequence_parallel):
    import numpy as np

    from inferix.engine import Engine
    from inferix.registry import load_model

    tiny = load_model("tiny")
    cfg = tiny.engine_config((16, 16), policy="rolling:6", sequence_parallel=sequence_parallel)
    eng = Engine(tiny.model, tiny.codec, tiny.text_encoder, cfg, tiny.action_encoder)
    img = np.zeros((32, 32, 3), np.uint8)
    img[10:] = 180
    outs = list(eng.stream("a road", num_blocks=3, seed=4, action="left",
                           image_latents=tiny.encode_image(img, (16, 16))))
    return torch.stack([o.latents for o in outs])


def test_generate_sp_2_under_torchrun_writes_the_single_process_video(tmp_path):
    """Acceptance 4 of issue 60: `inferix generate --sp 2` on 2 gloo processes == the 1-process video."""
    import shutil
    import subprocess
    import sys

    from inferix.cli import main
    from worldolympiad.video.io import read_video

    torchrun = shutil.which("torchrun")
    if torchrun is None:
        pytest.skip("torchrun is not on PATH")
    args = ["generate", "--model", "tiny", "--prompt", "a red ball", "--seed", "1", "--seconds", "1"]
    assert main([*args, "--out", str(tmp_path / "one.mp4")]) == 0
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                    "--master-port", str(_free_port()), "-m", "inferix.cli", *args, "--out", str(tmp_path / "two.mp4"),
                    "--sp", "2"], check=True, env=env, capture_output=True, timeout=300)
    one, two = read_video(tmp_path / "one.mp4").frames, read_video(tmp_path / "two.mp4").frames
    assert one.shape == two.shape and (one == two).all()


def test_sp_without_torchrun_says_how_to_start_it(tmp_path, capsys):
    from inferix.cli import main

    assert main(["generate", "--model", "tiny", "--seconds", "1", "--out", str(tmp_path / "x.mp4"), "--sp", "2"]) == 2
    assert "torchrun --nproc-per-node 2" in capsys.readouterr().err
