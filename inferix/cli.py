"""``inferix`` command line: generate | stream | serve | profile | bench | train.

Examples::

    inferix generate --model tiny --prompt "a red ball rolls" --seconds 60 --out ball.mp4
    inferix generate --model tiny --actions actions.json --image first.png --seconds 10 --out x.mp4
    inferix stream --model tiny --prompt "a maze" --out live.mp4      # type 'action left' / 'prompt ...'
    inferix serve --model tiny --port 8000                            # HTTP + WebSocket + /demo (Gradio)
    inferix profile --model tiny --seconds 10 --out prof.json        # + prof.png
    inferix bench --quick
    inferix train --config inferix/train/configs/reference_world.yaml [--resume] [--steps N]

Actions file (JSON): a list with one entry per block (the last entry holds), each an action
(``"forward"``, ``null``, ``{"name": ...}``) or ``{"action": ..., "prompt": ...}``; or
``{"per_second": [...]}`` with one entry per second of video.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import queue
import sys
import threading
import time
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)


def _add_model_args(p: argparse.ArgumentParser) -> None:
    from inferix.registry import DTYPES, MODELS

    p.add_argument("--model", default="tiny",
                   help=f"a named model ({', '.join(MODELS)}), a config name, an exported bundle folder "
                        "(inferix train writes one) or a local checkpoint (default: tiny)")
    p.add_argument("--prompt", default="", help="text prompt")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu", help="cpu | cuda | cuda:N")
    p.add_argument("--dtype", default=None, choices=DTYPES,
                   help="the DiT's (and KV cache's) dtype (default: as stored, float32): bfloat16 is faster on "
                        "a GPU and on a CPU with bf16 matrix units (lscpu | grep amx), with rounding differences")
    p.add_argument("--policy", default=None,
                   help="KV policy: full | rolling:W | sink:S:W (latent frames of past context), "
                        "optionally @absolute|@reindex (default: the model's own, else rolling:9)")
    p.add_argument("--steps", type=int, default=None, help="use the first N denoising steps of the preset")
    p.add_argument("--action-guidance", type=float, default=None,
                   help="classifier-free guidance on the action (v_idle + g (v_action - v_idle)); 1 = off "
                        "(default: the model's own, else 1)")
    p.add_argument("--guidance-rescale", type=float, default=None,
                   help="guidance rescale phi in [0, 1]: pull the guided velocity back to the conditional one's "
                        "std, so a large --action-guidance does not over-saturate (default: the model's own, else 0)")
    p.add_argument("--guidance-drops-caption", action=argparse.BooleanOptionalAction, default=None,
                   help="joint guidance: the unguided pass also drops the caption (idle action, empty prompt) "
                        "(default: the model's own, else off)")
    p.add_argument("--context-timestep", type=float, default=None,
                   help="commit each generated block to the KV cache noised to this timestep in [0, 1000), so later "
                        "blocks treat it as slightly uncertain (Diffusion Forcing); 0 = clean (default: the "
                        "model's own, else 0)")
    p.add_argument("--anchor-level", type=float, default=None,
                   help="for a model with an anchor-level input: the noise std it is told its anchors and "
                        "context carry; 0 = exact, so still content is copied (default: the model's own, else 0)")
    p.add_argument("--content", default=None,
                   help="what the video shows: a scenario generator (mechanics.bounce, gaming.atari_pong) or its "
                        "family (mechanics); a bundle then serves it with its expert, grid and guidance for that "
                        "content (default: none, the main DiT at the model's grid)")
    p.add_argument("--height", type=int, default=None, help="output height in pixels (default: the model's)")
    p.add_argument("--width", type=int, default=None, help="output width in pixels")
    p.add_argument("--text-encoder", default=None, help="local umT5 path (non-tiny models)")
    p.add_argument("--vae", default=None, help="local AutoencoderKLWan directory (non-tiny models)")
    p.add_argument("--host-blocks", type=int, default=0, help="host (CPU) KV blocks for offloading cold blocks")


def _load(args: argparse.Namespace) -> Any:
    from inferix.registry import load_model

    options = {k: v for k, v in (("text_encoder", args.text_encoder), ("vae", args.vae)) if v}
    return load_model(args.model, device=args.device, dtype=args.dtype, **options)


def _engine(args: argparse.Namespace, loaded: Any, max_frames: int, max_sessions: int = 1, max_batch: int = 1) -> Any:
    from inferix.engine import Engine

    latent_hw = loaded.latent_hw
    if args.height or args.width or args.content:
        ph, pw = loaded.pixel_hw()
        latent_hw = loaded.latent_hw_for((args.height or ph, args.width or pw), content=args.content)
    cfg = loaded.engine_config(latent_hw, steps=args.steps, policy=args.policy, action_guidance=args.action_guidance,
                               action_guidance_rescale=args.guidance_rescale,
                               guidance_drops_caption=args.guidance_drops_caption,
                               context_timestep=args.context_timestep, anchor_level=args.anchor_level,
                               num_host_blocks=args.host_blocks,
                               content=args.content, max_sessions=max_sessions, max_batch=max_batch,
                               max_frames=max_frames, device=args.device)
    return Engine(loaded.model_for(args.content), loaded.codec, loaded.text_encoder, cfg, loaded.action_encoder)


def load_actions(path: str | Path, fps: float, frames_per_block: int) -> Any:
    """Read an actions file into ``controls(block_index) -> (prompt | None, action)``."""
    try:
        data = json.loads(Path(path).read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"actions file {str(path)!r} is not valid JSON ({e.msg} at line {e.lineno}); "
                         "see `inferix --help` for the format") from None
    per_second = isinstance(data, dict)
    entries = data.get("per_second") if per_second else data
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"{path}: actions must be a non-empty JSON list (one entry per block) or "
                         '{"per_second": [...]}')

    def entry(i: int) -> tuple[str | None, Any]:
        if per_second:
            i = int(i * frames_per_block / fps)
        e = entries[min(i, len(entries) - 1)]
        if isinstance(e, dict) and ("action" in e or "prompt" in e):
            return e.get("prompt"), e.get("action")
        return None, e

    return entry


def _read_image(path: str) -> Any:
    import numpy as np
    from PIL import Image

    try:
        return np.asarray(Image.open(path).convert("RGB"))
    except (OSError, FileNotFoundError) as e:
        raise SystemExit(f"--image {path!r}: cannot read it as an image ({e})") from None


def cmd_generate(args: argparse.Namespace, interactive: bool = False) -> int:
    from inferix.streaming.mp4 import Mp4Writer

    loaded = _load(args)
    total = math.ceil(args.seconds * loaded.fps) if args.seconds else None
    num_blocks = loaded.blocks_for_seconds(args.seconds) if args.seconds else None
    engine = _engine(args, loaded, max_frames=(num_blocks or 64) * loaded.block_frames + 8)
    controls = load_actions(args.actions, loaded.fps, loaded.pixel_frames(1)) if args.actions else None
    first_prompt, first_action = controls(0) if controls else (None, None)
    live: queue.Queue[str] = queue.Queue()
    if interactive:
        threading.Thread(target=_read_stdin, args=(live,), daemon=True).start()
        controls = _live_controls(live, loaded)
    image = None
    if args.image:
        image = loaded.encode_image(_read_image(args.image), engine.config.latent_hw)
    written = 0
    kv_max = 0
    t0 = time.perf_counter()
    with Mp4Writer(args.out, loaded.fps) as writer:
        for out in engine.stream(first_prompt or args.prompt, num_blocks=num_blocks, seed=args.seed,
                                 action=first_action, controls=controls, image_latents=image):
            frames = out.frames if total is None else out.frames[: total - written]
            writer.write(frames)
            written += len(frames)
            kv_max = max(kv_max, engine.kv.usage()["device_blocks_used"])
            if interactive:
                print(json.dumps({"block": out.index, "frames": written, "prompt": out.prompt,
                                  "action": out.action, "timings": out.timings}), flush=True)
            if interactive and not live.empty() and live.queue[0] == "quit":
                break
    elapsed = time.perf_counter() - t0
    print(json.dumps({"out": str(args.out), "frames": written, "seconds": written / loaded.fps,
                      "fps": loaded.fps, "generation_fps": written / elapsed if elapsed else None,
                      "kv_device_blocks_max": kv_max, "policy": loaded.policy(args.policy)}))
    return 0


def _read_stdin(q: queue.Queue[str]) -> None:
    # EOF just ends the input: the stream goes on until --seconds or 'quit'
    for line in sys.stdin:
        q.put(line.strip())


def _live_controls(q: queue.Queue[str], loaded: Any) -> Any:
    """Controls fed by stdin lines: ``action NAME`` | ``prompt TEXT`` | ``quit``."""
    state: dict[str, Any] = {"prompt": None, "action": None}

    def controls(i: int) -> tuple[str | None, Any]:
        while not q.empty() and q.queue[0] != "quit":
            line = q.get()
            cmd, _, rest = line.partition(" ")
            if cmd == "action":
                try:
                    if loaded.action_encoder is not None:
                        loaded.action_encoder(rest or None)
                    state["action"] = rest or None
                except ValueError as e:
                    print(json.dumps({"error": str(e)}), flush=True)
            elif cmd == "prompt":
                state["prompt"] = rest
            elif line:
                print(json.dumps({"error": f"unknown command {line!r}: use 'action NAME', 'prompt TEXT' or 'quit'"}),
                      flush=True)
        return state["prompt"], state["action"]

    return controls


def cmd_profile(args: argparse.Namespace) -> int:
    from inferix.profiling import profile_session

    loaded = _load(args)
    num_blocks = loaded.blocks_for_seconds(args.seconds)
    engine = _engine(args, loaded, max_frames=num_blocks * loaded.block_frames + 8)
    prof = profile_session(engine, args.prompt, num_blocks, seed=args.seed, model_name=args.model)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    prof.to_json(out)
    prof.plot(out.with_suffix(".png"))
    print(json.dumps(prof.summary()))
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from inferix.streaming.server import serve

    loaded = _load(args)
    engine = _engine(args, loaded, max_frames=256, max_sessions=args.max_sessions, max_batch=args.max_batch)
    serve(engine, loaded, host=args.host, port=args.port, gradio=not args.no_gradio)
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from inferix.profiling import run_bench

    results = run_bench(quick=args.quick, device=args.device)
    print(json.dumps(results, indent=2))
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from inferix.train.config import load_config
    from inferix.train.recipe import train

    cfg = load_config(args.config, args.set)
    if args.out_dir:
        cfg.out_dir = str(Path(args.out_dir).resolve())
    logging.getLogger("inferix").setLevel(logging.INFO)
    trainer = train(cfg, resume=args.resume, steps=args.steps, device=args.device, progress=not args.no_progress)
    print(f"trained {cfg.name} to step {trainer.state.step} in {trainer.state.wall_s:.0f} s; "
          f"model -> {Path(cfg.out_dir) / 'model'}")
    return 0


def cmd_expert(args: argparse.Namespace) -> int:
    from inferix.train.bundle import add_expert, expert_as_bundle

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
    from inferix.train.bundle import extend_actions

    names = [n.strip() for n in args.add.split(",") if n.strip()]
    if not names:
        raise ValueError("--add takes comma-separated action names, e.g. move_ee@down,move_ee@up")
    out = extend_actions(args.bundle, args.out or args.bundle, names)
    print(f"{out}: vocabulary + {', '.join(names)} (each NAME@DIRECTION starts as NAME)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from inferix.train.bundle import EXPERT_STARTS

    parser = argparse.ArgumentParser(prog="inferix", description="Inferix: block-diffusion video generation engine")
    sub = parser.add_subparsers(dest="command", required=True)

    g = sub.add_parser("generate", help="generate a video to an mp4 file")
    _add_model_args(g)
    g.add_argument("--seconds", type=float, required=True, help="video length")
    g.add_argument("--out", required=True, help="output .mp4")
    g.add_argument("--image", default=None, help="first-frame image (image-to-video)")
    g.add_argument("--actions", default=None, help="JSON actions file (see inferix --help)")

    s = sub.add_parser("stream", help="generate until stopped; read 'action X' / 'prompt Y' lines from stdin")
    _add_model_args(s)
    s.add_argument("--seconds", type=float, default=None, help="stop after this long (default: until 'quit'/EOF)")
    s.add_argument("--out", required=True, help="output .mp4 (written block by block)")
    s.add_argument("--image", default=None)
    s.add_argument("--actions", default=None)

    v = sub.add_parser("serve", help="HTTP + WebSocket server with a Gradio demo page at /demo")
    _add_model_args(v)
    v.add_argument("--host", default="127.0.0.1")
    v.add_argument("--port", type=int, default=8000)
    v.add_argument("--max-sessions", type=int, default=4)
    v.add_argument("--max-batch", type=int, default=4)
    v.add_argument("--no-gradio", action="store_true", help="do not mount the Gradio demo")

    p = sub.add_parser("profile", help="per-block timings, FPS, time to first frame, memory (JSON + PNG)")
    _add_model_args(p)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--out", default="inferix_profile.json")

    b = sub.add_parser("bench", help="latency / cache / batching / FLOP-utilisation benchmarks")
    b.add_argument("--quick", action="store_true", help="small sizes (seconds, not minutes)")
    b.add_argument("--device", default="cpu")

    t = sub.add_parser("train", help="train a model from a recipe (checkpoints, --resume, eval samples, export)")
    t.add_argument("--config", required=True, help="recipe YAML (e.g. inferix/train/configs/reference_world.yaml); a recipe may name a base: recipe it changes")
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
                                   "scenes with `inferix train`) inside BUNDLE as the expert for CONTENTS: "
                                   "experts/NAME.safetensors holds the difference (each weight matrix's at rank "
                                   "RANK, float16) and bundle.json lists it. Engines serving a case of one of "
                                   "CONTENTS then use the expert, every other case the main DiT. With --export OUT, "
                                   "the other way: write BUNDLE's expert NAME as a plain bundle (the main DiT plus "
                                   "the stored difference), e.g. as the init_from of a stage that trains it further.",
                       epilog="examples:\n"
                              "  inferix expert BUNDLE runs/physics/model --name physics --contents mechanics,thermal "
                              "--steps 200 --start anchor\n"
                              "  inferix expert inferix/weights/reference_world --name physics --export /tmp/expert\n"
                              "  inferix expert BUNDLE runs/melting/model --name melting --contents thermal.melting "
                              "--base physics --rank 8 --steps 200 --start anchor",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
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
                       description="Append action names to BUNDLE's vocabulary and grow the action table of its "
                                   "main DiT and of every expert by name: a new NAME@DIRECTION (move_ee@down: "
                                   "inferix.registry.directional_name) starts as NAME's row, so the bundle serves "
                                   "exactly as before until a fine-tune trains the new rows (then `inferix expert`).")
    a.add_argument("bundle", help="the bundle folder")
    a.add_argument("--add", required=True, help="comma-separated names, e.g. move_ee@down,move_ee@up")
    a.add_argument("--out", default=None, help="write the grown bundle here (default: change BUNDLE in place)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        if args.command == "generate":
            return cmd_generate(args)
        if args.command == "stream":
            return cmd_generate(args, interactive=True)
        if args.command == "serve":
            return cmd_serve(args)
        if args.command == "profile":
            return cmd_profile(args)
        if args.command == "bench":
            return cmd_bench(args)
        if args.command == "train":
            return cmd_train(args)
        if args.command == "expert":
            return cmd_expert(args)
        if args.command == "actions":
            return cmd_actions(args)
    except (ValueError, FileNotFoundError, KeyError) as e:
        print(f"inferix {args.command}: error: {e}", file=sys.stderr)
        return 2
    return 1


if __name__ == "__main__":
    sys.exit(main())
