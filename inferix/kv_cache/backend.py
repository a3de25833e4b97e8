"""Block-pool attention backend: many sessions, one forward, any retention policy.

Implements the :class:`~inferix.models.attention.AttentionBackend` protocol over a
:class:`~inferix.kv_cache.manager.KVCacheManager` (bookkeeping) and a
:class:`~inferix.kv_cache.storage.KVStorage` (tensors). Each batch row belongs to one
session; per row the backend

1. gathers the session's visible cached keys/values (un-roped) for the layer,
2. rotates cached keys with the positions the policy assigns and the current call's
   queries/keys with ``rope.frame_positions``,
3. attends ``[cached | current]`` (rows with shorter caches are padded and masked),
4. if the row *commits* (the t = 0 clean pass), writes the call's un-roped keys/values
   into the slots the manager reserved.

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


class BlockPoolAttention:
    """Paged KV attention for a batch of sessions (see the module docstring).

    Args:
        manager: block tables and policy.
        storage: key/value tensors.
    """

    def __init__(self, manager: KVCacheManager, storage: KVStorage) -> None:
        self.manager = manager
        self.storage = storage
        self.rows: list[_Row] = []

    def prepare(self, rows: list[RowSpec]) -> None:
        """Set up the next forward: run queued block copies, compute read plans and write slots.

        Committing rows must hold a reservation (``manager.reserve``) for the call's frames.
        """
        import torch

        self.storage.apply(self.manager.take_ops())
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
        import torch

        from inferix.models.attention import attend

        b, lq, h, d = q.shape
        if b != len(self.rows):
            raise ValueError(f"batch has {b} rows but prepare() was given {len(self.rows)}")
        s = rope.tokens_per_frame
        nf = lq // s
        cached = [self.storage.gather(layer_idx, r.plan.segments, r.device_index) if r.plan.num_frames else None
                  for r in self.rows]
        fmax = max(r.plan.num_frames for r in self.rows)
        q_rot = rope.apply(q)
        k_rot = rope.apply(k)
        if fmax == 0:
            out = attend(q_rot, k_rot, v)
        else:
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
            out = attend(q_rot, keys, values, mask)
        for i, r in enumerate(self.rows):
            if r.writes:
                kf = k[i].reshape(nf, s, h, d)
                vf = v[i].reshape(nf, s, h, d)
                for w in r.writes:
                    self.storage.write(layer_idx, w.block_id, w.offset, kf[w.src : w.src + w.count],
                                       vf[w.src : w.src + w.count])
        return out
