"""Engine: many sessions batched in one forward, same frames as alone; control; failure isolation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from inferix.engine import Engine, EngineConfig, SessionFailedError
from inferix.kv_cache import CachePolicy
from inferix.registry import load_model
from inferix.sampling import SamplingConfig
from inferix.scheduler import SessionState

HW = (8, 8)  # latent grid: 4x4 tokens per frame with the (1, 2, 2) patch


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny")


def _engine(tiny, policy="rolling:6", max_batch=4, **kw):
    cfg = EngineConfig(latent_hw=HW, block_frames=3, policy=CachePolicy.parse(policy), max_batch=max_batch, **kw, sampling=SamplingConfig(timesteps=tiny.sampling.timesteps[:2]))
    return Engine(tiny.model, tiny.codec, tiny.text_encoder, cfg, tiny.action_encoder)


def _run_alone(tiny, prompt, seed, blocks, policy="rolling:6", action=None):
    eng = _engine(tiny, policy)
    sid = eng.add_session(prompt, num_blocks=blocks, seed=seed, action=action)
    eng.run()
    return eng.pop_outputs(sid)


@pytest.mark.parametrize("with_image", [False, True])
def test_engine_matches_the_single_session_pipeline(tiny, with_image):
    """One session through the block pool == inferix.pipeline.generate_blocks (ContiguousKVCache)."""
    from inferix.pipeline import generate_blocks
    from inferix.schedulers import FlowMatchSampler

    img = np.zeros((16, 16, 3), np.uint8)
    img[:, :8] = 200
    first = torch.from_numpy(img).float().permute(2, 0, 1)[None, :, None] / 127.5 - 1 if with_image else None
    ref = generate_blocks(tiny.model, tiny.codec, "a red ball", 3, 3, FlowMatchSampler(tiny.sampling.timesteps[:2]),
                          latent_hw=HW, text_encoder=tiny.text_encoder, action=tiny.action_encoder("forward"),
                          first_frame=first, generator=torch.Generator().manual_seed(3))
    eng = _engine(tiny, policy="full")
    lat = tiny.encode_image(img, HW) if with_image else None
    outs = list(eng.stream("a red ball", num_blocks=3, seed=3, action="forward", image_latents=lat))
    got = torch.cat([o.latents for o in outs], 1)
    torch.testing.assert_close(got, ref.latents[0, :, 1 if with_image else 0 :], atol=1e-5, rtol=0)
    frames = np.concatenate([o.frames for o in outs])
    assert np.abs(frames.astype(int) - ref.frames[0].numpy().astype(int)).max() <= 1
    assert len(outs[0].frames) == (4 if with_image else 3)  # the image opens block 0


def test_two_sessions_batched_give_the_same_frames_as_alone(tiny):
    alone_a = _run_alone(tiny, "a red ball falls", 1, 4, action="left")
    alone_b = _run_alone(tiny, "a city street at night", 2, 4, action="jump")
    eng = _engine(tiny)
    a = eng.add_session("a red ball falls", num_blocks=4, seed=1, action="left")
    b = eng.add_session("a city street at night", num_blocks=4, seed=2, action="jump")
    eng.run()
    assert max(e["rows"] for e in eng.step_log) == 2  # they really shared forwards
    for got, ref in ((eng.pop_outputs(a), alone_a), (eng.pop_outputs(b), alone_b)):
        assert [o.index for o in got] == [0, 1, 2, 3]
        for o, r in zip(got, ref, strict=True):
            torch.testing.assert_close(o.latents, r.latents, atol=1e-5, rtol=0)
            assert np.abs(o.frames.astype(int) - r.frames.astype(int)).max() <= 1
    assert eng.kv.pools["device"].num_used == 0  # finished sessions free their blocks


def test_sessions_out_of_step_batch_and_stay_exact(tiny):
    """b starts two steps after a; rows at different steps and cache lengths share forwards."""
    alone_b = _run_alone(tiny, "snow", 5, 3)
    eng = _engine(tiny)
    a = eng.add_session("rain", num_blocks=3, seed=4)
    eng.step()
    eng.step()
    b = eng.add_session("snow", num_blocks=3, seed=5)
    eng.run()
    assert eng.session(a).state == SessionState.FINISHED
    for o, r in zip(eng.pop_outputs(b), alone_b, strict=True):
        torch.testing.assert_close(o.latents, r.latents, atol=1e-5, rtol=0)


def test_prompt_and_action_changes_apply_from_the_next_block(tiny):
    base = _run_alone(tiny, "a forest", 7, 3, action="idle")
    eng = _engine(tiny)
    sid = eng.add_session("a forest", num_blocks=3, seed=7, action="idle")
    while not eng.session(sid).outputs:
        eng.step()
    eng.set_action(sid, "right")
    eng.set_prompt(sid, "a desert")
    eng.run()
    outs = eng.pop_outputs(sid)
    torch.testing.assert_close(outs[0].latents, base[0].latents, atol=1e-6, rtol=0)
    assert (outs[1].latents - base[1].latents).abs().max() > 1e-3
    assert (outs[1].prompt, outs[1].action) == ("a desert", "right")


def test_unknown_action_is_a_clear_error(tiny):
    eng = _engine(tiny)
    with pytest.raises(ValueError, match=r"unknown action 'fly'.*forward"):
        eng.add_session("x", num_blocks=1, action="fly")
    sid = eng.add_session("x", num_blocks=1)
    with pytest.raises(ValueError, match="Did you mean 'jump'"):
        eng.set_action(sid, "jmup")


def test_a_failing_session_does_not_take_others_down(tiny):
    """The model rejects one row's action id: that session fails, the batch-mate finishes exactly."""
    ref = _run_alone(tiny, "a boat", 9, 3)

    def encoder(action):
        return torch.tensor([99]) if action == "broken" else tiny.action_encoder(action)

    cfg = EngineConfig(latent_hw=HW, policy=CachePolicy.parse("rolling:6"), sampling=SamplingConfig(timesteps=tiny.sampling.timesteps[:2]))
    eng = Engine(tiny.model, tiny.codec, tiny.text_encoder, cfg, encoder)
    good = eng.add_session("a boat", num_blocks=3, seed=9)
    bad = eng.add_session("a boat", num_blocks=3, seed=9, action="broken")
    eng.run()
    assert eng.session(bad).state == SessionState.FAILED
    assert "unknown action id 99" in eng.session(bad).error
    assert eng.session(good).state == SessionState.FINISHED
    for o, r in zip(eng.pop_outputs(good), ref, strict=True):
        torch.testing.assert_close(o.latents, r.latents, atol=1e-5, rtol=0)
    with pytest.raises(SessionFailedError, match="unknown action id 99"):
        next(iter(Engine(tiny.model, tiny.codec, tiny.text_encoder, cfg, encoder).stream("x", action="broken")))


