"""LV-Bench's published VDE signals, computed from real model architectures loaded from local paths.

LV-Bench (``LV-Bench/metrics.py`` in the Inferix repository) scores every chunk with a VBench
dimension. Each signal below reproduces that chunk function (VBench's preprocessing and formula)
on the same architecture, loaded from a local path given as a track option; nothing is downloaded.

============  =======================  ================================================================
signal        option(s)                published computation per chunk (all frames of the chunk)
============  =======================  ================================================================
clarity       ``musiq_path``           MUSIQ imaging quality (pyiqa's ``MUSIQ`` architecture, SPAQ
                                       checkpoint): frames scaled to a longer side <= 512
                                       (VBench ``transform(..., 'longer')``), ``/255``, mean score
motion        ``amt_path``             VBench ``MotionSmoothness``: AMT-S (:mod:`tracks.longvideo.amt`)
                                       interpolates each odd frame from its even neighbours; value
                                       (255 - mean |frame - interpolation|) / 255 over the chunk
aesthetic     ``aesthetic_head`` +     LAION predictor (``nn.Linear(768, 1)``) on unit-norm CLIP
              ``aesthetic_clip_path``  ViT-L/14 image embeddings (VBench ``clip_transform(224)``),
              (or ``clip_path``)       mean of ``score / 10``
background    ``clip_path``            CLIP (LV-Bench: ViT-B/32) image embeddings; mean over frames
                                       t >= 1 of (max(0, cos(f_t, f_0)) + max(0, cos(f_t, f_t-1))) / 2
subject       ``dino_path``            the same over DINO (LV-Bench: ViT-B/16) CLS features
                                       (VBench ``dino_transform(224)``: shorter side 224, no crop)
dynamic       ``raft_path``            VBench ``DynamicDegree``: RAFT flow (20 iterations) between
                                       consecutive frames sampled at ~8 fps, mean of the top 5 % flow
                                       magnitudes per pair; the chunk moves (1.0) when at least
                                       round(4 T / 16) pairs exceed 6 * min(H, W) / 256, else 0.0
============  =======================  ================================================================

CLIP and DINO are loaded with ``transformers`` (the Hub's ``openai/clip-vit-base-patch32``,
``openai/clip-vit-large-patch14`` and ``facebook/dino-vitb16`` folders are ports of the checkpoints
LV-Bench loads through ``clip`` and ``torch.hub``); RAFT with ``torchvision`` (``raft_large``'s
``C_T_V1`` weights are the original ``raft-things.pth``); MUSIQ with ``pyiqa``'s architecture
(``pip install --no-deps pyiqa``: its declared dependencies are not needed for the architecture);
AMT-S with this project's own implementation of VBench's architecture (``amt-s.pth`` loads as is).
Torch files are read with ``weights_only=True``.

A signal whose option is absent, whose package is missing or whose weights do not load keeps its
model-free complement (:mod:`tracks.longvideo.signals`); :func:`build_learned_signals` returns a
provenance line for every signal and the load errors, and the track reports both.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from worldolympiad.weights import read_state_dict

logger = logging.getLogger(__name__)

CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
BATCH = 32  # frames per forward (VBench's aesthetic batch size)

# signal -> the options that switch it to its published model
SIGNAL_OPTIONS: dict[str, tuple[str, ...]] = {
    "clarity": ("musiq_path",),
    "motion": ("amt_path",),
    "aesthetic": ("aesthetic_head", "aesthetic_clip_path"),
    "background": ("clip_path",),
    "subject": ("dino_path",),
    "dynamic": ("raft_path",),
}

# what the model-free complement of each signal is (tracks.longvideo.signals)
FALLBACK: dict[str, str] = {
    "clarity": "variance of the Laplacian",
    "motion": "half-way DIS-flow interpolation error",
    "aesthetic": "colourfulness + RMS contrast",
    "background": "HSV-histogram consistency",
    "subject": "SSIM consistency",
    "dynamic": "top-5 % DIS-flow magnitude",
}


def _exists(path: str | Path, option: str) -> Path:
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p} does not exist (longvideo.{option}); pass a local path, nothing is downloaded")
    return p


def _to_tensor(frames: np.ndarray) -> Any:
    """``uint8 [T, H, W, 3]`` → ``uint8 torch [T, 3, H, W]`` (what VBench's ``load_video`` returns)."""
    import torch

    return torch.from_numpy(np.ascontiguousarray(frames)).permute(0, 3, 1, 2).contiguous()


def clip_transform(n_px: int) -> Callable[[Any], Any]:
    """VBench ``clip_transform``: bicubic resize (no antialias) of the shorter side, centre crop, CLIP normalisation."""
    from torchvision import transforms as T

    return T.Compose([T.Resize(n_px, interpolation=T.InterpolationMode.BICUBIC, antialias=False), T.CenterCrop(n_px),
                      T.Lambda(lambda x: x.float().div(255.0)), T.Normalize(CLIP_MEAN, CLIP_STD)])


def dino_transform(n_px: int) -> Callable[[Any], Any]:
    """VBench ``dino_transform``: bilinear resize (no antialias) of the shorter side, ImageNet normalisation."""
    from torchvision import transforms as T

    return T.Compose([T.Resize(size=n_px, antialias=False), T.Lambda(lambda x: x.float().div(255.0)),
                      T.Normalize(IMAGENET_MEAN, IMAGENET_STD)])


def first_prev_consistency(feats: np.ndarray) -> float:
    """VBench consistency over unit-norm features ``[T, D]``: mean over t >= 1 of
    ``(max(0, cos(f_t, f_{t-1})) + max(0, cos(f_t, f_0))) / 2``; 1.0 for a single frame."""
    if len(feats) < 2:
        return 1.0
    to_first = feats[1:] @ feats[0]
    to_prev = (feats[1:] * feats[:-1]).sum(axis=1)
    return float(np.mean(0.5 * (np.clip(to_first, 0, None) + np.clip(to_prev, 0, None))))


def _unit(x: Any) -> np.ndarray:
    f = x.float().cpu().numpy().astype(np.float64)
    return f / np.maximum(np.linalg.norm(f, axis=1, keepdims=True), 1e-12)


class ClipImageEncoder:
    """CLIP image embeddings (``get_image_features``) of a local transformers CLIP folder.

    Reads a full ``CLIPModel`` folder or a ``CLIPVisionModelWithProjection`` one; only the vision
    tower and its projection are loaded (openai ``clip``'s ``encode_image``).
    """

    def __init__(self, path: str | Path, device: str = "cpu", option: str = "clip_path") -> None:
        import torch
        from transformers import CLIPVisionModelWithProjection

        p = _exists(path, option)
        self.torch = torch
        self.model = CLIPVisionModelWithProjection.from_pretrained(str(p)).to(device).eval()  # type: ignore[arg-type]
        self.n_px = int(self.model.config.image_size)
        self.transform = clip_transform(self.n_px)
        self.device = device
        self.name = f"CLIP ViT (patch {self.model.config.patch_size}, width {self.model.config.hidden_size}) from {p}"

    def __call__(self, frames: np.ndarray) -> np.ndarray:
        """``uint8 [T, H, W, 3]`` → unit-norm ``float64 [T, D]``."""
        out = []
        with self.torch.no_grad():
            x = _to_tensor(frames)
            for i in range(0, len(x), BATCH):
                px = self.transform(x[i:i + BATCH]).to(self.device)
                out.append(self.model(pixel_values=px).image_embeds)
        return _unit(self.torch.cat(out))


class DinoEncoder:
    """CLS features of a local transformers DINO / DINOv2 / ViT folder (``AutoModel``), VBench preprocessing."""

    def __init__(self, path: str | Path, device: str = "cpu") -> None:
        import torch
        from transformers import AutoModel

        p = _exists(path, "dino_path")
        self.torch = torch
        from transformers import AutoConfig

        # DINO's hub model returns the normed CLS token; transformers' ViT adds a pooler LV-Bench does not use
        kw: dict[str, Any] = {"add_pooling_layer": False} if AutoConfig.from_pretrained(str(p)).model_type == "vit" else {}
        self.model = AutoModel.from_pretrained(str(p), **kw).to(device).eval()
        self.n_px = int(getattr(self.model.config, "image_size", 224))
        self.transform = dino_transform(self.n_px)
        self.device = device
        self.name = f"{type(self.model).__name__} (width {self.model.config.hidden_size}) from {p}"

    def __call__(self, frames: np.ndarray) -> np.ndarray:
        """``uint8 [T, H, W, 3]`` → unit-norm CLS features ``float64 [T, D]`` (after the final norm)."""
        import inspect

        kw = {"interpolate_pos_encoding": True} if "interpolate_pos_encoding" in inspect.signature(self.model.forward).parameters else {}
        out = []
        with self.torch.no_grad():
            x = _to_tensor(frames)
            for i in range(0, len(x), BATCH):
                px = self.transform(x[i:i + BATCH]).to(self.device)
                out.append(self.model(pixel_values=px, **kw).last_hidden_state[:, 0])
        return _unit(self.torch.cat(out))


def _load_state_dict(p: Path) -> dict[str, Any]:
    return read_state_dict(p, nested_key="params", strip_module=True)


def load_linear_stack(path: str | Path) -> Callable[[np.ndarray], np.ndarray]:
    """A stack of Linear layers from a state dict (LAION's predictor: ``weight`` [1, 768], ``bias`` [1]).

    Layers are the 2-D ``*weight`` tensors in file order, each with its ``*bias`` when present.
    """
    p = _exists(path, "aesthetic_head")
    sd = _load_state_dict(p)
    layers = []
    for k, w in sd.items():
        if k.endswith("weight") and w.ndim == 2:
            b = sd.get(k[: -len("weight")] + "bias")
            layers.append((w.double().numpy(), None if b is None else b.double().numpy()))
    if not layers:
        raise ValueError(f"{p}: no Linear weights found (expected keys like 'weight' or 'layers.0.weight')")

    def head(x: np.ndarray) -> np.ndarray:
        for w, b in layers:
            x = x @ w.T + (0.0 if b is None else b)
        return x[:, 0]

    return head


class MusiqScorer:
    """MUSIQ (pyiqa's architecture) from a local checkpoint; constructor arguments from ``<stem>.json`` if present.

    The published ``musiq_spaq_ckpt-358bb6af.pth`` needs no JSON (pyiqa's defaults, one output).
    """

    def __init__(self, path: str | Path, device: str = "cpu") -> None:
        import torch

        try:
            from pyiqa.archs.musiq_arch import MUSIQ
        except ImportError as e:
            raise ImportError(f"MUSIQ needs pyiqa's architecture ({e}); install it with `pip install --no-deps pyiqa`") from e
        p = _exists(path, "musiq_path")
        cfg_path = p.with_suffix(".json")
        kwargs: dict[str, Any] = json.loads(cfg_path.read_text()) if cfg_path.exists() else {}
        sd = _load_state_dict(p)
        if "head.0.weight" in sd:  # a 10-bin distribution head (AVA checkpoints)
            kwargs.setdefault("num_class", int(sd["head.0.weight"].shape[0]))
        self.torch = torch
        self.model = MUSIQ(pretrained=False, pretrained_model_path=None, **kwargs)
        self.model.load_state_dict(sd, strict=True)
        self.model.to(device).eval()
        self.device = device
        self.name = f"MUSIQ (pyiqa architecture{', ' + json.dumps(kwargs) if kwargs else ''}) from {p}"

    def __call__(self, frames: np.ndarray) -> float:
        """Mean MUSIQ score of the frames (LV-Bench ``compute_imaging_quality``; VBench then divides by 100)."""
        x = longer_side_512(_to_tensor(frames))
        with self.torch.no_grad():
            return float(np.mean([float(self.model(x[i:i + 1].to(self.device))) for i in range(len(x))]))


def longer_side_512(images: Any) -> Any:
    """VBench imaging-quality preprocessing ``'longer'``: longer side <= 512 (no antialias), then ``/255``."""
    from torchvision import transforms as T

    h, w = images.shape[-2:]
    if max(h, w) > 512:
        s = 512.0 / max(h, w)
        images = T.Resize(size=(int(s * h), int(s * w)), antialias=False)(images)
    return images / 255.0


def pad_to_8(x: Any) -> Any:
    """RAFT's ``InputPadder`` (sintel mode): replicate-pad ``[B, C, H, W]`` evenly to multiples of 8."""
    import torch.nn.functional as F

    h, w = x.shape[-2:]
    ph, pw = (((h // 8) + 1) * 8 - h) % 8, (((w // 8) + 1) * 8 - w) % 8
    return F.pad(x, [pw // 2, pw - pw // 2, ph // 2, ph - ph // 2], mode="replicate")


class RaftDynamic:
    """VBench's dynamic degree of one chunk from a torchvision RAFT (large or small) state dict."""

    ITERS = 20  # VBench: iters=20, test_mode=True

    def __init__(self, path: str | Path, device: str = "cpu") -> None:
        import torch
        from torchvision.models.optical_flow import raft_large, raft_small

        p = _exists(path, "raft_path")
        sd = _load_state_dict(p)
        errs = []
        for build in (raft_large, raft_small):
            model = build(weights=None)
            try:
                model.load_state_dict(sd, strict=True)
            except RuntimeError as e:
                errs.append(f"{build.__name__}: {str(e).splitlines()[0]}")
                continue
            self.model = model.to(device).eval()
            self.name = f"RAFT (torchvision {build.__name__}) from {p}"
            break
        else:
            raise ValueError(f"{p} is neither a torchvision raft_large nor raft_small state dict ({'; '.join(errs)})")
        self.torch = torch
        self.device = device

    MIN_SIDE = 128  # torchvision's RAFT refuses feature maps under 16 px (frames under 128 px)

    def upscaled(self, frames: Any) -> Any:
        """``float [T, 3, H, W]`` bilinearly upscaled so the shorter side is at least :attr:`MIN_SIDE`.

        VBench runs RAFT at the video's own size; LV-Bench's videos are larger than 128 px, so this
        only changes small videos (flow and the threshold are then both in the upscaled pixels).
        """
        import torch.nn.functional as F

        h, w = frames.shape[-2:]
        if min(h, w) >= self.MIN_SIDE:
            return frames
        s = self.MIN_SIDE / min(h, w)
        return F.interpolate(frames, size=(math.ceil(h * s), math.ceil(w * s)), mode="bilinear", align_corners=False)

    def pair_scores(self, frames: Any) -> list[float]:
        """Mean of the top 5 % flow magnitudes per consecutive pair of ``float [T, 3, H, W]`` frames in
        ``[0, 255]`` (on the padded frames, as VBench)."""
        x = pad_to_8(frames) / 127.5 - 1.0  # original RAFT: 2 * (x / 255) - 1
        out = []
        with self.torch.no_grad():
            for a, b in zip(x[:-1], x[1:], strict=True):
                flow = self.model(a[None].to(self.device), b[None].to(self.device), num_flow_updates=self.ITERS)[-1]
                rad = flow[0].norm(dim=0).flatten()
                k = int(rad.numel() * 0.05)
                out.append(float(rad.topk(k).values.mean()) if k > 0 else math.nan)
        return out

    def __call__(self, frames: np.ndarray, fps: float) -> float:
        """1.0 when the chunk moves by VBench's rule, else 0.0 (LV-Bench's per-chunk dynamic degree)."""
        x = self.upscaled(_to_tensor(frames[:: max(1, round(fps / 8))]).float())
        thres = 6.0 * min(x.shape[-2:]) / 256.0
        count_num = round(4 * len(x) / 16.0)
        return 1.0 if moves(self.pair_scores(x), thres, count_num) else 0.0


def moves(scores: list[float], thres: float, count_num: int) -> bool:
    """VBench ``check_move``: true once ``count_num`` pair scores have exceeded ``thres``."""
    count = 0
    for s in scores:
        if s > thres:
            count += 1
        if count >= count_num:
            return True
    return False


_LOADED: dict[tuple[str, str, str, float], Any] = {}


def cached(kind: Callable[..., Any], path: str | Path, device: str, *args: Any) -> Any:
    """One loaded model per (class, file, device, modification time) in this process.

    The track builds its signals for every row; without this a run over many videos would read
    ViT-L/14 from disk once per video. A changed checkpoint (new mtime) is read again.
    """
    p = Path(path)
    key = (kind.__qualname__, str(p.resolve()), device, p.stat().st_mtime if p.exists() else -1.0)
    if key not in _LOADED:
        _LOADED[key] = kind(p, device, *args)
    return _LOADED[key]


@dataclass
class LearnedSignals:
    """What :func:`build_learned_signals` loaded.

    Attributes:
        signals: signal name → per-chunk function (``uint8 [T, H, W, 3]`` → value).
        provenance: every signal in :data:`SIGNAL_OPTIONS` → one line saying what computes it.
        errors: load errors, each with the option and the fix (the signal then falls back).
    """

    signals: dict[str, Callable[[np.ndarray], float]]
    provenance: dict[str, str]
    errors: list[str]


def build_learned_signals(options: Mapping[str, Any], device: str = "cpu", fps: float = 16.0) -> LearnedSignals:
    """Per-chunk functions of the published signals whose local weights are given in ``options``.

    Args:
        options: track options (``longvideo.musiq_path``, ``amt_path``, ``clip_path``,
            ``aesthetic_clip_path``, ``aesthetic_head``, ``dino_path``, ``raft_path``).
        device: torch device for the models.
        fps: the video's frame rate (the dynamic degree samples ~8 fps as VBench does).
    """
    opt: dict[str, Any] = {k: options.get(f"longvideo.{k}") for ks in SIGNAL_OPTIONS.values() for k in ks}
    opt["clip_path"] = options.get("longvideo.clip_path")
    signals: dict[str, Callable[[np.ndarray], float]] = {}
    prov: dict[str, str] = {}
    errors: list[str] = []

    def fallback(name: str, why: str) -> None:
        prov[name] = f"fallback: model-free {FALLBACK[name]} ({why})"

    def load(name: str, option: str, make: Callable[[], tuple[Callable[[np.ndarray], float], str]]) -> None:
        try:
            fn, what = make()
        except Exception as e:  # noqa: BLE001 - a broken checkpoint falls back and is reported
            errors.append(f"longvideo.{option}: {type(e).__name__}: {e}; {name} stays model-free")
            fallback(name, f"longvideo.{option} did not load: {type(e).__name__}")
            return
        signals[name] = fn
        prov[name] = f"weights: {what}"

    def not_given(name: str) -> str:
        keys = " + ".join(f"longvideo.{k}" for k in SIGNAL_OPTIONS[name])
        return f"no {keys} given"

    # clarity: MUSIQ
    if opt["musiq_path"]:
        def make_musiq() -> tuple[Callable[[np.ndarray], float], str]:
            m = cached(MusiqScorer, opt["musiq_path"], device)
            return m, m.name
        load("clarity", "musiq_path", make_musiq)
    else:
        fallback("clarity", not_given("clarity"))
    # motion: AMT-S (VBench motion smoothness)
    if opt["amt_path"]:
        def make_amt() -> tuple[Callable[[np.ndarray], float], str]:
            from tracks.longvideo.amt import MotionSmoothness

            m = cached(MotionSmoothness, _exists(opt["amt_path"], "amt_path"), device)
            return m, m.name
        load("motion", "amt_path", make_amt)
    else:
        fallback("motion", not_given("motion"))
    # background: CLIP (ViT-B/32 in LV-Bench)
    clip: ClipImageEncoder | None = None
    if opt["clip_path"]:
        def make_bg() -> tuple[Callable[[np.ndarray], float], str]:
            nonlocal clip
            clip = cached(ClipImageEncoder, opt["clip_path"], device)
            enc = clip
            return (lambda fr: first_prev_consistency(enc(fr))), enc.name
        load("background", "clip_path", make_bg)
    else:
        fallback("background", "no longvideo.clip_path given")
    # aesthetic: LAION head on CLIP ViT-L/14 (its own CLIP when given, else clip_path's)
    if opt["aesthetic_head"]:
        clip_opt = "aesthetic_clip_path" if opt["aesthetic_clip_path"] else "clip_path"
        if not opt[clip_opt]:
            errors.append("longvideo.aesthetic_head needs a CLIP for its embeddings: pass longvideo.aesthetic_clip_path "
                          "(LV-Bench: ViT-L/14) or longvideo.clip_path; aesthetic stays model-free")
            fallback("aesthetic", "longvideo.aesthetic_head given without a CLIP")
        else:
            def make_aes() -> tuple[Callable[[np.ndarray], float], str]:
                enc = clip if clip_opt == "clip_path" and clip is not None else cached(ClipImageEncoder, opt[clip_opt], device, clip_opt)
                head = load_linear_stack(opt["aesthetic_head"])
                return (lambda fr: float(np.mean(head(enc(fr)) / 10.0))), f"LAION head {opt['aesthetic_head']} on {enc.name}"
            load("aesthetic", "aesthetic_head", make_aes)
    else:
        fallback("aesthetic", not_given("aesthetic"))
    # subject: DINO
    if opt["dino_path"]:
        def make_dino() -> tuple[Callable[[np.ndarray], float], str]:
            enc = cached(DinoEncoder, opt["dino_path"], device)
            return (lambda fr: first_prev_consistency(enc(fr))), enc.name
        load("subject", "dino_path", make_dino)
    else:
        fallback("subject", not_given("subject"))
    # dynamic: RAFT
    if opt["raft_path"]:
        def make_raft() -> tuple[Callable[[np.ndarray], float], str]:
            r = cached(RaftDynamic, opt["raft_path"], device)
            return (lambda fr: r(fr, fps)), r.name
        load("dynamic", "raft_path", make_raft)
    else:
        fallback("dynamic", not_given("dynamic"))
    return LearnedSignals(signals, prov, errors)


def any_weights_given(options: Mapping[str, Any]) -> bool:
    """Whether any option of a published signal is set (otherwise the track never imports torch for them)."""
    keys = {k for ks in SIGNAL_OPTIONS.values() for k in ks} | {"clip_path"}
    return any(options.get(f"longvideo.{k}") for k in keys)
