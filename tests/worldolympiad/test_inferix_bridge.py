"""inferix:NAME as a WorldModel: controls pulled just in time, case size/length respected, errors."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from worldolympiad.models.base import ModelError, build_model, controls_for
from worldolympiad.types import Case, even_chunks


def _case(actions=("forward", "left", "jump"), resolution=(16, 16), num_frames=20, **kw):
    chunks = even_chunks(num_frames, len(actions), ["a maze", "turning", "a cave"], list(actions))
    return Case(id="c1", scenario="gaming", fps=8.0, num_frames=num_frames, resolution=resolution,
                prompt="a maze", chunks=chunks, **kw)


@pytest.fixture(scope="module")
def model():
    m = build_model("inferix:tiny", steps="1")
    yield m
    m.close()


def test_registry_builds_an_interactive_model(model):
    assert type(model).__name__ == "InferixModel" and model.interactive


def test_rollout_pulls_each_control_just_in_time_and_future_actions_do_not_leak(model):
    log = []

    def controls(case):
        for c in controls_for(case):
            log.append(("pull", c.index))
            yield c

    case_a = _case(("forward", "left", "jump"))
    case_b = _case(("forward", "right", "idle"))
    chunks_a = []
    for ch in model.rollout(case_a, controls(case_a), seed=3):
        log.append(("chunk", ch.index))
        chunks_a.append(ch)
    assert log == [("pull", 0), ("chunk", 0), ("pull", 1), ("chunk", 1), ("pull", 2), ("chunk", 2)]
    chunks_b = list(model.rollout(case_b, controls_for(case_b), seed=3))
    # chunk 0 cannot depend on later actions; chunk 1 does depend on its own
    np.testing.assert_array_equal(chunks_a[0].frames, chunks_b[0].frames)
    assert np.abs(chunks_a[1].frames.astype(int) - chunks_b[1].frames.astype(int)).max() > 10


def test_case_resolution_and_chunk_lengths_are_respected(model):
    case = _case(resolution=(24, 40), num_frames=17)
    video = model.generate(case, seed=0)
    assert video.frames.shape == (17, 24, 40, 3) and video.fps == 8.0
    lengths = [len(ch.frames) for ch in model.rollout(case, controls_for(case))]
    assert lengths == [c.num_frames for c in case.chunks]


def test_bridge_equals_the_engine_stream(model):
    """Same seed and controls: the bridge's frames are the engine's frames (native size, no resize)."""
    from inferix.engine import Engine, EngineConfig
    from inferix.kv_cache import CachePolicy
    from inferix.sampling import SamplingConfig

    lm = model.loaded
    case = _case(("forward",), resolution=lm.pixel_hw(), num_frames=9)
    got = model.generate(case, seed=5).frames
    eng = Engine(lm.model, lm.codec, lm.text_encoder,
                 EngineConfig(latent_hw=lm.latent_hw, policy=CachePolicy.parse("rolling:9"), max_sessions=1, sampling=SamplingConfig(timesteps=lm.sampling.timesteps[:1])), lm.action_encoder)
    ref = np.concatenate([o.frames for o in eng.stream("a maze", num_blocks=3, seed=5, action="forward")])
    np.testing.assert_array_equal(got, ref)


def test_unknown_action_is_a_model_error_unless_mapped_to_default(model):
    case = _case(("forward", {"name": "move_ee", "delta": [0.1, 0, 0]}, "jump"))
    with pytest.raises(ModelError, match="unknown action 'move_ee'.*idle"):
        model.generate(case)
    lenient = build_model("inferix:tiny", steps="1", unknown_action="default")
    chunks = list(lenient.rollout(case, controls_for(case)))
    assert [c.metadata["action_known"] for c in chunks] == [True, False, True]


def test_unknown_model_name_is_a_model_error():
    with pytest.raises(ModelError, match="tiny"):
        build_model("inferix:nosuch").generate(_case())


def test_the_dtype_option_reaches_the_model_and_a_bad_one_is_a_model_error():
    m = build_model("inferix:tiny", steps="1", dtype="bfloat16")
    try:
        assert "dtype" not in m.ignored_options
        video = m.generate(_case(num_frames=8), seed=0)
        assert str(m.loaded.model.dtype) == "torch.bfloat16" and video.frames.shape == (8, 16, 16, 3)
    finally:
        m.close()
    bad = build_model("inferix:tiny", dtype="double")
    with pytest.raises(ModelError, match="dtype must be one of float32, bfloat16, float16, got 'double'"):
        bad.generate(_case(num_frames=8), seed=0)


def test_the_vae_dtype_option_reaches_the_loader():
    """``--option model.vae_dtype=...`` is passed to ``inferix.registry.load_model`` (not ignored): the tiny
    model's identity codec takes float32 and refuses bfloat16 with the fix."""
    m = build_model("inferix:tiny", steps="1", vae_dtype="float32")
    try:
        assert "vae_dtype" not in m.ignored_options
        assert m.generate(_case(num_frames=8), seed=0).frames.shape == (8, 16, 16, 3)
    finally:
        m.close()
    with pytest.raises(ModelError, match="not a Wan VAE"):
        build_model("inferix:tiny", vae_dtype="bfloat16").generate(_case(num_frames=8), seed=0)


