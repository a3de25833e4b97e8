"""KV cache manager: per-session block tables over a device pool and a host (CPU) pool.

Pure bookkeeping — no tensors. The runner (``KVStorage`` + the attention backend) asks
the manager *where* to read and write, and executes the copy operations the manager
queues (copy-on-write of a shared block, offload of a cold block to the host).

A session's block table (block size 3 frames, 8 frames committed)::

    frames   0 1 2 | 3 4 5 | 6 7 .
    table    [dev 4] [host 0] [dev 9]      <- block 9 partly filled (2 of 3 slots)

One block id covers all layers (the storage holds one tensor per layer indexed by it),
so the per-session, per-layer cache of layer ``l`` is ``storage.k[l][table]``.

Life of a block for one generated block of frames:

1. ``reserve(sid, F)`` before the commit pass: returns the slots the pass writes
   (allocating blocks, copy-on-write, offloading cold blocks if the device pool is full),
   or ``None`` when there is no room (the scheduler waits).
2. the model's forward writes keys/values into those slots, reading ``read_plan(sid)``.
3. ``commit(sid, F)`` marks the frames filled and evicts blocks the policy no longer needs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Literal

from inferix.kv_cache.block_pool import BlockPool
from inferix.kv_cache.policy import CachePolicy

logger = logging.getLogger(__name__)

Pool = Literal["device", "host"]


@dataclass
class BlockRef:
    """One entry of a session's block table.

    Attributes:
        pool: ``device`` or ``host`` (offloaded).
        block_id: id in that pool.
        first_frame: session frame index held in slot 0.
        num_filled: slots written so far.
    """

    pool: Pool
    block_id: int
    first_frame: int
    num_filled: int = 0


@dataclass(frozen=True)
class SlotWrite:
    """Write frames ``[src, src + count)`` of a commit into ``block_id`` at ``offset``."""

    block_id: int
    offset: int
    src: int
    count: int


@dataclass(frozen=True)
class ReadSegment:
    """Read ``count`` frames starting at ``offset`` of a block (device or host)."""

    pool: Pool
    block_id: int
    offset: int
    count: int


@dataclass(frozen=True)
class CopyOp:
    """Copy the first ``count`` slots of a block into another (copy-on-write / offload)."""

    src_pool: Pool
    src: int
    dst_pool: Pool
    dst: int
    count: int
    reason: Literal["cow", "offload"]


@dataclass
class ReadPlan:
    """What a session's new block attends to: cached segments in frame order and RoPE positions."""

    segments: list[ReadSegment]
    cached_positions: list[int]  # one temporal position per visible cached frame
    query_start: int  # temporal position of the new block's first frame

    @property
    def num_frames(self) -> int:
        return len(self.cached_positions)


@dataclass
class SessionKV:
    session_id: str
    table: list[BlockRef] = field(default_factory=list)
    num_committed: int = 0  # frames committed since the start (evicted ones included)
    reserved: list[SlotWrite] | None = None
    last_used: int = 0  # manager clock when last reserved (coldest session offloads first)


def _take(pool: BlockPool, n: int) -> list[int]:
    """``n`` blocks from ``pool``; every caller has checked for room first, so a short pool is a bookkeeping bug."""
    ids = pool.allocate(n)
    if ids is None:
        raise RuntimeError(f"KV block pool {pool.name!r} has no {n} free blocks after the check for room")
    return ids


