"""Action vocabularies: what image motion each commanded action should cause.

A case's chunk carries an action (a name like ``"turn_left"`` / ``"RIGHT"``, or a structured
command ``{"name": "move_ee", "delta": [dx, dy, dz]}``). :func:`expected_motion` turns it into
an :class:`ExpectedMotion` — *what* should move (camera or agent), *how* (translate, zoom,
nothing), the image direction and, when known, the magnitude — using, in order:

1. ``case.metadata["action_space"]`` (written by the scenario generators; the forms are listed
   in ``data/action_spaces.yaml``),
2. the defaults shipped in ``data/action_spaces.yaml`` for public layouts.

An action that no vocabulary knows raises :class:`UnknownActionError` naming the action, the
vocabulary and its actions: the track reports it as that case's error.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

import numpy as np

from worldolympiad.types import Action, Case, Chunk
from worldolympiad.validate import AMBIGUOUS_DIRECTIONS

DATA = Path(__file__).with_name("data") / "action_spaces.yaml"

Target = Literal["camera", "agent"]
Mode = Literal["translate", "zoom", "none"]


class UnknownActionError(ValueError):
    """A chunk's action is not in the case's action vocabulary."""


class AmbiguousActionError(UnknownActionError):
    """A bare direction (``left``, ``up``...) in a gaming or robotics case without an action space:
    it may move an agent or the camera, in opposite image directions, so no reading is safe."""


#: scenarios whose actions usually move an agent, not the camera.
AGENT_SCENARIOS = ("gaming", "robotics")


@dataclass(frozen=True)
class ExpectedMotion:
    """The motion an action should cause in the image.

    Attributes:
        action: the action's name as given.
        target: ``camera`` (global ego-motion) or ``agent`` (tracked sprite / end-effector).
        mode: ``translate``, ``zoom`` or ``none``.
        direction: unit ``(dx, dy)`` for translate (x right, y down); ``(±1, 0)`` for zoom.
        magnitude: expected speed (fraction of image width per frame, or log-scale per frame
            for zoom), ``None`` when the vocabulary does not say.
    """

    action: str
    target: Target
    mode: Mode
    direction: tuple[float, float] = (0.0, 0.0)
    magnitude: float | None = None


@cache
def default_vocabularies() -> dict[str, Any]:
    """The parsed ``data/action_spaces.yaml``."""
    import yaml

    return yaml.safe_load(DATA.read_text())  # type: ignore[no-any-return]


def action_name(action: Action) -> str | None:
    """The name of an action (``None`` when the chunk has no action)."""
    if action is None:
        return None
    if isinstance(action, str):
        return action
    if isinstance(action, dict):
        return str(action.get("name") or action.get("action") or action.get("type") or "")
    raise UnknownActionError(f"action must be a name or a dict with a 'name', got {type(action).__name__}: {action!r}")


def _unit(v: Any) -> tuple[tuple[float, float], float]:
    a = np.asarray(v, dtype=np.float64).ravel()[:2]
    n = float(np.linalg.norm(a))
    if n == 0:
        return (0.0, 0.0), 0.0
    return (float(a[0] / n), float(a[1] / n)), n


def _from_canonical(name: str, e: dict[str, Any]) -> ExpectedMotion:
    mode = e.get("motion", "none")
    target = e.get("target", "camera")
    if mode == "translate":
        d, _ = _unit(e["direction"])
        return ExpectedMotion(name, target, "translate", d, e.get("magnitude"))
    if mode == "zoom":
        return ExpectedMotion(name, target, "zoom", (float(np.sign(e.get("direction", 1))), 0.0), e.get("magnitude"))
    return ExpectedMotion(name, target, "none")


def _from_case_space(name: str, space: dict[str, Any], e: dict[str, Any], case: Case) -> ExpectedMotion:
    """Convert one entry of a generator's ``metadata["action_space"]`` (see module docs)."""
    kind = space.get("kind", "")
    if "motion" in e and isinstance(e["motion"], str):
        return _from_canonical(name, {"target": "agent" if kind != "camera" else "camera", **e})
    if kind == "image_translation" or (kind != "camera" and "translation" in e and len(e["translation"]) == 2):
        d, n = _unit(e["translation"])
        if n == 0:
            return ExpectedMotion(name, "agent", "none")
        return ExpectedMotion(name, "agent", "translate", d, n / case.width)
    if kind in ("end_effector", "robot") and "translation" not in e:
        # named robot commands without a displacement (grasp, release): the arm holds still
        return ExpectedMotion(name, "agent", "none")
    if kind == "camera":
        return _camera_move(name, e, case, frames=1)
    raise UnknownActionError(f"action {name!r}: cannot read its entry {e!r} in action_space of kind {kind!r}; "
                             f"see {DATA} for the supported forms")