def test_engine_uses_the_models_own_kv_policy_unless_an_option_overrides_it(model, monkeypatch):
    lm = model.loaded
    monkeypatch.setattr(lm, "cache_policy", "rolling:3")
    assert model._engine(lm.latent_hw, 8).config.policy.window == 3  # the model's own
    assert lm.policy() == "rolling:3"
    m2 = build_model("inferix:tiny", steps="1", policy="rolling:5")
    monkeypatch.setattr(m2.loaded, "cache_policy", "rolling:3")
    assert m2._engine(lm.latent_hw, 8).config.policy.window == 5  # an explicit option wins
    m2.close()
    monkeypatch.setattr(lm, "cache_policy", None)
    assert model._engine(lm.latent_hw, 8).config.policy.window == 9  # nothing set: rolling:9


def test_engine_serves_the_models_own_guidance_settings_unless_options_override(model, monkeypatch):
    lm = model.loaded
    monkeypatch.setattr(lm, "sampling", dataclasses.replace(lm.sampling, action_guidance=2.0, action_guidance_rescale=0.7))
    cfg = model._engine(lm.latent_hw, 8).config
    assert (cfg.sampling.action_guidance, cfg.sampling.action_guidance_rescale) == (2.0, 0.7)
    assert cfg.sampling.guidance_drops_caption is False
    m2 = build_model("inferix:tiny", steps="1", action_guidance="3", action_guidance_rescale="0",
                     guidance_drops_caption="true")
    monkeypatch.setattr(m2.loaded, "sampling", dataclasses.replace(m2.loaded.sampling, action_guidance_rescale=0.7))
    cfg = m2._engine(lm.latent_hw, 8).config
    assert (cfg.sampling.action_guidance, cfg.sampling.action_guidance_rescale, cfg.sampling.guidance_drops_caption) == (3.0, 0.0, True)
    m2.close()


def test_engine_serves_the_models_own_context_timestep_unless_an_option_overrides_it(model, monkeypatch):
    lm = model.loaded
    assert model._engine(lm.latent_hw, 8).config.sampling.context_timestep == 0.0  # clean context by default
    monkeypatch.setattr(lm, "sampling", dataclasses.replace(lm.sampling, context_timestep=50.0))
    assert model._engine(lm.latent_hw, 8).config.sampling.context_timestep == 50.0  # the model's own
    m2 = build_model("inferix:tiny", steps="1", context_timestep="100")
    monkeypatch.setattr(m2.loaded, "sampling", dataclasses.replace(m2.loaded.sampling, context_timestep=50.0))
    assert m2._engine(lm.latent_hw, 8).config.sampling.context_timestep == 100.0  # an explicit option wins
    m2.close()


def test_engine_serves_the_models_own_anchor_level_unless_an_option_overrides_it(model, monkeypatch):
    lm = model.loaded
    assert model._engine(lm.latent_hw, 8).config.sampling.anchor_level == 0.0  # exact anchors by default
    m2 = build_model("inferix:tiny", steps="1", anchor_level="0.03")
    monkeypatch.setattr(m2.loaded, "sampling", dataclasses.replace(m2.loaded.sampling, anchor_level=0.01))
    assert m2.sampling["anchor_level"] == 0.03
    # the tiny model has no anchor-level input: the engine refuses a level instead of ignoring it
    with pytest.raises(ValueError, match="anchor-level input"):
        m2._engine(lm.latent_hw, 8)
    m2.close()


