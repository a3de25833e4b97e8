"""Fixtures for the lab's tests: the engine tests' tiny models, and the lab's bench scripts by path."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The tiny random-init models are the engine tests' (one definition, tests/inferix/conftest.py).
_engine = _load("_inferix_test_fixtures", Path(__file__).resolve().parents[1] / "inferix" / "conftest.py")
tiny_config, diffusers_wan, tiny_model, cuda = _engine.tiny_config, _engine.diffusers_wan, _engine.tiny_model, _engine.cuda

BENCH_DIR = Path(__file__).resolve().parents[2] / "reference_world_lab" / "bench"


def load_bench(name: str) -> ModuleType:
    """Import ``reference_world_lab/bench/<name>.py`` by path (the benches are scripts, not a package)."""
    return _load(name, BENCH_DIR / f"{name}.py")
