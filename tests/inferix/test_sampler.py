"""Few-step flow-matching sampler: presets, shift warp, x0 / re-noise algebra."""

from __future__ import annotations

import pytest
import torch

from inferix.schedulers import FlowMatchSampler, timesteps


def test_presets_match_published_warped_schedules():
    assert timesteps("self_forcing") == pytest.approx([1000.0, 937.5, 833.333, 625.0], abs=1e-3)
    ts = timesteps("causvid")
    assert len(ts) == 3 and ts[0] == 1000.0
    # shift 8 on 757: 8 * .757 / (1 + 7 * .757)
    assert ts[1] == pytest.approx(1000 * 8 * 0.757 / (1 + 7 * 0.757))


def test_explicit_list_and_shift_override():
    assert timesteps([1000, 500]) == [1000.0, 500.0]  # a list is not warped unless asked
    assert timesteps([1000, 500], shift=3.0)[1] == pytest.approx(750.0)
    assert timesteps("self_forcing", shift=1.0) == [1000.0, 750.0, 500.0, 250.0]


@pytest.mark.parametrize(
    "bad,match",
    [
        ("selfforcing", "Did you mean 'self_forcing'"),
        ([500, 900], "descending"),
        ([], "empty"),
        ([1200], r"\[0, 1000\]"),
    ],
)
def test_bad_schedules_are_clear_errors(bad, match):
    with pytest.raises(ValueError, match=match):
        timesteps(bad)


def test_exact_velocity_recovers_x0_in_one_step_and_renoise_hits_the_next_level():
    torch.manual_seed(0)
    s = FlowMatchSampler.from_preset("self_forcing")
    x0, n0, n1 = (torch.randn(1, 4, 2, 4, 4) for _ in range(3))
    t0, t1 = s.timesteps[0], s.timesteps[1]
    x_t = s.renoise(x0, t0, n0)
    nxt = s.step(x_t, n0 - x0, 0, n1)  # exact velocity
    torch.testing.assert_close(nxt, (1 - t1 / 1000) * x0 + t1 / 1000 * n1)
    x_last = s.renoise(x0, s.timesteps[-1], n0)
    last = s.step(x_last, n0 - x0, s.num_steps - 1, None)  # the last step returns x0 itself
    torch.testing.assert_close(last, x0, atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="noise"):
        s.step(x_t, n0 - x0, 0, None)


def test_guidance_scale_one_is_the_conditional_prediction():
    c, u = torch.randn(3), torch.randn(3)
    torch.testing.assert_close(FlowMatchSampler((1000.0,), 1.0).guide(c, u), c)
    torch.testing.assert_close(FlowMatchSampler((1000.0,), 3.0).guide(c, u), u + 3 * (c - u))
