"""Paged KV cache for block diffusion: block pool, manager, policies, storage, attention backend.

Bookkeeping (``block_pool``, ``policy``, ``manager``) never touches tensors; ``storage``
and ``backend`` import torch lazily.
"""

from inferix.kv_cache.block_pool import BlockPool, KVBlock
from inferix.kv_cache.manager import BlockRef, CopyOp, KVCacheManager, ReadPlan, ReadSegment, SlotWrite
from inferix.kv_cache.policy import CachePolicy

__all__ = [
    "BlockPool",
    "BlockRef",
    "CachePolicy",
    "CopyOp",
    "KVBlock",
    "KVCacheManager",
    "ReadPlan",
    "ReadSegment",
    "SlotWrite",
]
