"""The bench's FLOP accounting (issue 60 item 5): attention is counted, not left to a counter that misses it."""

from __future__ import annotations

import pytest


def test_bench_flops_counts_the_attention_that_the_cpu_flop_counter_misses():
    from inferix.profiling import _bench_model, bench_flops, dit_forward_flops

    model = _bench_model("tiny", "cpu")
    r = bench_flops(model, (16, 16), "cpu", repeats=1)
    assert r["dit_gflop"] == pytest.approx(dit_forward_flops(model.config, (16, 16), 3) / 1e9)
    # FlopCounterMode on a CPU forward sees the matmuls only: it falls short by exactly the attention
    # (up to the time-embedding MLPs, which neither counts as the DiT's work)
    assert r["attention_gflop"] > 0.3 * r["dit_gflop"]
    assert r["counter_gflop_cpu"] + r["attention_gflop"] == pytest.approx(r["dit_gflop"], rel=0.02)


def test_bench_overlap_decode_times_both_paths_on_the_same_frames():
    from inferix.profiling import _bench_model, bench_overlap_decode

    r = bench_overlap_decode(_bench_model("tiny", "cpu"), (8, 8), "cpu", num_blocks=2, repeats=1)
    assert r["frames_identical"] is True and r["clock"] == "wall"
    assert r["in_line_s"] > 0 and r["overlapped_s"] > 0 and r["speedup"] == r["in_line_s"] / r["overlapped_s"]
    # the most overlapping two parts can give: their sum over the larger
    assert r["dit_s"] > 0 and r["decode_s"] > 0 and 1.0 < r["bound"] <= 2.0
