"""AMT-S frame interpolation and VBench's motion smoothness, for LV-Bench's Motion signal.

AMT (Li et al., "AMT: All-Pairs Multi-Field Transforms for Efficient Frame Interpolation", CVPR
2023) in its small configuration, as VBench ships it (``vbench/third_party/amt``, ``networks/AMT-S.py``
with the ``cfgs/AMT-S.yaml`` parameters) and LV-Bench loads it (``pretrained/amt_model/amt-s.pth``).
Written here from the published architecture; parameter names equal the checkpoint's, so the
released ``amt-s.pth`` (``{"state_dict": ...}``, about 3.0 M parameters; its licence is the
upstream's, CC BY-NC 4.0) loads with ``strict=True``.

Data flow of one interpolation (``img0``, ``img1``: ``[B, 3, H, W]`` in ``[0, 1]``, H and W
multiples of 16 and at least 128, see :data:`MIN_PADDED_SIDE`; ``t`` = 0.5):

1. both frames minus their joint mean colour;
2. a RAFT-style feature encoder (``feat_encoder``) at 1/8 builds an all-pairs correlation volume in
   both directions, pooled into a 4-level pyramid, read in a 7 x 7 window (``radius`` 3);
3. an IFRNet-style image pyramid (``encoder``, 1/2 .. 1/16) is decoded coarse to fine
   (``decoder4`` .. ``decoder1``): each level predicts the flows from t to both frames and an
   intermediate feature, and levels 4-2 refine them from the correlation looked up along the
   flows scaled to 0 -> 1 and 1 -> 0 (``update4`` .. ``update2``);
4. the last level predicts three flow pairs, blend masks and residuals; the three warped blends are
   averaged and corrected by ``comb_block``; the result is clamped to ``[0, 1]``.

:class:`MotionSmoothness` is VBench's ``MotionSmoothness.motion_score`` on a chunk of frames.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

CORR_RADIUS = 3
CORR_LEVELS = 4
NUM_FLOWS = 3
CHANNELS = (20, 32, 44, 56)  # IFRNet pyramid widths at 1/2, 1/4, 1/8, 1/16
SKIP_CHANNELS = 20
FEAT_DIM = 84  # correlation features at 1/8
# The correlation pyramid pools the H/8 map three times and its lookup divides by (side - 1): below a
# 16-px map (128 px frames) its coarsest level is 1 px wide and the network returns NaN (VBench's
# motion smoothness is then undefined), so smaller frames are padded further.
MIN_PADDED_SIDE = 128


def _resize(x: torch.Tensor, scale: float) -> torch.Tensor:
    return F.interpolate(x, scale_factor=scale, mode="bilinear", align_corners=False)


def warp(img: torch.Tensor, flow: torch.Tensor) -> torch.Tensor:
    """Backward-warp ``img`` by ``flow`` (pixels, ``[B, 2, H, W]``, x then y); borders replicate."""
    b, _, h, w = flow.shape
    xs = torch.linspace(-1.0, 1.0, w).view(1, 1, 1, w).expand(b, -1, h, -1)
    ys = torch.linspace(-1.0, 1.0, h).view(1, 1, h, 1).expand(b, -1, -1, w)
    base = torch.cat([xs, ys], 1).to(img)
    norm = torch.cat([flow[:, 0:1] / ((w - 1.0) / 2.0), flow[:, 1:2] / ((h - 1.0) / 2.0)], 1)
    grid = (base + norm).permute(0, 2, 3, 1)
    return F.grid_sample(img, grid, mode="bilinear", padding_mode="border", align_corners=True)


def _pixel_grid(b: int, h: int, w: int, device: torch.device) -> torch.Tensor:
    """``[B, 2, h, w]`` pixel coordinates, x then y."""
    ys, xs = torch.meshgrid(torch.arange(h, device=device), torch.arange(w, device=device), indexing="ij")
    return torch.stack([xs, ys], 0).float()[None].repeat(b, 1, 1, 1)


class CorrPyramid:
    """All-pairs correlation of two ``[B, C, h, w]`` feature maps in both directions, average-pooled
    ``levels - 1`` times; :meth:`lookup` reads a ``(2r+1)^2`` window per level around given points."""

    def __init__(self, f0: torch.Tensor, f1: torch.Tensor, levels: int, radius: int) -> None:
        b, c, h, w = f0.shape
        vol = torch.matmul(f0.view(b, c, h * w).transpose(1, 2), f1.view(b, c, h * w))
        vol = vol.view(b, h, w, 1, h, w) / torch.sqrt(torch.tensor(c).float())
        fwd = vol.reshape(b * h * w, 1, h, w)  # for each pixel of f0: its scores over f1
        bwd = vol.clone().permute(0, 4, 5, 3, 1, 2).reshape(b * h * w, 1, h, w)  # and the reverse
        self.levels, self.radius = levels, radius
        self.fwd, self.bwd = [fwd], [bwd]
        for _ in range(levels - 1):
            self.fwd.append(F.avg_pool2d(self.fwd[-1], 2, stride=2))
            self.bwd.append(F.avg_pool2d(self.bwd[-1], 2, stride=2))

    @staticmethod
    def _sample(vol: torch.Tensor, xy: torch.Tensor) -> torch.Tensor:
        h, w = vol.shape[-2:]
        gx, gy = xy.split([1, 1], dim=-1)
        return F.grid_sample(vol, torch.cat([2 * gx / (w - 1) - 1, 2 * gy / (h - 1) - 1], dim=-1), align_corners=True)

    def lookup(self, at0: torch.Tensor, at1: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Correlation windows of the forward volume at ``at0`` and of the backward one at ``at1``
        (``[B, 2, h, w]`` pixel positions), each ``[B, levels * (2r+1)^2, h, w]``."""
        r = self.radius
        p0, p1 = at0.permute(0, 2, 3, 1), at1.permute(0, 2, 3, 1)
        b, h, w, _ = p0.shape
        d = torch.linspace(-r, r, 2 * r + 1, device=p0.device)
        # the window's first index offsets x and its second y (RAFT's layout, kept for the weights)
        offsets = torch.stack(torch.meshgrid(d, d, indexing="ij"), dim=-1).view(1, 2 * r + 1, 2 * r + 1, 2)
        out0, out1 = [], []
        for i in range(self.levels):
            c0 = p0.reshape(b * h * w, 1, 1, 2) / 2**i + offsets
            c1 = p1.reshape(b * h * w, 1, 1, 2) / 2**i + offsets
            out0.append(self._sample(self.fwd[i], c0).view(b, h, w, -1))
            out1.append(self._sample(self.bwd[i], c1).view(b, h, w, -1))
        return (torch.cat(out0, -1).permute(0, 3, 1, 2).contiguous().float(),
                torch.cat(out1, -1).permute(0, 3, 1, 2).contiguous().float())