class KVCacheManager:
    """Block tables of many sessions over shared pools, under one retention policy.

    Args:
        block_size: latent frames per KV block.
        num_device_blocks: blocks of the device (GPU) pool.
        num_host_blocks: blocks of the host (CPU) pool cold blocks are offloaded to
            (0 = no offload).
        policy: retention policy (full / rolling / sink).
        hot_blocks: the newest blocks of a session that are never offloaded.
    """

    def __init__(self, block_size: int, num_device_blocks: int, num_host_blocks: int = 0,
                 policy: CachePolicy | None = None, hot_blocks: int = 1) -> None:
        if block_size < 1:
            raise ValueError(f"block_size must be >= 1 latent frame, got {block_size}")
        self.block_size = block_size
        self.policy = policy or CachePolicy()
        self.hot_blocks = max(1, hot_blocks)
        self.pools: dict[Pool, BlockPool] = {
            "device": BlockPool(num_device_blocks, "device"),
            "host": BlockPool(num_host_blocks, "host"),
        }
        self.sessions: dict[str, SessionKV] = {}
        self.pending_ops: list[CopyOp] = []
        self.evicted: list[tuple[str, Pool, int]] = []  # (session, pool, block) in eviction order
        self._clock = 0

    # ------------------------------------------------------------------ sessions

    def add_session(self, session_id: str) -> None:
        if session_id in self.sessions:
            raise ValueError(f"session {session_id!r} already has a KV cache")
        self.sessions[session_id] = SessionKV(session_id)

    def fork_session(self, src: str, dst: str) -> None:
        """Start ``dst`` from ``src``'s cache, sharing its blocks (ref counts go up)."""
        s = self._get(src)
        if s.reserved is not None:
            raise ValueError(f"cannot fork session {src!r} in the middle of a commit")
        self.add_session(dst)
        d = self.sessions[dst]
        d.table = [BlockRef(b.pool, b.block_id, b.first_frame, b.num_filled) for b in s.table]
        d.num_committed = s.num_committed
        for b in s.table:
            self.pools[b.pool].incref([b.block_id])

    def free_session(self, session_id: str) -> list[tuple[Pool, int]]:
        """Drop a session's cache; blocks are freed oldest first. Returns what became free."""
        s = self.sessions.pop(session_id, None)
        if s is None:
            return []
        freed = []
        # reserved-but-unwritten blocks are in the table too (reserve appends them)
        for b in s.table:
            for bid in self.pools[b.pool].free([b.block_id]):
                freed.append((b.pool, bid))
        return freed

    def _get(self, session_id: str) -> SessionKV:
        try:
            return self.sessions[session_id]
        except KeyError:
            raise KeyError(f"no KV cache for session {session_id!r}; call add_session first") from None

    # ------------------------------------------------------------------- reading

    def read_plan(self, session_id: str) -> ReadPlan:
        """Visible cached frames of a session (in frame order) and their RoPE positions."""
        s = self._get(session_id)
        n = s.num_committed
        segments: list[ReadSegment] = []
        frames: list[int] = []
        for b in s.table:
            run_start = None
            for off in range(b.num_filled):
                f = b.first_frame + off
                if self.policy.visible(f, n):
                    frames.append(f)
                    if run_start is None:
                        run_start = off
                elif run_start is not None:
                    segments.append(ReadSegment(b.pool, b.block_id, run_start, off - run_start))
                    run_start = None
            if run_start is not None:
                segments.append(ReadSegment(b.pool, b.block_id, run_start, b.num_filled - run_start))
        if self.policy.positions == "absolute":
            return ReadPlan(segments, frames, n)
        return ReadPlan(segments, list(range(len(frames))), len(frames))

    # ------------------------------------------------------------------- writing

    def reserve(self, session_id: str, num_frames: int) -> list[SlotWrite] | None:
        """Slots for the next ``num_frames`` committed frames, or ``None`` if there is no room.

        May queue copy operations (``pending_ops``): copy-on-write of a shared partly filled
        block, and offload of cold blocks to the host pool when the device pool is full.
        """
        s = self._get(session_id)
        if s.reserved is not None:
            raise ValueError(f"session {session_id!r} already has a reservation; commit or cancel it")
        if num_frames < 1:
            raise ValueError(f"num_frames must be >= 1, got {num_frames}")
        self._clock += 1
        s.last_used = self._clock
        last = s.table[-1] if s.table else None
        room_in_last = self.block_size - last.num_filled if last is not None else 0
        need_cow = last is not None and room_in_last > 0 and self.pools[last.pool].ref_cnt(last.block_id) > 1
        take_last = min(room_in_last, num_frames) if last is not None else 0
        new_blocks = -(-(num_frames - take_last) // self.block_size)
        # the last block must be writable on the device: copy it if shared or offloaded
        move_last = last is not None and take_last > 0 and (need_cow or last.pool == "host")
        device_needed = new_blocks + (1 if move_last else 0)
        if not self._make_room(device_needed, exclude=session_id):
            return None
        dev = self.pools["device"]
        writes: list[SlotWrite] = []
        src = 0
        if take_last > 0:
            assert last is not None
            if move_last:
                (nid,) = _take(dev, 1)
                self.pending_ops.append(CopyOp(last.pool, last.block_id, "device", nid, last.num_filled, "cow"))
                self.pools[last.pool].free([last.block_id])
                last.pool, last.block_id = "device", nid
            writes.append(SlotWrite(last.block_id, last.num_filled, 0, take_last))
            src = take_last
        ids = _take(dev, new_blocks)
        first = s.num_committed + src
        for bid in ids:
            count = min(self.block_size, num_frames - src)
            s.table.append(BlockRef("device", bid, first, 0))
            writes.append(SlotWrite(bid, 0, src, count))
            src += count
            first += count
        s.reserved = writes
        return writes

    def commit(self, session_id: str, num_frames: int) -> list[tuple[Pool, int]]:
        """Mark the reserved frames written, then evict blocks the policy no longer needs.

        Returns:
            ``(pool, block_id)`` freed by eviction, oldest first.
        """
        s = self._get(session_id)
        if s.reserved is None:
            raise ValueError(f"session {session_id!r} commits without a reservation")
        if sum(w.count for w in s.reserved) != num_frames:
            raise ValueError(f"session {session_id!r} reserved {sum(w.count for w in s.reserved)} frames, "
                             f"commits {num_frames}")
        by_id = {(b.pool, b.block_id): b for b in s.table}
        for w in s.reserved:
            by_id[("device", w.block_id)].num_filled = w.offset + w.count
        s.reserved = None
        s.num_committed += num_frames
        return self._evict(s)

    def cancel_reservation(self, session_id: str) -> None:
        """Undo a reservation whose forward failed (fresh blocks go back to the pool)."""
        s = self._get(session_id)
        if s.reserved is None:
            return
        keep = []
        for b in s.table:
            if b.num_filled == 0:
                self.pools[b.pool].free([b.block_id])
            else:
                keep.append(b)
        s.table = keep
        s.reserved = None

    def _evict(self, s: SessionKV) -> list[tuple[Pool, int]]:
        freed: list[tuple[Pool, int]] = []
        keep = []
        for b in s.table:
            full = b.num_filled == self.block_size
            if full and self.policy.evictable(b.first_frame, b.first_frame + b.num_filled, s.num_committed):
                self.evicted.append((s.session_id, b.pool, b.block_id))
                for bid in self.pools[b.pool].free([b.block_id]):
                    freed.append((b.pool, bid))
            else:
                keep.append(b)
        s.table = keep
        return freed

    # ------------------------------------------------------------------- offload

    def _make_room(self, num_blocks: int, exclude: str | None = None) -> bool:
        """Free ``num_blocks`` device blocks, offloading cold blocks one at a time if needed."""
        dev, host = self.pools["device"], self.pools["host"]
        while dev.num_free < num_blocks:
            if host.num_free == 0 or not self.offload_one(prefer_not=exclude):
                return dev.num_free >= num_blocks
        return True

    def offload_one(self, prefer_not: str | None = None) -> bool:
        """Move the coldest offloadable device block to the host pool. Returns False if none.

        Coldest = the oldest block of the least recently used session; a session's newest
        ``hot_blocks`` blocks and blocks shared with other sessions stay on the device.
        """
        host = self.pools["host"]
        if host.num_free == 0:
            return False
        order = sorted(self.sessions.values(), key=lambda s: (s.session_id == prefer_not, s.last_used))
        for s in order:
            for b in s.table[: max(0, len(s.table) - self.hot_blocks)]:
                if b.pool == "device" and b.num_filled > 0 and self.pools["device"].ref_cnt(b.block_id) == 1:
                    (hid,) = _take(host, 1)
                    self.pending_ops.append(CopyOp("device", b.block_id, "host", hid, b.num_filled, "offload"))
                    self.pools["device"].free([b.block_id])
                    b.pool, b.block_id = "host", hid
                    logger.debug("offloaded block of session %s to host block %d", s.session_id, hid)
                    return True
        return False

    def take_ops(self) -> list[CopyOp]:
        """Copy operations queued since the last call (the storage executes them in order)."""
        ops, self.pending_ops = self.pending_ops, []
        return ops

    # ------------------------------------------------------------------ accounting

    def num_blocks(self, session_id: str, pool: Pool | None = None) -> int:
        """Blocks a session holds (in one pool or both)."""
        return sum(1 for b in self._get(session_id).table if pool is None or b.pool == pool)

    def block_ids(self, session_id: str) -> list[tuple[Pool, int]]:
        return [(b.pool, b.block_id) for b in self._get(session_id).table]

    def usage(self, bytes_per_block: int = 0) -> dict[str, int]:
        """Blocks (and bytes, given the storage's ``bytes_per_block``) in use per pool."""
        dev, host = self.pools["device"], self.pools["host"]
        return {
            "device_blocks_used": dev.num_used,
            "device_blocks_total": dev.num_blocks,
            "host_blocks_used": host.num_used,
            "host_blocks_total": host.num_blocks,
            "device_bytes_used": dev.num_used * bytes_per_block,
            "host_bytes_used": host.num_used * bytes_per_block,
            "sessions": len(self.sessions),
        }
