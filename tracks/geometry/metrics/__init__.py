"""Geometry metrics, one module per measurement family:

* :mod:`.heldout` — held-out view PSNR / SSIM / LPIPS of the splat fit (cross-view coherence);
* :mod:`.structure` — SfM reprojection error and registration rate (structural consistency);
* :mod:`.camera` — ATE / RPE / published camera score against reference poses;
* :mod:`.vlm` — optional judge rating of the renders.
"""
