"""The Inferix engine: many concurrent block-diffusion sessions, one forward per step.

Loop (vLLM-v1-like, adapted to block diffusion)::

    step():  schedule  -> rows: (session, pass) — a denoising step of the session's current
                          block, or the block's clean t = 0 pass that commits its keys/values
             execute   -> ONE model forward over all rows (latents, per-row timestep, text
                          K/V, action, RoPE positions; the block-pool backend serves the
                          KV cache of every row's session)
             update    -> per row: x0 from the velocity and re-noise to the next level, or
                          commit the KV, decode the block (codec state carried), emit frames,
                          start the next block (picking up a changed prompt/action)

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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from inferix.kv_cache import CachePolicy, KVCacheManager
from inferix.kv_cache.backend import BlockPoolAttention, RowSpec
from inferix.kv_cache.storage import KVStorage
from inferix.scheduler import ScheduledRow, Scheduler, SessionSlot, SessionState

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

# Self-Forcing's 4 steps [1000, 750, 500, 250] warped with shift 5 (REFERENCE.md §C).
SELF_FORCING_TIMESTEPS: tuple[float, ...] = (1000.0, 937.5, 833.3333333333334, 625.0)


@dataclass
class EngineConfig:
    """Engine settings.

    Attributes:
        latent_hw: latent height and width every session uses (one token grid per engine).
        block_frames: latent frames generated per block.
        timesteps: denoising timesteps of a block, in [0, 1000], first = 1000 (pure noise).
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
        action_guidance: classifier-free guidance on the action: each denoising pass of an
            action-conditioned model also runs with the default action (``action_encoder(None)``,
            the model's "idle") and uses ``v_idle + g (v_action - v_idle)``; 1 = off. Only the
            block being denoised is guided: committed context keeps the actions it was made with.
        action_guidance_rescale: phi in [0, 1] of guidance rescale (Lin et al. 2024, "Common
            Diffusion Noise Schedules and Sample Steps are Flawed", sec. 3.4; diffusers'
            ``guidance_rescale``): the guided velocity is scaled back to the per-sample std of the
            action-conditioned one and mixed, ``phi * rescaled + (1 - phi) * guided``, so a large
            ``g`` steers without over-saturating the frame. 0 = off.
        guidance_drops_caption: the unguided pass also drops the caption (the empty prompt,
            which caption dropout trained), so the guidance extrapolates from "idle action, no
            caption" towards "this action, this caption": text and action guided jointly.
        context_timestep: timestep in [0, 1000) at which each generated block's keys/values are
            committed: the finished block is noised to it (fresh noise from the session's
            generator) and passed at that timestep, so later blocks attend to it as slightly
            uncertain context (Diffusion Forcing, Chen et al. 2024, "stabilizing autoregressive
            generation": a model trained with per-block noise levels has seen such context).
            The clean block is still what is decoded and what the next block is anchored on;
            conditioning frames (``image_latents``) stay clean. 0 = clean context (Self-Forcing).
        anchor_level: for a model with an anchor-level input (``WanConfig.anchor_level``): the
            noise std it is told its anchors and clean context carry, on every pass. 0 (the
            default) says they are exact, as in the clean clips of its training; a small value
            says its own generated context is a little off, as the noised clips were.
        start_from_anchor: start each block from the session's anchor (its last clean latent
            frame: the first frame, then each block's last) noised to the first timestep, instead of
            from pure noise, so the sampler refines the previous frame rather than drawing the
            block anew (SDEdit, Meng et al. 2022, applied per block). Needs a model conditioned on
            the previous frame, a first timestep below 1000 (at 1000 the anchor would get no
            weight) and sessions started with ``image_latents``.
    """

    latent_hw: tuple[int, int] = (16, 16)
    block_frames: int = 3
    timesteps: tuple[float, ...] = SELF_FORCING_TIMESTEPS
    policy: CachePolicy = field(default_factory=CachePolicy)
    kv_block_size: int | None = None
    num_device_blocks: int | None = None
    num_host_blocks: int = 0
    max_batch: int = 4
    max_sessions: int = 4
    max_frames: int = 96
    device: str = "cpu"
    check_finite: bool = True
    action_guidance: float = 1.0
    action_guidance_rescale: float = 0.0
    guidance_drops_caption: bool = False
    context_timestep: float = 0.0
    anchor_level: float = 0.0
    start_from_anchor: bool = False

    def __post_init__(self) -> None:
        if not self.timesteps or any(not (0 < t <= 1000) for t in self.timesteps):
            raise ValueError(f"timesteps must be non-empty values in (0, 1000], got {self.timesteps}")
        if self.block_frames < 1:
            raise ValueError(f"block_frames must be >= 1, got {self.block_frames}")
        if not 0.0 <= self.action_guidance_rescale <= 1.0:
            raise ValueError(f"action_guidance_rescale must be in [0, 1], got {self.action_guidance_rescale}")
        if not 0.0 <= self.context_timestep < 1000.0:
            raise ValueError(f"context_timestep must be in [0, 1000), got {self.context_timestep}")
        if not 0.0 <= self.anchor_level < 1.0:
            raise ValueError(f"anchor_level is a noise std in [0, 1), got {self.anchor_level}")
        if self.start_from_anchor and self.timesteps[0] >= 1000:
            raise ValueError(f"start_from_anchor needs a first timestep below 1000 (at 1000 the anchor gets no "
                             f"weight), got timesteps {self.timesteps}")

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


def guide(v_cond: torch.Tensor, v_uncond: torch.Tensor, scale: float, rescale: float = 0.0) -> torch.Tensor:
    """Classifier-free guidance ``v_uncond + scale (v_cond - v_uncond)``; with ``rescale`` = phi > 0,
    mixed with its copy scaled to the per-sample std of ``v_cond`` (guidance rescale)."""
    v = v_uncond + scale * (v_cond - v_uncond)
    if rescale > 0:
        dims = tuple(range(1, v.ndim))
        ratio = v_cond.float().std(dim=dims, keepdim=True) / v.float().std(dim=dims, keepdim=True).clamp_min(1e-8)
        v = rescale * (v * ratio.to(v.dtype)) + (1.0 - rescale) * v
    return v


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
    commit_x: Any = None  # the finished block as committed (noised to context_timestep); None = s.x

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
        if cfg.anchor_level and not model.config.anchor_level:
            raise ValueError(f"anchor_level={cfg.anchor_level} needs a model with an anchor-level input "
                             "(WanConfig.anchor_level); this one has none: leave anchor_level at 0")
        if cfg.start_from_anchor and not model.config.conditions_on_previous_frame:
            raise ValueError("start_from_anchor needs a model conditioned on the previous frame "
                             "(WanConfig.conditions_on_previous_frame); this one has no anchor to start from")
        self.action_encoder = action_encoder
        self.device = torch.device(cfg.device)
        self.kv = KVCacheManager(cfg.kv_block, cfg.pool_blocks(), cfg.num_host_blocks, cfg.policy)
        self.storage = KVStorage(cfg.pool_blocks(), cfg.num_host_blocks, cfg.kv_block, self.device)
        self.backend = BlockPoolAttention(self.kv, self.storage)
        self.scheduler = Scheduler(self.kv, cfg.max_batch)
        self.sessions: dict[str, Session] = {}
        self._ids = itertools.count()
        self._arrival = itertools.count()
        self._context_cache: OrderedDict[str, Any] = OrderedDict()
        self.step_log: list[dict[str, Any]] = []  # per forward: rows, seconds (profiling reads it)

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
        if self.config.start_from_anchor and image_latents is None:
            raise ValueError("start_from_anchor starts each block from the previous frame, so a session needs "
                             "image_latents (a first frame, e.g. inferix generate --image); none was given")
        action_tensor = self._encode_action(action)
        context = self._context(prompt)
        slot = SessionSlot(sid, self._batch_key(context), len(self.config.timesteps), self.config.block_frames,
                           arrival=next(self._arrival))
        gen = torch.Generator().manual_seed(seed)
        s = Session(slot, prompt, action, num_blocks, seed, gen, context=context, action_tensor=action_tensor)
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
        self.model(latents, torch.zeros(1, device=self.device), s.context,
                   backend=self.backend, frame_positions=positions,
                   action=None if s.action_tensor is None else s.action_tensor.to(self.device), anchor=anchor,
                   anchor_level=self._anchor_level(1))
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
        if src.slot.step != 0:
            raise ValueError(f"session {session_id!r} is in the middle of a block; fork between blocks")
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
        return any(not s.state.done for s in self.sessions.values())

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
        return finished

    def _forward(self, rows: Sequence[ScheduledRow]) -> torch.Tensor:
        import torch

        from inferix.models.causal_wan import CrossAttentionKV

        sess = [self.sessions[r.session_id] for r in rows]
        latents = torch.cat([s.commit_x if r.commit and s.commit_x is not None else s.x
                             for r, s in zip(rows, sess, strict=True)])  # [B, C, F, h, w]
        t = torch.tensor([self.config.context_timestep if r.commit else self.config.timesteps[r.step] for r in rows],
                         device=self.device)
        ctx = CrossAttentionKV.cat([s.context for s in sess]) if len(sess) > 1 else sess[0].context
        actions = [s.action_tensor for s in sess]
        action = None
        if any(a is not None for a in actions):
            if any(a is None for a in actions):
                raise ValueError("an action-conditioned model needs an action for every session; "
                                 + ", ".join(s.id for s in sess if s.action_tensor is None) + " have none")
            action = torch.cat(actions).to(self.device)
        anchor = torch.cat([self._anchor(s) for s in sess]) if self.model.config.conditions_on_previous_frame else None
        self.backend.prepare([RowSpec(r.session_id, r.commit) for r in rows])
        positions = self.backend.frame_positions(self.config.block_frames)
        level = self._anchor_level(len(rows))
        v = self.model(latents, t, ctx, backend=self.backend, frame_positions=positions, action=action, anchor=anchor,
                       anchor_level=level)
        g = self.config.action_guidance
        guided = [i for i, r in enumerate(rows) if not r.commit]
        if action is None or g == 1.0 or not guided:
            return v
        # the same denoising rows again with the default action; read-only (no commit row), so the
        # cache is untouched, then v_idle + g (v_action - v_idle)
        sub = [rows[i] for i in guided]
        idle = torch.cat([self._encode_action(None) for _ in sub]).to(self.device)
        if self.config.guidance_drops_caption:
            null = self._context("")
            sub_ctx = null if len(guided) == 1 else CrossAttentionKV.cat([null] * len(guided))
        else:
            sub_ctx = ctx if len(guided) == len(rows) else CrossAttentionKV.cat([sess[i].context for i in guided])
        self.backend.prepare([RowSpec(r.session_id, False) for r in sub])
        v_idle = self.model(latents[guided], t[guided], sub_ctx, backend=self.backend,
                            frame_positions=self.backend.frame_positions(self.config.block_frames), action=idle,
                            anchor=None if anchor is None else anchor[guided],
                            anchor_level=None if level is None else level[guided])
        v = v.clone()
        v[guided] = guide(v[guided], v_idle, g, self.config.action_guidance_rescale)
        return v

    def _anchor_level(self, rows: int) -> torch.Tensor | None:
        """``[rows]`` of ``config.anchor_level`` for a model with an anchor-level input, else None."""
        import torch

        if not self.model.config.anchor_level:
            return None
        return torch.full((rows,), self.config.anchor_level, device=self.device)

    def _anchor(self, s: Session) -> torch.Tensor:
        """The previous clean latent frame of ``s`` (zeros before its first frame: text-to-video)."""
        import torch

        if s.anchor is None:
            h, w = self.config.latent_hw
            s.anchor = torch.zeros((1, self.model.config.out_channels, 1, h, w), device=self.device,
                                   dtype=self.model.dtype)
        return s.anchor

    def _execute(self, rows: Sequence[ScheduledRow]) -> dict[str, Any]:
        """Forward all rows at once; if that raises, each row alone so only the culprit fails."""
        try:
            v = self._forward(rows)
            return {r.session_id: v[i : i + 1] for i, r in enumerate(rows)}
        except Exception as batch_error:
            if len(rows) == 1:
                return {rows[0].session_id: batch_error}
            logger.warning("batched forward of %d rows failed (%s); retrying row by row", len(rows), batch_error)
        out: dict[str, Any] = {}
        for r in rows:
            try:
                out[r.session_id] = self._forward([r])
            except Exception as e:
                out[r.session_id] = e
        return out

    def _update(self, s: Session, row: ScheduledRow, velocity: torch.Tensor, seconds: float) -> BlockOutput | None:
        import torch

        from inferix.models.causal_wan import velocity_to_x0

        ts = self.config.timesteps
        if not row.commit:
            s.timings["denoise"] += seconds
            x0 = velocity_to_x0(s.x, velocity, ts[row.step])
            if self.config.check_finite and not bool(torch.isfinite(x0).all()):
                raise FloatingPointError(f"non-finite latents at block {s.blocks_done} step {row.step}")
            if row.step + 1 < len(ts):
                sigma = ts[row.step + 1] / 1000.0
                noise = torch.randn(s.x.shape, generator=s.generator).to(s.x)
                s.x = (1.0 - sigma) * x0 + sigma * noise
            else:
                s.x = x0
                sigma = self.config.context_timestep / 1000.0
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
        t0 = time.perf_counter()
        from inferix.models.vae import to_uint8

        frames = to_uint8(s.decoder.decode(s.x.float()))[0].cpu().numpy()  # [T, H, W, 3]
        if s.prefix_frames is not None:
            frames, s.prefix_frames = np.concatenate([s.prefix_frames, frames]), None
        s.timings["decode"] = time.perf_counter() - t0
        if s.first_frame_s is None:
            s.first_frame_s = time.perf_counter() - s.started
        kv_blocks = self.kv.num_blocks(s.id)
        out = BlockOutput(s.id, s.blocks_done, frames, s.x[0].float().cpu(), dict(s.timings), s.prompt, s.action,
                          kv_blocks, kv_blocks * self.storage.bytes_per_block())
        s.outputs.append(out)
        s.blocks_done += 1
        s.slot.step = 0
        if s.num_blocks is not None and s.blocks_done >= s.num_blocks:
            self._finish(s, SessionState.FINISHED)
        else:
            self._start_block(s)
        return out

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
        if self.config.start_from_anchor:
            sigma = self.config.timesteps[0] / 1000.0
            s.x = (1.0 - sigma) * self._anchor(s).to(s.x.dtype).expand_as(s.x) + sigma * s.x

    def _finish(self, s: Session, state: SessionState) -> None:
        s.slot.state = state
        if s.slot.session_id in self.kv.sessions:
            self.kv.cancel_reservation(s.id)
            self.kv.free_session(s.id)
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
            if not any(s.slot.runnable for s in self.sessions.values() if not s.state.done):
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
        return u
