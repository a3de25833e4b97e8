"""The engine's GPU round (``inferix bench --gpu``, issue 60 item 1) on CPU: the dry run walks every
stage at tiny size and writes a complete JSON; budgets and failures still leave a JSON with reasons."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from inferix.gpu_round import STAGES, RoundSettings, run_gpu_round

REPO = Path(__file__).resolve().parents[2]

# Top-level modules the device image lacks (KINDS.md's package list): the round must not import them,
# or the GPU session loses its minutes to an ImportError. diffusers travels as a wheel.
NOT_ON_DEVICE = {"av", "jsonschema", "gradio", "fastapi", "uvicorn", "mujoco", "pycolmap", "gsplat", "ale_py",
                 "pybullet", "worldolympiad", "tracks", "scenarios", "leaderboard", "reference_world_lab"}


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory):
    """``inferix bench --gpu --dry --out TMP.json`` in a fresh process; also lists what it imported."""
    out = tmp_path_factory.mktemp("round") / "round.json"
    code = ("import json, sys; from inferix.cli import main; rc = main(sys.argv[1:]); "
            "print('MODULES', json.dumps(sorted({m.split('.')[0] for m in sys.modules}))); sys.exit(rc)")
    proc = subprocess.run([sys.executable, "-c", code, "bench", "--gpu", "--dry", "--out", str(out)],
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    modules = json.loads(next(x for x in proc.stdout.splitlines() if x.startswith("MODULES")).split(" ", 1)[1])
    return json.loads(out.read_text()), set(modules), proc.stdout


def test_dry_round_writes_every_field(dry_run):
    r, _, stdout = dry_run
    assert r["schema"] == "inferix.engine_gpu_round/1" and r["dry"] is True and r["complete"] is True
    assert {k: v["status"] for k, v in r["stages"].items()} == dict.fromkeys(STAGES, "ok")
    assert all(v["seconds"] >= 0 and "reason" not in v for v in r["stages"].values())
    env = r["environment"]
    assert env["device"] == "cpu" and env["device_name"] == "cpu"
    assert env["torch"] == torch.__version__ and "cuda" in env and env["diffusers"]
    st = r["settings"]
    assert st["steps"] == 4 and st["block_frames"] == 3 and len(st["timesteps"]) == 4 and st["model"] == "tiny"

    setup = r["stages"]["setup"]
    assert setup["dit_parameters"] > 0 and setup["vae_parameters"] > 0 and setup["latent_hw"] == [8, 8]
    assert setup["pixel_frames_per_block"] == {"first": 9, "later": 12}

    one = r["stages"]["single_session"]
    assert one["fps_including_decode"] > 0 and one["time_to_first_block_s"] > 0
    assert one["blocks_done"] == one["blocks_planned"] == 5  # 3 s x 16 FPS = 48 frames: 9 + 4 x 12 = 57
    assert len(one["per_block"]) == 5 and one["frames"] == 57 and one["video_seconds_done"] == 57 / 16
    assert [b["index"] for b in one["per_block"]] == list(range(5))
    assert all(b["latency_s"] > 0 and b["vae_decode_s"] > 0 and b["dit_denoise_s"] > 0 for b in one["per_block"])
    assert 0.9 * one["total_s"] <= sum(b["latency_s"] for b in one["per_block"]) <= one["total_s"]
    split = one["time_split_s"]
    assert set(split) == {"dit_denoise_s", "cache_commit_s", "vae_decode_s", "other_s"}
    assert all(split[k] > 0 for k in ("dit_denoise_s", "cache_commit_s", "vae_decode_s"))
    assert sum(split.values()) == pytest.approx(one["total_s"])
    assert one["peak_memory_bytes"] > 0 and one["kv_bytes_peak"] > 0 and one["policy"].startswith("rolling:18")
    assert one["dit_tflop"] > 0 and one["dit_tflops_per_s"] > 0 and one["dit_tflop_per_block_steady"] > 0

    vae = r["stages"]["vae_bf16"]  # the same latents decoded by the float32 VAE and a bfloat16 copy
    assert vae["latent_frames"] == 6 and vae["pixel_frames"] == 21  # two streamed blocks: 9 + 12 frames
    assert 20.0 < vae["psnr_db"] < 80.0 and 0.0 < vae["max_abs_diff"] <= 2.0  # bf16 really ran, and close
    assert vae["fp32_decode_s"] > 0 and vae["bf16_decode_s"] > 0 and vae["min_psnr_db"] == 40.0
    assert vae["bf16_acceptable"] == (vae["psnr_db"] >= 40.0) and vae["weights"].startswith("random")
    assert setup["vae_dtype"] == "float32"  # the served codec stays float32: the stage decoded copies

    ov = r["stages"]["overlap_decode"]  # each block's decode in line, then on the decode thread
    assert ov["blocks"] == 4 and ov["blocks_done"] == {"in_line": 4, "overlapped": 4}
    assert ov["frames_identical"] is True and ov["in_line_s"] > 0 and ov["overlapped_s"] > 0
    assert ov["speedup"] == round(ov["in_line_s"] / ov["overlapped_s"], 3)

    runs = r["stages"]["sessions"]["runs"]
    assert sorted(runs, key=int) == ["1", "2", "4"]
    for n, run in runs.items():
        assert run["status"] == "ok" and run["sessions"] == int(n)
        assert run["blocks_done"] == [2] * int(n) and run["frames"] == 21 * int(n)
        assert run["throughput_fps"] > 0 and run["fps_per_session"] > 0 and run["peak_memory_bytes"] > 0
        assert len(run["first_block_s"]) == int(n) and all(t > 0 for t in run["first_block_s"])
    assert runs["1"]["throughput_vs_one_session"] == 1.0

    tests = r["stages"]["gpu_tests"]  # the gpu-marked tests skip themselves without CUDA
    assert tests["tests"] == tests["skipped"] >= 2 and tests["failed"] == tests["errors"] == 0

    s = r["summary"]
    assert s["device_name"] == "cpu" and s["fps_including_decode"] == one["fps_including_decode"]
    assert s["time_to_first_block_s"] > 0 and s["peak_memory_bytes"] > 0
    assert set(s["sessions_throughput_fps"]) == {"1", "2", "4"} and s["stages"]["gpu_tests"] == "ok"
    assert s["vae_bf16_psnr_db"] == vae["psnr_db"] and s["vae_bf16_speedup"] == vae["bf16_speedup"]
    assert s["overlap_decode_speedup"] == ov["speedup"]
    assert '"fps_including_decode"' in stdout


def test_dry_round_needs_nothing_the_device_lacks(dry_run):
    _, modules, _ = dry_run
    assert not modules & NOT_ON_DEVICE, sorted(modules & NOT_ON_DEVICE)


def test_budgets_cut_stages_and_say_why(tmp_path):
    # a zero budget: the single session stops after its first block, the sessions stage runs none
    budgets = dict.fromkeys(STAGES, 60.0) | {"single_session": 0.0, "sessions": 0.0}
    out = tmp_path / "r.json"
    r = run_gpu_round(RoundSettings.dry(stage_budget_s=budgets, gpu_tests=()), out, dry=True)
    assert json.loads(out.read_text()) == json.loads(json.dumps(r, default=str))
    one = r["stages"]["single_session"]
    assert one["status"] == "partial" and one["blocks_done"] == 1 and "1 of 5 blocks" in one["reason"]
    assert one["fps_including_decode"] > 0 and len(one["per_block"]) == 1
    ses = r["stages"]["sessions"]
    assert ses["status"] == "partial" and all(v["status"] == "skipped" for v in ses["runs"].values())
    tests = r["stages"]["gpu_tests"]
    assert (tests["status"], tests["reason"]) == ("skipped", "no test files given")
    assert r["complete"] is False


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA path")
def test_without_cuda_the_round_still_writes_its_json(tmp_path):
    out = tmp_path / "r.json"
    rc = subprocess.run([sys.executable, "-m", "inferix.cli", "bench", "--gpu", "--no-tests", "--out", str(out)],
                        capture_output=True, text=True, cwd=REPO, timeout=120).returncode
    r = json.loads(out.read_text())
    assert rc == 1 and r["complete"] is False and r["environment"]["device"] == "cuda"
    assert r["stages"]["setup"]["status"] == "failed" and "no CUDA device" in r["stages"]["setup"]["reason"]
    for name in ("warmup", "single_session", "vae_bf16", "sessions"):
        assert r["stages"][name]["status"] == "skipped" and "did not finish" in r["stages"][name]["reason"]
    assert r["summary"]["fps_including_decode"] is None


def test_sigterm_mid_stage_leaves_a_json_that_says_so(tmp_path):
    # `timeout` around the round sends SIGTERM: the running stage and the rest say why they did not finish
    out = tmp_path / "r.json"
    proc = subprocess.Popen([sys.executable, "-m", "inferix.cli", "bench", "--gpu", "--dry", "--seconds", "600",
                             "--no-tests", "--out", str(out)], cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            time.sleep(0.1)
            if out.exists() and json.loads(out.read_text())["stages"]["single_session"]["status"] == "running":
                break
        time.sleep(2.5)  # a few tiny blocks (0.1-0.3 s each)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 1
    finally:
        proc.kill()
    r = json.loads(out.read_text())
    assert r["stages"]["single_session"] == r["stages"]["single_session"] | {
        "status": "failed", "reason": "stopped by SIGTERM (the round's outer time limit)"}
    one = r["stages"]["single_session"]  # the blocks done before the signal are kept
    assert one["blocks_done"] == len(one["per_block"]) >= 1 and one["fps_including_decode"] > 0
    assert r["stages"]["sessions"]["reason"].startswith("not reached: SIGTERM")
    assert r["finished_utc"] and r["complete"] is False and r["stages"]["setup"]["status"] == "ok"


def test_psnr_of_decoded_pixels_in_minus_one_to_one():
    from inferix.gpu_round import psnr_db

    a = torch.zeros(1, 3, 2, 4, 4)
    assert psnr_db(a, a.clone()) is None  # equal: no finite PSNR
    assert psnr_db(a, a + 0.02) == pytest.approx(40.0)  # peak 2 (pixels in [-1, 1]): 10 log10(4 / 4e-4)
    assert psnr_db(a, (a + 0.02).to(torch.bfloat16)) == pytest.approx(40.0, abs=0.05)  # compared in float32


@pytest.mark.parametrize(("name", "hw"), [("wan2.1-1.3b", (60, 104)), ("tiny", (16, 16))])
def test_dit_flops_equal_the_flop_counter_on_a_meta_forward_with_cache(name, hw):
    # on the meta device SDPA decomposes into matmuls, so FlopCounterMode counts attention too
    from torch.utils.flop_counter import FlopCounterMode

    from inferix.models.attention import ContiguousKVCache
    from inferix.models.causal_wan import CausalWanModel
    from inferix.models.configs import get_config
    from inferix.profiling import dit_forward_flops

    cfg = get_config(name)
    with torch.device("meta"), torch.no_grad():
        model = CausalWanModel(cfg).eval()
        ctx = model.cross_attention_kv(torch.randn(1, cfg.text_len, cfg.text_dim))
        x = torch.randn(1, cfg.in_channels, 3, *hw)
        cache = ContiguousKVCache()
        cache.set_commit(True)
        for b in range(2):  # 6 frames cached
            model(x, torch.tensor([0.0]), ctx, cache, torch.arange(3 * b, 3 * b + 3)[None])
        cache.set_commit(False)
        with FlopCounterMode(display=False) as counter:
            model(x, torch.tensor([500.0]), ctx, cache, torch.arange(6, 9)[None])
    want = dit_forward_flops(cfg, hw, 3, cached_frames=6)
    assert counter.get_total_flops() == pytest.approx(want, rel=2e-3)
    assert want > dit_forward_flops(cfg, hw, 3)  # the cache is counted
