"""Scheduler bookkeeping: who runs, in which order, batching by key, KV back-pressure (no tensors)."""

from __future__ import annotations

import pytest

from inferix.kv_cache import CachePolicy, KVCacheManager
from inferix.scheduler import Scheduler, SessionSlot, SessionState


def _slots(*ids, key="k", steps=2, frames=3):
    return [SessionSlot(i, key, steps, frames, arrival=n) for n, i in enumerate(ids)]


def _advance(slots, out):
    by_id = {s.session_id: s for s in slots}
    for r in out.rows:
        s = by_id[r.session_id]
        s.step = 0 if r.commit else s.step + 1


def test_all_sessions_batched_when_they_fit_and_paused_ones_skipped():
    kv = KVCacheManager(3, 16)
    slots = _slots("a", "b", "c")
    for s in slots:
        kv.add_session(s.session_id)
    slots[1].state = SessionState.PAUSED
    sched = Scheduler(kv, max_batch=4)
    out = sched.schedule(slots)
    assert [r.session_id for r in out.rows] == ["a", "c"]
    assert [r.commit for r in out.rows] == [False, False]
    assert slots[0].state == SessionState.RUNNING and slots[1].state == SessionState.PAUSED


def test_round_robin_when_more_sessions_than_rows():
    kv = KVCacheManager(3, 16)
    slots = _slots("a", "b", "c")
    for s in slots:
        kv.add_session(s.session_id)
    sched = Scheduler(kv, max_batch=2)
    picked = []
    for _ in range(4):
        out = sched.schedule(slots)
        picked.append([r.session_id for r in out.rows])
        _advance(slots, out)
    assert picked == [["a", "b"], ["c", "a"], ["b", "c"], ["a", "b"]]


def test_rows_share_one_batch_key():
    kv = KVCacheManager(3, 16)
    slots = _slots("a", "b", key="16x16") + [SessionSlot("c", "32x32", 2, 3, arrival=2)]
    for s in slots:
        kv.add_session(s.session_id)
    sched = Scheduler(kv, max_batch=4)
    assert [r.session_id for r in sched.schedule(slots).rows] == ["a", "b"]
    # c was not scheduled, so it is now the least recently scheduled and fixes the key
    assert [r.session_id for r in sched.schedule(slots).rows] == ["c"]


def test_commit_rows_reserve_kv_slots_and_wait_when_the_pool_is_full():
    kv = KVCacheManager(3, 1, policy=CachePolicy("full"))
    slots = _slots("a", "b", steps=0)  # every pass commits
    for s in slots:
        kv.add_session(s.session_id)
    out = Scheduler(kv).schedule(slots)
    assert [(r.session_id, r.commit) for r in out.rows] == [("a", True)]
    assert out.blocked == ["b"]
    assert kv.block_ids("a") == [("device", 0)]
    assert kv.sessions["a"].reserved is not None and kv.sessions["b"].reserved is None


def test_bad_max_batch():
    with pytest.raises(ValueError, match="max_batch"):
        Scheduler(KVCacheManager(3, 1), max_batch=0)
