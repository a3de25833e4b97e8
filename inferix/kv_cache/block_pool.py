"""Block pool: fixed-size KV blocks, reference counts and a free queue in eviction order.

Pure bookkeeping — no tensors. A block id indexes the same slot in every layer's
storage (``KVStorage``), so one id stands for ``block_size`` latent frames of keys and
values across all layers.

Free queue (least recently freed first)::

    head -> [b7] -> [b2] -> [b5] -> tail
            ^ allocate() pops here        ^ free() appends here

Blocks freed together are appended in the order given, so the caller decides the
eviction order (the manager frees a session's oldest frames first).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass
class KVBlock:
    """One block of the pool.

    Attributes:
        block_id: index of the block's slot in the storage tensors.
        ref_cnt: number of session block tables holding it (0 = in the free queue).
    """

    block_id: int
    ref_cnt: int = 0


class BlockPool:
    """A fixed number of blocks with reference counts and an ordered free queue.

    Args:
        num_blocks: size of the pool.
        name: shown in error messages (``"device"``, ``"host"``).
    """

    def __init__(self, num_blocks: int, name: str = "device") -> None:
        if num_blocks < 0:
            raise ValueError(f"num_blocks must be >= 0, got {num_blocks}")
        self.name = name
        self.blocks = [KVBlock(i) for i in range(num_blocks)]
        # OrderedDict as an O(1) queue that also supports removal from the middle.
        self._free: OrderedDict[int, None] = OrderedDict((i, None) for i in range(num_blocks))

    @property
    def num_blocks(self) -> int:
        return len(self.blocks)

    @property
    def num_free(self) -> int:
        return len(self._free)

    @property
    def num_used(self) -> int:
        return self.num_blocks - self.num_free

    def free_queue(self) -> list[int]:
        """Free block ids, next to be allocated first."""
        return list(self._free)

    def allocate(self, n: int) -> list[int] | None:
        """Take ``n`` blocks from the head of the free queue (``ref_cnt`` becomes 1).

        Returns:
            The block ids, or ``None`` when fewer than ``n`` are free (capacity is a
            return value, not an error; nothing is taken then).
        """
        if n < 0:
            raise ValueError(f"cannot allocate a negative number of blocks ({n})")
        if n > len(self._free):
            return None
        ids = []
        for _ in range(n):
            bid, _ = self._free.popitem(last=False)
            blk = self.blocks[bid]
            assert blk.ref_cnt == 0, f"free block {bid} has ref_cnt {blk.ref_cnt}"
            blk.ref_cnt = 1
            ids.append(bid)
        return ids

    def incref(self, block_ids: Iterable[int]) -> None:
        """Share blocks with one more holder (a forked session)."""
        for bid in block_ids:
            blk = self.blocks[bid]
            if blk.ref_cnt <= 0:
                raise ValueError(f"{self.name} block {bid} is free; cannot share it")
            blk.ref_cnt += 1

    def free(self, block_ids: Iterable[int]) -> list[int]:
        """Drop one reference to each block; blocks reaching 0 join the queue tail in order.

        Returns:
            The ids that became free, in the order they were queued.
        """
        freed = []
        for bid in block_ids:
            blk = self.blocks[bid]
            if blk.ref_cnt <= 0:
                raise ValueError(f"{self.name} block {bid} freed twice")
            blk.ref_cnt -= 1
            if blk.ref_cnt == 0:
                self._free[bid] = None
                freed.append(bid)
        return freed

    def ref_cnt(self, block_id: int) -> int:
        return self.blocks[block_id].ref_cnt