def test_pause_resume_cancel(tiny):
    eng = _engine(tiny)
    a = eng.add_session("a", num_blocks=2, seed=0)
    b = eng.add_session("b", num_blocks=None, seed=1)
    eng.pause(a)
    for _ in range(6):
        eng.step()
    assert eng.session(a).blocks_done == 0 and eng.session(b).blocks_done == 2
    eng.resume(a)
    eng.cancel(b)
    assert eng.kv.sessions.get(b) is None
    eng.run()
    assert eng.session(a).state == SessionState.FINISHED and eng.session(b).state == SessionState.CANCELLED
    with pytest.raises(ValueError, match="cancelled"):
        eng.set_prompt(b, "again")


def test_rolling_policy_keeps_kv_blocks_bounded(tiny):
    eng = _engine(tiny, policy="rolling:6")
    used = []
    for out in eng.stream("long", num_blocks=None, seed=0):
        used.append((eng.kv.usage()["device_blocks_used"], eng.kv.num_blocks(out.session_id)))
        if out.index == 11:
            break
    # window 6 frames = 2 KV blocks of 3 frames: after block 2 the count stops growing
    assert used[:2] == [(1, 1), (2, 2)]
    assert set(used[2:]) == {(2, 2)}
    assert eng.kv.usage()["device_blocks_used"] == 0  # closing the stream cancelled and freed it


def test_stream_controls_are_pulled_just_in_time(tiny):
    eng = _engine(tiny)
    asked = []

    def controls(i):
        asked.append(i)
        return None if i == 1 else ("new prompt", "jump")

    outs = list(eng.stream("old prompt", num_blocks=3, seed=0, controls=controls))
    assert asked == [1, 2]
    assert [o.prompt for o in outs] == ["old prompt", "old prompt", "new prompt"]
    assert outs[2].action == "jump"


def test_offloading_cold_blocks_to_host_gives_the_same_frames(tiny):
    """Full policy with 2 device blocks + host pool: older blocks live on the host, read one at a time."""
    ref = _run_alone(tiny, "a long road", 11, 5, policy="full")
    eng = _engine(tiny, policy="full", num_device_blocks=2, num_host_blocks=8)
    sid = eng.add_session("a long road", num_blocks=None, seed=11)
    outs = []
    while len(outs) < 5:
        outs += eng.step()
    assert eng.kv.num_blocks(sid, "host") == 3 and eng.kv.num_blocks(sid, "device") == 2
    for o, r in zip(outs, ref, strict=True):
        torch.testing.assert_close(o.latents, r.latents, atol=1e-5, rtol=0)
    assert eng.usage()["host_bytes_used"] == 3 * eng.usage()["bytes_per_block"]


