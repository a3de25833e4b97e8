"""``EngineConfig.overlap_decode``: a committed block decodes on a worker thread while the next block denoises.

Issue 60 item 2 ("VAE decode of block k overlapped with the DiT of block k + 1"). What must not change: the frames
(the decoder's causal state sees each session's blocks in order), which session gets which block, a session's end
(it is finished only once its last block is emitted), interactive controls (pulled before the next block starts),
and one session's failure (here in its decode) leaving the others alone.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch

from inferix.engine import Engine, EngineConfig
from inferix.kv_cache import CachePolicy
from inferix.models.vae import random_wan_codec
from inferix.registry import load_model
from inferix.sampling import SamplingConfig
from inferix.scheduler import SessionState

HW = (8, 8)


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny")


@pytest.fixture(scope="module")
def wan_codec(tiny):
    """A random-init diffusers Wan VAE with the tiny model's 16 latent channels: a decoder with causal state."""
    return random_wan_codec(tiny.model.config.out_channels, base_dim=8)


def _engine(tiny, codec, overlap, max_batch=4):
    cfg = EngineConfig(latent_hw=HW, block_frames=3, policy=CachePolicy.parse("rolling:6"), max_batch=max_batch,
                       overlap_decode=overlap, sampling=SamplingConfig(timesteps=tiny.sampling.timesteps[:2]))
    return Engine(tiny.model, codec, tiny.text_encoder, cfg, tiny.action_encoder)


def _two_sessions(tiny, codec, overlap):
    eng = _engine(tiny, codec, overlap)
    a = eng.add_session("a red ball falls", num_blocks=4, seed=1, action="left")
    b = eng.add_session("a city street at night", num_blocks=3, seed=2, action="jump")
    emitted, in_flight = [], []
    while eng.has_unfinished:
        emitted += [(o.session_id, o.index) for o in eng.step()]
        in_flight.append(eng.decoding)
    assert (max(in_flight) > 0) == overlap  # overlapped: steps returned with blocks still decoding
    return eng, a, b, emitted


def test_overlapped_decode_gives_the_in_line_frames_in_order(tiny, wan_codec):
    ref, ra, rb, _ = _two_sessions(tiny, wan_codec, overlap=False)
    eng, a, b, emitted = _two_sessions(tiny, wan_codec, overlap=True)
    for sid, rsid in ((a, ra), (b, rb)):
        assert eng.session(sid).state == SessionState.FINISHED
        got, want = eng.pop_outputs(sid), ref.pop_outputs(rsid)
        assert [o.index for o in got] == [o.index for o in want] == list(range(len(want)))
        for o, r in zip(got, want, strict=True):
            assert o.frames.shape == r.frames.shape and o.frames.shape[0] > 0
            assert np.array_equal(o.frames, r.frames)  # the same decoder calls, on another thread
            assert torch.equal(o.latents, r.latents)
            assert o.timings["decode"] > 0
    # every block came out of step() once, each session's in order
    assert sorted(emitted) == [(a, i) for i in range(4)] + [(b, i) for i in range(3)]
    assert [i for s, i in emitted if s == a] == [0, 1, 2, 3]
    assert eng.decoding == 0 and eng.kv.pools["device"].num_used == 0


def test_a_session_is_finished_only_when_its_last_block_is_emitted(tiny, wan_codec):
    eng = _engine(tiny, wan_codec, overlap=True)
    sid = eng.add_session("snow", num_blocks=1, seed=0)
    states = []
    while eng.has_unfinished:
        eng.step()
        states.append((eng.session(sid).state, len(eng.session(sid).outputs)))
    # never "finished" without its block: a server reclaims a done session nobody reads
    assert all(n == 1 for st, n in states if st.done)
    assert states[-1] == (SessionState.FINISHED, 1)


def test_stream_yields_every_block_and_keeps_controls_just_in_time(tiny, wan_codec):
    ref = _engine(tiny, wan_codec, overlap=False)
    want = [o.frames for o in ref.stream("rain", num_blocks=3, seed=4)]
    eng = _engine(tiny, wan_codec, overlap=True)
    got = [o.frames for o in eng.stream("rain", num_blocks=3, seed=4)]
    assert len(got) == 3 and all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))
    asked = []

    def controls(i):
        asked.append(i)
        return None if i == 1 else ("new prompt", "jump")

    outs = list(_engine(tiny, wan_codec, overlap=True).stream("old prompt", num_blocks=3, seed=0, controls=controls))
    assert asked == [1, 2]
    assert [o.prompt for o in outs] == ["old prompt", "old prompt", "new prompt"]


def test_a_failing_decode_fails_its_session_only(tiny, wan_codec):
    ref, ra, _, _ = _two_sessions(tiny, wan_codec, overlap=False)
    eng = _engine(tiny, wan_codec, overlap=True)
    good = eng.add_session("a red ball falls", num_blocks=4, seed=1, action="left")
    bad = eng.add_session("a city street at night", num_blocks=3, seed=2, action="jump")

    def broken(latents):
        raise RuntimeError("decoder out of memory")

    eng.session(bad).decoder.decode = broken
    eng.run()
    assert eng.session(bad).state == SessionState.FAILED and "decoder out of memory" in eng.session(bad).error
    assert eng.session(good).state == SessionState.FINISHED
    got, want = eng.pop_outputs(good), ref.pop_outputs(ra)
    assert len(got) == 4 and all(np.array_equal(o.frames, r.frames) for o, r in zip(got, want, strict=True))
    assert eng.pop_outputs(bad) == [] and eng.decoding == 0


def test_fork_waits_for_the_source_decoder(tiny, wan_codec):
    """A fork copies the decoder's causal state: both branches continue the same video, as in line."""
    def branches(overlap):
        eng = _engine(tiny, wan_codec, overlap)
        src = eng.add_session("a boat", num_blocks=3, seed=7)
        while eng.session(src).blocks_done < 1 or eng.session(src).slot.step != 0:
            eng.step()
        new = eng.fork(src)
        eng.set_action(new, "jump")
        eng.run()
        return [o.frames for o in eng.pop_outputs(src)], [o.frames for o in eng.pop_outputs(new)]

    for got, want in zip(branches(True), branches(False), strict=True):
        assert len(got) == len(want) > 0 and all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))


def test_a_session_decoding_its_last_block_cannot_be_forked(tiny, wan_codec):
    eng = _engine(tiny, wan_codec, overlap=True)
    sid = eng.add_session("snow", num_blocks=1, seed=0)
    decoder = eng.session(sid).decoder
    decode = decoder.decode
    decoder.decode = lambda z: (time.sleep(0.5), decode(z))[1]  # still decoding when the commit's step returns
    while eng.session(sid).blocks_done < 1:
        eng.step()
    assert eng.session(sid).state == SessionState.DECODING
    with pytest.raises(ValueError, match="nothing is left to branch"):
        eng.fork(sid)
    eng.run()
    assert eng.session(sid).state == SessionState.FINISHED and len(eng.pop_outputs(sid)) == 1