# Scene depth assumed when weighing a camera translation against a rotation (metres). Only the
# *kind* of image motion (pan vs zoom) and its direction depend on it; magnitudes come from the
# reference video when there is one.
ASSUMED_DEPTH_M = 2.0


def _camera_move(name: str, e: Mapping[str, Any], case: Case, frames: int) -> ExpectedMotion:
    """Image motion of a camera move ``translation`` [x, y, z] (camera frame, OpenCV) + ``yaw_deg`` /
    ``pitch_deg`` spread over ``frames`` frames.

    The content shifts by ``fx * (tan(yaw) - t_x / D) / W`` horizontally (yaw left and strafing
    right both move content right / left respectively) and zooms by ``t_z / D`` per frame;
    whichever is larger decides between a pan and a zoom.
    """
    t = np.asarray(e.get("translation", [0, 0, 0]), dtype=np.float64)[:3] / frames
    yaw = math.radians(float(e.get("yaw_deg", 0.0))) / frames
    pitch = math.radians(float(e.get("pitch_deg", 0.0))) / frames
    fx = float(case.camera.K[0, 0]) if case.camera is not None else float(case.width)
    f = fx / case.width
    pan = np.array([f * (math.tan(yaw) - t[0] / ASSUMED_DEPTH_M), f * (-math.tan(pitch) - t[1] / ASSUMED_DEPTH_M)])
    zoom = t[2] / ASSUMED_DEPTH_M
    pan_speed = float(np.linalg.norm(pan))
    if pan_speed == 0 and zoom == 0:
        return ExpectedMotion(name, "camera", "none")
    if abs(zoom) > pan_speed:
        return ExpectedMotion(name, "camera", "zoom", (float(np.sign(zoom)), 0.0))
    d, _ = _unit(pan)
    # a pure rotation's image speed does not depend on depth: then the magnitude is known
    exact = float(np.linalg.norm(t[:2])) == 0.0 and case.camera is not None
    return ExpectedMotion(name, "camera", "translate", d, pan_speed if exact else None)


def _structured(action: dict[str, Any], case: Case, frames: int = 1, at: np.ndarray | None = None) -> ExpectedMotion | None:
    """Actions that carry their own motion.

    * ``{"name": ..., "delta": [dx, dy, dz]}`` (world metres): end-effector displacement,
      projected through the case camera. Where ``at`` (the end effector's world position at the
      chunk's start, :func:`chunk_expectations`) is known, its start and end are projected: the
      image direction includes the perspective of a move toward or away from the camera, and the
      magnitude (fraction of the width per frame over ``frames``) is known (v21).
    * ``{"name": ..., "translation": [x, y, z], "yaw_deg": d}``: a camera move over the chunk
      in the camera frame (fly-throughs); read like a camera vocabulary entry, with no
      per-frame magnitude (the reference video gives it).
    """
    delta = action.get("delta")
    if delta is None:
        if "translation" in action or "yaw_deg" in action:
            m = _camera_move(action_name(action) or "camera", action, case, frames=max(1, frames))
            return ExpectedMotion(m.action, m.target, m.mode, m.direction, None)
        return None
    name = action_name(action) or "move"
    d = np.asarray(delta, dtype=np.float64)
    if np.linalg.norm(d) == 0:
        return ExpectedMotion(name, "agent", "none")
    if case.camera is None or not len(case.camera.poses):
        raise UnknownActionError(f"action {name!r} moves by a world-space delta but case {case.id!r} has no camera "
                                 "pose to project it into the image; add case.camera")
    if at is not None and d.size >= 3:
        ends = [_project(case, np.asarray(at, dtype=np.float64) + k * d[:3]) for k in (0.0, 1.0)]
        if ends[0] is not None and ends[1] is not None:
            step = (ends[1] - ends[0]) / case.width / max(1, frames)
            img, speed = _unit(step)
            if speed > 0:
                return ExpectedMotion(name, "agent", "translate", img, speed)
    R_wc = case.camera.poses[0][:3, :3].T  # world -> camera rotation
    dc = R_wc @ d[:3] if d.size >= 3 else np.r_[d, 0.0]
    img, _ = _unit(dc[:2])  # OpenCV camera: x right, y down; depth change ignored for direction
    if img == (0.0, 0.0):
        return ExpectedMotion(name, "agent", "zoom", (float(-np.sign(dc[2])), 0.0))
    return ExpectedMotion(name, "agent", "translate", img)


