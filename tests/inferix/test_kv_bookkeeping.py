"""KV block pool / manager bookkeeping: exact block ids, ref counts, eviction order (no tensors)."""

from __future__ import annotations

import pytest

from inferix.kv_cache.block_pool import BlockPool
from inferix.kv_cache.manager import CopyOp, KVCacheManager, ReadSegment, SlotWrite
from inferix.kv_cache.policy import CachePolicy


def _step(m: KVCacheManager, sid: str, frames: int = 3):
    writes = m.reserve(sid, frames)
    assert writes is not None
    return writes, m.commit(sid, frames)


def test_pool_allocates_from_head_and_frees_to_tail_in_order():
    pool = BlockPool(5)
    assert pool.allocate(2) == [0, 1]
    assert pool.allocate(2) == [2, 3]
    assert pool.free([3, 0]) == [3, 0]
    assert pool.free_queue() == [4, 3, 0]
    assert pool.allocate(2) == [4, 3]
    assert pool.allocate(2) is None  # capacity is a return value; nothing taken
    assert pool.free_queue() == [0]


def test_pool_ref_counts_keep_shared_blocks_out_of_the_free_queue():
    pool = BlockPool(3)
    ids = pool.allocate(2)
    pool.incref(ids)
    assert [pool.ref_cnt(i) for i in ids] == [2, 2]
    assert pool.free(ids) == []
    assert pool.free_queue() == [2]
    assert pool.free(ids) == [0, 1]
    with pytest.raises(ValueError, match="freed twice"):
        pool.free([0])


def test_full_policy_keeps_every_block_and_fills_partial_blocks_first():
    m = KVCacheManager(block_size=3, num_device_blocks=8, policy=CachePolicy("full"))
    m.add_session("a")
    assert m.reserve("a", 2) == [SlotWrite(0, 0, 0, 2)]
    assert m.commit("a", 2) == []
    # the next commit fills slot 2 of block 0, then opens block 1
    assert m.reserve("a", 3) == [SlotWrite(0, 2, 0, 1), SlotWrite(1, 0, 1, 2)]
    m.commit("a", 3)
    for _ in range(3):
        _, freed = _step(m, "a")
        assert freed == []
    assert m.block_ids("a") == [("device", i) for i in range(5)]
    plan = m.read_plan("a")
    assert plan.cached_positions == list(range(14))
    assert plan.query_start == 14
    assert plan.segments[0] == ReadSegment("device", 0, 0, 3)
    assert plan.segments[-1] == ReadSegment("device", 4, 0, 2)


def test_rolling_policy_evicts_oldest_blocks_in_order_and_stays_bounded():
    m = KVCacheManager(block_size=3, num_device_blocks=4, policy=CachePolicy("rolling", window=6))
    m.add_session("a")
    tables = []
    freed_all = []
    for _ in range(6):
        _, freed = _step(m, "a")
        freed_all += freed
        tables.append([bid for _, bid in m.block_ids("a")])
    # window of 6 frames = 2 blocks; the block that falls out is freed at once and reused next
    assert tables == [[0], [0, 1], [1, 2], [2, 3], [3, 0], [0, 1]]
    assert freed_all == [("device", 0), ("device", 1), ("device", 2), ("device", 3)]
    assert [e[2] for e in m.evicted] == [0, 1, 2, 3]
    assert m.pools["device"].num_used == 2
    plan = m.read_plan("a")
    assert plan.cached_positions == [12, 13, 14, 15, 16, 17]  # absolute positions by default


def test_rolling_window_not_aligned_to_blocks_reads_only_visible_frames():
    m = KVCacheManager(block_size=3, num_device_blocks=4, policy=CachePolicy("rolling", window=4, positions="reindex"))
    m.add_session("a")
    for _ in range(3):
        _step(m, "a")
    plan = m.read_plan("a")
    # 9 frames committed, window 4 -> frames 5..8: slot 2 of block 1 and all of block 2
    assert [bid for _, bid in m.block_ids("a")] == [1, 2]
    assert plan.segments == [ReadSegment("device", 1, 2, 1), ReadSegment("device", 2, 0, 3)]
    assert plan.cached_positions == [0, 1, 2, 3]
    assert plan.query_start == 4


