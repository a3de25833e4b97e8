"""``inferix`` command line: generate | stream | serve | profile | bench.

Examples::

    inferix generate --model tiny --prompt "a red ball rolls" --seconds 60 --out ball.mp4
    inferix generate --model tiny --actions actions.json --image first.png --seconds 10 --out x.mp4
    inferix stream --model tiny --prompt "a maze" --out live.mp4      # type 'action left' / 'prompt ...'
    inferix serve --model tiny --port 8000                            # HTTP + WebSocket + /demo (Gradio)
    inferix profile --model tiny --seconds 10 --out prof.json        # + prof.png
    inferix bench --quick

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
                        "(reference-world-lab train writes one) or a local checkpoint (default: tiny)")
    p.add_argument("--prompt", default="", help="text prompt")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu", help="cpu | cuda | cuda:N")
    p.add_argument("--dtype", default=None, choices=DTYPES,
                   help="the DiT's (and KV cache's) dtype (default: as stored, float32): bfloat16 is faster on "
                        "a GPU and on a CPU with bf16 matrix units (lscpu | grep amx), with rounding differences")
    p.add_argument("--policy", default=None,
                   help="KV policy: full | rolling:W | sink:S:W (latent frames of past context), "
                        "optionally @absolute|@reindex (default: the model's own, else rolling:9)")
    _add_sampling_args(p)
    p.add_argument("--content", default=None,
                   help="what the video shows: a scenario generator (mechanics.bounce, gaming.atari_pong) or its "
                        "family (mechanics); a bundle then serves it with its expert, grid and guidance for that "
                        "content (default: none, the main DiT at the model's grid)")
    p.add_argument("--height", type=int, default=None, help="output height in pixels (default: the model's)")
    p.add_argument("--width", type=int, default=None, help="output width in pixels")
    p.add_argument("--text-encoder", default=None, help="local umT5 path (non-tiny models)")
    p.add_argument("--vae", default=None, help="local AutoencoderKLWan directory (non-tiny models)")
    p.add_argument("--vae-dtype", default=None, choices=DTYPES,
                   help="the Wan VAE's dtype (default: float32); bfloat16 decodes faster, its PSNR against float32 "
                        "is what `inferix bench --gpu` measures (stage vae_bf16)")
    p.add_argument("--host-blocks", type=int, default=0, help="host (CPU) KV blocks for offloading cold blocks")
    p.add_argument("--overlap-decode", action="store_true",
                   help="decode each block's frames on a worker thread (its own CUDA stream) while the next block "
                        "denoises: the same frames, sooner where a core or the GPU has room (`python "
                        "bench/bench_inferix.py overlap_decode`; stage overlap_decode of `inferix bench --gpu`); "
                        "a session steered "
                        "block by block (--actions) still decodes in line")


def _add_sampling_args(p: argparse.ArgumentParser) -> None:
    """One flag per sampling knob (:data:`inferix.sampling.KNOBS`); unset = the model's own."""
    from inferix.sampling import KNOBS

    g = p.add_argument_group("sampling (default: the model's own; see inferix.sampling.SamplingConfig)")
    for k in KNOBS.values():
        if k.type == "bool":
            g.add_argument(k.flag, dest=k.name, action=argparse.BooleanOptionalAction, default=None, help=k.help)
        else:
            g.add_argument(k.flag, dest=k.name, type=int if k.type == "int" else float, default=None,
                           metavar=k.type.upper(), help=k.help)


def _sampling(args: argparse.Namespace) -> dict[str, Any]:
    """The sampling knobs given on the command line (None = the model's own)."""
    from inferix.sampling import KNOBS

    return {k: getattr(args, k, None) for k in KNOBS}


def _load(args: argparse.Namespace) -> Any:
    from inferix.registry import load_model

    options = {k: v for k, v in (("text_encoder", args.text_encoder), ("vae", args.vae)) if v}
    return load_model(args.model, device=args.device, dtype=args.dtype, vae_dtype=args.vae_dtype, **options)


