"""Block-pool attention backend: many sessions, one forward, any retention policy.

Implements the :class:`~inferix.models.attention.AttentionBackend` protocol over a
:class:`~inferix.kv_cache.manager.KVCacheManager` (bookkeeping) and a
:class:`~inferix.kv_cache.storage.KVStorage` (tensors, keys un-roped: the source of truth that
forks, copy-on-write and host offload work on). Each batch row belongs to one session.

Two read paths, chosen once per backend (``rotated_buffers``):

* **rotated buffers** (the default; issue 60's lean path): each session keeps, per layer, a
  preallocated contiguous buffer of its visible cached keys *already rotated* and their values::

      buffer rows   [ .. evicted .. | visible cached frames | this call | free ]
                                    ^start                 ^end        ^capacity

  A pass writes its rotated keys and values at ``end`` and attends, per row, to
  ``buffer[start : end + F]`` — no per-pass gather, pad, concatenation or rotary over the cache.
  A commit pass's rows become cached when the manager's plan next lists them; eviction moves
  ``start`` (a rolling window) or compacts the buffer once per block (a sink); anything else (a
  fork, offloaded frames read back, a first read) rebuilds the buffer from the pool once. Used only
  where cached positions never change (``absolute`` positions, or the ``full`` policy): a
  ``reindex`` window renumbers its frames every block, so there the gather path rotates at read
  time. The cost: visible keys and values are held twice (pool + buffer) on the device.
* **gather** (the path before issue 60, kept for ``bench/bench_inferix.py lean``'s side-by-side
  ratio and for ``reindex`` policies): per pass and layer, gather each row's cached keys/values from
  the pool, pad rows to the longest cache, rotate the whole cache, concatenate the call's keys and
  attend with a padding mask.

Both write the committing rows' un-roped keys/values into the slots the manager reserved.
Rotating at write time multiplies the same numbers by the same cos/sin as rotating at read time,
so the two paths give bit-identical attention for one row (tests/inferix/test_kv_attention.py).

Usage per engine step::

    backend.prepare([RowSpec("a", commit=False), RowSpec("b", commit=True)])
    positions = backend.frame_positions(num_frames)      # [B, F], pass to the model
    model(..., backend=backend, frame_positions=positions)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from inferix.kv_cache.manager import KVCacheManager, ReadPlan, SlotWrite
from inferix.kv_cache.storage import KVStorage

if TYPE_CHECKING:
    import torch

    from inferix.models.attention import RopeApplier


@dataclass(frozen=True)
class RowSpec:
    """One batch row: which session it belongs to and whether its keys/values are committed."""

    session_id: str
    commit: bool = False


@dataclass
class _Row:
    spec: RowSpec
    plan: ReadPlan
    writes: list[SlotWrite] | None
    device_index: torch.Tensor | None
    cached_positions: torch.Tensor  # [F_cached]


@dataclass
class _LayerBuffer:
    """One session's rotated keys and values for one layer (module docstring's diagram).

    ``k``/``v``: ``[capacity, S, H, D]``; rows ``[start, start + len(positions))`` hold the cached
    frames at ``positions``; ``pending``: frames a commit pass wrote right after them, cached once
    the manager's plan lists them.
    """

    k: torch.Tensor
    v: torch.Tensor
    positions: tuple[int, ...] = ()
    start: int = 0
    pending: tuple[int, ...] = ()


class BlockPoolAttention:
    """Paged KV attention for a batch of sessions (see the module docstring).

    Args:
        manager: block tables and policy.
        storage: key/value tensors.
        rotated_buffers: read through per-session buffers of rotated keys (the lean path); ``None``
            (default) = wherever the policy keeps cached positions fixed; ``False`` = the gather path.
    """

    def __init__(self, manager: KVCacheManager, storage: KVStorage, rotated_buffers: bool | None = None) -> None:
        self.manager = manager
        self.storage = storage
        self.rows: list[_Row] = []
        fixed_positions = manager.policy.positions == "absolute" or manager.policy.kind == "full"
        self.rotated_buffers = fixed_positions if rotated_buffers is None else bool(rotated_buffers)
        self._buffers: dict[str, dict[int, _LayerBuffer]] = {}  # session -> layer -> buffer

    def buffer_bytes(self) -> int:
        """Bytes held by the rotated-key buffers (on top of the pool)."""
        return sum(t.numel() * t.element_size() for layers in self._buffers.values()
                   for b in layers.values() for t in (b.k, b.v))

    def release(self, session_id: str) -> None:
        """Drop a session's rotated-key buffers (its pool blocks are the manager's to free)."""
        self._buffers.pop(session_id, None)

    def prepare(self, rows: list[RowSpec]) -> None:
        """Set up the next forward: run queued block copies, compute read plans and write slots.

        Committing rows must hold a reservation (``manager.reserve``) for the call's frames.
        """
        import torch

        self.storage.apply(self.manager.take_ops())
        for sid in [sid for sid in self._buffers if sid not in self.manager.sessions]:
            del self._buffers[sid]  # a finished or cancelled session's buffers go with its blocks
        bs = self.manager.block_size
        dev = self.storage.device
        self.rows = []
        for spec in rows:
            plan = self.manager.read_plan(spec.session_id)
            writes = None
            if spec.commit:
                writes = self.manager.sessions[spec.session_id].reserved
                if writes is None:
                    raise ValueError(f"row of session {spec.session_id!r} commits but has no reservation; "
                                     "call manager.reserve(session, num_frames) first")
            idx = [s.block_id * bs + s.offset + i for s in plan.segments if s.pool == "device" for i in range(s.count)]
            device_index = torch.tensor(idx, dtype=torch.long, device=dev)
            positions = torch.tensor(plan.cached_positions, dtype=torch.long, device=dev)
            self.rows.append(_Row(spec, plan, writes, device_index, positions))

    def frame_positions(self, num_frames: int) -> torch.Tensor:
        """Temporal positions ``[B, F]`` of the next call's frames (the model's ``frame_positions``)."""
        import torch

        starts = torch.tensor([r.plan.query_start for r in self.rows], dtype=torch.long)
        return (starts[:, None] + torch.arange(num_frames)[None]).to(self.storage.device)

    def self_attention(self, layer_idx: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                       rope: RopeApplier) -> torch.Tensor:
        """Attend current queries to visible cached keys plus the current call (``[B, L, H, D]``)."""
        b = q.shape[0]
        if b != len(self.rows):
            raise ValueError(f"batch has {b} rows but prepare() was given {len(self.rows)}")
        if self.rotated_buffers:
            out = self._attend_buffers(layer_idx, q, k, v, rope)
        else:
            out = self._attend_gathered(layer_idx, q, k, v, rope)
        nf = q.shape[1] // rope.tokens_per_frame
        for i, r in enumerate(self.rows):
            if r.writes:
                kf = k[i].unflatten(0, (nf, -1))  # [F, S, H, D] un-roped: the pool's layout
                vf = v[i].unflatten(0, (nf, -1))
                for w in r.writes:
                    self.storage.write(layer_idx, w.block_id, w.offset, kf[w.src : w.src + w.count],
                                       vf[w.src : w.src + w.count])
        return out

    # ------------------------------------------------------------------ rotated buffers (lean)

    def _attend_buffers(self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                        rope: RopeApplier) -> torch.Tensor:
        """Each row attends to ``buffer[start : end + F]`` after writing its rotated call there."""
        import torch

        from inferix.models.attention import attend

        b, lq, h, d = q.shape
        s = rope.tokens_per_frame
        nf = lq // s
        q_rot = rope.apply(q)
        k_rot = rope.apply(k).unflatten(1, (nf, s))  # [B, F, S, H, D]
        v_f = v.unflatten(1, (nf, s))
        outs = []
        for i, r in enumerate(self.rows):
            buf = self._place(r, layer, nf, k_rot[i], rope)
            n = len(buf.positions)
            end = buf.start + n
            buf.k[end : end + nf] = k_rot[i]
            buf.v[end : end + nf] = v_f[i]
            # a commit's frames are cached once the manager lists them (positions from the plan: no device read)
            buf.pending = tuple(range(r.plan.query_start, r.plan.query_start + nf)) if r.spec.commit else ()
            keys = buf.k[buf.start : end + nf].reshape(1, (n + nf) * s, h, d)
            values = buf.v[buf.start : end + nf].reshape(1, (n + nf) * s, h, d)
            outs.append(attend(q_rot[i : i + 1], keys, values))
        return outs[0] if b == 1 else torch.cat(outs)

    def _capacity(self, needed: int, nf: int) -> int:
        bound = self.manager.policy.max_visible_frames()
        if bound is None:
            return max(2 * needed, 8 * nf)
        return max(needed, 2 * (bound + 2 * nf))

    def _place(self, r: _Row, layer: int, nf: int, like: torch.Tensor, rope: RopeApplier) -> _LayerBuffer:
        """The row's session buffer for ``layer``, laid out so its rows ``[start, start + n)`` hold exactly
        the plan's visible frames and ``nf`` free rows follow.

        Cheapest first: the plan is what the buffer holds (plus a commit now in the plan), or a suffix of
        it (a rolling window moved ``start``); else the plan's frames are copied to the front of a
        buffer (a sink policy, or no room left); frames the buffer lacks (a fork, a first read)
        rebuild it from the pool.
        """
        import torch

        layers = self._buffers.setdefault(r.spec.session_id, {})
        buf = layers.get(layer)
        plan = tuple(r.plan.cached_positions)
        n = len(plan)
        if buf is None:
            if n:
                return self._rebuild(r, layer, nf, like, rope)
            cap = self._capacity(nf, nf)
            buf = _LayerBuffer(like.new_empty((cap, *like.shape[1:])), like.new_empty((cap, *like.shape[1:])))
            layers[layer] = buf
            return buf
        held = buf.positions + buf.pending
        cap = buf.k.shape[0]
        if len(held) >= n and held[len(held) - n :] == plan:
            buf.start += len(held) - n
            buf.positions, buf.pending = plan, ()
            if buf.start + n + nf <= cap:
                return buf
            rows = torch.arange(buf.start, buf.start + n, device=buf.k.device)
        else:
            row_of = {p: buf.start + j for j, p in enumerate(held)}
            if any(p not in row_of for p in plan):
                return self._rebuild(r, layer, nf, like, rope)
            rows = torch.tensor([row_of[p] for p in plan], dtype=torch.long, device=buf.k.device)
        cap = max(cap, self._capacity(n + nf, nf)) if n + nf > cap else cap
        new_k = buf.k.new_empty((cap, *buf.k.shape[1:]))
        new_v = buf.v.new_empty((cap, *buf.v.shape[1:]))
        new_k[:n] = buf.k.index_select(0, rows)
        new_v[:n] = buf.v.index_select(0, rows)
        buf = _LayerBuffer(new_k, new_v, plan, 0, ())
        layers[layer] = buf
        return buf

    def _rebuild(self, r: _Row, layer: int, nf: int, like: torch.Tensor, rope: RopeApplier) -> _LayerBuffer:
        """Fill a fresh buffer with the plan's frames from the pool, rotated once."""
        n = r.plan.num_frames
        s, h, d = like.shape[1:]
        kc, vc = self.storage.gather(layer, r.plan.segments, r.device_index)  # [n, S, H, D] un-roped
        k_rot = rope.apply(kc.to(like.dtype).reshape(1, n * s, h, d), r.cached_positions[None])
        cap = self._capacity(n + nf, nf)
        buf = _LayerBuffer(like.new_empty((cap, s, h, d)), like.new_empty((cap, s, h, d)),
                           tuple(r.plan.cached_positions), 0, ())
        buf.k[:n] = k_rot.reshape(n, s, h, d)
        buf.v[:n] = vc.to(like.dtype)
        self._buffers.setdefault(r.spec.session_id, {})[layer] = buf
        return buf

    # ------------------------------------------------------------------ gather (before issue 60)

    def _attend_gathered(self, layer_idx: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                         rope: RopeApplier) -> torch.Tensor:
        """Gather, pad, rotate and concatenate every row's cache, then one masked attention."""
        import torch

        from inferix.models.attention import attend

        b, lq, h, d = q.shape
        s = rope.tokens_per_frame
        nf = lq // s
        cached = [self.storage.gather(layer_idx, r.plan.segments, r.device_index) if r.plan.num_frames else None
                  for r in self.rows]
        fmax = max(r.plan.num_frames for r in self.rows)
        q_rot = rope.apply(q)
        k_rot = rope.apply(k)
        if fmax == 0:
            return attend(q_rot, k_rot, v)
        kc = q.new_zeros(b, fmax, s, h, d)  # [B, Fmax, S, H, D] padded cached keys
        vc = q.new_zeros(b, fmax, s, h, d)
        pos = torch.zeros(b, fmax, dtype=torch.long, device=q.device)
        for i, (r, c) in enumerate(zip(self.rows, cached, strict=True)):
            if c is None:
                continue
            n = r.plan.num_frames
            kc[i, :n], vc[i, :n] = c[0].to(q.dtype), c[1].to(q.dtype)
            pos[i, :n] = r.cached_positions
        kc_rot = rope.apply(kc.reshape(b, fmax * s, h, d), pos)
        keys = torch.cat([kc_rot, k_rot], 1)
        values = torch.cat([vc.reshape(b, fmax * s, h, d), v], 1)
        mask = None
        if any(r.plan.num_frames != fmax for r in self.rows):
            valid = torch.ones(b, fmax + nf, dtype=torch.bool, device=q.device)
            for i, r in enumerate(self.rows):
                valid[i, r.plan.num_frames : fmax] = False
            mask = valid.repeat_interleave(s, 1)[:, None, None, :]  # [B, 1, 1, Lk]
        return attend(q_rot, keys, values, mask)
