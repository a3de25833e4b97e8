"""Block-streamed VAE decode equals the whole-video decode (no seams); identity codec round-trips."""

from __future__ import annotations

import pytest
import torch

from inferix.models.vae import IdentityCodec, WanVAECodec, to_uint8


@pytest.fixture(scope="module")
def tiny_vae():
    from diffusers import AutoencoderKLWan

    torch.manual_seed(0)
    vae = AutoencoderKLWan(
        base_dim=4, z_dim=4, dim_mult=[1, 1, 1, 1], num_res_blocks=1, temperal_downsample=[False, True, True]
    )
    return WanVAECodec(vae.eval())


@pytest.mark.parametrize("blocks", [[1, 2, 2], [2, 3], [1, 1, 1, 1, 1]])
def test_block_streamed_decode_equals_whole_video_decode(tiny_vae, blocks):
    torch.manual_seed(1)
    latents = torch.randn(1, 4, sum(blocks), 4, 4)  # 5 latent frames -> 17 pixel frames
    whole = tiny_vae.decode(latents)
    assert whole.shape == (1, 3, tiny_vae.num_pixel_frames(5), 32, 32) == (1, 3, 17, 32, 32)
    dec = tiny_vae.stream_decoder()
    parts, start = [], 0
    for n in blocks:
        parts.append(dec.decode(latents[:, :, start : start + n]))
        start += n
    assert [p.shape[2] for p in parts] == [1 + 4 * (blocks[0] - 1)] + [4 * n for n in blocks[1:]]
    torch.testing.assert_close(torch.cat(parts, 2), whole, atol=1e-4, rtol=0)


def test_decoder_state_is_what_removes_the_seam(tiny_vae):
    # Resetting the decoder between blocks (the public engine's behaviour) must NOT match: the
    # test above is only meaningful if the carried state matters.
    torch.manual_seed(2)
    latents = torch.randn(1, 4, 4, 4, 4)
    whole = tiny_vae.decode(latents)
    dec = tiny_vae.stream_decoder()
    first = dec.decode(latents[:, :, :2])
    dec.reset()
    second = tiny_vae.stream_decoder().decode(latents[:, :, 2:])
    assert (second - whole[:, :, first.shape[2] :][:, :, : second.shape[2]]).abs().max() > 1e-3


def test_first_frame_encode_gives_one_normalised_latent_frame(tiny_vae):
    img = torch.rand(2, 3, 1, 32, 32) * 2 - 1
    z = tiny_vae.encode(img)
    assert z.shape == (2, 4, 1, 4, 4)
    raw = tiny_vae.vae.encode(img).latent_dist.mode()
    mean = torch.tensor(tiny_vae.vae.config.latents_mean[:4]).view(1, -1, 1, 1, 1)
    std = torch.tensor(tiny_vae.vae.config.latents_std[:4]).view(1, -1, 1, 1, 1)
    torch.testing.assert_close(z, (raw - mean) / std)
    with pytest.raises(ValueError, match="T = 1 \\+ 4k"):
        tiny_vae.encode(torch.zeros(1, 3, 2, 32, 32))
    with pytest.raises(ValueError, match="C=4"):
        tiny_vae.decode(torch.zeros(1, 5, 2, 4, 4))


@pytest.mark.parametrize("patch", [1, 2])
def test_identity_codec_round_trips_and_streams(patch):
    codec = IdentityCodec(patch)
    px = torch.rand(1, 3, 5, 8, 8) * 2 - 1
    z = codec.encode(px)
    assert z.shape == (1, 3 * patch * patch, 5, 8 // patch, 8 // patch)
    torch.testing.assert_close(codec.decode(z), px)
    dec = codec.stream_decoder()
    torch.testing.assert_close(torch.cat([dec.decode(z[:, :, :2]), dec.decode(z[:, :, 2:])], 2), px)


def test_to_uint8_layout_and_range():
    px = torch.tensor([-1.0, 0.0, 1.0]).view(1, 3, 1, 1, 1).expand(1, 3, 2, 2, 2)
    out = to_uint8(px)
    assert out.dtype == torch.uint8 and out.shape == (1, 2, 2, 2, 3)
    assert out[0, 0, 0, 0].tolist() == [0, 128, 255]


def test_from_pretrained_reads_a_pipeline_vae_folder(tmp_path, tiny_vae):
    tiny_vae.vae.save_pretrained(tmp_path / "vae")
    codec = WanVAECodec.from_pretrained(tmp_path)  # a Wan pipeline directory with vae/
    latents = torch.randn(1, 4, 2, 4, 4)
    torch.testing.assert_close(codec.decode(latents), tiny_vae.decode(latents), atol=0, rtol=0)
    assert (codec.latent_channels, codec.temporal_stride, codec.spatial_stride) == (4, 4, 8)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        WanVAECodec.from_pretrained(tmp_path / "missing")
