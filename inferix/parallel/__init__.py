"""Multi-device execution: Ulysses sequence parallelism over torch.distributed."""

from inferix.parallel.ulysses import UlyssesAttention, heads_to_seq, seq_to_heads, sequence_parallel_forward

__all__ = ["UlyssesAttention", "heads_to_seq", "seq_to_heads", "sequence_parallel_forward"]
