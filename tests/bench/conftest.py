"""The bench scripts under test, each loaded from its file (``bench/`` is scripts, not a package)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load(script: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{Path(script).stem}", BENCH / script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def validity() -> ModuleType:
    """``bench/validity.py``."""
    return _load("validity.py")


@pytest.fixture(scope="module")
def gallery() -> ModuleType:
    """``bench/encoding_gallery.py``."""
    return _load("encoding_gallery.py")


@pytest.fixture(scope="module")
def sweep() -> ModuleType:
    """``bench/physics_defect_sweep.py``."""
    return _load("physics_defect_sweep.py")


@pytest.fixture(scope="module")
def user_sizes() -> ModuleType:
    """``bench/user_sizes.py``."""
    return _load("user_sizes.py")