def test_first_frame_image_conditions_the_session(tiny):
    img = np.zeros((16, 16, 3), np.uint8)
    img[:8] = 255
    lat = tiny.encode_image(img, HW)
    assert lat.shape == (1, tiny.model.config.in_channels, 1, *HW)
    plain = _run_alone(tiny, "x", 0, 1)
    eng = _engine(tiny)
    with_image = list(eng.stream("x", num_blocks=1, seed=0, image_latents=lat))
    assert (with_image[0].latents - plain[0].latents).abs().max() > 1e-3
    assert eng.kv.usage()["device_blocks_used"] == 0
    with pytest.raises(ValueError, match="image_latents must be"):
        eng.add_session("x", image_latents=lat[:, :3])


def test_fork_shares_past_blocks_and_branches_exactly(tiny):
    """A fork continues the same video (shared KV blocks, copied noise/decoder state); each branch
    equals a fresh run that took the same actions."""
    eng = _engine(tiny, policy="full")
    a = eng.add_session("a road", num_blocks=3, seed=2, action="forward")
    while eng.session(a).blocks_done < 2:
        eng.step()
    b = eng.fork(a)
    shared = [bid for _, bid in eng.kv.block_ids(a)]
    assert [bid for _, bid in eng.kv.block_ids(b)] == shared
    assert all(eng.kv.pools["device"].ref_cnt(i) == 2 for i in shared)
    eng.set_action(a, "left")
    eng.set_action(b, "jump")
    eng.run()
    for sid, act in ((a, "left"), (b, "jump")):
        ref_eng = _engine(tiny, policy="full")
        r = ref_eng.add_session("a road", num_blocks=3, seed=2, action="forward")
        while ref_eng.session(r).blocks_done < 2:
            ref_eng.step()
        ref_eng.set_action(r, act)
        ref_eng.run()
        got = eng.pop_outputs(sid)[-1]
        torch.testing.assert_close(got.latents, ref_eng.pop_outputs(r)[-1].latents, atol=1e-5, rtol=0)
        assert got.action == act
    assert eng.kv.pools["device"].num_used == 0


def _first_block(tiny, g, action="left", batch_with=None):
    cfg = EngineConfig(latent_hw=HW, block_frames=3, policy=CachePolicy.parse("full"), max_batch=4, sampling=SamplingConfig(timesteps=tiny.sampling.timesteps[:1], action_guidance=g))
    eng = Engine(tiny.model, tiny.codec, tiny.text_encoder, cfg, tiny.action_encoder)
    sid = eng.add_session("a red ball", num_blocks=2, seed=5, action=action)
    other = eng.add_session("a city", num_blocks=2, seed=6, action=batch_with) if batch_with else None
    eng.run()
    outs = eng.pop_outputs(sid)
    return outs[0].latents, outs[1].latents, (eng.pop_outputs(other)[0].latents if other else None)


def test_action_guidance_extrapolates_from_the_idle_action_and_leaves_the_cache_alone(tiny):
    """One denoising step, so block latents are linear in the velocity: x0(g) = x - s (v_idle + g (v_a - v_idle)).
    g = 1 is the unguided engine; g = 2 - g = 1 equals g = 1 - g = 0; a guided session batched with
    another gives the same latents as alone (the extra idle pass only reads the cache)."""
    assert EngineConfig().sampling.action_guidance == 1.0  # off by default
    b0_1, _, _ = _first_block(tiny, 1.0)
    b0_0, _, _ = _first_block(tiny, 0.0)
    b0_2, b1_2, _ = _first_block(tiny, 2.0)
    torch.testing.assert_close(b0_2 - b0_1, b0_1 - b0_0, atol=1e-4, rtol=0)
    assert float((b0_2 - b0_1).abs().max()) > 1e-3  # the action does change the velocity
    # the idle action itself is unaffected by guidance (v_action == v_idle)
    idle0, _, _ = _first_block(tiny, 0.0, action=None)
    idle3, _, _ = _first_block(tiny, 3.0, action=None)
    torch.testing.assert_close(idle0, idle3, atol=1e-5, rtol=0)
    # batched with another session (two rows per forward): same as alone, both blocks
    g0, g1, _ = _first_block(tiny, 2.0, batch_with="jump")
    torch.testing.assert_close(g0, b0_2, atol=1e-5, rtol=0)
    torch.testing.assert_close(g1, b1_2, atol=1e-5, rtol=0)


