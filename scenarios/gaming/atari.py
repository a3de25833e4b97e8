"""Atari games from ale-py as reference generators.

The real ROMs ship with ale-py; with ``repeat_action_probability = 0`` the emulator is
deterministic, so a case (seed, warm-up length, per-chunk actions) always renders the same
bytes. Each chunk holds one action of the game's minimal action set; a video frame is
``frame_skip`` emulator frames. Ground truth is the agent's position decoded from RAM
(addresses and pixel mapping in ``games.yaml``), its sprite mask and the raw RAM bytes.
"""

from __future__ import annotations

import logging
import math
from typing import Any, ClassVar

import numpy as np

from scenarios.gaming.vocab import atari_spec
from worldolympiad.scenario import CaseGenerator, Rendered
from worldolympiad.types import Case, Video, even_chunks

logger = logging.getLogger(__name__)

NATIVE_H, NATIVE_W = 210, 160


def native_to_output(xy: np.ndarray, height: int, width: int) -> np.ndarray:
    """Native ALE pixel coordinates ``[..., 2]`` (x, y; pixel centres at integers) → output pixels."""
    xy = np.asarray(xy, dtype=np.float64)
    scale = np.array([width / NATIVE_W, height / NATIVE_H])
    return (xy + 0.5) * scale - 0.5


def agent_position_from_ram(spec: dict[str, Any], ram: np.ndarray) -> np.ndarray:
    """Agent centre in native pixels ``[T, 2]`` (x, y) from RAM bytes ``[T, 128]``."""
    ram = np.atleast_2d(ram)
    value = ram[:, int(spec["ram"]["address"])].astype(np.float64)
    out = []
    for axis in ("x", "y"):
        m = spec["position"][axis]
        out.append(np.full_like(value, m["constant"]) if "constant" in m else value * m["ram_scale"] + m["offset"])
    return np.stack(out, axis=-1)


def agent_mask_native(spec: dict[str, Any], frame: np.ndarray) -> np.ndarray:
    """Boolean mask ``[210, 160]`` of the agent sprite: its colour inside its window."""
    win = spec["agent_window"]
    r0, r1 = win["rows"]
    c0, c1 = win["cols"]
    mask = np.zeros(frame.shape[:2], dtype=bool)
    mask[r0:r1, c0:c1] = np.all(frame[r0:r1, c0:c1] == np.asarray(spec["agent_color"], np.uint8), axis=-1)
    for r in win.get("exclude_rows", ()):
        mask[r] = False
    return mask


