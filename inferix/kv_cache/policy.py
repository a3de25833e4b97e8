"""Which cached frames a new block may attend to, and which blocks can be dropped.

Frames are counted in latent frames from the start of the session. When the next block
starts at frame ``n`` (``n`` frames are committed):

* ``full``     — every past frame is visible; nothing is evicted.
* ``rolling``  — frames ``f >= n - window`` are visible.
* ``sink``     — frames ``f < sink`` (the attention sink, usually the first block) and
  frames ``f >= n - window`` are visible.

A frame that is not visible now never becomes visible again (``n`` only grows), so a KV
block whose frames are all invisible is evicted at once.

Temporal RoPE positions (keys are cached un-roped, so either works):

* ``absolute`` — a frame's position is its index in the session (matches a full
  forward with a windowed block-causal mask exactly, also with a sink).
* ``reindex``  — visible frames are numbered ``0..m-1`` in order and the new block
  continues at ``m``; positions stay bounded however long the video gets. For ``rolling``
  this equals ``absolute`` (RoPE scores depend only on position differences); with a sink
  it shifts the sink closer to the window, as Self-Forcing's rolling cache does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

PolicyKind = Literal["full", "rolling", "sink"]
PositionMode = Literal["absolute", "reindex"]


@dataclass(frozen=True)
class CachePolicy:
    """Cache retention policy.

    Attributes:
        kind: ``full`` | ``rolling`` | ``sink``.
        window: past latent frames visible to a new block (``rolling`` / ``sink``).
        sink: leading latent frames always visible (``sink`` only).
        positions: ``absolute`` or ``reindex`` temporal RoPE positions (module doc).
    """

    kind: PolicyKind = "full"
    window: int = 0
    sink: int = 0
    positions: PositionMode = "absolute"

    def __post_init__(self) -> None:
        if self.kind not in ("full", "rolling", "sink"):
            raise ValueError(f"cache policy kind must be full|rolling|sink, got {self.kind!r}")
        if self.positions not in ("absolute", "reindex"):
            raise ValueError(f"positions must be absolute|reindex, got {self.positions!r}")
        if self.kind in ("rolling", "sink") and self.window < 1:
            raise ValueError(f"{self.kind} policy needs window >= 1 latent frame, got {self.window}")
        if self.kind == "sink" and self.sink < 1:
            raise ValueError(f"sink policy needs sink >= 1 latent frame, got {self.sink}")
        if self.kind != "sink" and self.sink:
            raise ValueError(f"sink={self.sink} only applies to the sink policy (kind={self.kind!r})")

    @classmethod
    def parse(cls, text: str) -> CachePolicy:
        """Parse ``full``, ``rolling:W`` or ``sink:S:W`` (frames), optionally ``@absolute|@reindex``.

        Example:
            >>> CachePolicy.parse("sink:3:9@reindex")
            CachePolicy(kind='sink', window=9, sink=3, positions='reindex')
        """
        body, _, pos = text.partition("@")
        parts = body.split(":")
        try:
            if parts[0] == "full" and len(parts) == 1:
                policy = cls("full")
            elif parts[0] == "rolling" and len(parts) == 2:
                policy = cls("rolling", window=int(parts[1]))
            elif parts[0] == "sink" and len(parts) == 3:
                policy = cls("sink", sink=int(parts[1]), window=int(parts[2]))
            else:
                raise ValueError
        except ValueError:
            raise ValueError(
                f"bad cache policy {text!r}: use 'full', 'rolling:WINDOW' or 'sink:SINK:WINDOW' "
                "(latent frames), optionally followed by '@absolute' or '@reindex'"
            ) from None
        if pos:
            policy = cls(policy.kind, policy.window, policy.sink, pos)  # type: ignore[arg-type]
        return policy

    def visible(self, frame: int, num_committed: int) -> bool:
        """Whether past frame ``frame`` is visible to a block starting at ``num_committed``."""
        if self.kind == "full":
            return True
        if self.kind == "sink" and frame < self.sink:
            return True
        return frame >= num_committed - self.window

    def evictable(self, first_frame: int, last_frame: int, num_committed: int) -> bool:
        """Whether no frame of ``[first_frame, last_frame)`` can be visible again."""
        if self.kind == "full":
            return False
        if self.kind == "sink" and first_frame < self.sink:
            return False
        return last_frame <= num_committed - self.window

    def max_visible_frames(self) -> int | None:
        """Upper bound of the visible past (``None`` = unbounded)."""
        if self.kind == "full":
            return None
        return self.window + (self.sink if self.kind == "sink" else 0)
