"""Inferix: a block-diffusion (semi-autoregressive) video inference engine.

Layers (DESIGN.md §7), each importable on its own; nothing here imports torch::

    inferix.engine      Engine: schedule -> execute -> update over many sessions; stream()
    inferix.sampling    SamplingConfig: every sampling knob (timesteps, guidance...) declared once
    inferix.scheduler   which sessions' blocks share the next forward (pure bookkeeping)
    inferix.kv_cache    block pool, manager and policies (bookkeeping), storage + attention backend
    inferix.models      block-causal Wan DiT, attention boundary, VAE / identity codec, loading
    inferix.schedulers  few-step flow-matching samplers
    inferix.streaming   mp4 per block, HTTP/WebSocket server and Gradio demo (`inferix serve`)
    inferix.profiling   per-block timings, FPS, memory; benchmarks (`inferix profile|bench`)
    inferix.parallel    Ulysses sequence parallelism over torch.distributed
    inferix.registry    named models (`tiny`) and loading of configs / checkpoints
    inferix.cli         the `inferix` command

Inferix imports nothing from worldolympiad, tracks, scenarios or leaderboard.
"""

__all__: list[str] = []