class _Spy:
    """The model, recording the latents and timesteps of every forward."""

    def __init__(self, model):
        self.model, self.calls = model, []

    def __getattr__(self, name):
        return getattr(self.model, name)

    def __call__(self, x, t, *args, **kwargs):
        self.calls.append((x.detach().clone(), t.detach().clone()))
        return self.model(x, t, *args, **kwargs)


def _with_context_timestep(tiny, ctx_t, batch_with=None):
    spy = _Spy(tiny.model)
    cfg = EngineConfig(latent_hw=HW, block_frames=3, policy=CachePolicy.parse("full"), max_batch=4, sampling=SamplingConfig(timesteps=tiny.sampling.timesteps[:2], context_timestep=ctx_t))
    eng = Engine(spy, tiny.codec, tiny.text_encoder, cfg, tiny.action_encoder)
    sid = eng.add_session("a red ball", num_blocks=3, seed=4, action="left")
    if batch_with:
        eng.add_session(batch_with, num_blocks=3, seed=9, action="right")
    eng.run()
    return [o.latents for o in eng.pop_outputs(sid)], spy.calls


def test_context_timestep_commits_each_block_noised_to_it_and_decodes_the_clean_block(tiny):
    """context_timestep = 100: each finished block enters the KV cache through a pass at t = 100 on
    0.9 x0 + 0.1 noise (unit-variance noise), while the block handed out (decoded, anchored on) is
    the clean x0. Block 0 is unchanged (nothing noisy is in its context yet), later blocks attend to
    the noisy keys and change; the commit noise is the session's own, so a batched session gets the
    same latents as alone. At 0 the commit pass is the clean block at t = 0."""
    assert EngineConfig().sampling.context_timestep == 0.0
    clean, calls0 = _with_context_timestep(tiny, 0.0)
    commits0 = [(x, t) for x, t in calls0 if float(t[0]) == 0.0]
    assert len(commits0) == 3
    for (x, _), block in zip(commits0, clean, strict=True):
        torch.testing.assert_close(x[0], block, atol=0, rtol=0)

    noisy, calls = _with_context_timestep(tiny, 100.0)
    commits = [(x, t) for x, t in calls if float(t[0]) == 100.0]
    assert len(commits) == 3 and not any(float(t[0]) == 0.0 for _, t in calls)
    for (x, _), block in zip(commits, noisy, strict=True):
        noise = (x[0] - 0.9 * block) / 0.1
        assert 0.9 < float(noise.std()) < 1.1 and abs(float(noise.mean())) < 0.1
    torch.testing.assert_close(noisy[0], clean[0], atol=0, rtol=0)
    assert float((noisy[1] - clean[1]).abs().max()) > 1e-3
    batched, _ = _with_context_timestep(tiny, 100.0, batch_with="a city")
    for a, b in zip(batched, noisy, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="context_timestep"):
        EngineConfig(sampling=SamplingConfig(context_timestep=1000.0))


def test_joint_guidance_extrapolates_from_no_caption_and_the_idle_action(tiny):
    """guidance_drops_caption: the unguided pass is (idle, ""), so a session already at (idle, "")
    is unchanged by any g, while a captioned one moves away from action-only guidance."""
    def first(prompt, action, g, drop):
        cfg = EngineConfig(latent_hw=HW, block_frames=3, policy=CachePolicy.parse("full"), sampling=SamplingConfig(timesteps=tiny.sampling.timesteps[:1], action_guidance=g, guidance_drops_caption=drop))
        eng = Engine(tiny.model, tiny.codec, tiny.text_encoder, cfg, tiny.action_encoder)
        sid = eng.add_session(prompt, num_blocks=1, seed=5, action=action)
        eng.run()
        return eng.pop_outputs(sid)[0].latents

    torch.testing.assert_close(first("", None, 3.0, True), first("", None, 1.0, True), atol=1e-5, rtol=0)
    joint, action_only = first("a red ball", "left", 2.0, True), first("a red ball", "left", 2.0, False)
    assert float((joint - action_only).abs().max()) > 1e-3
    # with the idle action the joint guidance is text-only guidance: still a change
    assert float((first("a red ball", None, 2.0, True) - first("a red ball", None, 1.0, True)).abs().max()) > 1e-3