def test_new_weights_behind_the_same_spec_start_a_new_run_instead_of_resuming(tmp_path):
    """The run hash covers the weights of an ``inferix:`` model: editing the bundle gives another run
    directory (a resumed run would otherwise serve the old weights' rows); docs do not count."""
    import shutil

    from inferix.registry import REFERENCE_WORLD_DIR
    from worldolympiad.evaluator import make_run_spec
    from worldolympiad.types import RunSpec

    bundle = tmp_path / "bundle"
    shutil.copytree(REFERENCE_WORLD_DIR, bundle)
    spec = f"inferix:{bundle}"
    first = make_run_spec(spec, "smoke", ["interaction"])
    assert first.model_fingerprint and RunSpec.from_dict(first.to_dict()).hash == first.hash
    (bundle / "MODEL_CARD.md").write_text("edited")
    assert make_run_spec(spec, "smoke", ["interaction"]).hash == first.hash
    weights = bundle / "diffusion_pytorch_model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    assert make_run_spec(spec, "smoke", ["interaction"]).hash != first.hash
    # specs whose kind cannot fingerprint keep the hash they always had
    plain = make_run_spec("reference", "smoke", ["interaction"])
    assert plain.model_fingerprint is None and "model_fingerprint" not in plain.to_dict()
    assert make_run_spec("inferix:reference-world", "smoke", ["interaction"]).hash != \
        make_run_spec("inferix:reference-world-random", "smoke", ["interaction"]).hash


def test_a_case_without_a_conditioning_image_starts_from_its_reference_first_frame(tmp_path):
    """Registered suites (smoke) carry no conditioning image; the bridge must still give the model the
    case's first frame (frame 0 of the simulator's reference), as repeat-first-frame gets it. Before
    the fix the reference world model generated these cases from noise (frame-0 error 46-106 of 255)."""
    from worldolympiad.models.baselines import first_frame
    from worldolympiad.suites import load_suite

    case = next(c for c in load_suite("smoke").cases if c.id == "smoke-mechanics-bounce")
    assert case.conditioning is None and case.metadata.get("generator")
    model = build_model("inferix:reference-world", cache_dir=tmp_path)
    try:
        frames = model.generate(case, seed=0).frames
    finally:
        model.close()
    start = first_frame(case, tmp_path).astype(int)
    assert np.abs(frames[0].astype(int) - start).mean() < 3.0
    # and it carries on from there rather than from noise (the noise start was 67 away at the end)
    assert np.abs(frames[-1].astype(int) - start).mean() < 30.0


def test_a_named_conditioning_image_that_is_missing_is_a_model_error(model, tmp_path):
    case = _case(conditioning=str(tmp_path / "missing.png"))
    with pytest.raises(ModelError, match="conditioning image"):
        model.generate(case)


def test_the_run_hash_changes_with_the_bridge_version(monkeypatch):
    """Rows made by an older bridge (which gave the model less) are not resumed by a newer one."""
    from worldolympiad.evaluator import make_run_spec
    from worldolympiad.models.inferix import InferixModel

    before = make_run_spec("inferix:tiny", "smoke", ["interaction"]).hash
    monkeypatch.setattr(InferixModel, "BRIDGE_VERSION", InferixModel.BRIDGE_VERSION + 1)
    assert make_run_spec("inferix:tiny", "smoke", ["interaction"]).hash != before


