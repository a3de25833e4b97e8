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
