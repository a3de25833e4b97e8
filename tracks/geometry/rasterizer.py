"""3-D Gaussian rasterization: gsplat's CUDA kernels on a GPU, a pure-PyTorch tiled compositor on CPU.

gsplat 1.5's rasterizer only runs on CUDA. Its pure-PyTorch reference module
(``gsplat.cuda._torch_impl``) has the projection (``_fully_fused_projection``), the
covariance from quaternion/scale and spherical harmonics, and they run on CPU; its pure-PyTorch
compositor needs CUDA kernels (``rasterize_to_indices_in_range``) plus ``nerfacc``. So on CPU we
reuse gsplat's projection and SH unchanged and write only the alpha compositing, with exactly
gsplat's rules so both back ends render the same image:

* pixel centres at ``(x + 0.5, y + 0.5)``;
* ``σ = ½(a·dx² + c·dy²) + b·dx·dy`` with the conic ``(a, b, c)``;
  ``α = min(0.999, o·exp(−σ))``, skipped when ``σ < 0`` or ``α < 1/255``;
* front-to-back in depth order; a Gaussian is dropped (and compositing stops) once the
  transmittance after it would fall to ``≤ 1e-4``;
* a Gaussian touches the tiles ``[floor((μ−r)/ts), ceil((μ+r)/ts))`` with ``r`` gsplat's radius.

Tiling (CPU; all tiles batched, members padded per tile)::

    image  ┌────┬────┬────┐   each tile: pixels P = ts², Gaussians G_t that overlap it,
           │ t0 │ t1 │ t2 │   sorted by depth, processed in chunks of ``chunk`` Gaussians
           ├────┼────┼────┤   carrying the transmittance → alpha [G_chunk, P] at a time.
           │ t3 │ t4 │ t5 │
           └────┴────┴────┘

Everything is differentiable with autograd (no hand-written backward), so the same
training loop runs on both back ends; the returned ``info`` has the keys gsplat's
densification strategies read (``means2d`` with a retained grad, ``radii``, ``width``...).
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from torch import Tensor

ALPHA_MIN = 1.0 / 255.0
ALPHA_MAX = 0.999
T_MIN = 1e-4


def project_gaussians(
    means: Tensor,  # [N, 3]
    quats: Tensor,  # [N, 4] (wxyz, any norm)
    scales: Tensor,  # [N, 3] (linear, not log)
    viewmats: Tensor,  # [C, 4, 4] world-to-camera
    Ks: Tensor,  # [C, 3, 3]
    width: int,
    height: int,
    *,
    eps2d: float = 0.3,
    near_plane: float = 0.01,
    far_plane: float = 1e10,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """gsplat's pure-PyTorch pinhole projection: ``radii [C,N,2] int, means2d [C,N,2], depths [C,N], conics [C,N,3]``."""
    from gsplat.cuda._torch_impl import _fully_fused_projection, _quat_scale_to_covar_preci

    covars, _ = _quat_scale_to_covar_preci(quats, scales, compute_covar=True, compute_preci=False)
    radii, means2d, depths, conics, _ = _fully_fused_projection(
        means, covars, viewmats, Ks, width, height, eps2d=eps2d, near_plane=near_plane, far_plane=far_plane
    )
    return radii, means2d, depths, conics


def sh_colors(means: Tensor, coeffs: Tensor, viewmats: Tensor, sh_degree: int) -> Tensor:
    """View-dependent RGB ``[C, N, 3]`` from SH ``coeffs [N, K, 3]`` as gsplat.rasterization does
    (direction from the camera centre, ``+0.5``, clamped at 0)."""
    from gsplat.cuda._torch_impl import _spherical_harmonics

    campos = torch.linalg.inv(viewmats)[:, :3, 3]  # [C, 3]
    dirs = means[None] - campos[:, None]  # [C, N, 3]
    K = (sh_degree + 1) ** 2
    rgb = _spherical_harmonics(sh_degree, dirs, coeffs[None, :, :K].expand(len(viewmats), -1, -1, -1))
    return torch.clamp_min(rgb + 0.5, 0.0)


