"""Each published LV-Bench signal equals its reference implementation on the same tiny random-init weights.

The references are VBench's / LV-Bench's chunk functions (``vbench/utils.py`` transforms,
``background_consistency``, ``laion_aesthetic``, LV-Bench ``compute_subject_consistency`` and
``compute_imaging_quality``, ``DynamicDegree.infer``), reproduced here line by line because the
``vbench`` package does not install beside this project (it pins numpy<2 and transformers==4.33.2);
pyiqa's own ``MUSIQ`` and ``load_pretrained_network`` are the clarity reference. Each reference runs
on the in-memory model; ours reads the same weights back from disk through the track's loaders.
Tolerance: 1e-6 absolute on a signal (float32 models, batched vs per-frame forwards), 1e-5
relative on RAFT's per-pair scores.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torchvision import transforms as T

from tracks.longvideo import learned

TOL = 1e-6


def vbench_clip_transform(n_px):  # vbench/utils.py clip_transform
    return T.Compose([T.Resize(n_px, interpolation=T.InterpolationMode.BICUBIC, antialias=False), T.CenterCrop(n_px),
                      T.Lambda(lambda x: x.float().div(255.0)),
                      T.Normalize((0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711))])


def vbench_dino_transform(n_px):  # vbench/utils.py dino_transform
    return T.Compose([T.Resize(size=n_px, antialias=False), T.Lambda(lambda x: x.float().div(255.0)),
                      T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])


def vbench_first_prev(image_features):
    """The loop of VBench ``background_consistency`` / LV-Bench ``compute_subject_consistency``."""
    video_sim = 0.0
    first_image_feature = former_image_feature = image_features[0].unsqueeze(0)
    for i in range(len(image_features)):
        image_feature = image_features[i].unsqueeze(0)
        if i == 0:
            first_image_feature = image_feature
        else:
            sim_pre = max(0.0, F.cosine_similarity(former_image_feature, image_feature).item())
            sim_fir = max(0.0, F.cosine_similarity(first_image_feature, image_feature).item())
            video_sim += (sim_pre + sim_fir) / 2
        former_image_feature = image_feature
    return video_sim / (len(image_features) - 1)


@pytest.fixture(scope="module")
def frames(synth):
    """12 frames of a real photo panned, 48 x 40 (not square: resize and crop both act)."""
    return np.ascontiguousarray(synth.pan_video(12, size=48, speed=2.0)[:, :, :40])


@pytest.fixture(scope="module")
def clip_vision(tmp_path_factory):
    from transformers import CLIPVisionConfig, CLIPVisionModelWithProjection

    torch.manual_seed(1)
    model = CLIPVisionModelWithProjection(CLIPVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                                           num_attention_heads=2, image_size=32, patch_size=8,
                                                           projection_dim=8)).eval()
    path = tmp_path_factory.mktemp("clip")
    model.save_pretrained(path)
    return model, path


def test_background_equals_vbench_background_consistency(clip_vision, frames):
    model, path = clip_vision
    with torch.no_grad():
        images = vbench_clip_transform(32)(torch.from_numpy(frames).permute(0, 3, 1, 2))
        feats = F.normalize(model(pixel_values=images).image_embeds, dim=-1, p=2)
    want = vbench_first_prev(feats)
    ours = learned.build_learned_signals({"longvideo.clip_path": str(path)})
    assert ours.provenance["background"].startswith("weights: CLIP")
    assert ours.signals["background"](frames) == pytest.approx(want, abs=TOL)


def test_aesthetic_equals_vbench_laion_aesthetic(clip_vision, frames, tmp_path):
    model, path = clip_vision
    torch.manual_seed(2)
    head = torch.nn.Linear(8, 1)  # LAION's predictor is nn.Linear(768, 1), saved as a plain state dict
    torch.save(head.state_dict(), tmp_path / "sa_linear.pth")
    with torch.no_grad():
        scores = []
        video = torch.from_numpy(frames).permute(0, 3, 1, 2)
        for i in range(0, len(video), 5):  # VBench batches (32); a smaller batch exercises the concatenation
            feats = F.normalize(model(pixel_values=vbench_clip_transform(32)(video[i:i + 5])).image_embeds.float(), dim=-1, p=2)
            scores.append(head(feats).squeeze(dim=-1))
        want = torch.mean(torch.cat(scores) / 10, dim=0).item()
    ours = learned.build_learned_signals({"longvideo.aesthetic_clip_path": str(path),
                                          "longvideo.aesthetic_head": str(tmp_path / "sa_linear.pth")})
    assert ours.errors == []
    assert ours.signals["aesthetic"](frames) == pytest.approx(want, abs=TOL)


def test_subject_equals_lvbench_subject_consistency(frames, tmp_path):
    from transformers import ViTConfig, ViTModel

    torch.manual_seed(3)
    dino = ViTModel(ViTConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                              image_size=32, patch_size=8), add_pooling_layer=False).eval()
    dino.save_pretrained(tmp_path / "dino")
    images = vbench_dino_transform(32)(torch.from_numpy(frames).permute(0, 3, 1, 2))
    assert images.shape[-2:] == (38, 32)  # not the model's 32 x 32: DINO interpolates its position embeddings
    with torch.no_grad():  # the hub DINO's forward returns the normed CLS token
        feats = torch.cat([F.normalize(dino(pixel_values=im[None], interpolate_pos_encoding=True).last_hidden_state[:, 0],
                                       dim=-1, p=2) for im in images])
    want = vbench_first_prev(feats)
    ours = learned.build_learned_signals({"longvideo.dino_path": str(tmp_path / "dino")})
    assert ours.signals["subject"](frames) == pytest.approx(want, abs=TOL)


def test_clarity_equals_pyiqa_musiq_as_lvbench_calls_it(frames, tmp_path):
    pytest.importorskip("pyiqa", reason="MUSIQ's architecture comes from pyiqa (CI installs it with --no-deps)")
    import json

    from pyiqa.archs.arch_util import load_pretrained_network
    from pyiqa.archs.musiq_arch import MUSIQ

    from tracks.longvideo.tiny_weights import MUSIQ_TINY

    torch.manual_seed(4)
    torch.save(MUSIQ(pretrained=False, **MUSIQ_TINY).state_dict(), tmp_path / "musiq.pth")
    (tmp_path / "musiq.json").write_text(json.dumps(MUSIQ_TINY))
    ref = MUSIQ(pretrained=False, **MUSIQ_TINY)
    load_pretrained_network(ref, str(tmp_path / "musiq.pth"), True)  # pyiqa's own loader
    ref.training = False  # as LV-Bench does (no .eval())
    images = torch.from_numpy(frames).permute(0, 3, 1, 2) / 255.0  # 'longer': <= 512 px, so only /255
    with torch.no_grad():
        want = sum(float(ref(images[i].unsqueeze(0))) for i in range(len(images))) / len(images)
    ours = learned.build_learned_signals({"longvideo.musiq_path": str(tmp_path / "musiq.pth")})
    assert ours.signals["clarity"](frames) == pytest.approx(want, abs=TOL)


def test_longer_side_preprocessing_equals_vbench_transform():
    x = torch.randint(0, 256, (2, 3, 300, 600), dtype=torch.uint8)
    want = T.Resize(size=(int(512 / 600 * 300), int(512 / 600 * 600)), antialias=False)(x) / 255.0
    got = learned.longer_side_512(x)
    assert got.shape == (2, 3, 256, 512) and torch.equal(got, want)
    assert torch.equal(learned.longer_side_512(x[..., :200, :300]), x[..., :200, :300] / 255.0)


class InputPadder:  # RAFT core/utils/utils.py (VBench third_party), sintel mode
    def __init__(self, dims):
        self.ht, self.wd = dims[-2:]
        pad_ht = (((self.ht // 8) + 1) * 8 - self.ht) % 8
        pad_wd = (((self.wd // 8) + 1) * 8 - self.wd) % 8
        self._pad = [pad_wd // 2, pad_wd - pad_wd // 2, pad_ht // 2, pad_ht - pad_ht // 2]

    def pad(self, *inputs):
        return [F.pad(x, self._pad, mode="replicate") for x in inputs]


def vbench_dynamic_degree(raft, frames_list, fps):
    """VBench ``DynamicDegree.infer`` on decoded frames (torchvision's RAFT takes 2 x / 255 - 1 itself)."""
    frames_list = frames_list[:: max(1, round(fps / 8))]
    scale = min(list(frames_list[0].shape)[-2:])
    thres, count_num = 6.0 * (scale / 256.0), round(4 * (len(frames_list) / 16.0))
    static_score = []
    for image1, image2 in zip(frames_list[:-1], frames_list[1:], strict=True):
        image1, image2 = InputPadder(image1.shape).pad(image1, image2)
        flow_up = raft(2 * (image1 / 255.0) - 1, 2 * (image2 / 255.0) - 1, num_flow_updates=20)[-1]
        rad = np.sqrt(np.square(flow_up[0, 0].numpy()) + np.square(flow_up[0, 1].numpy())).flatten()
        static_score.append(np.mean(abs(np.sort(-rad))[: int(rad.size * 0.05)]).item())
    count = 0
    for score in static_score:
        count += score > thres
        if count >= count_num:
            return True, static_score
    return False, static_score


def test_dynamic_equals_vbench_dynamic_degree(tmp_path, synth):
    from safetensors.torch import save_file
    from torchvision.models.optical_flow import raft_small

    torch.manual_seed(5)
    raft = raft_small(weights=None).eval()
    save_file({k: v.contiguous().clone() for k, v in raft.state_dict().items()}, str(tmp_path / "raft.safetensors"))
    video = np.ascontiguousarray(synth.pan_video(10, size=136, speed=3.0)[:, :130])  # 130 x 136: padded to 136 x 136
    frames_list = [torch.from_numpy(f).permute(2, 0, 1).float()[None] for f in video]
    with torch.no_grad():
        moved, scores = vbench_dynamic_degree(raft, frames_list, fps=16.0)  # 16 fps: every 2nd frame, 4 pairs
    ours = learned.RaftDynamic(tmp_path / "raft.safetensors")
    assert ours.name.startswith("RAFT (torchvision raft_small)")
    x = torch.from_numpy(video[::2]).permute(0, 3, 1, 2).float()
    assert ours.pair_scores(x) == pytest.approx(scores, rel=1e-5)
    assert ours(video, fps=16.0) == float(moved)


def test_dynamic_threshold_rule_matches_vbench_check_move():
    # count_num pairs above the threshold make a move; at the threshold itself does not count
    assert learned.moves([1.0, 2.5, 3.0], thres=2.0, count_num=2)
    assert not learned.moves([1.0, 2.0, 3.0], thres=2.0, count_num=2)
    assert learned.moves([0.0], thres=2.0, count_num=0)  # VBench returns True on the first pair when count_num is 0
    assert not learned.moves([], thres=2.0, count_num=0)
