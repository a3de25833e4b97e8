"""The Inferix engine: many concurrent block-diffusion sessions, one forward per step.

Loop (vLLM-v1-like, adapted to block diffusion)::

    step():  schedule  -> rows: (session, pass) — a denoising step of the session's current
                          block, or the block's clean t = 0 pass that commits its keys/values
             execute   -> ONE model forward over all rows (latents, per-row timestep, text
                          K/V, action, RoPE positions; the block-pool backend serves the
                          KV cache of every row's session): inferix.runner.ModelRunner
             update    -> per row: x0 from the velocity and re-noise to the next level, or
                          commit the KV, decode the block (codec state carried), emit frames,
                          start the next block (picking up a changed prompt/action)

With ``EngineConfig.overlap_decode`` a committed block is decoded on a worker thread (its own CUDA
stream on a GPU) while the next steps denoise the following block; its frames are emitted by the
first ``step()`` after the decode finishes, in order. The frames are the same either way.

Per block of one session (few-step flow matching, Self-Forcing semantics, as
``inferix.pipeline.generate_blocks`` does for one session)::

    x = noise                                        # t_0 = 1000
    for i, t in enumerate(timesteps):                 # cache read-only
        x0 = x - (t/1000) * model(x, t)
        x  = (1 - t_{i+1}/1000) x0 + (t_{i+1}/1000) noise'   (last step: x = x0)
    model(x0, t=0, commit=True)                       # writes the block into the KV cache
    frames = decoder.decode(x0)                       # codec state carried across blocks

A model conditioned on the previous frame (``WanConfig.conditions_on_previous_frame``) gets,
in every pass of a block, the session's last committed latent frame as ``anchor`` (conditioning
frames are their own anchor; zeros before any frame).

Sessions are independent: each has its own seeded noise generator, so the frames of a
session do not depend on which other sessions shared its forwards. A forward that raises
is retried row by row; only the row that fails alone fails its session.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from inferix.kv_cache import CachePolicy, KVCacheManager
from inferix.kv_cache.backend import BlockPoolAttention, RowSpec
from inferix.kv_cache.storage import KVStorage
from inferix.runner import ModelRunner, RowInput
from inferix.sampling import SamplingConfig
from inferix.scheduler import ScheduledRow, Scheduler, SessionSlot, SessionState

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)



@dataclass
class EngineConfig:
    """Engine settings.

    Attributes:
        latent_hw: latent height and width every session uses (one token grid per engine).
        block_frames: latent frames generated per block.
        policy: KV retention policy (``CachePolicy.parse("rolling:6")``...).
        kv_block_size: latent frames per KV block (default: ``block_frames``).
        num_device_blocks: device KV pool size; default: enough for ``max_sessions`` sessions
            under a bounded policy, or ``max_frames`` frames each under ``full``.
        num_host_blocks: host pool for offloaded cold blocks (0 = no offload).
        max_batch: rows per forward.
        max_sessions: sessions that may hold a KV cache at once (sizes the default pool).
        max_frames: latent frames per session the default ``full`` pool is sized for.
        device: torch device of the model and the KV pool.
        check_finite: fail a session whose latents become NaN/inf.
        rotated_kv_buffers: read the KV cache through per-session buffers of already rotated keys (the
            lean path, :mod:`inferix.kv_cache.backend`); ``None`` = wherever the policy keeps cached
            positions fixed, ``False`` = gather and rotate the pool's keys every pass (the path
            before issue 60, kept for ``bench/bench_inferix.py lean``).
        sequence_parallel: split every forward over the ranks of the initialised default
            ``torch.distributed`` group (Ulysses; ``inferix generate --sp N`` under torchrun); every
            rank runs the same engine (same seeds, same schedule) and gets the same frames.
        step_log_size: forwards :attr:`Engine.step_log` remembers (the oldest are dropped).
        overlap_decode: decode each committed block on a worker thread (on CUDA, its own stream) while
            the next block denoises (issue 60 item 2); the frames are the same, emitted a step or more
            later. A session streamed with interactive ``controls`` decodes in line: its next block
            must not start before the controller has seen this one.
        sampling: how each block is sampled: timesteps, guidance, context timestep...
            (:class:`inferix.sampling.SamplingConfig`, the one place those settings are declared).
    """

    latent_hw: tuple[int, int] = (16, 16)
    block_frames: int = 3
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    policy: CachePolicy = field(default_factory=CachePolicy)
    kv_block_size: int | None = None
    num_device_blocks: int | None = None
    num_host_blocks: int = 0
    max_batch: int = 4
    max_sessions: int = 4
    max_frames: int = 96
    device: str = "cpu"
    check_finite: bool = True
    rotated_kv_buffers: bool | None = None
    sequence_parallel: bool = False
    step_log_size: int = 1000
    overlap_decode: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.sampling, SamplingConfig):
            raise TypeError(f"sampling must be an inferix.sampling.SamplingConfig, got {type(self.sampling).__name__}")
        if self.block_frames < 1:
            raise ValueError(f"block_frames must be >= 1, got {self.block_frames}")

    @property
    def kv_block(self) -> int:
        return self.kv_block_size or self.block_frames

    def pool_blocks(self) -> int:
        """Device KV blocks to allocate."""
        if self.num_device_blocks is not None:
            return self.num_device_blocks
        bound = self.policy.max_visible_frames()
        frames = self.max_frames if bound is None else bound + self.block_frames
        # +1: a block straddling the window edge; +1: the block being reserved
        per_session = -(-frames // self.kv_block) + 2
        return per_session * self.max_sessions


@dataclass
class BlockOutput:
    """One decoded block of a session.

    Attributes:
        session_id: whose block.
        index: block number within the session (0-based).
        frames: ``uint8 [T, H, W, 3]`` decoded frames.
        latents: ``[C, F, h, w]`` clean latents of the block (CPU float32).
        timings: seconds spent on this block: ``denoise``, ``cache_update``, ``decode``
            (forward time of batched steps is split evenly among the rows).
        prompt: prompt in effect.
        action: action in effect.
        kv_blocks: KV blocks the session holds after committing this block (both pools).
        kv_bytes: their bytes.
    """

    session_id: str
    index: int
    frames: np.ndarray
    latents: Any
    timings: dict[str, float]
    prompt: str = ""
    action: Any = None
    kv_blocks: int = 0
    kv_bytes: int = 0


@dataclass
class Session:
    """Engine-side state of one video being generated (tensors live here, not in the scheduler)."""

    slot: SessionSlot
    prompt: str
    action: Any
    num_blocks: int | None
    seed: int
    generator: Any
    context: Any = None  # CrossAttentionKV, batch 1
    action_tensor: Any = None
    x: Any = None  # [1, C, F, h, w] current latents
    decoder: Any = None  # the codec's StreamDecoder for this session
    blocks_done: int = 0
    next_prompt: str | None = None
    next_action: Any = None
    has_next_action: bool = False
    outputs: deque = field(default_factory=deque)
    error: str | None = None
    timings: dict[str, float] = field(default_factory=lambda: {"denoise": 0.0, "cache_update": 0.0, "decode": 0.0})
    started: float = field(default_factory=time.perf_counter)
    first_frame_s: float | None = None
    prefix_frames: Any = None  # decoded conditioning frames, emitted with block 0
    anchor: Any = None  # [1, C, 1, h, w] last clean latent frame (models conditioned on the previous frame)
    overlap: bool = False  # decode committed blocks on the engine's decode thread (EngineConfig.overlap_decode)
    commit_x: Any = None  # the finished block as committed (noised to context_timestep); None = s.x
    nonfinite: Any = None  # device bool: some step of the current block gave non-finite latents

    @property
    def id(self) -> str:
        return self.slot.session_id

    @property
    def state(self) -> SessionState:
        return self.slot.state


class SessionFailedError(RuntimeError):
    """A session ended in the ``failed`` state; the message says why."""


class Engine:
    """Runs many block-diffusion sessions over one model.

    Args:
        model: a ``CausalWanModel`` (or anything with its forward signature,
            ``cross_attention_kv`` and ``config.in_channels``).
        codec: an ``inferix.models.vae`` codec (``stream_decoder()`` per session, so the decoder's
            causal state is carried from block to block; ``num_pixel_frames``; ``encode``).
        text_encoder: ``str -> [1, L_txt, text_dim]`` embeddings.
        config: engine settings.
        action_encoder: ``action -> tensor`` for the model's action input (``None`` = the model
            takes no action; an action other than ``None`` is then an error).
    """

    def __init__(self, model: Any, codec: Any, text_encoder: Callable[[str], Any],
                 config: EngineConfig | None = None,
                 action_encoder: Callable[[Any], Any] | None = None) -> None:
        import torch

        self.model = model
        self.codec = codec
        self.text_encoder = text_encoder
        self.config = cfg = config or EngineConfig()
        self.sampling = cfg.sampling
        if cfg.sampling.anchor_level and not model.config.anchor_level:
            raise ValueError(f"anchor_level={cfg.sampling.anchor_level} needs a model with an anchor-level input "
                             "(WanConfig.anchor_level); this one has none: leave anchor_level at 0")
        if cfg.sampling.start_from_anchor and not model.config.conditions_on_previous_frame:
            raise ValueError("start_from_anchor needs a model conditioned on the previous frame "
                             "(WanConfig.conditions_on_previous_frame); this one has no anchor to start from")
        self.action_encoder = action_encoder
        self.device = torch.device(cfg.device)
        self.kv = KVCacheManager(cfg.kv_block, cfg.pool_blocks(), cfg.num_host_blocks, cfg.policy)
        self.storage = KVStorage(cfg.pool_blocks(), cfg.num_host_blocks, cfg.kv_block, self.device)
        self.backend = BlockPoolAttention(self.kv, self.storage, cfg.rotated_kv_buffers)
        self.scheduler = Scheduler(self.kv, cfg.max_batch)
        self.runner = ModelRunner(model, self.backend, cfg.sampling, cfg.block_frames, self.device,
                                  idle_action=lambda: self._encode_action(None), null_context=lambda: self._context(""),
                                  sequence_parallel=cfg.sequence_parallel)
        self.sessions: dict[str, Session] = {}
        self._ids = itertools.count()
        self._arrival = itertools.count()
        self._context_cache: OrderedDict[str, Any] = OrderedDict()
        # per forward: rows, seconds (profiling reads it); the last step_log_size only, so a server
        # that runs for days does not grow it without bound
        self.step_log: deque[dict[str, Any]] = deque(maxlen=cfg.step_log_size)
        # overlap_decode: one worker, so decodes finish in the order they were submitted (per session
        # the decoder's causal state must see its blocks in order); (session, output, future) oldest first
        self._decode_pool = (ThreadPoolExecutor(max_workers=1, thread_name_prefix="inferix-decode")
                             if cfg.overlap_decode else None)
        self._decode_stream = (torch.cuda.Stream(self.device)
                               if cfg.overlap_decode and self.device.type == "cuda" else None)
        self._decoding: deque[tuple[Session, BlockOutput, Future]] = deque()

    # ---------------------------------------------------------------- sessions

    def add_session(self, prompt: str = "", *, num_blocks: int | None = None, seed: int = 0,
                    action: Any = None, session_id: str | None = None, image_latents: Any = None) -> str:
        """Start a session; it joins the next step. ``num_blocks=None`` runs until cancelled.

        Args:
            image_latents: optional ``[1, C, F0, h, w]`` clean latents of conditioning frames
                (image-to-video): committed to the session's KV cache at once by one t = 0 pass
                at positions ``0..F0-1``, so every generated block attends to them; they are
                decoded first (through the session's stream decoder) and their frames open
                block 0's output, as ``inferix.pipeline.generate_blocks`` does.

        Raises:
            ValueError: duplicate id, bad ``num_blocks``, an action the model does not know.
        """
        import torch

        sid = session_id or f"s{next(self._ids)}"
        if sid in self.sessions:
            raise ValueError(f"session id {sid!r} already exists")
        if num_blocks is not None and num_blocks < 1:
            raise ValueError(f"num_blocks must be >= 1 or None (unbounded), got {num_blocks}")
        if self.sampling.start_from_anchor and image_latents is None:
            raise ValueError("start_from_anchor starts each block from the previous frame, so a session needs "
                             "image_latents (a first frame, e.g. inferix generate --image); none was given")
        action_tensor = self._encode_action(action)
        context = self._context(prompt)
        slot = SessionSlot(sid, self._batch_key(context), len(self.sampling.timesteps), self.config.block_frames,
                           arrival=next(self._arrival))
        gen = torch.Generator().manual_seed(seed)
        s = Session(slot, prompt, action, num_blocks, seed, gen, context=context, action_tensor=action_tensor,
                    overlap=self.config.overlap_decode)
        s.decoder = self.codec.stream_decoder()
        self.kv.add_session(sid)
        self.sessions[sid] = s
        if image_latents is not None:
            try:
                with torch.no_grad():
                    self._prefill(s, image_latents)
            except Exception:
                self.kv.free_session(sid)
                del self.sessions[sid]
                raise
        self._start_block(s)
        return sid

    def _prefill(self, s: Session, latents: torch.Tensor) -> None:
        import torch

        c = self.model.config.out_channels
        h, w = self.config.latent_hw
        if latents.ndim != 5 or latents.shape[0] != 1 or latents.shape[1] != c or tuple(latents.shape[3:]) != (h, w):
            raise ValueError(f"image_latents must be [1, {c}, F, {h}, {w}], got {tuple(latents.shape)}")
        f0 = int(latents.shape[2])
        if self.kv.reserve(s.id, f0) is None:
            raise RuntimeError(f"KV pool has no room for {f0} conditioning frames ({self.kv.usage()})")
        self.backend.prepare([RowSpec(s.id, commit=True)])
        positions = self.backend.frame_positions(f0)
        latents = latents.to(self.device, self.model.dtype)
        # conditioning frames are their own anchor (the recipe trains its 1-frame prefix that way)
        anchor = latents[:, :, :1] if self.model.config.conditions_on_previous_frame else None
        self.runner.call_model(latents, torch.zeros(1, device=self.device), s.context, positions,
                               None if s.action_tensor is None else s.action_tensor.to(self.device), anchor,
                               self.runner.anchor_level(1))
        self.kv.commit(s.id, f0)
        if anchor is not None:
            s.anchor = latents[:, :, -1:]
        from inferix.models.vae import to_uint8

        s.prefix_frames = to_uint8(s.decoder.decode(latents.float()))[0].cpu().numpy()  # the codec's dtype, not the DiT's

    def pause(self, session_id: str) -> None:
        """Stop scheduling a session (its KV cache stays)."""
        s = self._live(session_id)
        if s.state in (SessionState.RUNNING, SessionState.WAITING):
            s.slot.state = SessionState.PAUSED

    def resume(self, session_id: str) -> None:
        s = self._live(session_id)
        if s.state == SessionState.PAUSED:
            s.slot.state = SessionState.RUNNING

    def cancel(self, session_id: str) -> None:
        """End a session now and free its KV blocks (already emitted outputs stay readable)."""
        s = self._get(session_id)
        if not s.state.done:
            self._finish(s, SessionState.CANCELLED)

    def set_prompt(self, session_id: str, prompt: str) -> None:
        """Use ``prompt`` from the session's next block on (text K/V recomputed once)."""
        s = self._live(session_id)
        self._context(prompt)  # encode now so a bad prompt fails here, not mid-step
        s.next_prompt = prompt
        if s.slot.step == 0:  # the current block has not started denoising: it uses the change
            self._apply_pending(s)

    def set_action(self, session_id: str, action: Any) -> None:
        """Use ``action`` from the session's next block on. Raises ValueError for an unknown action."""
        s = self._live(session_id)
        self._encode_action(action)
        s.next_action, s.has_next_action = action, True
        if s.slot.step == 0:
            self._apply_pending(s)

    def session(self, session_id: str) -> Session:
        return self._get(session_id)

    def pop_outputs(self, session_id: str) -> list[BlockOutput]:
        s = self._get(session_id)
        out = list(s.outputs)
        s.outputs.clear()
        return out

    def fork(self, session_id: str, new_id: str | None = None, num_blocks: int | None = None) -> str:
        """Branch a session between blocks: the new session shares its past KV blocks (ref counts,
        copy-on-write of a partly filled block), noise generator state and decoder state, so both
        continue from the same video and can then be steered apart (what-if actions).

        Raises:
            ValueError: the session is done or in the middle of a block.
        """
        import copy

        import torch

        src = self._live(session_id)
        if src.state == SessionState.DECODING:
            raise ValueError(f"session {session_id!r} has generated all its blocks (its last is decoding): nothing "
                             "is left to branch; fork before its last block, or start a new session")
        if src.slot.step != 0:
            raise ValueError(f"session {session_id!r} is in the middle of a block; fork between blocks")
        self._collect(until=src)  # its decoder's causal state is copied: no decode of it may be running
        nid = new_id or f"s{next(self._ids)}"
        if nid in self.sessions:
            raise ValueError(f"session id {nid!r} already exists")
        self.kv.fork_session(session_id, nid)
        slot = SessionSlot(nid, src.slot.batch_key, src.slot.num_steps, src.slot.block_frames,
                           state=src.slot.state if src.slot.state != SessionState.PAUSED else SessionState.RUNNING,
                           arrival=next(self._arrival))
        gen = torch.Generator().manual_seed(src.seed)
        gen.set_state(src.generator.get_state())
        dec = copy.copy(src.decoder)
        for k, v in vars(src.decoder).items():
            if k != "codec":  # the codec (VAE weights) is shared; the causal state is copied
                setattr(dec, k, copy.deepcopy(v))
        s = Session(slot, src.prompt, src.action, num_blocks if num_blocks is not None else src.num_blocks, src.seed,
                    gen, context=src.context, action_tensor=src.action_tensor, x=src.x.clone(), decoder=dec,
                    blocks_done=src.blocks_done, anchor=src.anchor)
        self.sessions[nid] = s
        return nid

    def remove(self, session_id: str) -> None:
        """Forget a finished session."""
        s = self._get(session_id)
        if not s.state.done:
            self.cancel(session_id)
        del self.sessions[session_id]

    @property
    def has_unfinished(self) -> bool:
        return any(not s.state.done for s in self.sessions.values()) or bool(self._decoding)

    @property
    def decoding(self) -> int:
        """Committed blocks whose decode has not been emitted yet (``overlap_decode``)."""
        return len(self._decoding)

    def _get(self, session_id: str) -> Session:
        try:
            return self.sessions[session_id]
        except KeyError:
            raise KeyError(f"unknown session {session_id!r}; known: {sorted(self.sessions)}") from None

    def _live(self, session_id: str) -> Session:
        s = self._get(session_id)
        if s.state.done:
            raise ValueError(f"session {session_id!r} is {s.state.value}" + (f": {s.error}" if s.error else ""))
        return s

    # ----------------------------------------------------------- conditioning

    def _context(self, prompt: str) -> Any:
        """Cross-attention K/V of a prompt, computed once and kept in a small LRU."""
        import torch

        hit = self._context_cache.get(prompt)
        if hit is not None:
            self._context_cache.move_to_end(prompt)
            return hit
        with torch.no_grad():
            emb = self.text_encoder(prompt)
            kv = self.model.cross_attention_kv(emb.to(self.device))
        self._context_cache[prompt] = kv
        if len(self._context_cache) > 64:
            self._context_cache.popitem(last=False)
        return kv

    def _encode_action(self, action: Any) -> Any:
        """Model input for an action (the encoder maps ``None`` to its default action, if any)."""
        if self.action_encoder is None:
            if action is None:
                return None
            raise ValueError(f"this model takes no actions, got action {action!r}; drop --actions / action=")
        return self.action_encoder(action)

    @staticmethod
    def _batch_key(context: Any) -> Any:
        return ("text_len", int(context.k[0].shape[1]))

    # ------------------------------------------------------------------- loop

    def step(self) -> list[BlockOutput]:
        """One schedule -> execute -> update iteration. Returns the blocks finished in it."""
        import torch

        slots = [s.slot for s in self.sessions.values() if not s.state.done]
        sched = self.scheduler.schedule(slots)
        if sched.empty and self._decoding:
            # nothing to denoise while blocks are being decoded: wait for the oldest
            return self._collect(wait=1)
        if sched.empty:
            if sched.blocked and not any(s.state == SessionState.PAUSED for s in self.sessions.values()):
                # nothing can run and nothing will free blocks: the pool is too small
                for sid in sched.blocked:
                    self._fail(self.sessions[sid], "KV pool has no free block for this session's next commit "
                               f"({self.kv.usage()}); raise num_device_blocks/num_host_blocks or use a rolling policy")
            return []
        t0 = time.perf_counter()
        with torch.no_grad():
            results = self._execute(sched.rows)
        elapsed = time.perf_counter() - t0
        self.step_log.append({"rows": len(sched.rows), "commit_rows": sum(r.commit for r in sched.rows),
                              "seconds": elapsed})
        share = elapsed / len(sched.rows)
        finished: list[BlockOutput] = []
        with torch.no_grad():
            for row in sched.rows:
                s = self.sessions[row.session_id]
                res = results[row.session_id]
                if isinstance(res, BaseException):
                    self._fail(s, f"forward failed: {type(res).__name__}: {res}")
                    continue
                try:
                    out = self._update(s, row, res, share)
                except Exception as e:  # one session's failure must not stop the others
                    logger.exception("session %s failed in update", s.id)
                    self._fail(s, f"{type(e).__name__}: {e}")
                    continue
                if out is not None:
                    finished.append(out)
        return finished + self._collect()

    def _anchor(self, s: Session) -> torch.Tensor:
        """The previous clean latent frame of ``s`` (zeros before its first frame: text-to-video)."""
        import torch

        if s.anchor is None:
            h, w = self.config.latent_hw
            s.anchor = torch.zeros((1, self.model.config.out_channels, 1, h, w), device=self.device,
                                   dtype=self.model.dtype)
        return s.anchor

    def _execute(self, rows: Sequence[ScheduledRow]) -> dict[str, Any]:
        """The model runner's velocities for the scheduled rows (an exception for a row that failed alone)."""
        inputs = []
        for r in rows:
            s = self.sessions[r.session_id]
            latents = s.commit_x if r.commit and s.commit_x is not None else s.x
            t = self.sampling.context_timestep if r.commit else self.sampling.timesteps[r.step]
            anchor = self._anchor(s) if self.model.config.conditions_on_previous_frame else None
            inputs.append(RowInput(r.session_id, r.commit, latents, t, s.context, s.action_tensor, anchor))
        return self.runner.execute(inputs)

    def _update(self, s: Session, row: ScheduledRow, velocity: torch.Tensor, seconds: float) -> BlockOutput | None:
        import torch

        from inferix.models.causal_wan import velocity_to_x0

        ts = self.sampling.timesteps
        if not row.commit:
            s.timings["denoise"] += seconds
            x0 = velocity_to_x0(s.x, velocity, ts[row.step])
            if self.config.check_finite:
                # a device-side flag, read once per block after its last step (no host sync per pass);
                # non-finite latents then fail the session before the block is committed or decoded
                bad = ~torch.isfinite(x0).all()
                s.nonfinite = bad if s.nonfinite is None else s.nonfinite | bad
                if row.step + 1 == len(ts):
                    flag, s.nonfinite = s.nonfinite, None
                    if bool(flag):
                        raise FloatingPointError(f"non-finite latents in block {s.blocks_done} "
                                                 f"(checked after its last denoising step)")
            if row.step + 1 < len(ts):
                sigma = ts[row.step + 1] / 1000.0
                noise = torch.randn(s.x.shape, generator=s.generator).to(s.x)
                s.x = (1.0 - sigma) * x0 + sigma * noise
            else:
                s.x = x0
                sigma = self.sampling.context_timestep / 1000.0
                if sigma > 0:  # drawn once here, so a row-by-row retry commits the same latents
                    noise = torch.randn(s.x.shape, generator=s.generator).to(s.x)
                    s.commit_x = (1.0 - sigma) * x0 + sigma * noise
            s.slot.step += 1
            return None
        # the clean pass wrote this block's keys/values: make them visible, evict by policy
        s.timings["cache_update"] += seconds
        self.kv.commit(s.id, self.config.block_frames)
        s.commit_x = None
        if self.model.config.conditions_on_previous_frame:
            s.anchor = s.x[:, :, -1:]
        kv_blocks = self.kv.num_blocks(s.id)
        block = BlockOutput(s.id, s.blocks_done, np.empty((0, 0, 0, 3), np.uint8), s.x[0].float().cpu(),
                            dict(s.timings), s.prompt, s.action, kv_blocks, kv_blocks * self.storage.bytes_per_block())
        prefix, s.prefix_frames = s.prefix_frames, None
        out: BlockOutput | None = None  # emitted now, or (overlap_decode) by the step that collects its decode
        if s.overlap and self._decode_pool is not None:
            job = self._decode_pool.submit(self._decode, s.decoder, s.x.float(), prefix, self._ready_event())
            self._decoding.append((s, block, job))
        else:
            out = self._emit(s, block, *self._decode(s.decoder, s.x.float(), prefix))
        s.blocks_done += 1
        s.slot.step = 0
        if s.num_blocks is not None and s.blocks_done >= s.num_blocks:
            # with its last decode still running the session is not done yet: it finishes when that is emitted
            self._finish(s, SessionState.DECODING if out is None else SessionState.FINISHED)
        else:
            self._start_block(s)
        return out

    def _ready_event(self) -> Any:
        """On CUDA, an event after the work queued so far on the current stream (the decode stream waits on it)."""
        import torch

        if self._decode_stream is None:
            return None
        ev = torch.cuda.Event()
        ev.record()
        return ev

    def _decode(self, decoder: Any, latents: torch.Tensor, prefix: np.ndarray | None,
                ready: Any = None) -> tuple[np.ndarray, float]:
        """One block's frames ``uint8 [T, H, W, 3]`` (after ``prefix``, the conditioning frames) and the seconds
        its decode took. Runs in line, or on the decode thread (``overlap_decode``), there on its own CUDA stream
        once ``ready`` (the commit's work) is done."""
        import contextlib

        import torch

        from inferix.models.vae import to_uint8

        t0 = time.perf_counter()
        stream = self._decode_stream if ready is not None else None
        with torch.no_grad(), (torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext()):
            if stream is not None:
                stream.wait_event(ready)
                latents.record_stream(stream)  # allocated on the main stream, read on this one
            frames = to_uint8(decoder.decode(latents))[0].cpu().numpy()  # [T, H, W, 3]
        if prefix is not None:
            frames = np.concatenate([prefix, frames])
        return frames, time.perf_counter() - t0

    def _emit(self, s: Session, out: BlockOutput, frames: np.ndarray, seconds: float) -> BlockOutput:
        out.frames = frames
        out.timings["decode"] = seconds
        if s.first_frame_s is None:
            s.first_frame_s = time.perf_counter() - s.started
        s.outputs.append(out)
        return out

    def _collect(self, wait: int = 0, until: Session | None = None) -> list[BlockOutput]:
        """Emit the decoded blocks (``overlap_decode``) in submission order: those finished, plus the oldest
        ``wait`` waited for, or every one up to the last of session ``until``. A decode that raised fails its
        session; a cancelled session's block is dropped."""
        last = max((i for i, (s, _, _) in enumerate(self._decoding) if s is until), default=-1)
        emitted: list[BlockOutput] = []
        n = 0
        while self._decoding:
            s, out, job = self._decoding[0]
            if not (job.done() or n < wait or n <= last):
                break
            self._decoding.popleft()
            n += 1
            try:
                frames, seconds = job.result()
            except Exception as e:  # noqa: BLE001 - one session's failure must not stop the others
                logger.exception("session %s failed in decode", s.id)
                if s.state != SessionState.CANCELLED:
                    s.error = f"decode failed: {type(e).__name__}: {e}"
                    if not s.state.done:
                        self._finish(s, SessionState.FAILED)
                    else:
                        s.slot.state = SessionState.FAILED
                # the session's later blocks were decoded from a broken causal state: drop them
                self._decoding = deque(d for d in self._decoding if d[0] is not s)
                continue
            if s.state in (SessionState.CANCELLED, SessionState.FAILED):
                continue
            emitted.append(self._emit(s, out, frames, seconds))
            if s.state == SessionState.DECODING and not any(d[0] is s for d in self._decoding):
                s.slot.state = SessionState.FINISHED
        return emitted

    def _apply_pending(self, s: Session) -> None:
        if s.next_prompt is not None:
            s.prompt, s.context, s.next_prompt = s.next_prompt, self._context(s.next_prompt), None
        if s.has_next_action:
            s.action, s.action_tensor = s.next_action, self._encode_action(s.next_action)
            s.has_next_action = False

    def _start_block(self, s: Session) -> None:
        import torch

        self._apply_pending(s)
        s.timings = {"denoise": 0.0, "cache_update": 0.0, "decode": 0.0}
        c = self.model.config.out_channels
        h, w = self.config.latent_hw
        # noise drawn on CPU from the session's own generator: independent of batching and device
        s.x = torch.randn((1, c, self.config.block_frames, h, w), generator=s.generator).to(
            self.device, self.model.dtype)
        if self.sampling.start_from_anchor:
            sigma = self.sampling.timesteps[0] / 1000.0
            s.x = (1.0 - sigma) * self._anchor(s).to(s.x.dtype).expand_as(s.x) + sigma * s.x

    def _finish(self, s: Session, state: SessionState) -> None:
        s.slot.state = state
        if s.slot.session_id in self.kv.sessions:
            self.kv.cancel_reservation(s.id)
            self.kv.free_session(s.id)
        self.backend.release(s.id)
        s.x = None
        s.decoder = None

    def _fail(self, s: Session, reason: str) -> None:
        logger.error("session %s failed: %s", s.id, reason)
        s.error = reason
        self._finish(s, SessionState.FAILED)

    # -------------------------------------------------------------- drivers

    def run(self, max_steps: int | None = None) -> None:
        """Step until every session is done (or ``max_steps``)."""
        n = 0
        while self.has_unfinished and (max_steps is None or n < max_steps):
            if not self._decoding and not any(s.slot.runnable for s in self.sessions.values() if not s.state.done):
                break  # everything left is paused
            self.step()
            n += 1

    def stream(self, prompt: str = "", *, num_blocks: int | None = None, seed: int = 0, action: Any = None,
               controls: Callable[[int], tuple[str | None, Any] | None] | None = None,
               image_latents: Any = None) -> Iterator[BlockOutput]:
        """Generate one session and yield each decoded block as soon as it exists.

        Args:
            prompt, num_blocks, seed, action: as :meth:`add_session`.
            controls: called with the next block's index before that block starts; returns
                ``(prompt or None, action)`` to change them, or ``None`` to keep them — pulled just
                in time, so interactive control never sees the future.

        Raises:
            SessionFailedError: the session failed (the message says why).
        """
        sid = self.add_session(prompt, num_blocks=num_blocks, seed=seed, action=action, image_latents=image_latents)
        s = self.sessions[sid]
        if controls is not None:
            s.overlap = False  # the controller sees block k before block k + 1 starts
        try:
            while not s.state.done or s.outputs:
                while s.outputs:
                    out = s.outputs.popleft()
                    if controls is not None and not s.state.done:
                        change = controls(out.index + 1)
                        if change is not None:
                            self._apply_now(s, *change)
                    yield out
                if s.state.done:
                    break
                self.step()
            if s.state == SessionState.FAILED:
                raise SessionFailedError(f"session {sid} failed: {s.error}")
        finally:
            if not s.state.done:
                self.cancel(sid)

    def _apply_now(self, s: Session, prompt: str | None, action: Any) -> None:
        """Change prompt/action of a session whose next block has not started denoising yet."""
        if s.slot.step != 0:
            raise RuntimeError("controls must be applied between blocks")
        if prompt is not None and prompt != s.prompt:
            s.prompt, s.context = prompt, self._context(prompt)
        s.action_tensor = self._encode_action(action)
        s.action = action

    def usage(self) -> dict[str, Any]:
        """KV memory accounting (blocks and bytes per pool)."""
        u: dict[str, Any] = dict(self.kv.usage(self.storage.bytes_per_block()))
        u["bytes_per_block"] = self.storage.bytes_per_block()
        u["allocated_bytes"] = self.storage.allocated_bytes()
        u["rotated_buffer_bytes"] = self.backend.buffer_bytes()
        return u