def test_a_bundle_draws_a_listed_content_at_its_own_grid_and_the_bridge_resizes(tmp_path):
    """A game screen that a suite renders at 64 x 64 is generated at the grid the bundle names for that
    generator (``content_grids``; the shipped model saw Atari screens only at 96 x 72) and resized back;
    other generators keep the grid nearest the case, and ``size=HxW`` overrides both."""
    import json
    import shutil

    from inferix.registry import REFERENCE_WORLD_DIR

    bundle = tmp_path / "bundle"
    shutil.copytree(REFERENCE_WORLD_DIR, bundle)
    info = json.loads((bundle / "bundle.json").read_text())
    info["content_grids"] = {"gaming.atari_pong": [48, 40]}
    (bundle / "bundle.json").write_text(json.dumps(info))

    def generated(generator, **options):
        case = _case(("NOOP", "UP"), resolution=(32, 32), num_frames=4, metadata={"generator": generator})
        m = build_model(f"inferix:{bundle}", steps="1", **options)
        try:
            chunks = list(m.rollout(case, controls_for(case)))
        finally:
            m.close()
        assert all(ch.frames.shape[1:3] == (32, 32) for ch in chunks)  # resized back to the case
        return chunks[0].metadata["generated_hw"]

    assert generated("gaming.atari_pong") == [48, 40]
    assert generated("robotics.pick") == [32, 32]
    assert generated("gaming.atari_pong", size="24x16") == [24, 16]
    for bad in ("big", "96x0", "96x72x3"):
        with pytest.raises(ValueError, match="model.size must be HxW"):
            build_model(f"inferix:{bundle}", size=bad)


def test_the_bridge_serves_a_case_at_its_generators_own_guidance(tmp_path):
    """A bundle's ``sampler.content_guidance`` is applied per case from the case's generator; other
    generators keep the bundle's one scale, and ``model.action_guidance`` overrides both."""
    import json
    import shutil

    from inferix.registry import REFERENCE_WORLD_DIR

    bundle = tmp_path / "bundle"
    shutil.copytree(REFERENCE_WORLD_DIR, bundle)
    info = json.loads((bundle / "bundle.json").read_text())
    info["sampler"]["action_guidance"] = 2.0
    info["sampler"]["content_guidance"] = {"gaming.atari_freeway": 3.0}
    (bundle / "bundle.json").write_text(json.dumps(info))

    def served(generator, **options):
        case = _case(("NOOP", "UP"), resolution=(16, 16), num_frames=4, metadata={"generator": generator})
        m = build_model(f"inferix:{bundle}", steps="1", **options)
        seen = []
        engine = m._engine

        def spy(*args, **kwargs):
            e = engine(*args, **kwargs)
            seen.append(e.config.sampling.action_guidance)
            return e

        m._engine = spy
        try:
            list(m.rollout(case, controls_for(case)))
        finally:
            m.close()
        return seen

    assert served("gaming.atari_freeway") == [3.0]
    assert served("gaming.atari_pong") == [2.0]
    assert served("gaming.atari_freeway", action_guidance="1.5") == [1.5]


def test_the_bridge_generates_a_case_with_the_expert_its_generator_names(tmp_path):
    """A bundle's expert (``bundle.json`` ``experts``) generates the cases whose generator or family it
    lists; every other case is generated by the main DiT. The expert here has a zero head, so it
    repeats the case's first frame, which the main DiT does not."""
    import json
    import shutil

    import cv2
    import torch
    from safetensors.torch import load_file, save_file

    from inferix.registry import REFERENCE_WORLD_DIR
    from reference_world_lab.bundles import add_expert

    bundle, tuned = tmp_path / "bundle", tmp_path / "tuned"
    for folder in (bundle, tuned):
        shutil.copytree(REFERENCE_WORLD_DIR, folder, ignore=shutil.ignore_patterns("experts"))
        info = json.loads((folder / "bundle.json").read_text())
        info.pop("experts", None)  # the shipped bundle may carry an expert of its own
        (folder / "bundle.json").write_text(json.dumps(info))
    weights = load_file(str(tuned / "diffusion_pytorch_model.safetensors"))
    for key in ("proj_out.weight", "proj_out.bias"):
        weights[key] = torch.zeros_like(weights[key])
    save_file(weights, str(tuned / "diffusion_pytorch_model.safetensors"))
    add_expert(bundle, tuned, "still", ["mechanics"], rank=4)
    image = np.zeros((32, 32, 3), np.uint8)
    image[8:24, 8:24] = (200, 40, 40)
    cv2.imwrite(str(tmp_path / "first.png"), image[..., ::-1])

    def served(generator):
        case = _case(("NOOP", "UP"), resolution=(32, 32), num_frames=6, metadata={"generator": generator},
                     conditioning=str(tmp_path / "first.png"))
        m = build_model(f"inferix:{bundle}", steps="1")
        seen = []
        engine = m._engine

        def spy(*args, **kwargs):
            e = engine(*args, **kwargs)
            seen.append(e.model)
            return e

        m._engine = spy
        lm = m.loaded
        try:
            frames = np.concatenate([ch.frames for ch in m.rollout(case, controls_for(case))])
        finally:
            m.close()
        return seen, lm, np.abs(frames[1:].astype(int) - image).mean()

    seen, lm, change = served("mechanics.bounce")
    assert seen == [lm.experts["still"].model] and change < 0.5
    seen, lm, change = served("gaming.maze")
    assert seen == [lm.model] and change > 2.0