# ---------------------------------------------------------------- correlation feature encoder (1/8)

class BottleneckBlock(nn.Module):
    """1x1 -> 3x3 (stride) -> 1x1 convolutions with instance norms and a residual (1x1 conv when strided)."""

    def __init__(self, cin: int, cout: int, stride: int = 1) -> None:
        super().__init__()
        mid = cout // 4
        self.conv1 = nn.Conv2d(cin, mid, 1)
        self.conv2 = nn.Conv2d(mid, mid, 3, padding=1, stride=stride)
        self.conv3 = nn.Conv2d(mid, cout, 1)
        self.norm1, self.norm2, self.norm3 = nn.InstanceNorm2d(mid), nn.InstanceNorm2d(mid), nn.InstanceNorm2d(cout)
        self.relu = nn.ReLU()
        self.downsample = None if stride == 1 else nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride), nn.InstanceNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.relu(self.norm1(self.conv1(x)))
        y = self.relu(self.norm2(self.conv2(y)))
        y = self.relu(self.norm3(self.conv3(y)))
        return self.relu((x if self.downsample is None else self.downsample(x)) + y)


class SmallEncoder(nn.Module):
    """RAFT's small feature encoder with instance norms: ``[B, 3, H, W]`` -> ``[B, out, H/8, W/8]``."""

    def __init__(self, out_dim: int = FEAT_DIM) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 7, stride=2, padding=3)
        self.norm1 = nn.InstanceNorm2d(32)
        self.relu1 = nn.ReLU()
        self.layer1 = nn.Sequential(BottleneckBlock(32, 32), BottleneckBlock(32, 32))
        self.layer2 = nn.Sequential(BottleneckBlock(32, 64, 2), BottleneckBlock(64, 64))
        self.layer3 = nn.Sequential(BottleneckBlock(64, 96, 2), BottleneckBlock(96, 96))
        self.conv2 = nn.Conv2d(96, out_dim, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu1(self.norm1(self.conv1(x)))
        return self.conv2(self.layer3(self.layer2(self.layer1(x))))


# ---------------------------------------------------------------- IFRNet-style pyramid and decoders

def conv_prelu(cin: int, cout: int, k: int = 3, stride: int = 1, pad: int = 1) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, pad), nn.PReLU(cout))