def composite_tiles(
    means2d: Tensor,  # [N, 2]
    conics: Tensor,  # [N, 3]
    opacities: Tensor,  # [N]
    colors: Tensor,  # [N, D]
    radii: Tensor,  # [N, 2] int
    depths: Tensor,  # [N]
    width: int,
    height: int,
    *,
    tile_size: int = 16,
    chunk: int = 128,
    background: Tensor | None = None,  # [D]
) -> tuple[Tensor, Tensor]:
    """Alpha-composite projected Gaussians of one camera: ``(colors [H, W, D], alphas [H, W, 1])``.

    All tiles are processed at once: each tile gets its depth-sorted member list padded to the
    longest one (padding has α = 0), and members are consumed ``chunk`` at a time so memory is
    ``tiles × chunk × tile_size²`` whatever the Gaussian count. Batching the tiles keeps the
    number of (small, CPU-overhead-bound) tensor ops independent of the image size.
    """
    device, dtype = means2d.device, means2d.dtype
    D = colors.shape[-1]
    tiles_x = (width + tile_size - 1) // tile_size
    tiles_y = (height + tile_size - 1) // tile_size
    n_tiles = tiles_x * tiles_y
    P = tile_size * tile_size

    valid = (radii > 0).all(-1)
    ids = torch.nonzero(valid).squeeze(1)
    ids = ids[torch.argsort(depths[ids].detach(), stable=True)]  # front to back

    with torch.no_grad():
        m = means2d[ids].detach()
        r = radii[ids].to(dtype)
        tmin = torch.floor((m - r) / tile_size)
        tmax = torch.ceil((m + r) / tile_size)
        tx0, ty0 = tmin[:, 0].clamp(0, tiles_x), tmin[:, 1].clamp(0, tiles_y)
        tx1, ty1 = tmax[:, 0].clamp(0, tiles_x), tmax[:, 1].clamp(0, tiles_y)
        tile_x = torch.arange(n_tiles, device=device) % tiles_x
        tile_y = torch.arange(n_tiles, device=device) // tiles_x
        member = ((tx0[None] <= tile_x[:, None]) & (tile_x[:, None] < tx1[None])
                  & (ty0[None] <= tile_y[:, None]) & (tile_y[:, None] < ty1[None]))  # [tiles, Nv]
        counts = member.sum(1)  # [tiles]
        g_max = int(counts.max()) if len(ids) else 0
        # Stable sort of "not a member" keeps members first, in depth order.
        order = torch.argsort((~member).to(torch.int8), dim=1, stable=True)[:, :g_max]  # [tiles, Gmax]
        pad = torch.arange(g_max, device=device)[None] >= counts[:, None]  # [tiles, Gmax]
        gid = ids[order] if g_max else torch.zeros(n_tiles, 0, dtype=torch.long, device=device)  # Gaussian ids
        ly, lx = torch.meshgrid(torch.arange(tile_size, device=device), torch.arange(tile_size, device=device), indexing="ij")
        px = (tile_x[:, None] * tile_size + lx.reshape(1, -1)).to(dtype) + 0.5  # [tiles, P]
        py = (tile_y[:, None] * tile_size + ly.reshape(1, -1)).to(dtype) + 0.5

    out = torch.zeros(n_tiles, P, D, device=device, dtype=dtype)
    acc = torch.zeros(n_tiles, P, device=device, dtype=dtype)
    T = torch.ones(n_tiles, P, device=device, dtype=dtype)  # transmittance before the chunk
    for s in range(0, g_max, chunk):
        g = gid[:, s : s + chunk]  # [tiles, G]
        mu, cn = means2d[g], conics[g]  # [tiles, G, 2], [tiles, G, 3]
        dx = px[:, None, :] - mu[..., 0:1]  # [tiles, G, P]
        dy = py[:, None, :] - mu[..., 1:2]
        sigma = 0.5 * (cn[..., 0:1] * dx * dx + cn[..., 2:3] * dy * dy) + cn[..., 1:2] * dx * dy
        alpha = torch.clamp_max(opacities[g][..., None] * torch.exp(-sigma), ALPHA_MAX)
        skip = (sigma < 0) | (alpha < ALPHA_MIN) | pad[:, s : s + chunk, None]
        alpha = torch.where(skip, torch.zeros_like(alpha), alpha)
        T_incl = T[:, None] * torch.cumprod(1.0 - alpha, 1)  # transmittance after each Gaussian
        T_excl = torch.cat([T[:, None], T_incl[:, :-1]], 1)
        keep = (T_incl > T_MIN).to(dtype)  # gsplat stops before the Gaussian that would cross T_MIN
        w = alpha * T_excl * keep  # [tiles, G, P]
        out = out + torch.einsum("tgp,tgd->tpd", w, colors[g])
        acc = acc + w.sum(1)
        T = _next_T(T_incl, keep, T)
        if bool((T <= T_MIN).all()):
            break

    # [tiles_y, tiles_x, ts, ts, D] → [H, W, D], cropping the padded border tiles
    img = out.reshape(tiles_y, tiles_x, tile_size, tile_size, D).permute(0, 2, 1, 3, 4)
    img = img.reshape(tiles_y * tile_size, tiles_x * tile_size, D)[:height, :width]
    alpha_img = acc.reshape(tiles_y, tiles_x, tile_size, tile_size).permute(0, 2, 1, 3)
    alpha_img = alpha_img.reshape(tiles_y * tile_size, tiles_x * tile_size, 1)[:height, :width]
    if background is not None:
        img = img + background.to(device=device, dtype=dtype) * (1.0 - alpha_img)
    return img, alpha_img


