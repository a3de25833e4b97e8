"""3-D Gaussian splatting fit on recovered cameras (gsplat on CUDA, our tiled rasterizer on CPU).

Protocol: Gaussians are initialised from the SfM sparse points (coloured, scale = mean distance
to the 3 nearest neighbours), fitted on the training frames (every frame except each k-th) with
L1 + 0.2·D-SSIM, densified/pruned by gsplat's ``DefaultStrategy`` (it is plain PyTorch and runs
on CPU with our rasterizer's ``info``), then rendered at the held-out cameras. How well the
held-out views are predicted measures cross-view coherence: a 3-D-consistent video can be
explained by one static scene.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

SH_C0 = 0.28209479177387814


@dataclass
class SplatConfig:
    """Fit settings. Defaults are the smoke-size budget (seconds on CPU); raise ``iterations``
    (``geometry.splat_iterations``) for benchmark-quality fits."""

    iterations: int = 100
    holdout_every: int = 8
    max_init_points: int = 3000
    min_init_points: int = 800
    # Learning rates for a CPU budget of ~100 steps, several times 3DGS's (which assume 30k steps);
    # the means' rate decays exponentially to ``means_lr_final`` of itself, as 3DGS's does.
    lr_means: float = 1e-2  # × scene scale
    means_lr_final: float = 0.03
    lr_scales: float = 3e-2
    lr_quats: float = 1e-3
    lr_opacities: float = 1e-1
    lr_colors: float = 5e-2
    ssim_weight: float = 0.2
    densify: bool = True
    max_gaussians: int = 20000
    grow_grad2d: float = 2e-4
    batch_size: int = 1
    tile_size: int = 16
    seed: int = 0
    time_limit_s: float | None = None


@dataclass
class SplatFit:
    """A fitted set of Gaussians plus the data needed to render it."""

    params: dict[str, Any]  # torch tensors: means, scales (log), quats, opacities (logit), sh0 [N,1,3]
    train_ids: list[int]
    test_ids: list[int]
    iterations: int
    seconds: float
    losses: list[float] = field(default_factory=list)
    backend: str = "torch"

    @property
    def num_gaussians(self) -> int:
        return int(self.params["means"].shape[0])


def split_train_test(num_views: int, every: int) -> tuple[list[int], list[int]]:
    """Hold out every ``every``-th view (starting at ``every // 2`` so both ends train)."""
    if every < 2 or num_views < 3:
        return list(range(num_views)), []
    test = [i for i in range(num_views) if i % every == every // 2]
    return [i for i in range(num_views) if i not in test], test


def init_gaussians(points: np.ndarray, colors: np.ndarray, cfg: SplatConfig, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Gaussian parameters from coloured sparse points ``[M, 3]`` / ``uint8 [M, 3]``."""
    from scipy.spatial import cKDTree

    pts = np.asarray(points, np.float64)
    cols = np.asarray(colors, np.float64) / 255.0
    if len(pts) > cfg.max_init_points:
        sel = rng.choice(len(pts), cfg.max_init_points, replace=False)
        pts, cols = pts[sel], cols[sel]
    if len(pts) < cfg.min_init_points and len(pts) > 0:
        # Too few points to cover the views: jitter copies around them (scaled by their spread).
        reps = int(math.ceil(cfg.min_init_points / len(pts))) - 1
        spread = np.median(np.abs(pts - np.median(pts, 0)), 0) * 0.1 + 1e-6
        extra = np.repeat(pts, reps, 0) + rng.normal(0, 1, (len(pts) * reps, 3)) * spread
        pts = np.concatenate([pts, extra])
        cols = np.concatenate([cols, np.repeat(cols, reps, 0)])
    k = min(4, len(pts))
    d, _ = cKDTree(pts).query(pts, k=k)
    dist = np.sqrt(np.mean(d[:, 1:] ** 2, 1)) if k > 1 else np.full(len(pts), 0.01)
    dist = np.clip(dist, 1e-4, None)
    n = len(pts)
    return {
        "means": pts.astype(np.float32),
        "scales": np.log(np.repeat(dist[:, None], 3, 1)).astype(np.float32),
        "quats": np.tile(np.array([1.0, 0, 0, 0], np.float32), (n, 1)),
        "opacities": np.full(n, math.log(0.5 / 0.5), np.float32),  # logit(0.5)
        "sh0": ((np.clip(cols, 0, 1) - 0.5) / SH_C0)[:, None, :].astype(np.float32),
    }


def bearing_init(images: np.ndarray, rotations: np.ndarray, K: np.ndarray, train_ids: list[int],
                 max_points: int = 3000) -> tuple[np.ndarray, np.ndarray]:
    """Initial points for a camera that turns in place: pixels of the training views at unit depth.

    A pure rotation has no parallax, so the depth of a scene point cannot be recovered and every depth
    renders the same views from the common centre: the points are placed on the unit sphere around it,
    along the bearings ``R K^-1 x`` of a regular pixel grid of each training view (camera-to-world
    ``rotations [V, 3, 3]``), coloured by those pixels. Held-out views are never sampled. Returns
    ``(points [M, 3], uint8 colours [M, 3])``, about ``max_points`` of them.
    """
    if not train_ids:
        raise ValueError("bearing_init needs at least one training view")
    H, W = images.shape[1:3]
    stride = max(1, int(math.ceil(math.sqrt(len(train_ids) * H * W / max(max_points, 1)))))
    ys, xs = np.mgrid[stride // 2:H:stride, stride // 2:W:stride]
    pix = np.stack([xs.ravel() + 0.5, ys.ravel() + 0.5, np.ones(xs.size)], 1) @ np.linalg.inv(K).T
    pix /= np.linalg.norm(pix, axis=1, keepdims=True)
    points = np.concatenate([pix @ np.asarray(rotations[i]).T for i in train_ids])
    colors = np.concatenate([images[i][ys.ravel(), xs.ravel()] for i in train_ids])
    return points, colors.astype(np.uint8)


def turn_meta_pose(rotations: np.ndarray) -> np.ndarray:
    """The meta view of a camera that turns in place: at the common centre, the mean orientation (the
    only novel views a pure rotation supports are new orientations from the same point)."""
    U, _, Vt = np.linalg.svd(np.mean(rotations, 0))
    R = U @ np.diag([1.0, 1.0, float(np.sign(np.linalg.det(U @ Vt)))]) @ Vt
    P = np.eye(4)
    P[:3, :3] = R
    return P


def render(params: Any, viewmats: Any, Ks: Any, width: int, height: int, *, tile_size: int = 16,
           background: Any = None) -> tuple[Any, Any, dict[str, Any]]:
    """Render ``C`` views of the Gaussians: ``(rgb [C, H, W, 3], alpha [C, H, W, 1], info)``.

    ``params`` maps means/quats/scales/opacities/colors to tensors (a dict or the fit's ``ParameterDict``).
    """
    import torch

    from tracks.geometry.rasterizer import rasterize

    bg = None if background is None else background.expand(viewmats.shape[0], 3)
    return rasterize(
        params["means"], params["quats"], torch.exp(params["scales"]), torch.sigmoid(params["opacities"]),
        params["sh0"], viewmats, Ks, width, height, sh_degree=0, backgrounds=bg, tile_size=tile_size,
    )


def ssim_torch(x: Any, y: Any, window: int = 7) -> Any:
    """Differentiable mean SSIM of images ``[B, H, W, 3]`` in [0, 1] (uniform window; loss only —
    the reported metric uses scikit-image)."""
    import torch.nn.functional as F

    x = x.permute(0, 3, 1, 2)
    y = y.permute(0, 3, 1, 2)
    pad = window // 2
    mu_x = F.avg_pool2d(x, window, 1, pad, count_include_pad=False)
    mu_y = F.avg_pool2d(y, window, 1, pad, count_include_pad=False)
    sxx = F.avg_pool2d(x * x, window, 1, pad, count_include_pad=False) - mu_x**2
    syy = F.avg_pool2d(y * y, window, 1, pad, count_include_pad=False) - mu_y**2
    sxy = F.avg_pool2d(x * y, window, 1, pad, count_include_pad=False) - mu_x * mu_y
    c1, c2 = 0.01**2, 0.03**2
    s = ((2 * mu_x * mu_y + c1) * (2 * sxy + c2)) / ((mu_x**2 + mu_y**2 + c1) * (sxx + syy + c2))
    return s.mean()


def fit_splats(
    images: np.ndarray,  # uint8 [V, H, W, 3]
    c2w: np.ndarray,  # [V, 4, 4]
    K: np.ndarray,  # [3, 3]
    points: np.ndarray,  # [M, 3]
    colors: np.ndarray,  # uint8 [M, 3]
    cfg: SplatConfig,
    *,
    device: str = "cpu",
    callback: Any = None,
) -> SplatFit:
    """Fit Gaussians to the training views (every ``cfg.holdout_every``-th view is held out).

    ``callback(step, params)``, when given, is called after every optimisation step (benches use
    it to measure held-out PSNR against wall time)."""
    import torch

    if len(points) == 0:
        raise ValueError("no sparse points to initialise Gaussians from; camera recovery produced an empty model")
    V, H, W = images.shape[:3]
    rng = np.random.default_rng(cfg.seed)
    torch.manual_seed(cfg.seed)
    train_ids, test_ids = split_train_test(V, cfg.holdout_every)
    init = init_gaussians(points, colors, cfg, rng)
    params = torch.nn.ParameterDict({k: torch.nn.Parameter(torch.from_numpy(v).to(device)) for k, v in init.items()})
    centers = c2w[:, :3, 3]
    scene_scale = float(np.linalg.norm(centers - centers.mean(0), axis=1).max() * 1.1) or 1.0
    lrs = {"means": cfg.lr_means * scene_scale, "scales": cfg.lr_scales, "quats": cfg.lr_quats,
           "opacities": cfg.lr_opacities, "sh0": cfg.lr_colors}
    optimizers = {k: torch.optim.Adam([{"params": params[k], "lr": lr, "name": k}], eps=1e-15) for k, lr in lrs.items()}
    means_decay = cfg.means_lr_final ** (1.0 / max(cfg.iterations, 1))

    strategy = state = None
    if cfg.densify:
        from gsplat.strategy import DefaultStrategy

        # gsplat's defaults assume 30k steps; rescale the schedule to our budget.
        strategy = DefaultStrategy(
            grow_grad2d=cfg.grow_grad2d,
            refine_start_iter=max(cfg.iterations // 10, 20),
            refine_stop_iter=int(cfg.iterations * 0.7),
            refine_every=max(cfg.iterations // 20, 25),
            reset_every=10 * cfg.iterations + 1,  # no opacity reset inside short fits
            verbose=False,
        )
        strategy.check_sanity(params, optimizers)
        state = strategy.initialize_state(scene_scale=scene_scale)

    gt = torch.from_numpy(images).to(device).float() / 255.0  # [V, H, W, 3]
    viewmats = torch.from_numpy(np.linalg.inv(c2w)).to(device).float()  # [V, 4, 4]
    Kt = torch.from_numpy(np.asarray(K)).to(device).float()[None].expand(V, 3, 3).contiguous()
    losses: list[float] = []
    t0 = time.perf_counter()
    step = 0
    for step in range(cfg.iterations):
        if cfg.time_limit_s is not None and time.perf_counter() - t0 > cfg.time_limit_s:
            break
        batch = rng.choice(train_ids, size=min(cfg.batch_size, len(train_ids)), replace=False).tolist()
        rgb, _, info = render(params, viewmats[batch], Kt[batch], W, H, tile_size=cfg.tile_size)
        if strategy is not None:
            strategy.step_pre_backward(params, optimizers, state, step, info)
        l1 = (rgb - gt[batch]).abs().mean()
        loss = (1 - cfg.ssim_weight) * l1 + cfg.ssim_weight * (1 - ssim_torch(rgb, gt[batch]))
        loss.backward()
        if strategy is not None:
            strategy.step_post_backward(params, optimizers, state, step, info, packed=False)
            if params["means"].shape[0] >= cfg.max_gaussians and strategy.refine_stop_iter > step:
                strategy.refine_stop_iter = step  # CPU budget: stop growing, keep optimising
        for opt in optimizers.values():
            opt.step()
            opt.zero_grad(set_to_none=True)
        for group in optimizers["means"].param_groups:
            group["lr"] *= means_decay
        losses.append(float(loss.detach()))
        if callback is not None:
            callback(step, params)
    return SplatFit(params={k: v.detach() for k, v in params.items()}, train_ids=train_ids, test_ids=test_ids,
                    iterations=step + 1 if cfg.iterations else 0, seconds=time.perf_counter() - t0, losses=losses,
                    backend="gsplat" if device.startswith("cuda") else "torch")


def render_views(fit: SplatFit, c2w: np.ndarray, K: np.ndarray, width: int, height: int) -> np.ndarray:
    """Render the fitted Gaussians at camera-to-world poses ``[V, 4, 4]``: ``uint8 [V, H, W, 3]``."""
    import torch

    device = fit.params["means"].device
    out = []
    with torch.no_grad():
        for P in c2w:
            vm = torch.from_numpy(np.linalg.inv(P)[None]).to(device).float()
            Kt = torch.from_numpy(np.asarray(K)[None]).to(device).float()
            rgb, _, _ = render(fit.params, vm, Kt, width, height)
            out.append((rgb[0].clamp(0, 1).cpu().numpy() * 255 + 0.5).astype(np.uint8))
    return np.stack(out) if out else np.zeros((0, height, width, 3), np.uint8)


def meta_view_pose(c2w: np.ndarray, points: np.ndarray, distance: float = 1.0) -> np.ndarray:
    """A far "meta" camera: behind the mean camera, ``distance`` × the camera-path extent further back,
    looking at the centroid of the points — views the scene from where no frame was taken."""
    center = np.median(points, 0) if len(points) else c2w[:, :3, 3].mean(0) + c2w[0, :3, 2]
    mean_pos = c2w[:, :3, 3].mean(0)
    fwd = c2w[:, :3, 2].mean(0)
    fwd = fwd / (np.linalg.norm(fwd) + 1e-12)
    extent = float(np.linalg.norm(c2w[:, :3, 3] - mean_pos, axis=1).max()) + 1e-6
    up_world = -c2w[:, :3, 1].mean(0)
    eye = mean_pos - fwd * distance * max(extent, 0.25 * float(np.linalg.norm(center - mean_pos)))
    z = center - eye
    z = z / (np.linalg.norm(z) + 1e-12)
    x = np.cross(-up_world, z)
    x = x / (np.linalg.norm(x) + 1e-12)
    y = np.cross(z, x)
    P = np.eye(4)
    P[:3, 0], P[:3, 1], P[:3, 2], P[:3, 3] = x, y, z, eye
    return P


def export_ply(fit: SplatFit, path: str | Path) -> Path:
    """Write the splats in the standard 3DGS PLY layout with gsplat's exporter."""
    import torch
    from gsplat.exporter import export_splats

    p = {k: v.detach().cpu() for k, v in fit.params.items()}
    n = p["means"].shape[0]
    export_splats(p["means"], p["scales"], p["quats"], p["opacities"], p["sh0"], torch.zeros(n, 0, 3),
                  format="ply", save_to=str(path))
    return Path(path)