def vocabulary_for(case: Case) -> tuple[str, dict[str, Any], bool]:
    """``(vocabulary name, entries, from_case)`` for ``case``; raises when none applies."""
    space = case.metadata.get("action_space")
    if isinstance(space, dict) and isinstance(space.get("actions"), dict):
        return f"{case.id}.metadata.action_space", space, True
    spaces = default_vocabularies()["spaces"]
    gen = str(case.metadata.get("generator", ""))
    candidates = [case.metadata.get("action_space_name"), gen, case.metadata.get("game")]
    if gen.startswith("gaming.atari"):
        candidates.append("atari")
    candidates += ["robotics" if case.scenario == "robotics" else None, "camera"]
    for c in candidates:
        if c and c in spaces:
            return str(c), {"actions": spaces[c]}, False
    raise UnknownActionError(f"case {case.id!r} has no action vocabulary (metadata['action_space']) and none of "
                             f"the defaults {sorted(spaces)} matches; add one")


def expected_motion(action: Action, case: Case, frames: int = 1, at: np.ndarray | None = None) -> ExpectedMotion | None:
    """The expected motion of ``action`` in ``case`` (``None`` when the chunk has no action).

    ``frames`` is the chunk's length: structured camera moves give their motion over the whole
    chunk. ``at``: the end effector's world position at the chunk's start, where known
    (:func:`chunk_expectations`).

    Raises:
        UnknownActionError: the action is not in the case's vocabulary (message lists it).
    """
    if action is None:
        return None
    if isinstance(action, dict):
        s = _structured(action, case, frames, at)
        if s is not None:
            return s
    name = action_name(action)
    if not name:
        raise UnknownActionError(f"case {case.id!r}: action {action!r} has no name")
    vocab_name, space, from_case = vocabulary_for(case)
    actions = space["actions"]
    key = name if name in actions else next((k for k in actions if k.lower() == name.lower().replace(" ", "_")), None)
    if key is None:
        raise UnknownActionError(f"case {case.id!r}: unknown action {name!r} for vocabulary {vocab_name!r}; "
                                 f"known actions: {', '.join(sorted(actions))}")
    entry = actions[key]
    if from_case:
        return _from_case_space(key, space, entry, case)
    if vocab_name == "camera" and case.scenario in AGENT_SCENARIOS and key.lower() in AMBIGUOUS_DIRECTIONS:
        raise AmbiguousActionError(
            f"case {case.id!r} ({case.scenario}): action {name!r} has no action space to say what it moves; the "
            f"generic camera vocabulary would read it as a camera pan (content moving opposite to "
            f"{name!r}), the reverse of an agent moving {name!r}. Add metadata.action_space (e.g. "
            "{\"kind\": \"image_translation\", \"actions\": {\"left\": {\"translation\": [-1, 0]}}}) "
            "or metadata.game / action_space_name naming a shipped vocabulary")
    return _from_canonical(key, entry)


def _project(case: Case, point: np.ndarray) -> np.ndarray | None:
    """Pixel ``(u, v)`` of a world point through the case camera's intrinsics and first pose (``None`` behind it)."""
    assert case.camera is not None
    pose = case.camera.poses[0]
    xc = pose[:3, :3].T @ (np.asarray(point, float) - pose[:3, 3])  # world -> camera (OpenCV: z forward)
    if xc[2] <= 1e-6:
        return None
    return np.asarray(case.camera.K @ (xc / xc[2]), dtype=np.float64)[:2]


