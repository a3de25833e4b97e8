"""``reference-world-lab`` command line: train | expert | actions (``python -m reference_world_lab``).

The reference world model's lab, outside the engine: training recipes, bundle and expert tools.
The engine (``inferix generate | stream | serve``) only loads what these write.

Examples::

    reference-world-lab train --config reference_world_lab/configs/reference_world.yaml [--resume] [--steps N]
    reference-world-lab expert BUNDLE runs/physics/model --name physics --contents mechanics,thermal
    reference-world-lab actions BUNDLE --add move_ee@down,move_ee@up --out /tmp/grown
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from inferix.bundle import EXPERT_STARTS
from worldolympiad.cli import help_examples


def cmd_train(args: argparse.Namespace) -> int:
    from reference_world_lab.config import load_config
    from reference_world_lab.recipe import train

    cfg = load_config(args.config, args.set)
    if args.out_dir:
        cfg.out_dir = str(Path(args.out_dir).resolve())
    logging.getLogger("reference_world_lab").setLevel(logging.INFO)
    logging.getLogger("inferix").setLevel(logging.INFO)
    trainer = train(cfg, resume=args.resume, steps=args.steps, device=args.device, progress=not args.no_progress)
    print(f"trained {cfg.name} to step {trainer.state.step} in {trainer.state.wall_s:.0f} s; "
          f"model -> {Path(cfg.out_dir) / 'model'}")
    return 0


def cmd_expert(args: argparse.Namespace) -> int:
    from reference_world_lab.bundles import add_expert, expert_as_bundle

    if args.export:
        if args.tuned or args.contents:
            raise ValueError("--export writes BUNDLE's expert --name as a plain bundle: give no TUNED or --contents")
        out = expert_as_bundle(args.bundle, args.name, args.export)
        print(f"expert {args.name!r} of {args.bundle} as a plain bundle: {out}")
        return 0
    if not args.tuned or not args.contents:
        raise ValueError("give TUNED (the fine-tuned bundle) and --contents (what it serves), or --export OUT")
    contents = [c.strip() for c in args.contents.split(",") if c.strip()]
    try:
        steps = [float(t) for t in args.steps.split(",")] if args.steps else None
    except ValueError:
        raise ValueError(f"--steps takes comma-separated timesteps such as 1000,500,200,50, got {args.steps!r}") from None
    out = add_expert(args.bundle, args.tuned, args.name, contents, rank=args.rank, steps=steps, start=args.start,
                     base=args.base)
    own = f", steps {','.join(f'{t:g}' for t in steps)}" if steps else ""
    own += ", blocks start from the previous frame" if args.start == "anchor" else ""
    own += f", on top of expert {args.base!r}" if args.base else ""
    print(f"expert {args.name!r} for {', '.join(contents)}: {out} ({out.stat().st_size / 2**20:.2f} MiB, "
          f"rank {args.rank}{own})")
    return 0


def cmd_actions(args: argparse.Namespace) -> int:
    from reference_world_lab.bundles import extend_actions

    names = [n.strip() for n in args.add.split(",") if n.strip()]
    if not names:
        raise ValueError("--add takes comma-separated action names, e.g. move_ee@down,move_ee@up")
    out = extend_actions(args.bundle, args.out or args.bundle, names)
    print(f"{out}: vocabulary + {', '.join(names)} (each NAME@DIRECTION starts as NAME)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reference-world-lab", description="The reference world model's lab: train it, add experts, grow its actions",
        **help_examples("reference-world-lab train --config reference_world_lab/configs/reference_world.yaml --steps 200",
                    "reference-world-lab expert inferix/weights/reference_world --name physics --export /tmp/expert"))
    sub = parser.add_subparsers(dest="command", required=True)

    t = sub.add_parser("train", help="train a model from a recipe (checkpoints, --resume, eval samples, export)",
                       **help_examples("reference-world-lab train --config reference_world_lab/configs/reference_world.yaml --steps 200",
                                   "reference-world-lab train --config reference_world_lab/configs/reference_world.yaml --resume"))
    t.add_argument("--config", required=True, help="recipe YAML (e.g. reference_world_lab/configs/reference_world.yaml); a recipe may name a base: recipe it changes")
    t.add_argument("--resume", action="store_true", help="continue from the latest checkpoint in out_dir")
    t.add_argument("--steps", type=int, default=None,
                   help="stop at this step (default: the config's train.steps); with --resume and the "
                        "current step it only exports")
    t.add_argument("--out-dir", default=None, help="override the config's out_dir")
    t.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override a config value, parsed as YAML (repeatable): --set train.steps=3000 "
                        "--set data.roots=[/data/train]; relative paths are from the working directory")
    t.add_argument("--device", default="cpu", help="cpu | cuda | cuda:N (with train.autocast: bf16 on a GPU)")
    t.add_argument("--no-progress", action="store_true", help="no progress bar")

    e = sub.add_parser("expert", help="add a fine-tune of a bundle's DiT to it as the expert for some contents",
                       description="Store TUNED (an exported fine-tune of BUNDLE's DiT, e.g. trained on physics "
                                   "scenes with `reference-world-lab train`) inside BUNDLE as the expert for CONTENTS: "
                                   "experts/NAME.safetensors holds the difference (each weight matrix's at rank "
                                   "RANK, float16) and bundle.json lists it. Engines serving a case of one of "
                                   "CONTENTS then use the expert, every other case the main DiT. With --export OUT, "
                                   "the other way: write BUNDLE's expert NAME as a plain bundle (the main DiT plus "
                                   "the stored difference), e.g. as the init_from of a stage that trains it further.",
                       **help_examples("reference-world-lab expert BUNDLE runs/physics/model --name physics "
                                   "--contents mechanics,thermal --steps 200 --start anchor",
                                   "reference-world-lab expert inferix/weights/reference_world --name physics --export /tmp/expert",
                                   "reference-world-lab expert BUNDLE runs/melting/model --name melting "
                                   "--contents thermal.melting --base physics --rank 8 --steps 200 --start anchor"))
    e.add_argument("bundle", help="the bundle folder that gets the expert (changed in place)")
    e.add_argument("tuned", nargs="?", help="the fine-tuned bundle folder (same architecture)")
    e.add_argument("--name", required=True, help="expert name (its file name), e.g. physics")
    e.add_argument("--contents",
                   help="comma-separated generators or families it serves, e.g. mechanics,thermal,robotics.pick")
    e.add_argument("--export", metavar="OUT", default=None,
                   help="write the bundle's expert --name as a plain bundle folder OUT instead (nothing is added)")
    e.add_argument("--rank", type=int, default=16, help="rank of each weight matrix's difference (default 16)")
    e.add_argument("--steps", default=None,
                   help="the expert's own denoising timesteps, comma-separated from 1000 down (e.g. 1000,500,200,50); "
                        "default: the bundle's sampler")
    e.add_argument("--start", choices=EXPERT_STARTS, default="noise",
                   help="what each block starts from: pure noise (default), or the previous frame noised to the "
                        "first of --steps, which may then start below 1000 (e.g. --steps 200 --start anchor)")
    e.add_argument("--base", default=None, metavar="EXPERT",
                   help="TUNED is a fine-tune of this expert of BUNDLE (as --export writes it): store the "
                        "difference to that expert's DiT, a smaller file at a lower --rank")

    a = sub.add_parser("actions", help="add action names to a bundle's vocabulary",
                       **help_examples("reference-world-lab actions inferix/weights/reference_world --add move_ee@down,move_ee@up "
                                   "--out /tmp/grown"),
                       description="Append action names to BUNDLE's vocabulary and grow the action table of its "
                                   "main DiT and of every expert by name: a new NAME@DIRECTION (move_ee@down: "
                                   "inferix.registry.directional_name) starts as NAME's row, so the bundle serves "
                                   "exactly as before until a fine-tune trains the new rows (then `reference-world-lab expert`).")
    a.add_argument("bundle", help="the bundle folder")
    a.add_argument("--add", required=True, help="comma-separated names, e.g. move_ee@down,move_ee@up")
    a.add_argument("--out", default=None, help="write the grown bundle here (default: change BUNDLE in place)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    commands = {"train": cmd_train, "expert": cmd_expert, "actions": cmd_actions}
    try:
        return commands[args.command](args)
    except (ValueError, FileNotFoundError, KeyError) as e:
        print(f"reference-world-lab {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