def _start_sequence_parallel(args: argparse.Namespace) -> int:
    """``--sp N``: join the ``torchrun`` group (gloo on CPU, NCCL on CUDA; each rank on its own GPU) and
    return this rank (0 without ``--sp``)."""
    import os

    n = getattr(args, "sp", 1) or 1
    if n < 1:
        raise ValueError(f"--sp must be >= 1, got {n}")
    if n == 1:
        return 0
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world != n:
        raise ValueError(f"--sp {n} needs {n} processes started by torchrun (WORLD_SIZE={world}): "
                         f"torchrun --nproc-per-node {n} -m inferix.cli generate ... --sp {n}")
    import torch.distributed as dist

    cuda = str(args.device).startswith("cuda")
    if cuda:
        args.device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
    if not dist.is_initialized():
        dist.init_process_group("nccl" if cuda else "gloo")
    return dist.get_rank()


def _stop_sequence_parallel(args: argparse.Namespace) -> None:
    if (getattr(args, "sp", 1) or 1) > 1:
        import torch.distributed as dist

        if dist.is_initialized():
            dist.destroy_process_group()


class _NoWriter:
    """Ranks other than 0 under ``--sp`` compute the same frames and write none."""

    def __enter__(self) -> _NoWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def write(self, frames: Any) -> None:
        return None


def _engine(args: argparse.Namespace, loaded: Any, max_frames: int, max_sessions: int = 1, max_batch: int = 1) -> Any:
    from inferix.engine import Engine

    latent_hw = loaded.latent_hw
    if args.height or args.width or args.content:
        ph, pw = loaded.pixel_hw()
        latent_hw = loaded.latent_hw_for((args.height or ph, args.width or pw), content=args.content)
    cfg = loaded.engine_config(latent_hw, policy=args.policy, sampling=_sampling(args), num_host_blocks=args.host_blocks,
                               content=args.content, max_sessions=max_sessions, max_batch=max_batch,
                               max_frames=max_frames, device=args.device,
                               sequence_parallel=(getattr(args, "sp", 1) or 1) > 1,
                               overlap_decode=bool(getattr(args, "overlap_decode", False)))
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
    rank = _start_sequence_parallel(args)
    try:
        return _generate(args, interactive, rank)
    finally:
        _stop_sequence_parallel(args)


def _generate(args: argparse.Namespace, interactive: bool, rank: int) -> int:
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
    with Mp4Writer(args.out, loaded.fps) if rank == 0 else _NoWriter() as writer:
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
    if rank != 0:
        return 0
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
    serve(engine, loaded, host=args.host, port=args.port, gradio=not args.no_gradio,
          idle_timeout_s=args.idle_timeout if args.idle_timeout > 0 else None)
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    if args.gpu:
        return _cmd_gpu_round(args)
    if args.dry:
        raise ValueError("--dry goes with --gpu (the GPU round's CPU check): inferix bench --gpu --dry")
    from inferix.profiling import run_bench

    results = run_bench(quick=args.quick, device=args.device or "cpu")
    print(json.dumps(results, indent=2))
    return 0


def _cmd_gpu_round(args: argparse.Namespace) -> int:
    """``inferix bench --gpu``: the engine's GPU round (``inferix.gpu_round``); exit 1 if a stage failed."""
    from inferix.gpu_round import RoundSettings, default_out, run_gpu_round

    changes: dict[str, Any] = {}
    if args.device:
        changes["device"] = args.device
    if args.budget_s is not None:
        changes["budget_s"] = args.budget_s
    if args.seconds is not None:
        changes["video_seconds"] = args.seconds
    if args.no_tests:
        changes["gpu_tests"] = ()
    settings = RoundSettings.dry(**changes) if args.dry else RoundSettings(**changes)
    out = Path(args.out) if args.out else default_out(args.dry)
    record = run_gpu_round(settings, out, dry=args.dry)
    print(json.dumps(record["summary"], indent=2, default=str))
    print(f"wrote {out}")
    return 1 if any(st["status"] == "failed" for st in record["stages"].values()) else 0


