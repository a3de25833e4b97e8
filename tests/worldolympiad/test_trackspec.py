"""``worldolympiad.trackspec``: normalisation by declared bounds, failure floors, track.yaml checks."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from worldolympiad.options import OptionSpec
from worldolympiad.trackspec import MetricSpec, load_track_spec

TRACKS = Path(__file__).resolve().parents[2] / "tracks"

GOOD_YAML = """\
name: toy
version: "2"
description: a toy track
options:
  max_frames: {type: int, default: 24, help: frames sampled}
metrics:
  - name: psnr
    description: higher is better
    higher_is_better: true
    bounds: [10, 30]
    version: "3"
  - name: error
    description: lower is better
    higher_is_better: false
    bounds: [0.0, 2.0]
score:
  weights:
    psnr: 1
    error: 0.5
"""


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "track.yaml"
    p.write_text(text)
    return p


UP = MetricSpec("psnr", "", True, (10.0, 30.0), "1")
DOWN = MetricSpec("error", "", False, (0.0, 2.0), "1")


@pytest.mark.parametrize(
    ("raw", "up", "down"),
    [
        (10.0, 0.0, 1.0),
        (20.0, 0.5, 0.5),
        (30.0, 1.0, 0.0),  # linear between the bounds
        (0.0, 0.0, 1.0),
        (40.0, 1.0, 0.0),
        (-1e9, 0.0, 1.0),  # clipped outside them
    ],
)
def test_normalize_direction_and_clipping(raw, up, down):
    down_spec = MetricSpec("psnr_loss", "", False, UP.bounds, "1")  # same bounds, other direction
    assert UP.normalize(raw) == pytest.approx(up)
    assert down_spec.normalize(raw) == pytest.approx(down)


def test_normalize_lower_is_better_flips():
    assert DOWN.normalize(0.0) == 1.0
    assert DOWN.normalize(0.5) == pytest.approx(0.75)
    assert DOWN.normalize(2.0) == 0.0
    assert DOWN.normalize(3.0) == 0.0


def test_a_reciprocal_error_keeps_falling_past_its_high_bound():
    """``curve: reciprocal`` (geometry v10's rpe_rot): 1 at low, 0.5 at high, and every larger error lower still. The
    linear curve gave a shuffled turning camera's 9, 20 and 25 deg rotation errors all 0, so the three shuffles tied
    on the metric and their order was the other metrics' noise (issue 56, geometry_tune)."""
    rpe = MetricSpec("rpe_rot", "", False, (0.0, 5.0), "4", "reciprocal")
    assert rpe.normalize(0.0) == 1.0 and rpe.normalize(5.0) == 0.5 and rpe.normalize(math.inf) == 0.0
    assert rpe.normalize(-1.0) == 1.0 and rpe.normalize(0.5) == pytest.approx(1 / 1.1)
    shuffles = [rpe.normalize(d) for d in (8.7, 19.8, 25.0)]
    assert shuffles[0] > shuffles[1] > shuffles[2] > 0.1, shuffles
    linear = MetricSpec("rpe_rot", "", False, (0.0, 5.0), "3")
    assert [linear.normalize(d) for d in (8.7, 19.8, 25.0)] == [0.0, 0.0, 0.0]
    from worldolympiad.trackspec import load_track_spec as load

    assert load(Path(__file__).parents[2] / "tracks" / "geometry" / "track.yaml")["rpe_rot"].curve == "reciprocal"


def test_infinities_clip_to_the_bounds():
    assert UP.normalize(math.inf) == 1.0 and UP.normalize(-math.inf) == 0.0
    assert DOWN.normalize(math.inf) == 0.0 and DOWN.normalize(-math.inf) == 1.0
    v = DOWN.value(math.inf)
    assert v.status == "ok" and v.raw == math.inf and v.normalized == 0.0


def test_nan_is_never_a_silent_number():
    with pytest.raises(ValueError, match="psnr.*NaN"):
        UP.normalize(math.nan)
    with pytest.raises(ValueError, match="NaN"):
        UP.value(float("nan"))


def test_value_carries_provenance_and_copies_details():
    details = {"views": 3}
    v = UP.value(25, details)
    assert (v.name, v.raw, v.normalized, v.higher_is_better, v.version) == ("psnr", 25.0, 0.75, True, "1")
    v.details["extra"] = 1
    assert details == {"views": 3}


def test_failure_floor_only_when_asked():
    plain = DOWN.failed("no reconstruction")
    assert plain.status == "failed" and plain.normalized is None and plain.reason == "no reconstruction"
    floored = DOWN.failed("unreconstructable video", floor=0.0, details={"why": "sfm"})
    assert floored.status == "failed" and floored.normalized == 0.0 and floored.raw is None
    assert floored.details == {"why": "sfm"} and floored.higher_is_better is False
    na = UP.not_applicable("no reference")
    assert na.status == "not_applicable" and na.normalized is None and na.reason == "no reference"


def test_load_track_spec_parses_every_field(tmp_path):
    spec = load_track_spec(_write(tmp_path, GOOD_YAML))
    assert (spec.name, spec.version, spec.description) == ("toy", "2", "a toy track")
    assert list(spec.metrics) == ["psnr", "error"]
    assert spec["psnr"] == MetricSpec("psnr", "higher is better", True, (10.0, 30.0), "3")
    assert spec["error"].version == "1"  # default
    assert spec.weights == {"psnr": 1.0, "error": 0.5}
    assert spec.options == {"max_frames": 24}
    assert spec.option_specs["max_frames"] == OptionSpec("int", 24, "frames sampled")
    with pytest.raises(KeyError, match="'ssim' is not declared.*known"):
        spec["ssim"]


def test_load_track_spec_is_cached_per_path(tmp_path):
    p = _write(tmp_path, GOOD_YAML)
    assert load_track_spec(p) is load_track_spec(str(p))


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("bounds: [10, 30]", "bounds: [10]", r"metrics\[0\] \(psnr\)\.bounds"),
        ("bounds: [10, 30]", "bounds: [10, 10]", r"metrics\[0\] \(psnr\)\.bounds"),
        ("bounds: [10, 30]", "bounds: [low, 30]", r"metrics\[0\] \(psnr\)\.bounds"),
        ("higher_is_better: false", 'higher_is_better: "no"', r"metrics\[1\] \(error\)\.higher_is_better"),
        ("    error: 0.5", "    ssim: 0.5", r"score\.weights.*\['ssim'\]"),
        ("    error: 0.5", "    error: heavy", r"score\.weights\.error"),
        ('version: "2"\n', "", r"'version'"),
        ("  - name: error\n", "  - nam: error\n", r"metrics\[1\].*'name'"),
        ("  - name: error\n", "  - name: psnr\n", r"'psnr' is declared twice"),
        ("bounds: [10, 30]", "bounds: [10, 30]\n    curve: log", r"metrics\[0\] \(psnr\)\.curve"),
        ("bounds: [10, 30]", "bounds: [10, 30]\n    curve: reciprocal", r"metrics\[0\] \(psnr\): curve reciprocal is for an error"),
    ],
)
def test_bad_field_is_named(tmp_path, old, new, field):
    assert old in GOOD_YAML
    p = _write(tmp_path, GOOD_YAML.replace(old, new))
    with pytest.raises(ValueError, match=field) as e:
        load_track_spec(p)
    assert str(p.resolve()) in str(e.value)


@pytest.mark.parametrize("track", ["geometry", "interaction", "longvideo", "physics"])
def test_shipped_track_yamls_load(track):
    spec = load_track_spec(TRACKS / track / "track.yaml")
    assert spec.name == track and spec.metrics
    assert set(spec.weights) <= set(spec.metrics)


@pytest.mark.parametrize("options, match", [
    ("  max_frames: 24\n", "options.max_frames must be a mapping with type, default and help"),
    ("  max_frames: {type: integer, default: 24, help: x}\n", "options.max_frames.type must be one of"),
    ("  max_frames: {type: int, default: 24}\n", "with type, default and help"),
])
def test_an_option_without_type_default_and_help_is_refused(tmp_path, options, match):
    text = GOOD_YAML.replace("  max_frames: {type: int, default: 24, help: frames sampled}\n", options)
    with pytest.raises(ValueError, match=match):
        load_track_spec(_write(tmp_path, text))


def test_every_shipped_track_declares_its_options():
    for name in ("physics", "geometry", "interaction", "longvideo"):
        spec = load_track_spec(TRACKS / name / "track.yaml")
        assert spec.option_specs, name
        assert all(o.help for o in spec.option_specs.values()), name
