"""`worldolympiad validate` warns (exit code unchanged) where a valid case will give weak evidence (issue 56)."""

from __future__ import annotations

import json

from worldolympiad.cli.main import main
from worldolympiad.validate import case_warnings, validate_case_dict


def _case(**over):
    d = {"id": "c1", "scenario": "gaming", "fps": 8, "num_frames": 16, "resolution": [32, 32],
         "chunks": [{"index": 0, "frame_start": 0, "frame_end": 8, "action": "left"},
                    {"index": 1, "frame_start": 8, "frame_end": 16, "action": "right"}]}
    d.update(over)
    return d


def test_bare_directions_without_an_action_space_warn_that_following_is_not_applicable():
    d = _case()
    assert validate_case_dict(d) == []
    (w,) = case_warnings(d)
    assert w.path == "$.metadata" and "could move an agent or the camera" in w.message and "action_space" in w.message


def test_an_action_space_silences_the_action_warning():
    d = _case(metadata={"action_space": {"kind": "image_translation", "actions": {"left": {"translation": [-1, 0]},
                                                                                  "right": {"translation": [1, 0]}}}})
    assert case_warnings(d) == []


def test_physics_objects_without_colour_and_changing_rules_without_a_subject_warn():
    d = _case(chunks=[], scenario="realworld",
              physics={"rules": ["melting"], "objects": [{"name": "ice"}, {"name": "water", "color": [0, 0, 255]}]})
    ws = {w.path: w.message for w in case_warnings(d)}
    assert "no color" in ws["$.physics.objects[0]"] and "$.physics.objects[1]" not in ws
    assert "role" in ws["$.physics.objects"] and "backwards" in ws["$.physics.objects"]
    d["physics"]["objects"][0].update(color=[200, 230, 250], role="subject")
    assert case_warnings(d) == []


def test_validate_prints_warnings_and_keeps_exit_code_zero(tmp_path, capsys):
    f = tmp_path / "c.json"
    f.write_text(json.dumps(_case()))
    assert main(["validate", str(f)]) == 0
    out = capsys.readouterr().out
    assert "warning: $.metadata: no action space" in out and "OK (1 case)" in out


def test_end_effector_deltas_without_a_start_warn_that_the_arm_is_followed_as_a_blob():
    """Interaction v21 follows the end effector by its points from its projected start and expects each delta where
    its projection goes; without metadata.start_ee or a camera it falls back to the blob tracker and a depthless
    direction, which validate now says."""
    move = {"name": "move_ee", "delta": [0.0, 0.0, -0.1]}
    camera = {"intrinsics": [[100, 0, 16], [0, 100, 16], [0, 0, 1]],
              "trajectory": [[[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]] * 16}
    d = _case(scenario="robotics", camera=camera,
              chunks=[{"index": 0, "frame_start": 0, "frame_end": 8, "action": move},
                      {"index": 1, "frame_start": 8, "frame_end": 16, "action": move}])
    assert validate_case_dict(d) == []
    (w,) = case_warnings(d)
    assert w.path == "$.chunks[0].action" and "without metadata.start_ee" in w.message and "blob" in w.message
    d["metadata"] = {"start_ee": [0.5, 0.0, 0.18]}
    assert case_warnings(d) == []
