"""Shared fixtures for the Inferix tests: tiny random-init models under fixed seeds."""

from __future__ import annotations

import pytest
import torch

torch.set_num_threads(1)

@pytest.fixture(scope="session")
def tiny_config():
    from inferix.models.configs import get_config

    return get_config("tiny")


@pytest.fixture(scope="session")
def diffusers_wan(tiny_config):
    """diffusers' reference WanTransformer3DModel with random weights (seed 0)."""
    from diffusers import WanTransformer3DModel

    torch.manual_seed(0)
    return WanTransformer3DModel(**tiny_config.diffusers_kwargs()).eval()


@pytest.fixture(scope="session")
def tiny_model(tiny_config, diffusers_wan):
    """Our model carrying the diffusers reference's weights."""
    from inferix.models.causal_wan import CausalWanModel

    model = CausalWanModel(tiny_config).eval()
    model.load_state_dict(diffusers_wan.state_dict())
    return model


@pytest.fixture(scope="session")
def cuda():
    """The CUDA device; the test is skipped without one (the ``gpu`` marker deselects them anyway)."""
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    return torch.device("cuda")
