"""Tensor storage behind the block pool: one key and one value tensor per layer.

Layout per layer (device pool; the host pool has the same layout in CPU memory)::

    k[layer]: [num_blocks, block_size, S, H, D]   (S = tokens per latent frame)
    v[layer]: same

Keys are stored **un-roped** (RoPE is applied at read time with the positions the
manager's policy assigns). Tensors are created on the first write of a layer, when
``S, H, D`` and the dtype are known, so the storage needs no model config.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from inferix.kv_cache.manager import CopyOp, Pool

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)


class KVStorage:
    """Per-layer key/value tensors for a device pool and a host pool.

    Args:
        num_device_blocks: blocks of the device pool.
        num_host_blocks: blocks of the host pool (offloaded cold blocks).
        block_size: latent frames per block.
        device: where the device pool lives.
    """

    def __init__(self, num_device_blocks: int, num_host_blocks: int, block_size: int,
                 device: torch.device | str = "cpu") -> None:
        import torch

        self.num_blocks: dict[Pool, int] = {"device": num_device_blocks, "host": num_host_blocks}
        self.block_size = block_size
        self.device = torch.device(device)
        self.k: dict[Pool, dict[int, torch.Tensor]] = {"device": {}, "host": {}}
        self.v: dict[Pool, dict[int, torch.Tensor]] = {"device": {}, "host": {}}

    def _ensure_layer(self, layer: int, like: torch.Tensor) -> None:
        """Allocate a layer's tensors shaped after ``like`` (``[S, H, D]`` per frame)."""
        import torch

        if layer in self.k["device"]:
            return
        s, h, d = like.shape[-3:]
        for pool in ("device", "host"):
            dev = self.device if pool == "device" else torch.device("cpu")
            pin = pool == "host" and self.device.type == "cuda"
            shape = (self.num_blocks[pool], self.block_size, s, h, d)
            self.k[pool][layer] = torch.zeros(shape, dtype=like.dtype, device=dev, pin_memory=pin)
            self.v[pool][layer] = torch.zeros(shape, dtype=like.dtype, device=dev, pin_memory=pin)

    @property
    def layers(self) -> list[int]:
        return sorted(self.k["device"])

    def bytes_per_block(self) -> int:
        """Bytes one block id takes across all allocated layers (keys + values)."""
        total = 0
        for layer in self.layers:
            t = self.k["device"][layer]
            total += 2 * t[0].numel() * t.element_size()
        return total

    def allocated_bytes(self) -> dict[str, int]:
        """Bytes reserved by the storage tensors per pool (used or not)."""
        out = {}
        for pool in ("device", "host"):
            out[pool] = sum(t.numel() * t.element_size() for d in (self.k[pool], self.v[pool]) for t in d.values())
        return out

    def write(self, layer: int, block_id: int, offset: int, k: torch.Tensor, v: torch.Tensor) -> None:
        """Write ``k, v`` (``[F, S, H, D]``) into device block ``block_id`` from slot ``offset``."""
        self._ensure_layer(layer, k)
        n = k.shape[0]
        self.k["device"][layer][block_id, offset : offset + n] = k
        self.v["device"][layer][block_id, offset : offset + n] = v

    def apply(self, ops: list[CopyOp]) -> None:
        """Execute the manager's queued copies, one block at a time, in order, for every layer."""
        for op in ops:
            for layer in self.layers:
                for store in (self.k, self.v):
                    src = store[op.src_pool][layer][op.src, : op.count]
                    # non_blocking host<->device copies of one block; pinned host memory on CUDA
                    store[op.dst_pool][layer][op.dst, : op.count].copy_(src, non_blocking=True)

    def gather(self, layer: int, segments: list, device_index: torch.Tensor | None
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values of a read plan's frames, in frame order: ``[F, S, H, D]`` each.

        Device frames are gathered with one ``index_select``; host (offloaded) segments are
        copied to the device one segment (at most one block) at a time, never the whole cache.

        Args:
            layer: layer index.
            segments: the plan's :class:`~inferix.kv_cache.manager.ReadSegment` list.
            device_index: flat slot index ``block_id * block_size + offset`` of every device frame
                in plan order (precomputed once per step by the backend).
        """
        import torch

        kd, vd = self.k["device"][layer], self.v["device"][layer]
        flat_k = kd.view(-1, *kd.shape[2:])
        flat_v = vd.view(-1, *vd.shape[2:])
        if all(s.pool == "device" for s in segments):
            assert device_index is not None
            return flat_k.index_select(0, device_index), flat_v.index_select(0, device_index)
        ks, vs = [], []
        for seg in segments:
            src_k, src_v = self.k[seg.pool][layer], self.v[seg.pool][layer]
            ks.append(src_k[seg.block_id, seg.offset : seg.offset + seg.count].to(self.device, non_blocking=True))
            vs.append(src_v[seg.block_id, seg.offset : seg.offset + seg.count].to(self.device, non_blocking=True))
        return torch.cat(ks), torch.cat(vs)