def _examples(*lines: str) -> dict[str, Any]:
    """``add_parser`` keywords that end a command's ``--help`` with runnable examples."""
    return {"epilog": "examples:\n" + "\n".join(f"  {x}" for x in lines),
            "formatter_class": argparse.RawDescriptionHelpFormatter}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="inferix", description="Inferix: block-diffusion video generation engine")
    sub = parser.add_subparsers(dest="command", required=True)

    g = sub.add_parser("generate", help="generate a video to an mp4 file",
                       **_examples('inferix generate --model tiny --prompt "a red ball rolls" --seconds 4 --out ball.mp4',
                                   'inferix generate --model reference-world --image first.png --actions actions.json --seconds 10 --out x.mp4',
                                   'torchrun --nproc-per-node 2 -m inferix.cli generate --model tiny --seconds 4 --out x.mp4 --sp 2'))
    _add_model_args(g)
    g.add_argument("--seconds", type=float, required=True, help="video length")
    g.add_argument("--out", required=True, help="output .mp4")
    g.add_argument("--image", default=None, help="first-frame image (image-to-video)")
    g.add_argument("--actions", default=None, help="JSON actions file (see inferix --help)")
    g.add_argument("--sp", type=int, default=1,
                   help="sequence parallel over N processes (Ulysses; start them with torchrun --nproc-per-node N; "
                        "gloo on CPU, NCCL on CUDA); any N: token rows and heads are padded to divide")

    s = sub.add_parser("stream", help="generate until stopped; read 'action X' / 'prompt Y' lines from stdin",
                       **_examples('inferix stream --model tiny --prompt "a maze" --out live.mp4    # then type: action left / prompt ...'))
    _add_model_args(s)
    s.add_argument("--seconds", type=float, default=None, help="stop after this long (default: until 'quit'/EOF)")
    s.add_argument("--out", required=True, help="output .mp4 (written block by block)")
    s.add_argument("--image", default=None)
    s.add_argument("--actions", default=None)

    v = sub.add_parser("serve", help="HTTP + WebSocket server with a Gradio demo page at /demo",
                       **_examples('inferix serve --model tiny --port 8000    # open http://localhost:8000/demo'))
    _add_model_args(v)
    v.add_argument("--host", default="127.0.0.1")
    v.add_argument("--port", type=int, default=8000)
    v.add_argument("--max-sessions", type=int, default=4)
    v.add_argument("--max-batch", type=int, default=4)
    v.add_argument("--no-gradio", action="store_true", help="do not mount the Gradio demo")
    v.add_argument("--idle-timeout", type=float, default=300.0,
                   help="seconds a session may go without its client taking a block or sending a control "
                        "message before it is cancelled and reclaimed (0: never; default 300)")

    p = sub.add_parser("profile", help="per-block timings, FPS, time to first frame, memory (JSON + PNG)",
                       **_examples('inferix profile --model tiny --seconds 10 --out prof.json    # + prof.png'))
    _add_model_args(p)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--out", default="inferix_profile.json")

    b = sub.add_parser("bench", help="latency / cache / batching / FLOP-utilisation benchmarks; --gpu: the "
                                     "engine's GPU round at Wan2.1-1.3B size (one JSON)",
                       **_examples('inferix bench --quick',
                                   'inferix bench --device cuda',
                                   'inferix bench --gpu    # one H100/H200, <= 8 min: bench/records/engine_gpu_<date>.json',
                                   'inferix bench --gpu --dry --out /tmp/dry.json    # the same round, tiny, on CPU'))
    b.add_argument("--quick", action="store_true", help="small sizes (seconds, not minutes)")
    b.add_argument("--device", default=None, help="default: cpu; with --gpu: cuda (--dry: cpu)")
    b.add_argument("--gpu", action="store_true",
                   help="the engine's GPU round: random-init Wan2.1-1.3B + the full Wan VAE at 832x480, 4 steps; "
                        "FPS with decode, first block, per-block latency, memory, DiT/cache/VAE split, a bf16 VAE, "
                        "decode overlapped with the next block, 1/2/4 sessions, the gpu-marked tests "
                        "(inferix/gpu_round.py)")
    b.add_argument("--dry", action="store_true", help="with --gpu: the same stages at tiny size on CPU (seconds)")
    b.add_argument("--out", default=None,
                   help="with --gpu: the JSON (default: bench/records/engine_gpu_<date>.json; --dry: bench/_out/)")
    b.add_argument("--budget-s", type=float, default=None, help="with --gpu: the round's wall-clock budget (420)")
    b.add_argument("--seconds", type=float, default=None,
                   help="with --gpu: video length of the single-session stage (60; --dry: 3)")
    b.add_argument("--no-tests", action="store_true", help="with --gpu: skip the gpu-marked tests stage")

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
    except (ValueError, FileNotFoundError, KeyError) as e:
        print(f"inferix {args.command}: error: {e}", file=sys.stderr)
        return 2
    return 1


if __name__ == "__main__":
    sys.exit(main())
