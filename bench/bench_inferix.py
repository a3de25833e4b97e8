"""Inferix benchmarks: print ratios measured side by side in one run (never fails on timing).

    python bench/bench_inferix.py            # full sizes (minutes on 2 CPU cores)
    python bench/bench_inferix.py --quick    # smoke run
    python bench/bench_inferix.py --device cuda
    python bench/bench_inferix.py lean_vs_gather    # only the named benchmarks

Measures (see bench/README.md for recorded numbers):
  * per-block latency at block 100 vs block 5, rolling-window KV (expected ratio <= 1.1) and
    full KV (grows with the cache) for contrast;
  * cached generation vs recompute-from-scratch (no KV cache) over 30 blocks;
  * the lean path (keys rotated once, per-session buffers) vs the pool gather before it, 30 blocks,
    with the largest difference of their latents;
  * each block's VAE decode overlapped with the next block's denoising (a worker thread; its own CUDA
    stream on a GPU) vs in line, on the wider DiT with a random-init Wan VAE, wall clock;
  * 1/2/4/8 sessions batched in one engine: frames/s total and per session, against the
    compute-bound limit (matmul FLOP/s / DiT FLOPs per frame, attention included);
  * achieved FLOP/s of the DiT forward (FLOPs counted with attention) as a fraction of a plain
    matmul with the same FLOPs;
  * peak memory of `inferix generate --model tiny` for 60 s vs 5 s with the rolling policy
    (fresh process each; expected ratio <= 1.2).
Same code as `inferix bench`.
"""

from __future__ import annotations

import argparse
import json
import os

# one thread: on a shared CPU box extra OpenMP threads spin and wreck timings
os.environ.setdefault("OMP_NUM_THREADS", "1")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--device", default="cpu")
    p.add_argument("--json", default=None, help="also write the results here")
    p.add_argument("only", nargs="*", help="run only these benchmarks (default: all), e.g. lean_vs_gather")
    args = p.parse_args()

    from inferix.profiling import run_bench

    r = run_bench(quick=args.quick, device=args.device, only=args.only or None)
    print(json.dumps(r, indent=2))
    print("\nsummary")
    for name in ("latency_rolling", "latency_full"):
        if name in r:
            lr = r[name]
            late = next(k for k in lr if k.startswith("block") and k != "block5_s")
            print(f"  latency {late[:-2]} / block5, {lr['policy']:<10}: {lr['ratio']:.2f}"
                  + ("  (expected <= 1.1)" if name == "latency_rolling" else ""))
    if "cached_vs_recompute" in r:
        cv = r["cached_vs_recompute"]
        print(f"  cached vs recompute over {cv['blocks']} blocks  : {cv['speedup']:.1f}x faster")
    if "lean_vs_gather" in r:
        lg = r["lean_vs_gather"]
        print(f"  lean (rotated buffers) vs gather, {lg['blocks']} blocks {lg['policy']}: {lg['speedup']:.2f}x  "
              f"(max |diff| {lg['max_abs_diff']:.1e}, bit-identical: {lg['bit_identical']}; acceptance >= 1.3)")
    if "overlap_decode" in r:
        od = r["overlap_decode"]
        print(f"  decode overlapped vs in line, {od['blocks']} blocks: {od['speedup']:.2f}x wall  (bound "
              f"{od['bound']:.2f}x: DiT {od['dit_s']:.2f} s, decode {od['decode_s']:.2f} s; frames identical: "
              f"{od['frames_identical']})")
    if "batched_sessions" in r:
        bs = r["batched_sessions"]
        print(f"  batching ({bs['policy']}, {bs['blocks']} blocks each); compute-bound limit "
              f"{bs['compute_bound_limit_fps']:.0f} frames/s ({bs['dit_gflop_per_frame'] * 1e3:.1f} MFLOP a frame, "
              f"attention included, at {bs['matmul_gflops_per_s']:.1f} GFLOP/s matmul):")
        for n, run in bs["runs"].items():
            print(f"    {n} session(s): {run['total_fps']:7.1f} frames/s total, {run['per_session_fps']:7.1f} per "
                  f"session, {run['throughput_vs_1']:.2f}x one session, {run['fraction_of_limit']:.2f} of the limit")
    for k in ("flops_small", "flops_tiny"):
        if k in r:
            f = r[k]
            print(f"  DiT FLOP/s / matmul FLOP/s ({k[6:]})      : {f['fraction_of_matmul']:.2f} "
                  f"({f['dit_gflops_per_s']:.1f} vs {f['matmul_gflops_per_s']:.1f} GFLOP/s; {f['dit_gflop']:.3f} "
                  f"GFLOP a forward, {f['attention_gflop']:.3f} of it attention, which FlopCounterMode on CPU "
                  f"misses: it counts {f['counter_gflop_cpu']:.3f})")
    if "memory" in r:
        m = r["memory"]
        print(f"  peak memory long / short ({m['policy']})  : {m['ratio']:.3f}  (expected <= 1.2)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(r, fh, indent=2)


if __name__ == "__main__":
    main()