class ResBlock(nn.Module):
    """IFRNet's residual block: its last ``side`` channels get two extra convolutions of their own."""

    def __init__(self, ch: int, side: int) -> None:
        super().__init__()
        self.side = side
        self.conv1 = conv_prelu(ch, ch)
        self.conv2 = conv_prelu(side, side)  # on the last `side` channels only
        self.conv3 = conv_prelu(ch, ch)
        self.conv4 = conv_prelu(side, side)
        self.conv5 = nn.Conv2d(ch, ch, 3, 1, 1)
        self.prelu = nn.PReLU(ch)

    def _side(self, x: torch.Tensor, conv: nn.Module) -> torch.Tensor:
        return torch.cat([x[:, :-self.side], conv(x[:, -self.side:])], 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.conv3(self._side(self.conv1(x), self.conv2))
        out = self.conv5(self._side(out, self.conv4))
        return self.prelu(x + out)


class Encoder(nn.Module):
    """Image pyramid: ``pyramid{k}`` halves the resolution, k = 1..4 (features at 1/2 .. 1/16)."""

    def __init__(self, channels: tuple[int, ...] = CHANNELS) -> None:
        super().__init__()
        self.depth = len(channels)
        for k, (cin, cout) in enumerate(zip((3, *channels[:-1]), channels, strict=True), 1):
            self.add_module(f"pyramid{k}", nn.Sequential(conv_prelu(cin, cout, 3, 2, 1), conv_prelu(cout, cout)))

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        feats = []
        for k in range(1, self.depth + 1):
            x = getattr(self, f"pyramid{k}")(x)
            feats.append(x)
        return feats


def _decoder_block(cin: int, ch: int, cout: int) -> nn.Sequential:
    return nn.Sequential(conv_prelu(cin, ch), ResBlock(ch, SKIP_CHANNELS), nn.ConvTranspose2d(ch, cout, 4, 2, 1))


class InitDecoder(nn.Module):
    """Coarsest level: both frames' features and t -> flows t->0, t->1 and the feature at t, upsampled x2."""

    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.convblock = _decoder_block(2 * cin + 1, 2 * cin, cout + 4)

    def forward(self, f0: torch.Tensor, f1: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        b, _, h, w = f0.shape
        out = self.convblock(torch.cat([f0, f1, t.expand(b, 1, h, w)], 1))
        flow0, flow1 = torch.chunk(out[:, :4], 2, 1)
        return flow0, flow1, out[:, 4:]


class IntermediateDecoder(nn.Module):
    """Finer level: the feature at t, both frames' features warped by the flows, and the flows ->
    flow residuals (added to the x2 upsampled flows) and the next feature at t."""

    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.convblock = _decoder_block(3 * cin + 4, 3 * cin, cout + 4)

    def forward(self, ft: torch.Tensor, f0: torch.Tensor, f1: torch.Tensor, flow0: torch.Tensor,
                flow1: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        out = self.convblock(torch.cat([ft, warp(f0, flow0), warp(f1, flow1), flow0, flow1], 1))
        d0, d1 = torch.chunk(out[:, :4], 2, 1)
        return d0 + 2.0 * _resize(flow0, 2.0), d1 + 2.0 * _resize(flow1, 2.0), out[:, 4:]


class MultiFlowDecoder(nn.Module):
    """Finest level: ``num_flows`` flow pairs, blend masks (sigmoid) and colour residuals at full size."""

    def __init__(self, cin: int, num_flows: int = NUM_FLOWS) -> None:
        super().__init__()
        self.num_flows = num_flows
        self.convblock = _decoder_block(3 * cin + 4, 3 * cin, 8 * num_flows)

    def forward(self, ft: torch.Tensor, f0: torch.Tensor, f1: torch.Tensor, flow0: torch.Tensor,
                flow1: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        n = self.num_flows
        out = self.convblock(torch.cat([ft, warp(f0, flow0), warp(f1, flow1), flow0, flow1], 1))
        d0, d1, mask, res = torch.split(out, [2 * n, 2 * n, n, 3 * n], 1)
        flow0 = d0 + 2.0 * _resize(flow0, 2.0).repeat(1, n, 1, 1)
        flow1 = d1 + 2.0 * _resize(flow1, 2.0).repeat(1, n, 1, 1)
        return flow0, flow1, torch.sigmoid(mask), res


class SmallUpdateBlock(nn.Module):
    """Refines a level's feature at t and its flow pair from the correlation looked up along the flows
    (computed at 1/8; ``scale`` > 1 for finer levels: inputs are downsampled, updates upsampled)."""

    def __init__(self, cdim: int, scale: int | None = None, hidden: int = 76, flow_dim: int = 20,
                 corr_dim: int = 64, fc_dim: int = 68) -> None:
        super().__init__()
        planes = 2 * CORR_LEVELS * (2 * CORR_RADIUS + 1) ** 2
        self.scale_factor = scale
        self.convc1 = nn.Conv2d(planes, corr_dim, 1)
        self.convf1 = nn.Conv2d(4, 2 * flow_dim, 7, padding=3)
        self.convf2 = nn.Conv2d(2 * flow_dim, flow_dim, 3, padding=1)
        self.conv = nn.Conv2d(corr_dim + flow_dim, fc_dim, 3, padding=1)
        lrelu = nn.LeakyReLU(0.1)
        self.gru = nn.Sequential(nn.Conv2d(fc_dim + 4 + cdim, hidden, 3, padding=1), lrelu, nn.Conv2d(hidden, hidden, 3, padding=1))
        self.feat_head = nn.Sequential(nn.Conv2d(hidden, hidden, 3, padding=1), lrelu, nn.Conv2d(hidden, cdim, 3, padding=1))
        self.flow_head = nn.Sequential(nn.Conv2d(hidden, hidden, 3, padding=1), lrelu, nn.Conv2d(hidden, 4, 3, padding=1))
        self.lrelu = lrelu

    def forward(self, ft: torch.Tensor, flow: torch.Tensor, corr: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        s = self.scale_factor
        if s is not None:
            ft = _resize(ft, 1 / s)
        c = self.lrelu(self.convc1(corr))
        f = self.lrelu(self.convf2(self.lrelu(self.convf1(flow))))
        x = torch.cat([self.lrelu(self.conv(torch.cat([c, f], 1))), flow, ft], 1)
        hid = self.gru(x)
        d_ft, d_flow = self.feat_head(hid), self.flow_head(hid)
        if s is not None:
            d_ft, d_flow = _resize(d_ft, s), s * _resize(d_flow, s)
        return d_ft, d_flow


class AMTS(nn.Module):
    """AMT-S (``corr_radius=3, corr_lvls=4, num_flows=3``); :meth:`forward` returns the frame at ``t``."""

    def __init__(self) -> None:
        super().__init__()
        c = CHANNELS
        self.num_flows = NUM_FLOWS
        self.feat_encoder = SmallEncoder()
        self.encoder = Encoder(c)
        self.decoder4 = InitDecoder(c[3], c[2])
        self.decoder3 = IntermediateDecoder(c[2], c[1])
        self.decoder2 = IntermediateDecoder(c[1], c[0])
        self.decoder1 = MultiFlowDecoder(c[0])
        self.update4 = SmallUpdateBlock(c[2])
        self.update3 = SmallUpdateBlock(c[1], 2)
        self.update2 = SmallUpdateBlock(c[0], 4)
        n = NUM_FLOWS
        self.comb_block = nn.Sequential(nn.Conv2d(3 * n, 6 * n, 3, 1, 1), nn.PReLU(6 * n), nn.Conv2d(6 * n, 3, 3, 1, 1))

    @staticmethod
    def _lookup(corr: CorrPyramid, grid: torch.Tensor, flow0: torch.Tensor, flow1: torch.Tensor, t: torch.Tensor,
                down: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Correlation along the flows extended linearly to 0 -> 1 and 1 -> 0, at 1/8 (flows scaled by 1/down)."""
        if down != 1:
            flow0, flow1 = _resize(flow0, 1 / down) / down, _resize(flow1, 1 / down) / down
        c0, c1 = corr.lookup(grid + flow1 * (1.0 / t), grid + flow0 * (1.0 / (1.0 - t)))
        return torch.cat([c0, c1], 1), torch.cat([flow0, flow1], 1)

    def forward(self, img0: torch.Tensor, img1: torch.Tensor, t: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
        """``img0``, ``img1``: ``[B, 3, H, W]`` in [0, 1]; ``t``: ``[1 or B, 1, 1, 1]``; ``scale``: the
        resolution the flows are estimated at (VBench lowers it when GPU memory is short)."""
        mean = torch.cat([img0, img1], 2).mean(1, keepdim=True).mean(2, keepdim=True).mean(3, keepdim=True)
        img0, img1 = img0 - mean, img1 - mean
        x0, x1 = (_resize(img0, scale), _resize(img1, scale)) if scale != 1.0 else (img0, img1)
        b, _, h, w = x0.shape
        grid = _pixel_grid(b, h // 8, w // 8, img0.device)
        fmap0, fmap1 = torch.split(self.feat_encoder(torch.cat([x0, x1], 0)), [b, b], 0)
        corr = CorrPyramid(fmap0, fmap1, CORR_LEVELS, CORR_RADIUS)
        f0 = self.encoder(x0)
        f1 = self.encoder(x1)

        flow0, flow1, ft = self.decoder4(f0[3], f1[3], t)
        for level, (update, down) in enumerate(((self.update4, 1), (self.update3, 2), (self.update2, 4))):
            if level:
                decoder = self.decoder3 if level == 1 else self.decoder2
                flow0, flow1, ft = decoder(ft, f0[3 - level], f1[3 - level], flow0, flow1)
            c, fl = self._lookup(corr, grid, flow0, flow1, t, down)
            d_ft, d_flow = update(ft, fl, c)
            d0, d1 = torch.chunk(d_flow, 2, 1)
            flow0, flow1, ft = flow0 + d0, flow1 + d1, ft + d_ft
        flow0, flow1, mask, res = self.decoder1(ft, f0[0], f1[0], flow0, flow1)
        if scale != 1.0:
            flow0, flow1 = _resize(flow0, 1.0 / scale) * (1.0 / scale), _resize(flow1, 1.0 / scale) * (1.0 / scale)
            mask, res = _resize(mask, 1.0 / scale), _resize(res, 1.0 / scale)
        return torch.clamp(self._combine(img0, img1, flow0, flow1, mask, res, mean), 0, 1)

    def _combine(self, img0: torch.Tensor, img1: torch.Tensor, flow0: torch.Tensor, flow1: torch.Tensor,
                 mask: torch.Tensor, res: torch.Tensor, mean: torch.Tensor) -> torch.Tensor:
        """Blend the ``num_flows`` warped pairs, add back the mean and the residuals, average them and
        add ``comb_block``'s correction of their concatenation."""
        b, c, h, w = flow0.shape
        n = c // 2

        def per_flow(x: torch.Tensor, ch: int) -> torch.Tensor:
            return x.reshape(b, n, ch, h, w).reshape(-1, ch, h, w)

        def repeat(x: torch.Tensor) -> torch.Tensor:
            return torch.stack([x] * n, 1).reshape(-1, *x.shape[1:])

        blends = (per_flow(mask, 1) * warp(repeat(img0), per_flow(flow0, 2))
                  + (1 - per_flow(mask, 1)) * warp(repeat(img1), per_flow(flow1, 2))
                  + repeat(mean) + per_flow(res, 3)).reshape(b, n, 3, h, w)
        return blends.mean(1) + self.comb_block(blends.view(b, -1, h, w))


# ---------------------------------------------------------------- VBench motion smoothness

def load_amt_s(path: str | Path, device: str = "cpu") -> AMTS:
    """AMT-S from a checkpoint (the released ``amt-s.pth`` keeps its weights under ``state_dict``;
    a bare state dict or ``.safetensors`` works too), loaded with ``strict=True``, in eval mode."""
    from worldolympiad.weights import read_state_dict

    sd = read_state_dict(path, nested_key="state_dict", strip_module=True)
    model = AMTS()
    try:
        model.load_state_dict(sd, strict=True)
    except RuntimeError as e:
        raise ValueError(f"{path} is not an AMT-S checkpoint (VBench's amt-s.pth): {str(e).splitlines()[0]} "
                         f"{' '.join(str(e).splitlines()[1:])[:300]}") from e
    return model.to(device).eval()


def vbench_scale(h: int, w: int, device: str) -> float:
    """VBench's resolution factor for the flow estimation: 1 on CPU; on CUDA lowered when the frame is
    large for the card's memory (anchors 1024 x 512 px per 1.5 GiB beyond 2.5 GiB)."""
    if not device.startswith("cuda"):
        return 1.0  # VBench: "Do not resize in cpu mode" (its anchors make the factor 1)
    vram = torch.cuda.get_device_properties(device).total_memory
    scale = 1024 * 512 / (h * w) * np.sqrt((vram - 2500 * 1024**2) / (1500 * 1024**2))
    scale = min(1.0, float(scale))
    return float(1 / np.floor(1 / np.sqrt(scale) * 16) * 16)


def pad_amounts(h: int, w: int, divisor: int, min_side: int) -> tuple[int, int, int, int]:
    """Replicate padding (left, right, top, bottom) to multiples of ``divisor`` (VBench's ``InputPadder``),
    and further to at least ``min_side`` (:data:`MIN_PADDED_SIDE`: below it AMT returns NaN)."""

    def amount(n: int) -> int:
        pad = (((n // divisor) + 1) * divisor - n) % divisor
        while n + pad < min_side:
            pad += divisor
        return pad

    ph, pw = amount(h), amount(w)
    return pw // 2, pw - pw // 2, ph // 2, ph - ph // 2


class MotionSmoothness:
    """VBench ``MotionSmoothness.motion_score`` on one chunk (LV-Bench ``compute_motion_smoothness``).

    The even frames (0, 2, 4, ...) are scaled to [0, 1] and padded; AMT-S interpolates the midpoint of
    each consecutive pair; each interpolation, as ``uint8`` (``x * 255`` truncated), is compared with
    the odd frame it replaces (mean absolute difference over pixels and channels); the chunk's value
    is ``(255 - mean difference) / 255`` (1 = every dropped frame recovered exactly).
    """

    def __init__(self, path: str | Path, device: str = "cpu") -> None:
        self.model = load_amt_s(path, device)
        self.device = device
        self.name = f"AMT-S (VBench motion smoothness) from {path}"

    def midpoints(self, frames: np.ndarray) -> torch.Tensor:
        """AMT-S's midpoints of consecutive frames of ``uint8 [T, H, W, 3]``: ``float32 [T - 1, H, W, 3]``
        in [0, 1], one pair per forward as VBench (padded as :func:`pad_amounts`, then cropped back)."""
        h, w = frames.shape[1:3]
        scale = vbench_scale(h, w, self.device)
        left, right, top, bottom = pad_amounts(h, w, int(16 / scale), int(np.ceil(MIN_PADDED_SIDE / scale)))
        x = torch.from_numpy(np.ascontiguousarray(frames)).permute(0, 3, 1, 2) / 255.0
        x = F.pad(x, [left, right, top, bottom], mode="replicate")
        t = torch.tensor(0.5).float().view(1, 1, 1, 1).to(self.device)
        out = []
        with torch.no_grad():
            for i in range(len(x) - 1):
                mid = self.model(x[i:i + 1].to(self.device), x[i + 1:i + 2].to(self.device), t, scale=scale).cpu()
                out.append(mid[0, :, top:mid.shape[-2] - bottom, left:mid.shape[-1] - right].permute(1, 2, 0))
        return torch.stack(out)

    def interpolate(self, frames: np.ndarray) -> np.ndarray:
        """:meth:`midpoints` as VBench's ``tensor2img`` writes them: ``x * 255`` truncated to ``uint8``."""
        return (self.midpoints(frames) * 255.0).numpy().clip(0, 255).astype(np.uint8)

    def __call__(self, frames: np.ndarray) -> float:
        """Motion smoothness of ``uint8 [T, H, W, 3]`` (T >= 3) in [0, 1]."""
        if len(frames) < 3:
            raise ValueError(f"AMT motion smoothness needs at least 3 frames per chunk (two even frames to "
                             f"interpolate between), got {len(frames)}; use fewer chunks or a longer video")
        mids = self.interpolate(frames[0::2])
        dropped = frames[1::2][: len(mids)]
        diff = [float(np.mean(np.abs(a.astype(np.int16) - b.astype(np.int16)))) for a, b in zip(dropped, mids, strict=True)]
        return float((255.0 - np.mean(diff)) / 255.0)


def state_dict_layout(model: nn.Module | None = None) -> list[tuple[str, list[int]]]:
    """``(name, shape)`` of every tensor of AMT-S's state dict, in order (what the checkpoint holds)."""
    sd: dict[str, Any] = (model or AMTS()).state_dict()
    return [(k, list(v.shape)) for k, v in sd.items()]
