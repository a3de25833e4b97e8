"""Which sessions' blocks go into the next forward.

Pure bookkeeping over :class:`SessionSlot` records (no tensors), like vLLM's scheduler:
each engine step the scheduler picks up to ``max_batch`` runnable sessions that share a
*batch key* (same latent shape and text length, so their rows stack into one forward),
least recently scheduled first, so no session starves when there are more sessions than
rows. A session contributes one row per step: one denoising step of its current block,
or the block's clean t = 0 pass that commits keys/values to the KV cache. A committing
row needs KV slots; when the manager has no room the session waits this step (capacity
is a return value, not an error).

Session states::

    WAITING -> RUNNING <-> PAUSED
                  |
                  +-> FINISHED | CANCELLED | FAILED
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field

from inferix.kv_cache.manager import KVCacheManager

logger = logging.getLogger(__name__)


class SessionState(str, enum.Enum):
    WAITING = "waiting"  # added, first block not started
    RUNNING = "running"
    PAUSED = "paused"
    DECODING = "decoding"  # every block denoised and committed; the last one's decode is still running (overlap_decode)
    FINISHED = "finished"
    CANCELLED = "cancelled"
    FAILED = "failed"

    @property
    def done(self) -> bool:
        return self in (SessionState.FINISHED, SessionState.CANCELLED, SessionState.FAILED)


@dataclass
class SessionSlot:
    """What the scheduler knows about a session.

    Attributes:
        session_id: unique id.
        batch_key: rows with equal keys can share a forward (latent shape, text length...).
        num_steps: denoising steps per block (the commit pass comes after them).
        block_frames: latent frames per block (KV slots a commit needs).
        step: next pass of the current block: ``0..num_steps-1`` denoise, ``num_steps`` commit.
        state: lifecycle state.
        arrival: order of arrival (ties).
        last_scheduled: engine step in which it last ran (-1 = never).
        runs: rows it has had so far (fairness tie-break).
    """

    session_id: str
    batch_key: Hashable
    num_steps: int
    block_frames: int
    step: int = 0
    state: SessionState = SessionState.WAITING
    arrival: int = 0
    last_scheduled: int = -1
    runs: int = 0

    @property
    def commits_next(self) -> bool:
        return self.step >= self.num_steps

    @property
    def runnable(self) -> bool:
        return self.state in (SessionState.WAITING, SessionState.RUNNING)


@dataclass
class ScheduledRow:
    session_id: str
    step: int
    commit: bool


@dataclass
class SchedulerOutput:
    """One forward's rows (in batch order) and the sessions that could not get KV slots."""

    rows: list[ScheduledRow] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.rows


class Scheduler:
    """Picks the rows of the next forward.

    Args:
        kv: the KV cache manager (committing rows reserve slots through it).
        max_batch: rows per forward.
    """

    def __init__(self, kv: KVCacheManager, max_batch: int = 4) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        self.kv = kv
        self.max_batch = max_batch
        self.step_count = 0

    def schedule(self, sessions: Iterable[SessionSlot]) -> SchedulerOutput:
        """Choose rows: the least recently scheduled runnable session fixes the batch key."""
        out = SchedulerOutput()
        ready = sorted((s for s in sessions if s.runnable), key=lambda s: (s.last_scheduled, s.runs, s.arrival))
        key = None
        for s in ready:
            if len(out.rows) == self.max_batch:
                break
            if key is not None and s.batch_key != key:
                continue
            if s.commits_next and self.kv.reserve(s.session_id, s.block_frames) is None:
                out.blocked.append(s.session_id)
                continue
            key = s.batch_key
            out.rows.append(ScheduledRow(s.session_id, s.step, s.commits_next))
        for row in out.rows:
            slot = next(s for s in ready if s.session_id == row.session_id)
            slot.last_scheduled = self.step_count
            slot.runs += 1
            if slot.state == SessionState.WAITING:
                slot.state = SessionState.RUNNING
        self.step_count += 1
        return out
