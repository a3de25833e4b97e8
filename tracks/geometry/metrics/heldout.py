"""Held-out view quality of the splat fit: PSNR and SSIM (model-free), LPIPS (local weights only)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from worldolympiad.trackspec import MetricSpec
from worldolympiad.types import MetricValue

logger = logging.getLogger(__name__)


def psnr(gt: np.ndarray, pred: np.ndarray) -> float:
    """PSNR (dB) of uint8 images; identical images give ``inf`` clipped to 100 dB by the caller."""
    from skimage.metrics import peak_signal_noise_ratio

    if np.array_equal(gt, pred):
        return 100.0
    return float(peak_signal_noise_ratio(gt, pred, data_range=255))


def ssim(gt: np.ndarray, pred: np.ndarray) -> float:
    """SSIM of uint8 RGB images (gaussian window, Wang et al. constants), scikit-image."""
    from skimage.metrics import structural_similarity

    win = min(7, min(gt.shape[:2]) // 2 * 2 - 1)
    return float(structural_similarity(gt, pred, channel_axis=-1, data_range=255, gaussian_weights=True,
                                       sigma=1.5, use_sample_covariance=False, win_size=max(win, 3)))


#: Held-out renders and frames are compared after a Gaussian blur of this many pixels and a 2x area
#: downsample (v8). A splat fitted in 100 steps does not reproduce single-pixel detail, and that detail is
#: what an encode removes or keeps (4:2:0 chroma is half resolution; crf 35 smooths): at full resolution the
#: held-out PSNR of a clean yaw sweep rose 24.8 -> 29.3 dB from lossless to crf 35 x0.75 (0.05 of the track
#: score) while a 0.5-strength homography jitter sat within 0.1 dB of the clean video. After this low-pass the
#: same clean video measured 32.8 / 32.5 / 33.9 dB and the jitter 29.8 dB (bench/suites/geometry_tune, s404):
#: a misplaced held-out view is a displacement of whole structures, which survives the low-pass.
LOWPASS_SIGMA_PX = 1.0


def lowpass(img: np.ndarray, sigma: float = LOWPASS_SIGMA_PX) -> np.ndarray:
    """``uint8 [H, W, 3]`` blurred by ``sigma`` px and downsampled 2x (area): the scale held-out views are compared at
    (views under 16 px on a side are only blurred: SSIM needs a 7 px window)."""
    import cv2

    blurred = cv2.GaussianBlur(np.ascontiguousarray(img), (0, 0), sigma)
    if min(img.shape[:2]) < 16:
        return blurred
    return cv2.resize(blurred, (img.shape[1] // 2, img.shape[0] // 2), interpolation=cv2.INTER_AREA)


def _compare(fn: Any, gts: np.ndarray, preds: np.ndarray) -> tuple[list[float], list[float]]:
    low = [fn(lowpass(g), lowpass(p)) for g, p in zip(gts, preds, strict=True)]
    full = [fn(g, p) for g, p in zip(gts, preds, strict=True)]
    return low, full


def psnr_metric(spec: MetricSpec, gts: np.ndarray, preds: np.ndarray) -> MetricValue:
    """Mean PSNR of held-out renders vs frames at the comparison scale (``lowpass``); full-resolution values in details."""
    per, full = _compare(psnr, gts, preds)
    return spec.value(float(np.mean(per)), {"per_view": per, "num_views": len(per), "lowpass_sigma_px": LOWPASS_SIGMA_PX,
                                            "full_resolution": float(np.mean(full))})


def ssim_metric(spec: MetricSpec, gts: np.ndarray, preds: np.ndarray) -> MetricValue:
    """Mean SSIM of held-out renders vs frames at the comparison scale (``lowpass``); full-resolution values in details."""
    per, full = _compare(ssim, gts, preds)
    return spec.value(float(np.mean(per)), {"per_view": per, "num_views": len(per), "lowpass_sigma_px": LOWPASS_SIGMA_PX,
                                            "full_resolution": float(np.mean(full))})


def load_lpips(weights: str | Path, device: str = "cpu") -> Any:
    """LPIPS-AlexNet with its backbone read from a local torchvision AlexNet state dict.

    The pip ``lpips`` package ships the learned linear layers but fetches the AlexNet
    backbone from the internet; here the backbone comes only from ``weights``
    (``torch.load(weights_only=True)`` of ``torchvision.models.alexnet().state_dict()``, or its
    ``features.*`` subset).

    Raises:
        FileNotFoundError: ``weights`` does not exist.
        ValueError: the file is not an AlexNet state dict.
    """
    import lpips
    import torch

    path = Path(weights)
    if not path.is_file():
        raise FileNotFoundError(f"LPIPS backbone weights not found at {path}; pass geometry.lpips_weights=PATH "
                                "to a torchvision AlexNet state dict (alexnet-owt-*.pth)")
    state = torch.load(path, map_location="cpu", weights_only=True)
    feats = {k[len("features."):]: v for k, v in state.items() if k.startswith("features.")}
    if not feats:
        raise ValueError(f"{path} has no 'features.*' tensors: expected a torchvision AlexNet state dict")
    model = lpips.LPIPS(net="alex", pretrained=True, pnet_rand=True, verbose=False)
    # lpips splits AlexNet.features into slice1..5 keeping the original layer indices as names.
    loaded = 0
    for sl in (model.net.slice1, model.net.slice2, model.net.slice3, model.net.slice4, model.net.slice5):
        for idx, layer in sl.named_children():
            sub = {k.split(".", 1)[1]: v for k, v in feats.items() if k.split(".", 1)[0] == idx}
            if sub:
                layer.load_state_dict(sub)
                loaded += len(sub)
    if loaded != 10:  # 5 conv layers x (weight, bias)
        raise ValueError(f"{path}: loaded {loaded}/10 AlexNet conv tensors; is it an AlexNet state dict?")
    return model.eval().to(device)


def lpips_metric(spec: MetricSpec, gts: np.ndarray, preds: np.ndarray, weights: str | None, device: str = "cpu") -> MetricValue:
    """LPIPS of held-out renders, or ``not_applicable`` when no local backbone weights are configured."""
    if not weights:
        return spec.not_applicable("LPIPS needs local AlexNet backbone weights: set geometry.lpips_weights=PATH "
                                   "(torchvision alexnet state dict); none are downloaded")
    try:
        model = load_lpips(weights, device)
    except (FileNotFoundError, ValueError, RuntimeError) as e:
        return spec.failed(f"could not load LPIPS weights: {e}")
    import torch

    with torch.no_grad():
        a = torch.from_numpy(gts).permute(0, 3, 1, 2).float().to(device) / 127.5 - 1.0
        b = torch.from_numpy(preds).permute(0, 3, 1, 2).float().to(device) / 127.5 - 1.0
        d = model(a, b).flatten().cpu().numpy()
    return spec.value(float(d.mean()), {"per_view": d.tolist(), "weights": str(weights)})