def test_guidance_rescale_restores_the_conditional_std_and_phi_zero_is_plain_guidance():
    """phi = 1 gives the guided velocity the per-sample std of v_cond (so a large g cannot blow
    the frame up), phi = 0 is plain CFG, phi in between mixes linearly; out-of-range phi is refused."""
    from inferix.runner import guide

    gen = torch.Generator().manual_seed(0)
    cond = torch.randn(3, 4, 2, 5, 5, generator=gen) * torch.tensor([1.0, 2.0, 0.5]).view(3, 1, 1, 1, 1)
    uncond = torch.randn(3, 4, 2, 5, 5, generator=gen) * 0.3
    plain = uncond + 3.0 * (cond - uncond)
    torch.testing.assert_close(guide(cond, uncond, 3.0), plain)
    full = guide(cond, uncond, 3.0, rescale=1.0)
    torch.testing.assert_close(full.std(dim=(1, 2, 3, 4)), cond.std(dim=(1, 2, 3, 4)))
    assert float(plain.std()) > 1.5 * float(full.std())  # plain CFG at g = 3 inflates the std
    torch.testing.assert_close(guide(cond, uncond, 3.0, rescale=0.25), 0.25 * full + 0.75 * plain)
    with pytest.raises(ValueError, match="action_guidance_rescale"):
        EngineConfig(sampling=SamplingConfig(action_guidance_rescale=1.5))


def test_engine_applies_the_guidance_rescale(tiny):
    """The engine's guided step goes through the rescale: phi = 1 changes the block at g = 3, and
    the bundle-level setting reaches the EngineConfig through LoadedModel.engine_config."""
    def block(phi):
        cfg = EngineConfig(latent_hw=HW, block_frames=3, policy=CachePolicy.parse("full"), sampling=SamplingConfig(timesteps=tiny.sampling.timesteps[:1], action_guidance=3.0, action_guidance_rescale=phi))
        eng = Engine(tiny.model, tiny.codec, tiny.text_encoder, cfg, tiny.action_encoder)
        sid = eng.add_session("a red ball", num_blocks=1, seed=5, action="left")
        eng.run()
        return eng.pop_outputs(sid)[0].latents

    assert float((block(1.0) - block(0.0)).abs().max()) > 1e-3
    import dataclasses

    lm = dataclasses.replace(tiny, sampling=dataclasses.replace(tiny.sampling, action_guidance=3.0, action_guidance_rescale=0.7))
    cfg = lm.engine_config(HW)
    assert (cfg.sampling.action_guidance, cfg.sampling.action_guidance_rescale) == (3.0, 0.7)
    assert lm.engine_config(HW, sampling={"action_guidance_rescale": 0.0}).sampling.action_guidance_rescale == 0.0


def _load_widened(model: torch.nn.Module, state: dict[str, torch.Tensor]) -> None:
    """Copy ``state`` into ``model`` where shapes match; a patch embedding widened for the previous
    frame's channels gets the old weights on its first channels and zeros on the new ones. (The
    training recipe's ``init_from`` does the same and more; the engine tests need only this.)"""
    own = model.state_dict()
    with torch.no_grad():
        for k, v in state.items():
            if k not in own:
                continue
            if own[k].shape == v.shape:
                own[k].copy_(v)
            elif k == "patch_embedding.weight" and own[k].shape[1] == 2 * v.shape[1]:
                own[k].zero_()
                own[k][:, : v.shape[1]].copy_(v)


@pytest.fixture(scope="module")
def prev_frame_model(tiny):
    """The tiny model conditioned on the previous frame, with non-zero weights on the anchor channels."""
    from inferix.models.causal_wan import CausalWanModel

    cfg = tiny.model.config.replace(in_channels=2 * tiny.model.config.out_channels)
    model = CausalWanModel(cfg).eval()
    _load_widened(model, tiny.model.state_dict())
    torch.manual_seed(8)
    with torch.no_grad():
        model.patch_embedding.weight[:, cfg.out_channels:].normal_(std=0.2)
    return model


