"""SAM backend: a tiny SAM built from segment-anything's classes, saved as a checkpoint and
loaded through the same code path as the public vit_b checkpoint."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("segment_anything")

from tracks.physics.segmentation import (  # noqa: E402
    SAM_VARIANTS,
    SAMSegmenter,
    build_sam_from_config,
    build_segmenter,
    infer_sam_config,
    load_sam,
    sam_variant,
)

TINY = {"encoder_embed_dim": 32, "encoder_depth": 2, "encoder_num_heads": 2, "encoder_global_attn_indexes": [1],
        "window_size": 2, "image_size": 64, "vit_patch_size": 16, "prompt_embed_dim": 32, "out_chans": 32,
        "decoder_depth": 1, "decoder_mlp_dim": 64}


@pytest.fixture(scope="module")
def tiny_ckpt(tmp_path_factory):
    from functools import partial

    from segment_anything.modeling import ImageEncoderViT, MaskDecoder, PromptEncoder, Sam, TwoWayTransformer

    torch.manual_seed(0)
    # Built directly from segment-anything's classes (not through our builder).
    sam = Sam(
        image_encoder=ImageEncoderViT(depth=2, embed_dim=32, img_size=64, mlp_ratio=4,
                                      norm_layer=partial(torch.nn.LayerNorm, eps=1e-6), num_heads=2, patch_size=16,
                                      qkv_bias=True, use_rel_pos=True, global_attn_indexes=(1,), window_size=2,
                                      out_chans=32),
        prompt_encoder=PromptEncoder(embed_dim=32, image_embedding_size=(4, 4), input_image_size=(64, 64),
                                     mask_in_chans=16),
        mask_decoder=MaskDecoder(num_multimask_outputs=3,
                                 transformer=TwoWayTransformer(depth=1, embedding_dim=32, mlp_dim=64, num_heads=8),
                                 transformer_dim=32, iou_head_depth=3, iou_head_hidden_dim=256),
        pixel_mean=[123.675, 116.28, 103.53], pixel_std=[58.395, 57.12, 57.375],
    ).eval()
    path = tmp_path_factory.mktemp("sam") / "sam_tiny.pth"
    torch.save(sam.state_dict(), path)  # the public checkpoints are plain state dicts too
    return path, sam


def test_public_vit_b_architecture_is_inferred_from_its_state_dict():
    from segment_anything import sam_model_registry

    with torch.device("meta"):  # shapes only: no 90 M-parameter allocation
        ref = sam_model_registry["vit_b"]()
        ours = build_sam_from_config(infer_sam_config(ref.state_dict()))
    cfg = infer_sam_config(ref.state_dict())
    assert sam_variant(cfg) == "vit_b"
    assert {k: v for k, v in cfg.items() if k in SAM_VARIANTS["vit_b"]} == SAM_VARIANTS["vit_b"]
    assert {k: tuple(v.shape) for k, v in ours.state_dict().items()} == {k: tuple(v.shape) for k, v in ref.state_dict().items()}


def test_tiny_checkpoint_loads_strictly_and_matches_the_original(tiny_ckpt):
    path, sam = tiny_ckpt
    loaded = load_sam(path)
    assert infer_sam_config(loaded.state_dict()) == TINY
    x = torch.randn(1, 3, 64, 64)
    with torch.no_grad():
        assert torch.equal(loaded.image_encoder(x), sam.image_encoder(x))


def test_variant_mismatch_and_missing_file_are_explained(tiny_ckpt, tmp_path):
    with pytest.raises(ValueError, match="expected a vit_b"):
        load_sam(tiny_ckpt[0], variant="vit_b")
    with pytest.raises(FileNotFoundError, match="sam_vit_b_01ec64.pth"):
        load_sam(tmp_path / "missing.pth")


def test_prompted_segmentation_through_the_registry(tiny_ckpt, ball):
    seg = build_segmenter(f"sam:{tiny_ckpt[0]}", min_area_frac=0.0, max_area_frac=1.0)
    assert isinstance(seg, SAMSegmenter)
    frames = ball.frames[:3]
    out = seg.segment(frames, ball.object_hints())
    assert out.labels.shape == frames.shape[:3] and out.backend == "sam"
    # random weights give arbitrary masks, but every kept mask is named after its prompt ...
    assert all(set(n.values()) <= {"ball"} for n in out.names)
    # ... and frame 0 is exactly what SAM answers to the case's box prompt
    from segment_anything import SamPredictor

    pred = SamPredictor(seg.model)
    pred.set_image(frames[0])
    box = np.asarray(ball.object_hints()[0]["box"], np.float32)
    expected = pred.predict(box=box, multimask_output=False)[0][0]
    assert expected.sum() >= 4 and np.array_equal(out.labels[0] > 0, expected)


def test_automatic_masks_mode(tiny_ckpt, ball):
    seg = SAMSegmenter(str(tiny_ckpt[0]), mode="auto", points_per_side=2, min_area_frac=0.0, max_area_frac=1.0)
    out = seg.segment(ball.frames[:2])
    assert out.labels.shape == (2, 64, 64) and out.labels.dtype == np.int32
    assert len(out.names) == 2
