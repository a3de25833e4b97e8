"""One sampling config (issue 57 item 2): every sampling knob is declared once, in
``inferix.sampling.SamplingConfig``, and the engine, the CLI, the WorldOlympiad bridge and bundles read it."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from inferix.sampling import KNOBS, SELF_FORCING_TIMESTEPS, SamplingConfig

REPO = Path(__file__).resolve().parents[2]
USER_KNOBS = [k for k in KNOBS if k != "steps"]


def test_every_knob_is_a_field_and_steps_truncates_the_timesteps():
    fields = {f.name for f in dataclasses.fields(SamplingConfig)}
    assert set(USER_KNOBS) <= fields and "steps" not in fields
    s = SamplingConfig().with_overrides({"steps": "2", "action_guidance": "3", "anchor_level": None},
                                        guidance_drops_caption="true")
    assert s.timesteps == SELF_FORCING_TIMESTEPS[:2]
    assert (s.action_guidance, s.anchor_level, s.guidance_drops_caption) == (3.0, 0.0, True)  # None keeps


@pytest.mark.parametrize(("overrides", "message"), [
    ({"bogus": 1}, r"unknown sampling setting\(s\) bogus; the settings are: steps, action_guidance"),
    ({"steps": 9}, r"steps must be in 1\.\.4"),
    ({"action_guidance": "lots"}, "action_guidance must be a number"),
    ({"guidance_drops_caption": "maybe"}, "guidance_drops_caption is true or false"),
    ({"context_timestep": 1000}, r"context_timestep must be in \[0, 1000\)"),
])
def test_a_bad_setting_is_refused_naming_it(overrides, message):
    with pytest.raises(ValueError, match=message):
        SamplingConfig().with_overrides(overrides)


def test_a_bundle_sampler_section_round_trips_and_null_guidance_means_off():
    s = SamplingConfig(timesteps=(1000.0, 500.0), action_guidance=2.0, context_timestep=50.0, anchor_level=0.02)
    assert SamplingConfig.from_bundle(s.to_bundle(), s.timesteps) == s
    assert SamplingConfig.from_bundle({"action_guidance": None}, (1000.0,)).action_guidance == 1.0
    assert SamplingConfig.from_bundle({"action_guidance": 0}, (1000.0,)).action_guidance == 1.0
    assert set(s.to_bundle()) == set(USER_KNOBS)


def test_the_cli_and_the_bridge_expose_every_knob_from_the_one_declaration():
    import argparse

    from inferix.cli import _add_sampling_args, _sampling
    from worldolympiad.models.inferix import InferixModel

    p = argparse.ArgumentParser()
    _add_sampling_args(p)
    args = p.parse_args(["--steps", "1", "--guidance-rescale", "0.5", "--guidance-drops-caption"])
    assert _sampling(args) == {"steps": 1, "action_guidance": None, "action_guidance_rescale": 0.5,
                               "guidance_drops_caption": True, "context_timestep": None, "anchor_level": None}
    assert {k: InferixModel.OPTIONS[k].type for k in KNOBS} == {k: v.type for k, v in KNOBS.items()}


def _names_knobs(path: Path) -> list[str]:
    """Places in ``path`` that name a sampling knob in code: a keyword argument, an attribute
    (other than through ``.sampling``) or a string constant equal to a knob's name."""
    hits = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.keyword) and node.arg in KNOBS:
            hits.append(f"{path.name}:{node.value.lineno} {node.arg}=")
        elif isinstance(node, ast.Constant) and node.value in KNOBS:
            hits.append(f"{path.name}:{node.lineno} {node.value!r}")
        elif (isinstance(node, ast.Attribute) and node.attr in KNOBS
              and not (isinstance(node.value, ast.Attribute) and node.value.attr == "sampling")
              and not (isinstance(node.value, ast.Name) and node.value.id in ("sampling", "s"))):
            hits.append(f"{path.name}:{node.lineno} .{node.attr}")
    return hits


def test_no_knob_is_threaded_by_hand_through_the_cli_the_loaded_model_or_the_bridge():
    """Session 46 declared each knob in six places (engine, registry, lab config, bundle loader, CLI,
    bridge). Now a knob is named only where it is declared and where it acts (the engine's sampling;
    a bundle's per-content guidance and its experts' steps in inferix/bundle.py, which reads the rest
    through ``SamplingConfig.from_bundle``)."""
    files = [REPO / "inferix/cli.py", REPO / "inferix/loaded.py", REPO / "inferix/registry.py",
             REPO / "worldolympiad/models/inferix.py"]
    assert [h for f in files for h in _names_knobs(f)] == []
