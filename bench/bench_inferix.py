"""Inferix benchmarks: print ratios measured side by side in one run (never fails on timing).

    python bench/bench_inferix.py            # full sizes (minutes on 2 CPU cores)
    python bench/bench_inferix.py --quick    # smoke run
    python bench/bench_inferix.py --device cuda

Measures (see bench/README.md for recorded numbers):
  * per-block latency at block 100 vs block 5, rolling-window KV (expected ratio <= 1.1) and
    full KV (grows with the cache) for contrast;
  * cached generation vs recompute-from-scratch (no KV cache) over 30 blocks;
  * 4 sessions batched in one engine vs one session (frames/s);
  * achieved FLOP/s of the DiT forward as a fraction of a plain matmul with the same FLOPs;
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
    args = p.parse_args()

    from inferix.profiling import run_bench

    r = run_bench(quick=args.quick, device=args.device)
    print(json.dumps(r, indent=2))
    lr, lf = r["latency_rolling"], r["latency_full"]
    late = next(k for k in lr if k.startswith("block") and k != "block5_s")
    print("\nsummary")
    print(f"  latency {late[:-2]} / block5, rolling window : {lr['ratio']:.2f}  (expected <= 1.1)")
    print(f"  latency {late[:-2]} / block5, full cache     : {lf['ratio']:.2f}")
    cv = r["cached_vs_recompute"]
    print(f"  cached vs recompute over {cv['blocks']} blocks  : {cv['speedup']:.1f}x faster")
    bs = r["batched_sessions"]
    print(f"  {bs['sessions']} sessions batched vs 1 (frames/s)  : {bs['throughput_ratio']:.2f}x")
    for k in ("flops_small", "flops_tiny"):
        f = r[k]
        print(f"  DiT FLOP/s / matmul FLOP/s ({k[6:]})      : {f['fraction_of_matmul']:.2f} "
              f"({f['dit_gflops_per_s']:.1f} vs {f['matmul_gflops_per_s']:.1f} GFLOP/s)")
    m = r["memory"]
    print(f"  peak memory long / short ({m['policy']})  : {m['ratio']:.3f}  (expected <= 1.2)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(r, fh, indent=2)


if __name__ == "__main__":
    main()