def _start_ee(case: Case) -> np.ndarray | None:
    """The end effector's first position (``metadata.start_ee``, world metres) where the case also has a camera to
    project it through; else ``None``."""
    start = case.metadata.get("start_ee")
    if start is None or len(start) != 3 or case.camera is None or not len(case.camera.poses):
        return None
    return np.asarray(start, dtype=np.float64)


def chunk_expectations(case: Case, chunks: Sequence[Chunk]) -> list[ExpectedMotion | None]:
    """:func:`expected_motion` of every chunk's action, where end-effector moves know where the arm is.

    A robot case that gives the end effector's first position (``metadata.start_ee``, world metres) and a
    camera: each chunk's ``{"delta": ...}`` starts where the commanded deltas before it left the end effector,
    so its image direction and speed are the projection of that move (v21). Before, the delta was rotated into
    the camera and its depth dropped: a lift seen from above (the tuning pick at 78 degrees) asked for no speed
    in particular, and its true image motion (0.001 of the width a frame) was judged against the 0.002 floor
    every tracker needs when the size of the motion is unknown.
    """
    at = _start_ee(case)
    out: list[ExpectedMotion | None] = []
    for c in chunks:
        out.append(expected_motion(c.action, case, c.num_frames, at=at))
        delta = c.action.get("delta") if isinstance(c.action, dict) else None
        if at is not None and delta is not None and len(delta) >= 3:
            at = at + np.asarray(delta, dtype=np.float64)[:3]
    return out


def agent_start(case: Case) -> dict[str, Any] | None:
    """Where an agent with no known colour is in the first frame, when the case says: a robot's end effector
    (``metadata.start_ee``, world metres) projected through the case camera (its intrinsics and first pose), as
    ``{"color": None, "start": [x, y], "resolution": [H, W]}`` in the case's pixels (``None`` without either, or
    for a point behind the camera or outside the picture). :func:`tracks.interaction.motion.agent_motion` then
    follows the end effector by its own texture from there (interaction v21) instead of by background blobs."""
    start = _start_ee(case)
    uv = None if start is None else _project(case, start)
    if uv is None:
        return None
    u, v = uv
    if not (0 <= u < case.width and 0 <= v < case.height):
        return None
    return {"color": None, "start": [float(u), float(v)], "resolution": [int(case.height), int(case.width)]}


def agent_appearance(case: Case) -> dict[str, Any] | None:
    """Colour (and search window in the case's pixels) of the agent sprite, when known.

    ``resolution`` is the case's ``[H, W]``: the window is mapped onto a video of another size.

    From ``action_space["agent_color"]`` / ``["agent_window"]``, a ``physics.objects`` entry
    named like the agent, or the shipped Atari defaults.
    """
    res = [int(case.height), int(case.width)]
    space = case.metadata.get("action_space") or {}
    if isinstance(space, dict) and space.get("agent_color"):
        return {"color": space["agent_color"], "window": space.get("agent_window"), "resolution": res}
    agent = space.get("agent") if isinstance(space, dict) else None
    if case.physics is not None:
        for o in case.physics.objects:
            if o.get("color") and (o.get("name") == agent or o.get("role") == "agent"):
                return {"color": o["color"], "window": None, "resolution": res}
    game = str(case.metadata.get("game") or "")
    atari = default_vocabularies().get("atari_agents", {})
    if game in atari:
        a = atari[game]
        nh, nw = a["native"]
        sy, sx = case.height / nh, case.width / nw
        w = a["window"]
        # one native pixel of slack around the window: resizing blurs sprite edges
        window = {"rows": [max(0, int(w["rows"][0] * sy) - 1), int(math.ceil(w["rows"][1] * sy)) + 1],
                  "cols": [max(0, int(w["cols"][0] * sx) - 1), int(math.ceil(w["cols"][1] * sx)) + 1]}
        return {"color": a["color"], "window": window, "resolution": res}
    return None
