"""Model adapters: reference (file or generator, cached), perturbed, diffusers (tiny WanPipeline)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import wo_testlib

from worldolympiad.models import build_model
from worldolympiad.models.base import ModelError
from worldolympiad.models.reference import ReferenceStore
from worldolympiad.registry import UnknownNameError
from worldolympiad.scenario import CaseGenerator, Rendered
from worldolympiad.types import Case, Video
from worldolympiad.video import write_video


class _CountingSquareGen(CaseGenerator):
    """A moving square with masks and states; counts renders."""

    name = "test.counting_square"
    version = "1"
    renders = 0

    def render(self, case: Case) -> Rendered:
        type(self).renders += 1
        t, (h, w) = case.num_frames, case.resolution
        frames = np.full((t, h, w, 3), 30, np.uint8)
        masks = np.zeros((t, h, w), np.int32)
        step = int(case.metadata.get("params", {}).get("step", 1))
        for i in range(t):
            frames[i, 2:8, i * step:i * step + 5] = (220, 40, 40)
            masks[i, 2:8, i * step:i * step + 5] = 1
        depth = np.full((t, h, w), np.inf, np.float32)
        depth[masks > 0] = 2.0
        return Rendered(video=Video(frames, case.fps, case.chunks), masks=masks, object_ids={"square": 1},
                        depth=depth, states={"objects": {"square": {"position": np.arange(t * 3.0).reshape(t, 3)}}})


def _shift(video: Video, case: Case, strength: float, rng: np.random.Generator, rendered: Rendered | None) -> Video:
    """Test perturbation: roll frames right by round(strength * 4) px plus a seeded 0/1 px."""
    if strength == 0:
        return video
    dx = int(round(strength * 4)) + int(rng.integers(0, 2))
    frames = np.roll(video.frames, dx, axis=2)
    out = Video(frames, video.fps, video.chunks, metadata={"dx": dx, "had_masks": rendered is not None
                                                          and rendered.masks is not None})
    return out


@pytest.fixture
def registered():
    from worldolympiad.registries import GENERATORS, PERTURBATIONS

    GENERATORS.register("test.counting_square", _CountingSquareGen(), override=True)
    PERTURBATIONS.register("test.shift", _shift, override=True)
    _CountingSquareGen.renders = 0
    yield
    GENERATORS.unregister("test.counting_square")
    PERTURBATIONS.unregister("test.shift")


def _gen_case(step: int = 1, cid: str = "sq") -> Case:
    return Case.from_dict(wo_testlib.case_dict(cid, num_frames=6, res=(12, 20), metadata={
        "generator": "test.counting_square", "generator_version": "1", "seed": 0, "params": {"step": step}}))


def test_reference_render_is_cached_bit_exact_with_ground_truth(registered, tmp_path):
    store = ReferenceStore(tmp_path / "cache")
    case = _gen_case()
    fresh = _CountingSquareGen().render(case)
    _CountingSquareGen.renders = 0
    first = store.rendered(case)
    second = ReferenceStore(tmp_path / "cache").rendered(case)
    assert _CountingSquareGen.renders == 1, "second load must come from the cache"
    for r in (first, second):
        assert np.array_equal(r.video.frames, fresh.video.frames)
        assert np.array_equal(r.masks, fresh.masks) and r.object_ids == {"square": 1}
        assert np.array_equal(r.depth, fresh.depth)
        assert np.allclose(np.asarray(r.states["objects"]["square"]["position"]), np.arange(18.0).reshape(6, 3))
        assert r.video.fps == 8 and [c.caption for c in r.video.chunks] == ["first", "second"]
    store.rendered(_gen_case(step=2))  # different case content → different key → a new render
    assert _CountingSquareGen.renders == 2
    folders = list((tmp_path / "cache" / "references" / "test.counting_square" / "1").iterdir())
    assert len(folders) == 2


def test_reference_model_uses_the_case_file_or_the_generator(registered, tmp_path):
    model = build_model("reference", cache_dir=tmp_path / "cache")
    v = model.generate(_gen_case())
    assert np.array_equal(v.frames, _CountingSquareGen().render(_gen_case()).video.frames)
    write_video(tmp_path / "ref.mp4", wo_testlib.frames_for("f"), 8, lossless=True)
    file_case = Case.from_dict(wo_testlib.case_dict("f", reference="ref.mp4"), base_dir=tmp_path)
    v2 = model.generate(file_case)
    assert np.array_equal(v2.frames, wo_testlib.frames_for("f")) and v2.metadata["stored_file"].endswith("ref.mp4")
    with pytest.raises(ModelError, match="has no reference"):
        model.generate(Case.from_dict(wo_testlib.case_dict("none")))


def test_perturbed_model_applies_the_named_perturbation_with_seeded_rng(registered, tmp_path):
    case = _gen_case()
    ref = build_model("reference", cache_dir=tmp_path / "c").generate(case).frames
    p0 = build_model("perturbed:test.shift@0", cache_dir=tmp_path / "c").generate(case, seed=0)
    assert np.array_equal(p0.frames, ref), "strength 0 is the identity"
    model = build_model("perturbed:test.shift@0.5", cache_dir=tmp_path / "c")
    a, b = model.generate(case, seed=0), model.generate(case, seed=0)
    assert np.array_equal(a.frames, b.frames) and a.metadata["had_masks"] is True
    dx = a.metadata["dx"]
    assert np.array_equal(a.frames, np.roll(ref, dx, axis=2)) and dx in (2, 3)
    assert a.metadata["perturbation"] == "test.shift" and a.metadata["strength"] == 0.5
    assert "stored_file" not in a.metadata
    with pytest.raises(UnknownNameError, match="test.shift"):
        build_model("perturbed:test.shfit")
    with pytest.raises(ValueError, match="strength must be a number"):
        build_model("perturbed:test.shift@lots")


def test_evaluate_perturbed_vs_reference_through_the_run(registered, tmp_path):
    from worldolympiad.evaluator import EvalConfig, evaluate, make_run_spec

    suite = wo_testlib.write_suite(tmp_path / "s.json", [_gen_case().to_dict()])
    cfg = EvalConfig(out=tmp_path / "runs", progress=False)
    ref = evaluate(make_run_spec("reference", str(suite), ["counting"], [0]), cfg)
    bad = evaluate(make_run_spec("perturbed:test.shift@1", str(suite), ["counting"], [0]), cfg)
    assert ref.rows[0].metric("ref_diff").normalized == 1.0
    assert bad.rows[0].metric("ref_diff").normalized < 1.0
    assert ref.run_dir != bad.run_dir


# ---------------------------------------------------------------- diffusers


def build_tiny_wan(path) -> None:
    """A random-init WanPipeline small enough for CPU tests; tokenizer built locally (no hub)."""
    import torch
    from diffusers import AutoencoderKLWan, FlowMatchEulerDiscreteScheduler, WanPipeline, WanTransformer3DModel
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, UMT5Config, UMT5EncoderModel

    torch.manual_seed(0)
    vocab = {"<pad>": 0, "</s>": 1, "<unk>": 2}
    for w in ["a", "ball", "falls", "moves", "left", "right", "the", "scene", "test", "red", "first", "second"]:
        vocab.setdefault(w, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>")
    text_encoder = UMT5EncoderModel(UMT5Config(vocab_size=len(vocab), d_model=32, d_ff=37, d_kv=8, num_layers=2,
                                               num_heads=4, relative_attention_num_buckets=8))
    vae = AutoencoderKLWan(base_dim=3, z_dim=16, dim_mult=[1, 1, 1, 1], num_res_blocks=1,
                           temperal_downsample=[False, True, True])
    transformer = WanTransformer3DModel(patch_size=(1, 2, 2), num_attention_heads=2, attention_head_dim=12,
                                        in_channels=16, out_channels=16, text_dim=32, freq_dim=256, ffn_dim=32,
                                        num_layers=2, cross_attn_norm=True, qk_norm="rms_norm_across_heads",
                                        rope_max_seq_len=32)
    pipe = WanPipeline(tokenizer=tokenizer, text_encoder=text_encoder, vae=vae,
                       scheduler=FlowMatchEulerDiscreteScheduler(shift=7.0), transformer=transformer)
    pipe.save_pretrained(str(path))


@pytest.fixture(scope="module")
def tiny_wan(tmp_path_factory):
    pytest.importorskip("diffusers", reason="the diffusers adapter needs the 'ml' extra")
    pytest.importorskip("transformers", reason="the tiny Wan text encoder needs the 'ml' extra")
    path = tmp_path_factory.mktemp("tiny_wan")
    build_tiny_wan(path)
    return path


def test_diffusers_adapter_generates_case_sized_seeded_video(tiny_wan):
    model = build_model(f"diffusers:{tiny_wan}", num_inference_steps=2, device="cpu")
    case = Case.from_dict(wo_testlib.case_dict("w", num_frames=5, res=(12, 20), prompt="a red ball falls"))
    a = model.generate(case, seed=0)
    assert a.frames.shape == (5, 12, 20, 3) and a.frames.dtype == np.uint8 and a.fps == 8
    # 12x20 is not a multiple of 16: the pipeline ran at 16x32 and the frames were resized back
    assert a.metadata["call"]["height"] == 16 and a.metadata["call"]["width"] == 32
    assert a.metadata["call"]["prompt"] == "a red ball falls" and a.metadata["pipeline"] == "WanPipeline"
    assert np.array_equal(model.generate(case, seed=0).frames, a.frames)
    assert not np.array_equal(model.generate(case, seed=1).frames, a.frames)


def test_diffusers_model_through_the_evaluator(tiny_wan, tmp_path):
    from worldolympiad.evaluator import EvalConfig, evaluate, make_run_spec

    suite = wo_testlib.write_suite(tmp_path / "s.json", [wo_testlib.case_dict("w", num_frames=5, res=(16, 16))])
    spec = make_run_spec(f"diffusers:{tiny_wan}", str(suite), ["counting"], [0],
                         options={"model.num_inference_steps": 1})
    outcome = evaluate(spec, EvalConfig(out=tmp_path / "runs", progress=False, device="cpu"))
    assert outcome.rows[0].status == "ok", outcome.rows[0].errors
    assert (outcome.run_dir / "videos" / "w__s0.mp4").exists()
    stages = {json.loads(line)["stage"] for line in (outcome.run_dir / "timings.jsonl").read_text().splitlines()}
    assert {"generate", "store", "counting"} <= stages


def test_diffusers_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(ModelError, match="model_index.json not found"):
        build_model(f"diffusers:{tmp_path}")


class _FakeImageToVideo:
    """Stands in for an image-to-video pipeline: call_kwargs only reads its signature."""

    def __call__(self, prompt, image, num_frames=8, height=16, width=16, num_inference_steps=2, generator=None,
                 output_type="np"):
        raise AssertionError("not called")


def test_diffusers_image_to_video_starts_from_the_reference_first_frame(tmp_path):
    """A registered suite's case has no conditioning image; an image-to-video pipeline gets frame 0
    of its reference (what repeat-first-frame shows) instead of an error."""
    import inspect

    from worldolympiad.models.baselines import first_frame
    from worldolympiad.suites import load_suite

    (tmp_path / "model_index.json").write_text("{}")
    model = build_model(f"diffusers:{tmp_path}", cache_dir=tmp_path / "cache")
    model._pipe = _FakeImageToVideo()
    model._params = set(inspect.signature(model._pipe.__call__).parameters)
    case = next(c for c in load_suite("smoke").cases if c.id == "smoke-gaming-breakout")
    assert case.conditioning is None
    kw = model.call_kwargs(case, seed=0)
    assert (kw["height"], kw["width"]) == (64, 64)
    np.testing.assert_array_equal(np.asarray(kw["image"]), first_frame(case, tmp_path / "cache"))
    # a case with neither a conditioning image nor a reference cannot feed a pipeline that needs one
    bare = Case.from_dict(wo_testlib.case_dict("w", num_frames=5, res=(16, 16)))
    with pytest.raises(ModelError, match="first frame"):
        model.call_kwargs(bare, seed=0)