def test_sink_policy_pins_first_block_and_rolls_the_rest():
    m = KVCacheManager(
        block_size=3, num_device_blocks=5, policy=CachePolicy("sink", sink=3, window=6, positions="reindex")
    )
    m.add_session("a")
    tables = []
    for _ in range(6):
        _step(m, "a")
        tables.append([bid for _, bid in m.block_ids("a")])
    assert tables == [[0], [0, 1], [0, 1, 2], [0, 2, 3], [0, 3, 4], [0, 4, 1]]
    assert [e[2] for e in m.evicted] == [1, 2, 3]
    assert m.pools["device"].free_queue() == [2, 3]
    plan = m.read_plan("a")
    assert plan.cached_positions == list(range(9))
    assert plan.query_start == 9
    assert plan.segments == [
        ReadSegment("device", 0, 0, 3),
        ReadSegment("device", 4, 0, 3),
        ReadSegment("device", 1, 0, 3),
    ]
    absolute = KVCacheManager(3, 5, policy=CachePolicy("sink", sink=3, window=6))
    absolute.add_session("a")
    for _ in range(6):
        _step(absolute, "a")
    assert absolute.read_plan("a").cached_positions == [0, 1, 2, 12, 13, 14, 15, 16, 17]
    assert absolute.read_plan("a").query_start == 18


def test_fork_shares_blocks_and_copies_on_write_the_partial_block():
    m = KVCacheManager(block_size=3, num_device_blocks=6)
    m.add_session("a")
    _step(m, "a", 3)
    _step(m, "a", 2)  # block 1 partly filled
    m.fork_session("a", "b")
    assert [m.pools["device"].ref_cnt(i) for i in (0, 1)] == [2, 2]
    writes = m.reserve("b", 3)
    # b's shared partial block 1 is copied to fresh block 2 before b writes into it
    assert m.take_ops() == [CopyOp("device", 1, "device", 2, 2, "cow")]
    assert writes == [SlotWrite(2, 2, 0, 1), SlotWrite(3, 0, 1, 2)]
    m.commit("b", 3)
    assert m.block_ids("a") == [("device", 0), ("device", 1)]
    assert m.block_ids("b") == [("device", 0), ("device", 2), ("device", 3)]
    assert [m.pools["device"].ref_cnt(i) for i in (0, 1, 2, 3)] == [2, 1, 1, 1]
    assert m.free_session("a") == [("device", 1)]
    assert m.pools["device"].ref_cnt(0) == 1
    assert m.free_session("b") == [("device", 0), ("device", 2), ("device", 3)]
    assert m.pools["device"].free_queue() == [4, 5, 1, 0, 2, 3]


def test_full_device_pool_offloads_coldest_blocks_one_at_a_time():
    m = KVCacheManager(block_size=3, num_device_blocks=3, num_host_blocks=4, hot_blocks=1)
    m.add_session("a")
    m.add_session("b")
    _step(m, "a")  # a: dev 0
    _step(m, "b")  # b: dev 1
    _step(m, "a")  # a: dev 2
    assert m.take_ops() == []
    _step(m, "b")  # no device block free: a's oldest block (a ran least recently) goes to the host
    assert m.take_ops() == [CopyOp("device", 0, "host", 0, 3, "offload")]
    assert m.block_ids("a") == [("host", 0), ("device", 2)]
    assert m.block_ids("b") == [("device", 1), ("device", 0)]
    _step(m, "a")  # b's oldest block is now coldest
    assert m.take_ops() == [CopyOp("device", 1, "host", 1, 3, "offload")]
    plan = m.read_plan("a")
    assert plan.segments == [
        ReadSegment("host", 0, 0, 3),
        ReadSegment("device", 2, 0, 3),
        ReadSegment("device", 1, 0, 3),
    ]
    use = m.usage(bytes_per_block=100)
    assert use["device_blocks_used"] == 3 and use["host_blocks_used"] == 2
    assert use["device_bytes_used"] == 300 and use["host_bytes_used"] == 200


def test_no_room_returns_none_and_takes_nothing():
    m = KVCacheManager(block_size=3, num_device_blocks=1)
    m.add_session("a")
    _step(m, "a")
    assert m.reserve("a", 3) is None
    assert m.block_ids("a") == [("device", 0)]
    assert m.pools["device"].free_queue() == []


def test_cancelled_reservation_returns_fresh_blocks():
    m = KVCacheManager(block_size=3, num_device_blocks=4)
    m.add_session("a")
    m.reserve("a", 6)
    m.cancel_reservation("a")
    assert m.block_ids("a") == []
    assert m.pools["device"].free_queue() == [2, 3, 0, 1]


def test_policy_parse_and_errors():
    assert CachePolicy.parse("rolling:6") == CachePolicy("rolling", window=6)
    assert CachePolicy.parse("sink:3:9@reindex") == CachePolicy("sink", 9, 3, "reindex")
    with pytest.raises(ValueError, match="rolling:WINDOW"):
        CachePolicy.parse("window=3")
    with pytest.raises(ValueError, match="window >= 1"):
        CachePolicy("rolling")
