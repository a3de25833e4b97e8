"""The CPU rasterizer reuses gsplat's projection exactly, composites like a brute-force per-pixel
loop, has correct gradients, and (on CUDA) renders what ``gsplat.rasterization`` renders."""

from __future__ import annotations

import math

import pytest
import torch

from tracks.geometry.rasterizer import ALPHA_MAX, ALPHA_MIN, T_MIN, project_gaussians, rasterize


def _scene(n: int = 12, seed: int = 0, dtype=torch.float64, W: int = 24, H: int = 20):
    g = torch.Generator().manual_seed(seed)
    means = torch.cat([torch.rand(n, 2, generator=g, dtype=dtype) * 2 - 1, torch.rand(n, 1, generator=g, dtype=dtype) * 2 + 2], 1)
    quats = torch.randn(n, 4, generator=g, dtype=dtype)
    scales = torch.rand(n, 3, generator=g, dtype=dtype) * 0.25 + 0.05
    opac = torch.rand(n, generator=g, dtype=dtype) * 0.8 + 0.15
    colors = torch.rand(n, 3, generator=g, dtype=dtype)
    view = torch.eye(4, dtype=dtype)[None]
    K = torch.tensor([[[20.0, 0, W / 2], [0, 20.0, H / 2], [0, 0, 1]]], dtype=dtype)
    return means, quats, scales, opac, colors, view, K, W, H


def _brute_force(means2d, conics, depths, radii, opac, colors, W, H, bg):
    """Per pixel, per Gaussian in depth order: gsplat's compositing rules written as plain loops."""
    order = sorted(range(len(depths)), key=lambda i: float(depths[i]))
    img = torch.zeros(H, W, colors.shape[1], dtype=colors.dtype)
    acc = torch.zeros(H, W, dtype=colors.dtype)
    for y in range(H):
        for x in range(W):
            T = 1.0
            c = torch.zeros(colors.shape[1], dtype=colors.dtype)
            for i in order:
                if radii[i, 0] <= 0 or radii[i, 1] <= 0:
                    continue
                # outside the Gaussian's tile footprint it is never considered (3.33-sigma box)
                dx = x + 0.5 - float(means2d[i, 0])
                dy = y + 0.5 - float(means2d[i, 1])
                a, b, cc = (float(v) for v in conics[i])
                sigma = 0.5 * (a * dx * dx + cc * dy * dy) + b * dx * dy
                alpha = min(ALPHA_MAX, float(opac[i]) * math.exp(-sigma))
                if sigma < 0 or alpha < ALPHA_MIN:
                    continue
                nT = T * (1 - alpha)
                if nT <= T_MIN:
                    break
                c += alpha * T * colors[i]
                T = nT
            img[y, x] = c + (1 - T) * 0 + T * bg
            acc[y, x] = 1 - T
    return img, acc


def test_projection_is_gsplat_reference_exactly():
    from gsplat.cuda._torch_impl import _fully_fused_projection, _quat_scale_to_covar_preci

    means, quats, scales, opac, colors, view, K, W, H = _scene()
    _, _, info = rasterize(means, quats, scales, opac, colors, view, K, W, H, backend="torch")
    covars, _ = _quat_scale_to_covar_preci(quats, scales, compute_preci=False)
    radii, m2d, depths, conics, _ = _fully_fused_projection(means, covars, view, K, W, H)
    assert torch.equal(info["means2d"], m2d)
    assert torch.equal(info["conics"], conics)
    assert torch.equal(info["depths"], depths)
    assert torch.equal(info["radii"], radii)


@pytest.mark.parametrize("tile_size", [4, 16])
def test_compositing_matches_brute_force(tile_size):
    means, quats, scales, opac, colors, view, K, W, H = _scene(n=15, seed=1)
    opac[:4] = 0.99  # opaque ones exercise early termination
    bg = torch.tensor([0.2, 0.4, 0.6], dtype=torch.float64)
    img, alpha, info = rasterize(means, quats, scales, opac, colors, view, K, W, H, backgrounds=bg[None],
                                 backend="torch", tile_size=tile_size)
    ref_img, ref_acc = _brute_force(info["means2d"][0], info["conics"][0], info["depths"][0], info["radii"][0],
                                    opac, colors, W, H, bg)
    assert img.shape == (1, H, W, 3) and alpha.shape == (1, H, W, 1)
    assert torch.allclose(img[0], ref_img, atol=1e-5)
    assert torch.allclose(alpha[0, ..., 0], ref_acc, atol=1e-5)
    assert float(alpha.max()) > 0.5  # something was actually drawn


def test_chunked_compositing_equals_unchunked():
    from tracks.geometry.rasterizer import composite_tiles

    means, quats, scales, opac, colors, view, K, W, H = _scene(n=40, seed=2)
    radii, m2d, depths, conics = project_gaussians(means, quats, scales, view, K, W, H)
    a, _ = composite_tiles(m2d[0], conics[0], opac, colors, radii[0], depths[0], W, H, chunk=3)
    b, _ = composite_tiles(m2d[0], conics[0], opac, colors, radii[0], depths[0], W, H, chunk=4096)
    assert torch.allclose(a, b, atol=1e-10)


def test_gradcheck_few_gaussians():
    means, quats, scales, opac, colors, view, K, W, H = _scene(n=3, seed=3, W=8, H=8)
    # Large, half-transparent Gaussians in view: every pixel is far from the α thresholds.
    means = torch.tensor([[0.0, 0.0, 3.0], [0.1, -0.1, 3.5], [-0.1, 0.1, 4.0]], dtype=torch.float64)
    scales = torch.full((3, 3), 0.6, dtype=torch.float64)
    K = torch.tensor([[[8.0, 0, 4], [0, 8.0, 4], [0, 0, 1]]], dtype=torch.float64)
    opac = torch.tensor([0.5, 0.4, 0.6], dtype=torch.float64)

    def f(m, s, o, c, q):
        img, _, _ = rasterize(m, q, s, o, c, view, K, W, H, backend="torch", tile_size=4)
        return img

    inputs = tuple(t.clone().requires_grad_(True) for t in (means, scales, opac, colors, quats))
    assert torch.autograd.gradcheck(f, inputs, eps=1e-6, atol=1e-5)


def test_sh_degree_zero_matches_plain_colors():
    from gsplat.cuda._torch_impl import _eval_sh_bases_fast  # noqa: F401 - gsplat's SH is what we use

    means, quats, scales, opac, colors, view, K, W, H = _scene(n=8, seed=4)
    C0 = 0.28209479177387814
    coeffs = ((colors - 0.5) / C0)[:, None, :]  # [N, 1, 3]
    a, _, _ = rasterize(means, quats, scales, opac, colors, view, K, W, H, backend="torch")
    b, _, _ = rasterize(means, quats, scales, opac, coeffs, view, K, W, H, sh_degree=0, backend="torch")
    assert torch.allclose(a, b, atol=1e-10)


@pytest.mark.gpu
def test_matches_gsplat_cuda_rasterization():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    means, quats, scales, opac, colors, view, K, W, H = (
        t.float().cuda() if torch.is_tensor(t) else t for t in _scene(n=200, seed=5, W=64, H=48)
    )
    a, aa, _ = rasterize(means, quats, scales, opac, colors, view, K, W, H, backend="gsplat")
    b, ba, _ = rasterize(means, quats, scales, opac, colors, view, K, W, H, backend="torch")
    assert torch.allclose(a, b, atol=1e-4)
    assert torch.allclose(aa, ba, atol=1e-4)