def test_previous_frame_model_in_the_engine_matches_the_pipeline_batched_and_forked(tiny, prev_frame_model):
    """The engine feeds each session its own last committed frame: alone == pipeline, two sessions
    with different first frames batched == alone, a fork carries the anchor."""
    from inferix.pipeline import generate_blocks
    from inferix.schedulers import FlowMatchSampler

    def image(v):
        img = np.zeros((16, 16, 3), np.uint8)
        img[:, :8] = v
        return img

    def engine():
        cfg = EngineConfig(latent_hw=HW, block_frames=3, policy=CachePolicy.parse("full"), max_batch=4, sampling=SamplingConfig(timesteps=tiny.sampling.timesteps[:2]))
        return Engine(prev_frame_model, tiny.codec, tiny.text_encoder, cfg, tiny.action_encoder)

    def alone(v, blocks=3):
        eng = engine()
        outs = list(eng.stream("a red ball", num_blocks=blocks, seed=3, action="forward",
                               image_latents=tiny.encode_image(image(v), HW)))
        return torch.cat([o.latents for o in outs], 1)

    first = torch.from_numpy(image(200)).float().permute(2, 0, 1)[None, :, None] / 127.5 - 1
    ref = generate_blocks(prev_frame_model, tiny.codec, "a red ball", 3, 3, FlowMatchSampler(tiny.sampling.timesteps[:2]),
                          latent_hw=HW, text_encoder=tiny.text_encoder, action=tiny.action_encoder("forward"),
                          first_frame=first, generator=torch.Generator().manual_seed(3))
    a200 = alone(200)
    torch.testing.assert_close(a200, ref.latents[0, :, 1:], atol=1e-5, rtol=0)

    eng = engine()
    ids = [eng.add_session("a red ball", num_blocks=3, seed=3, action="forward",
                           image_latents=tiny.encode_image(image(v), HW)) for v in (200, 60)]
    eng.run()
    got = [torch.cat([o.latents for o in eng.pop_outputs(i)], 1) for i in ids]
    torch.testing.assert_close(got[0], a200, atol=1e-5, rtol=0)
    torch.testing.assert_close(got[1], alone(60), atol=1e-5, rtol=0)
    assert (got[0] - got[1]).abs().max() > 1e-3

    eng = engine()
    a = eng.add_session("a red ball", num_blocks=3, seed=3, action="forward",
                        image_latents=tiny.encode_image(image(200), HW))
    while eng.session(a).blocks_done < 1:
        eng.step()
    b = eng.fork(a)
    eng.run()
    for sid in (a, b):
        torch.testing.assert_close(torch.cat([o.latents for o in eng.pop_outputs(sid)], 1)[:, -3:], a200[:, -3:],
                                   atol=1e-5, rtol=0)


def test_the_engine_tells_an_anchor_level_model_its_configured_level_on_every_pass(tiny, prev_frame_model):
    """``SamplingConfig.anchor_level`` reaches every model call (the conditioning prefill, the
    denoising passes, the commits) as the pipeline's ``anchor_level`` does: engine == pipeline at
    level 0.05, and 0.05 generates another video than 0 (the embedding is non-zero here)."""
    from inferix.models.causal_wan import CausalWanModel
    from inferix.pipeline import generate_blocks
    from inferix.schedulers import FlowMatchSampler

    model = CausalWanModel(prev_frame_model.config.replace(anchor_level=True)).eval()
    _load_widened(model, prev_frame_model.state_dict())
    torch.manual_seed(9)
    with torch.no_grad():
        model.anchor_level_embedder.linear_2.weight.normal_(std=0.5)
    img = np.zeros((16, 16, 3), np.uint8)
    img[:, :8] = 200
    first = torch.from_numpy(img).float().permute(2, 0, 1)[None, :, None] / 127.5 - 1

    def engine(level):
        cfg = EngineConfig(latent_hw=HW, block_frames=3, policy=CachePolicy.parse("full"), sampling=SamplingConfig(timesteps=tiny.sampling.timesteps[:2], anchor_level=level))
        eng = Engine(model, tiny.codec, tiny.text_encoder, cfg, tiny.action_encoder)
        outs = list(eng.stream("a red ball", num_blocks=3, seed=3, action="forward",
                               image_latents=tiny.encode_image(img, HW)))
        return torch.cat([o.latents for o in outs], 1)

    ref = generate_blocks(model, tiny.codec, "a red ball", 3, 3, FlowMatchSampler(tiny.sampling.timesteps[:2]),
                          latent_hw=HW, text_encoder=tiny.text_encoder, action=tiny.action_encoder("forward"),
                          first_frame=first, generator=torch.Generator().manual_seed(3), anchor_level=0.05)
    noisy = engine(0.05)
    torch.testing.assert_close(noisy, ref.latents[0, :, 1:], atol=1e-5, rtol=0)
    assert (noisy - engine(0.0)).abs().max() > 1e-3
    with pytest.raises(ValueError, match="anchor_level"):
        EngineConfig(sampling=SamplingConfig(anchor_level=-0.1))