class AtariGenerator(CaseGenerator):
    """An Atari game played with one held action per chunk.

    Params (all optional): ``resolution`` [H, W] (64x64), ``num_frames`` (32), ``fps`` (the
    game's default, 15) and ``frame_skip`` (``60 / fps``: real time), ``num_chunks`` (4), ``actions`` (one action name
    per chunk; default: drawn from the game's plan by seed), ``warmup`` (NOOP video frames
    before recording; default drawn by seed in [0, 20)), ``warmup_moves`` (action names, one
    per video frame, played after the NOOPs; default: one of the game's ``warmup_moves`` held
    for 0-4 frames, drawn by seed). The game's start actions (Breakout's serve) come first, then
    the warm-up, then the recorded frames.

    Version 2: Breakout ignores NOOPs until it is served, so in version 1 (warm-up before the
    serve) its cases differed only by the order of the 3 plan actions and distinct seeds rendered
    byte-identical videos. Now the ball is at a seeded point of its flight and the paddle starts
    at a seeded place. Pong and freeway have no start actions and no ``warmup_moves``, so they
    render as in version 1.
    """

    game: ClassVar[str] = "breakout"
    name: ClassVar[str] = "gaming.atari_breakout"
    version: ClassVar[str] = "2"
    accepted_params: ClassVar[frozenset[str]] = frozenset(
        {"actions", "fps", "frame_skip", "num_chunks", "num_frames", "resolution", "warmup", "warmup_moves"})

    def make_case(self, case_id: str, *, seed: int = 0, **params: Any) -> Case:
        unknown = set(params) - self.accepted_params
        if unknown:
            raise ValueError(f"{self.name}: unknown params {sorted(unknown)}; accepted: {sorted(self.accepted_params)}")
        spec = atari_spec(self.game)
        p = params
        h, w = (int(v) for v in p.get("resolution", (64, 64)))
        num_frames = int(p.get("num_frames", 32))
        fps = float(p.get("fps", spec["default_fps"]))
        # real time by default: the emulator runs at 60 Hz, so a video frame is 60 / fps emulator frames
        frame_skip = int(p.get("frame_skip", max(1, round(60.0 / fps)) if "fps" in p else spec["default_frame_skip"]))
        num_chunks = int(p.get("num_chunks", 4))
        rng = np.random.default_rng(seed)
        actions = p.get("actions")
        if actions is None:
            plan = list(spec["plan_actions"])
            actions = [plan[int(i)] for i in rng.permutation(len(plan))]
            actions = [actions[i % len(actions)] for i in range(num_chunks)]
        actions = [str(a) for a in actions]
        if len(actions) != num_chunks:
            raise ValueError(f"{self.name}: got {len(actions)} actions for num_chunks={num_chunks}; give one action per chunk")
        self._check_actions(actions, "actions", spec)
        warmup = int(p.get("warmup", rng.integers(0, 20)))
        # drawn after everything above so that games without warm-up moves keep version 1's draws
        moves = p.get("warmup_moves")
        if moves is None:
            choices = list(spec.get("warmup_moves", ()))
            moves = [choices[int(rng.integers(len(choices)))]] * int(rng.integers(0, 5)) if choices else []
        moves = [str(a) for a in moves]
        self._check_actions(moves, "warmup_moves", spec)
        captions = [spec["actions"][a]["caption"] for a in actions]
        chunks = even_chunks(num_frames, num_chunks, captions=captions, actions=actions)
        scale = np.array([w / NATIVE_W, h / NATIVE_H])
        win = spec["agent_window"]
        sy, sx = h / NATIVE_H, w / NATIVE_W
        action_space = {
            "kind": "image_translation",
            "agent": spec["agent"],
            # what a model-free tracker needs: the sprite colour and where it can be (output pixels,
            # one pixel of slack because resizing blurs sprite edges)
            "agent_color": list(spec["agent_color"]),
            "agent_window": {"rows": [max(0, int(win["rows"][0] * sy) - 1), min(h, math.ceil(win["rows"][1] * sy) + 1)],
                             "cols": [max(0, int(win["cols"][0] * sx) - 1), min(w, math.ceil(win["cols"][1] * sx) + 1)]},
            "units": "output pixels per video frame (x right, y down); the agent stops at the playfield bounds",
            "actions": {
                name: {
                    "translation": [float(v) for v in np.asarray(a["motion"]) * frame_skip * scale],
                    "caption": a["caption"],
                }
                for name, a in spec["actions"].items()
            },
        }
        resolved = {"resolution": [h, w], "num_frames": num_frames, "fps": fps, "frame_skip": frame_skip,
                    "num_chunks": num_chunks, "actions": actions, "warmup": warmup,
                    "warmup_moves": moves}
        return Case(
            id=case_id,
            scenario="gaming",
            fps=fps,
            num_frames=num_frames,
            resolution=(h, w),
            prompt=f"Atari {spec['title']} gameplay; the player controls the {spec['agent']}: " + "; then ".join(captions) + ".",
            chunks=chunks,
            tracks=("interaction", "longvideo"),
            metadata={
                "generator": self.name,
                "generator_version": self.version,
                "seed": seed,
                "params": resolved,
                "game": self.game,
                "action_space": action_space,
                "ground_truth": {
                    "agent_position": f"states['agent']['position'] [T, 2] output pixels (x, y) from RAM[{spec['ram']['address']}]",
                    "masks": f"{spec['agent']} sprite = 1",
                },
            },
        )

    def _check_actions(self, names: list[str], param: str, spec: dict[str, Any]) -> None:
        bad = [a for a in names if a not in spec["actions"]]
        if bad:
            raise ValueError(f"{self.name}: unknown {param} {bad}; this game's actions are {sorted(spec['actions'])}")

    def play(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        """Run the emulator for ``case``.

        Returns:
            the emulator's own screens ``uint8 [T, 210, 160, 3]`` and RAM ``uint8 [T, 128]``,
            one per video frame (after that frame's ``frame_skip`` emulator steps).
        """
        from ale_py import ALEInterface, LoggerMode, roms

        spec = atari_spec(self.game)
        p = case.metadata["params"]
        ALEInterface.setLoggerMode(LoggerMode.Error)
        ale = ALEInterface()
        ale.setInt("random_seed", int(case.metadata["seed"]))
        ale.setFloat("repeat_action_probability", 0.0)
        rom = roms.get_rom_path(self.game)
        if rom is None:
            raise RuntimeError(f"ale-py ships no ROM for {self.game!r}; install ale-py>=0.9, which bundles the Atari ROMs")
        ale.loadROM(rom)
        minimal = {a.name: a for a in ale.getMinimalActionSet()}
        skip = int(p["frame_skip"])
        warmup = ["NOOP"] * int(p["warmup"]) + list(p.get("warmup_moves", ()))
        for name in list(spec["start_actions"]) + warmup:
            for _ in range(skip):
                ale.act(minimal[name])
        native = np.empty((case.num_frames, NATIVE_H, NATIVE_W, 3), np.uint8)
        ram = np.empty((case.num_frames, 128), np.uint8)
        for t in range(case.num_frames):
            chunk = case.chunk_at(t)
            action = chunk.action if chunk is not None and chunk.action else "NOOP"
            if not isinstance(action, str):
                raise ValueError(f"case {case.id}: Atari actions are names like 'LEFT', got {action!r} at frame {t}")
            for _ in range(skip):
                ale.act(minimal[action])
            native[t] = ale.getScreenRGB()
            ram[t] = ale.getRAM()
        return native, ram

    def render(self, case: Case) -> Rendered:
        import cv2

        spec = atari_spec(self.game)
        h, w = case.resolution
        native, ram = self.play(case)
        frames = np.empty((case.num_frames, h, w, 3), np.uint8)
        masks = np.zeros((case.num_frames, h, w), np.int32)
        for t in range(case.num_frames):
            # INTER_AREA keeps the thin Atari sprites visible when downscaling.
            frames[t] = cv2.resize(native[t], (w, h), interpolation=cv2.INTER_AREA)
            m = agent_mask_native(spec, native[t]).astype(np.uint8)
            masks[t] = cv2.resize(m, (w, h), interpolation=cv2.INTER_NEAREST)
        pos_native = agent_position_from_ram(spec, ram)
        addr = int(spec["ram"]["address"])
        states = {
            "agent": {
                "name": spec["agent"],
                "position": native_to_output(pos_native, h, w),
                "position_native": pos_native,
                "ram_address": addr,
                "ram_value": ram[:, addr].astype(np.int64),
            },
            "ram": ram,
        }
        video = Video(frames=frames, fps=case.fps, chunks=case.chunks)
        return Rendered(video=video, masks=masks, object_ids={spec["agent"]: 1}, states=states)


class BreakoutGenerator(AtariGenerator):
    """Atari Breakout: the paddle follows LEFT/RIGHT/NOOP held per chunk."""

    game = "breakout"
    name = "gaming.atari_breakout"


class PongGenerator(AtariGenerator):
    """Atari Pong: the player's paddle moves up (RIGHT) / down (LEFT) per chunk."""

    game = "pong"
    name = "gaming.atari_pong"


class FreewayGenerator(AtariGenerator):
    """Atari Freeway: the chicken walks UP/DOWN across the highway per chunk."""

    game = "freeway"
    name = "gaming.atari_freeway"


breakout = BreakoutGenerator()
pong = PongGenerator()
freeway = FreewayGenerator()
