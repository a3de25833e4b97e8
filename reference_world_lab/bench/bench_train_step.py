"""Training-step time of a recipe: block-by-block vs masked attention, fp32 vs bf16 autocast, side by side.

A training clip (1 prefix frame + K blocks) is block-causal. ``BlockCausalAttention`` (the
recipe's backend) computes each block's queries against the keys up to its own block, unmasked;
the masked reference (``FullAttention`` with ``block_causal_mask_from_sizes``, the recipe's backend
until session 17) scores the whole square and masks the upper part away. The two give the same
numbers (``tests/inferix/test_attention.py``). This script times whole ``Trainer.train_step`` calls
on the same batches (the trainer's generator is reset before every variant), the variants
interleaved round by round so load on a shared machine hits them alike, and prints each variant's
median and its ratio to the masked fp32 step. Numbers only; it never fails on a timing::

    worldolympiad scenarios render reference_world_lab/configs/reference_world_data /tmp/rw/train
    python reference_world_lab/bench/bench_train_step.py --set "data.roots=[/tmp/rw/train]" [--rounds 4] [--threads 2]
        [--config reference_world_lab/configs/reference_world_gpu3.yaml] [--device cuda]

On a CPU with AMX (``lscpu | grep amx``) bf16 autocast also runs the matmuls in bf16 tiles.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_CONFIG = REPO / "reference_world_lab" / "configs" / "reference_world_gpu3.yaml"


class MaskedBlockCausal:
    """The masked reference with ``BlockCausalAttention``'s constructor (what the recipe used to build)."""

    def __init__(self, block_sizes: list[int], tokens_per_frame: int) -> None:
        from inferix.models.attention import FullAttention, block_causal_mask_from_sizes

        self.inner = FullAttention(block_causal_mask_from_sizes(block_sizes, tokens_per_frame))

    def self_attention(self, *args, **kwargs):
        return self.inner.self_attention(*args, **kwargs)


def main(argv: list[str] | None = None) -> int:
    import torch

    import inferix.models.attention as attention
    from inferix.profiling import bench_clock
    from reference_world_lab.config import load_config
    from reference_world_lab.recipe import Trainer

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=str(DEFAULT_CONFIG), help="recipe YAML")
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                    help="config override, as in `reference-world-lab train --set` (repeatable)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--rounds", type=int, default=4, help="timed steps per variant (one warm-up round first)")
    ap.add_argument("--batches", type=int, default=2, help="distinct batches cycled through the rounds")
    ap.add_argument("--threads", type=int, default=None, help="torch threads on CPU (default: train.threads)")
    args = ap.parse_args(argv)

    cfg = load_config(args.config, [*args.set, "train.rollout=0"])
    cfg.train.ckpt_every = cfg.train.eval_every = 0
    if args.threads:
        cfg.train.threads = args.threads
    trainer = Trainer(cfg, device=args.device)
    seeds = [torch.Generator().manual_seed(100 + i).get_state() for i in range(args.batches)]
    block_causal = attention.BlockCausalAttention
    variants = {"masked, fp32": (MaskedBlockCausal, "none"), "block by block, fp32": (block_causal, "none"),
                "masked, bf16": (MaskedBlockCausal, "bf16"), "block by block, bf16": (block_causal, "bf16")}
    times: dict[str, list[float]] = {k: [] for k in variants}
    try:
        for r in range(args.rounds + 1):
            for name, (backend, autocast) in variants.items():
                attention.BlockCausalAttention = backend  # type: ignore[misc, assignment]  # what block_forward builds
                trainer.cfg.train.autocast = autocast
                trainer.gen.set_state(seeds[r % len(seeds)])
                t0 = bench_clock(args.device)
                loss = trainer.train_step()
                dt = bench_clock(args.device) - t0
                if r:  # round 0 warms allocators and kernel choice
                    times[name].append(dt)
                print(f"round {r} {name:22s} {dt:7.3f} s  loss {loss:.4f}", flush=True)
    finally:
        attention.BlockCausalAttention = block_causal  # type: ignore[misc]
    base = statistics.median(times["masked, fp32"])
    print(f"\n{args.device}, batch {cfg.train.batch_size}, {args.rounds} steps each (median):")
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"  {name:22s} {m:7.3f} s   masked fp32 / this = {base / m:4.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