def test_start_from_anchor_starts_each_block_from_the_previous_frame_noised_to_the_first_step(tiny, prev_frame_model):
    """``SamplingConfig.start_from_anchor`` (SDEdit per block): a block starts at
    ``(1 - s) anchor + s noise`` with ``s`` the first timestep / 1000 and the same noise a plain start
    draws, so the video differs from the plain one; the next block starts from the last generated
    frame. A session with no first frame, a first step of 1000 (the anchor would get no weight) and a
    model with no previous-frame input are refused."""
    img = np.zeros((16, 16, 3), np.uint8)
    img[:, :8] = 200
    lat = tiny.encode_image(img, HW)

    def engine(from_anchor):
        cfg = EngineConfig(latent_hw=HW, block_frames=3, policy=CachePolicy.parse("full"), sampling=SamplingConfig(timesteps=(200.0,), start_from_anchor=from_anchor))
        return Engine(prev_frame_model, tiny.codec, tiny.text_encoder, cfg, tiny.action_encoder)

    warm, plain = engine(True), engine(False)
    sw = warm.add_session("a red ball", num_blocks=2, seed=4, action="forward", image_latents=lat)
    sp = plain.add_session("a red ball", num_blocks=2, seed=4, action="forward", image_latents=lat)
    noise = plain.session(sp).x
    torch.testing.assert_close(warm.session(sw).x, 0.8 * lat.expand_as(noise) + 0.2 * noise)

    def next_block(eng, sid):
        while not eng.session(sid).outputs:
            eng.step()
        return eng.session(sid).outputs[0]

    first = next_block(warm, sw)
    assert (first.latents - next_block(plain, sp).latents).abs().max() > 1e-3
    start2 = warm.session(sw).x
    last = first.latents[:, -1:].unsqueeze(0)  # [1, C, 1, h, w]: the frame the next block is anchored on
    assert (start2 - 0.8 * last).abs().max() < (start2 - 0.8 * lat).abs().max()

    with pytest.raises(ValueError, match="start_from_anchor starts each block from the previous frame, so a session needs"):
        warm.add_session("a red ball", num_blocks=1)  # no first frame: nothing to start from
    with pytest.raises(ValueError, match="start_from_anchor needs a first timestep below 1000"):
        EngineConfig(sampling=SamplingConfig(timesteps=(1000.0, 500.0), start_from_anchor=True))
    with pytest.raises(ValueError, match="start_from_anchor needs a model conditioned on the previous frame"):
        Engine(tiny.model, tiny.codec, tiny.text_encoder,
               EngineConfig(latent_hw=HW, block_frames=3, sampling=SamplingConfig(timesteps=(200.0,), start_from_anchor=True)))


def test_a_bfloat16_model_keeps_its_kv_cache_in_bf16_and_generates_the_float32_frames_up_to_rounding():
    """``load_model(..., dtype="bfloat16")`` (``inferix generate --dtype``, the bridge's ``model.dtype``)
    runs the DiT, the latents and the KV cache in bf16 (half the cache bytes) and decodes through the
    float32 codec; an image-conditioned video then stays within rounding of the float32 one."""
    img = np.zeros((16, 16, 3), np.uint8)
    img[:, :8] = 200
    runs = {}
    for dtype in ("float32", "bfloat16"):
        lm = load_model("tiny", dtype=dtype)
        assert lm.model.dtype == getattr(torch, dtype)
        eng = _engine(lm, policy="full")
        outs = list(eng.stream("a red ball", num_blocks=3, seed=3, action="forward",
                               image_latents=lm.encode_image(img, HW)))
        runs[dtype] = (np.concatenate([o.frames for o in outs]).astype(int), eng.storage.bytes_per_block(),
                       eng.storage.k["device"][0].dtype)
    (f32, bytes32, k32), (bf16, bytes16, k16) = runs["float32"], runs["bfloat16"]
    assert (k32, k16) == (torch.float32, torch.bfloat16) and bytes16 * 2 == bytes32
    assert f32.shape == bf16.shape
    assert np.abs(f32[0] - bf16[0]).max() <= 1  # the image frame: decoded from the same latents
    assert np.abs(f32 - bf16).mean() < 2.0  # grey levels: rounding, not another video
    with pytest.raises(ValueError, match="dtype must be one of float32, bfloat16, float16, got 'float64'"):
        load_model("tiny", dtype="float64")


