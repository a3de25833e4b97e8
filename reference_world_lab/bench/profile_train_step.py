"""Where a training step of a recipe spends its time: batch sampling vs the rest, and the top operators.

The session-9 GPU run of ``reference_world_gpu.yaml`` took about 165 ms a step on an H200 for a
4.5 M-parameter model, which a rough count of its arithmetic puts near a tenth of the chip's bf16
rate. Run this first in the next device call, before changing the model or the batch::

    python reference_world_lab/bench/profile_train_step.py --config reference_world_lab/configs/reference_world_gpu.yaml \\
        --device cuda --set "data.roots=[.gpu_data/train]" [--steps 10] [--warmup 5] [--rows 25]

It prints (1) the time of ``data.sample`` (host numpy work) against a whole
``Trainer.train_step`` over the same steps (``inferix.profiling.bench_clock``: wall seconds after a
sync on CUDA, process CPU seconds on CPU), and (2) ``torch.profiler``'s operator table over
``--steps`` steps, sorted by device time on CUDA and by host time on CPU. Numbers only; it never
fails on a timing. ``reference_world_lab/scripts/train_reference_world_gpu.sh`` runs it when ``PROFILE_STEPS`` > 0.
"""

from __future__ import annotations

import argparse

import torch


def main(argv: list[str] | None = None) -> int:
    from inferix.profiling import bench_clock
    from reference_world_lab.config import load_config
    from reference_world_lab.recipe import Trainer

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True, help="recipe YAML")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                    help="config override, as in `reference-world-lab train --set` (repeatable)")
    ap.add_argument("--steps", type=int, default=10, help="profiled steps")
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps first (allocator, kernel choice)")
    ap.add_argument("--rows", type=int, default=25, help="operator rows to print")
    args = ap.parse_args(argv)

    cfg = load_config(args.config, args.set)
    cfg.train.ckpt_every = cfg.train.eval_every = 0
    trainer = Trainer(cfg, device=args.device)
    cuda = args.device.startswith("cuda")

    for _ in range(args.warmup):
        trainer.train_step()
    gen = torch.Generator().manual_seed(1)
    t0 = bench_clock(args.device)
    for _ in range(args.steps):
        trainer.data.sample(cfg.train.batch_size, gen)
    sample_s = (bench_clock(args.device) - t0) / args.steps
    t0 = bench_clock(args.device)
    for _ in range(args.steps):
        trainer.train_step()
    step_s = (bench_clock(args.device) - t0) / args.steps
    print(f"{args.device}, batch {cfg.train.batch_size}: train_step {1e3 * step_s:.1f} ms, of which data.sample "
          f"{1e3 * sample_s:.1f} ms ({100 * sample_s / step_s:.0f} %)", flush=True)

    activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if cuda else [])
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(args.steps):
            trainer.train_step()
        bench_clock(args.device)  # waits for the device's queued work inside the profiled region
    key = "self_cuda_time_total" if cuda else "self_cpu_time_total"
    print(prof.key_averages().table(sort_by=key, row_limit=args.rows), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