def test_the_shipped_bundle_serves_with_its_recipes_sampler_settings():
    """bundle.json's serving settings are the ones its recipe exports, so a re-export reproduces them."""
    import json
    from pathlib import Path

    from inferix.registry import REFERENCE_WORLD_DIR
    from reference_world_lab.bundles import bundle_info
    from reference_world_lab.config import load_config

    shipped = json.loads((Path(REFERENCE_WORLD_DIR) / "bundle.json").read_text())
    recipe = Path(__file__).parents[2] / "reference_world_lab" / "configs" / "reference_world_cpu_obj6w.yaml"
    exported = bundle_info(load_config(recipe))
    for key in shipped["sampler"]:
        assert exported["sampler"][key] == shipped["sampler"][key], key
    assert exported["content_grids"] == shipped.get("content_grids", {})


def test_the_shipped_bundle_starts_physics_blocks_from_the_previous_frame_and_robotics_from_noise():
    """MODEL_CARD.md's serving of the physics expert: mechanics, thermal and material cases start each
    block from the previous frame noised to timestep 200 and take one step (held-out physics 0.197
    against 0.166 from noise); robotics cases, whose arm must follow the commanded action, are served
    by the same weights from pure noise with the bundle's three steps (smoke push interaction 0.733
    against 0.492 from the anchor); games keep the main DiT."""
    import torch

    from inferix.bundle import load_bundle
    from inferix.registry import REFERENCE_WORLD_DIR

    lm = load_bundle(REFERENCE_WORLD_DIR)
    for content in ("mechanics.bounce", "thermal.melting", "material.dissolving"):
        cfg = lm.engine_config((16, 16), content=content)
        assert cfg.sampling.start_from_anchor and cfg.sampling.timesteps == (200.0,), content
    robot = lm.engine_config((16, 16), content="robotics.push")
    assert not robot.sampling.start_from_anchor and robot.sampling.timesteps == lm.sampling.timesteps
    same = zip(lm.model_for("robotics.push").parameters(), lm.model_for("mechanics.bounce").parameters(), strict=True)
    assert all(torch.equal(a, b) for a, b in same)
    assert lm.model_for("robotics.push") is not lm.model and lm.model_for("gaming.maze") is lm.model


def test_the_bridge_gives_a_structured_action_its_delta_in_the_case_cameras_frame(model, monkeypatch):
    """A ``move_ee``-style action reaches the model with ``delta_camera`` (the world delta in the
    camera frame of the case's first pose), which ``move_ee@DIRECTION`` vocabularies read; other
    actions, and every action of a case without a camera, reach it unchanged."""
    from worldolympiad.models.inferix import InferixModel
    from worldolympiad.types import CameraSpec

    seen = []
    monkeypatch.setattr(InferixModel, "_check_action", lambda self, a: seen.append(a) or False)
    # looking along world +x, world +z up: world down is screen down (OpenCV +y)
    pose = ((0.0, 0.0, 1.0, 0.0), (-1.0, 0.0, 0.0, 0.0), (0.0, -1.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))
    actions = ({"name": "move_ee", "delta": [0.0, 0.0, -0.1]}, {"name": "grasp"})
    case = _case(actions, num_frames=8, camera=CameraSpec(((16.0, 0.0, 8.0), (0.0, 16.0, 8.0), (0.0, 0.0, 1.0)), (pose,)))
    list(model.rollout(case, controls_for(case)))
    assert seen[0]["delta_camera"] == pytest.approx([0.0, 0.1, 0.0]) and seen[1] == {"name": "grasp"}
    seen.clear()
    list(model.rollout(_case(actions, num_frames=8), controls_for(_case(actions, num_frames=8))))
    assert seen == list(actions)