def _scenario(tiny, policy, rotated, **kw):
    """Two sessions out of step (different cache lengths in one batch), a fork, an image prefix:
    every block's latents, per session."""
    eng = _engine(tiny, policy=policy, rotated_kv_buffers=rotated, **kw)
    a = eng.add_session("a road", num_blocks=6, seed=1, action="forward")
    eng.step()
    eng.step()
    img = np.zeros((16, 16, 3), np.uint8)
    img[4:] = 200
    b = eng.add_session("a city", num_blocks=4, seed=2, image_latents=tiny.encode_image(img, HW))
    while eng.session(a).blocks_done < 2:
        eng.step()
    while eng.session(a).slot.step != 0:
        eng.step()
    c = eng.fork(a, num_blocks=5)
    eng.set_action(c, "jump")
    eng.run()
    return {sid: torch.stack([o.latents for o in eng.pop_outputs(sid)]) for sid in (a, b, c)}, eng


@pytest.mark.parametrize("policy", ["full", "rolling:6", "sink:3:6"])
def test_rotated_kv_buffers_give_the_gather_paths_frames(tiny, policy):
    """Issue 60's lean path (keys rotated once, per-session buffers) equals the pool gather it replaces:
    batched rows of different cache lengths, a fork, an image prefix, window moves and sink compaction."""
    lean, eng = _scenario(tiny, policy, True)
    ref, _ = _scenario(tiny, policy, False)
    for sid in ref:
        torch.testing.assert_close(lean[sid], ref[sid], atol=1e-5, rtol=0)
    assert eng.backend.rotated_buffers and eng.backend.buffer_bytes() == 0  # finished sessions released


def test_one_session_on_rotated_kv_buffers_is_bit_identical_to_the_gather_path(tiny):
    """Rotating a key when it is written multiplies the same numbers as rotating it when read: one
    session, full cache, offloaded blocks read back from the host, equal to the last bit."""
    outs = {}
    for rotated in (True, False):
        eng = _engine(tiny, policy="full", num_device_blocks=2, num_host_blocks=8, rotated_kv_buffers=rotated)
        sid = eng.add_session("a long road", num_blocks=5, seed=11)
        eng.run()
        outs[rotated] = torch.stack([o.latents for o in eng.pop_outputs(sid)])
    assert torch.equal(outs[True], outs[False])


def test_rotated_kv_buffers_stay_bounded_under_a_rolling_window(tiny):
    """A rolling window keeps each session's buffer at a fixed capacity however long the video runs."""
    eng = _engine(tiny, policy="rolling:6")
    sid = eng.add_session("a long road", num_blocks=None, seed=3)
    sizes = []
    while eng.session(sid).blocks_done < 14:
        if eng.step():
            sizes.append(eng.backend.buffer_bytes())
    assert sizes[4] > 0 and max(sizes[4:]) == sizes[4]
    eng.cancel(sid)
    assert eng.backend.buffer_bytes() == 0


def test_a_reindexing_window_keeps_the_gather_path(tiny):
    """Re-indexed positions change every block, so keys cannot be stored rotated: the gather path serves."""
    assert not _engine(tiny, policy="sink:3:6@reindex").backend.rotated_buffers
    assert _engine(tiny, policy="full@reindex").backend.rotated_buffers


def test_vae_dtype_casts_the_wan_vae_and_is_refused_for_a_codec_that_is_no_vae():
    """``load_model(..., vae_dtype="bfloat16")`` (``inferix generate --vae-dtype``) decodes with a bf16 Wan VAE
    (the bench's ``vae_bf16`` stage measures what that costs); the tiny model's identity codec has no VAE to cast,
    and saying so beats silently decoding in float32."""
    import dataclasses

    from diffusers import AutoencoderKLWan

    from inferix.models.vae import WanVAECodec
    from inferix.registry import _cast_vae

    with pytest.raises(ValueError, match="decodes with IdentityCodec, not a Wan VAE"):
        load_model("tiny", vae_dtype="bfloat16")
    with pytest.raises(ValueError, match="vae_dtype must be one of"):
        load_model("tiny", vae_dtype="float64")
    assert load_model("tiny", vae_dtype="float32").codec is not None  # float32 asks nothing of an identity codec
    torch.manual_seed(0)
    vae = AutoencoderKLWan(base_dim=4, z_dim=4, dim_mult=[1, 1, 1, 1], num_res_blocks=1,
                           temperal_downsample=[False, True, True]).eval()
    z = torch.randn(1, 4, 3, 8, 8)
    want = WanVAECodec(vae).decode(z)
    lm = dataclasses.replace(load_model("tiny"), codec=WanVAECodec(vae))
    _cast_vae(lm, "bfloat16")
    assert lm.codec.dtype == torch.bfloat16
    got = lm.codec.stream_decoder().decode(z)
    mse = float(((got.float() - want) ** 2).mean())
    assert mse > 0.0 and 10 * np.log10(4.0 / mse) > 30.0  # bf16 rounding, not another picture