def _next_T(T_incl: Tensor, keep: Tensor, T_prev: Tensor) -> Tensor:  # noqa: N802 - T is the transmittance
    """Transmittance after the last *kept* Gaussian of the chunk, per pixel (``[tiles, P]``)."""
    # keep is a prefix mask along dim 1: the kept count k gives T_incl[:, k-1] (or T_prev if k == 0).
    k = keep.sum(1).long()  # [tiles, P]
    last = torch.gather(T_incl, 1, (k - 1).clamp_min(0)[:, None]).squeeze(1)
    T = torch.where(k > 0, last, T_prev)
    # A pixel that dropped a Gaussian is finished: force it below the threshold.
    return torch.where(k < T_incl.shape[1], torch.zeros_like(T), T)


def rasterize(
    means: Tensor,  # [N, 3]
    quats: Tensor,  # [N, 4]
    scales: Tensor,  # [N, 3]
    opacities: Tensor,  # [N]
    colors: Tensor,  # [N, D] or SH coefficients [N, K, 3] when sh_degree is set
    viewmats: Tensor,  # [C, 4, 4] world-to-camera
    Ks: Tensor,  # [C, 3, 3]
    width: int,
    height: int,
    *,
    sh_degree: int | None = None,
    backgrounds: Tensor | None = None,  # [C, D]
    backend: Literal["auto", "torch", "gsplat"] = "auto",
    tile_size: int = 16,
    eps2d: float = 0.3,
    near_plane: float = 0.01,
) -> tuple[Tensor, Tensor, dict[str, Any]]:
    """Render Gaussians into ``C`` cameras: ``(colors [C, H, W, D], alphas [C, H, W, 1], info)``.

    ``backend="auto"`` uses ``gsplat.rasterization`` for CUDA tensors and the pure-PyTorch
    compositor otherwise. ``info`` carries ``means2d`` (grad retained by strategies), ``radii``,
    ``depths``, ``conics``, ``width``, ``height``, ``n_cameras`` and ``gaussian_ids`` (``None``),
    as gsplat's densification strategies expect.
    """
    if backend == "auto":
        backend = "gsplat" if means.is_cuda else "torch"
    if backend == "gsplat":
        from gsplat import rasterization

        render, alpha, info = rasterization(
            means, quats, scales, opacities, colors, viewmats, Ks, width, height,
            sh_degree=sh_degree, backgrounds=backgrounds, packed=False, tile_size=tile_size,
            eps2d=eps2d, near_plane=near_plane,
        )
        return render, alpha, info

    if width <= 0 or height <= 0:
        raise ValueError(f"image size must be positive, got width={width} height={height}")
    radii, means2d, depths, conics = project_gaussians(
        means, quats, scales, viewmats, Ks, width, height, eps2d=eps2d, near_plane=near_plane
    )
    C = viewmats.shape[0]
    if sh_degree is not None:
        cols = sh_colors(means, colors, viewmats, sh_degree)  # [C, N, 3]
    else:
        cols = colors[None].expand(C, -1, -1)
    renders, alphas = [], []
    for c in range(C):
        bg = backgrounds[c] if backgrounds is not None else None
        img, a = composite_tiles(
            means2d[c], conics[c], opacities, cols[c], radii[c], depths[c], width, height,
            tile_size=tile_size, background=bg,
        )
        renders.append(img)
        alphas.append(a)
    info = {
        "means2d": means2d,
        "radii": radii,
        "depths": depths,
        "conics": conics,
        "width": width,
        "height": height,
        "n_cameras": C,
        "gaussian_ids": None,
        "tile_size": tile_size,
    }
    return torch.stack(renders), torch.stack(alphas), info
