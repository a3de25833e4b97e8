"""Data that crosses package boundaries (DESIGN.md §3).

Everything here is a plain dataclass with a JSON round trip (``to_dict`` /
``from_dict``). Nothing here imports torch, numpy is the only array library.

Conventions:
    * Frames are ``uint8`` arrays shaped ``[T, H, W, 3]`` (RGB).
    * ``Chunk.frame_end`` is *exclusive*: a chunk covers ``frames[frame_start:frame_end]``.
    * Camera trajectories are camera-to-world 4x4 matrices, OpenCV convention
      (x right, y down, z forward).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

SCENARIOS: tuple[str, ...] = ("gaming", "robotics", "realworld")
#: the built-in tracks in display order (each registered in worldolympiad/registries.py: TRACKS);
#: the default of --tracks. Plugins add theirs to the registry, not here.
TRACKS: tuple[str, ...] = ("physics", "geometry", "interaction", "longvideo")

Scenario = Literal["gaming", "robotics", "realworld"]
Status = Literal["ok", "not_applicable", "failed"]

# An action is a name from the scenario's action vocabulary (``"forward"``), or a
# structured command (``{"name": "move_ee", "delta": [0.05, 0, 0]}``), or absent.
Action = str | dict[str, Any] | None


class CaseError(ValueError):
    """A case (or suite) file is malformed. The message names the field and the fix."""


# --------------------------------------------------------------------------- case


@dataclass(frozen=True)
class Chunk:
    """One captioned, action-labelled span of a case's video."""

    index: int
    frame_start: int  # inclusive
    frame_end: int  # exclusive
    caption: str = ""
    action: Action = None

    @property
    def num_frames(self) -> int:
        return self.frame_end - self.frame_start

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "frame_start": self.frame_start,
            "frame_end": self.frame_end,
            "caption": self.caption,
            "action": self.action,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Chunk:
        return cls(
            index=int(d["index"]),
            frame_start=int(d["frame_start"]),
            frame_end=int(d["frame_end"]),
            caption=str(d.get("caption", "") or ""),
            action=d.get("action"),
        )


@dataclass(frozen=True)
class CameraSpec:
    """Ground-truth camera: intrinsics ``K`` (3x3) and a camera-to-world trajectory."""

    intrinsics: tuple[tuple[float, ...], ...]  # 3x3
    trajectory: tuple[tuple[tuple[float, ...], ...], ...] = ()  # [T, 4, 4]

    @property
    def K(self) -> np.ndarray:  # noqa: N802 - the field's name for it
        return np.asarray(self.intrinsics, dtype=np.float64)

    @property
    def poses(self) -> np.ndarray:
        """Camera-to-world matrices ``[T, 4, 4]`` (empty ``[0, 4, 4]`` if unknown)."""
        if not self.trajectory:
            return np.zeros((0, 4, 4))
        return np.asarray(self.trajectory, dtype=np.float64)

    def to_dict(self) -> dict[str, Any]:
        return {
            "intrinsics": [list(r) for r in self.intrinsics],
            "trajectory": [[list(r) for r in m] for m in self.trajectory],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CameraSpec:
        K = tuple(tuple(float(x) for x in row) for row in d["intrinsics"])
        traj = tuple(tuple(tuple(float(x) for x in row) for row in m) for m in d.get("trajectory") or ())
        return cls(intrinsics=K, trajectory=traj)

    @classmethod
    def from_arrays(cls, K: np.ndarray, poses: np.ndarray | None = None) -> CameraSpec:
        traj: tuple[tuple[tuple[float, ...], ...], ...] = ()
        if poses is not None:
            traj = tuple(tuple(tuple(float(x) for x in row) for row in m) for m in np.asarray(poses))
        return cls(intrinsics=tuple(tuple(float(x) for x in row) for row in np.asarray(K)), trajectory=traj)


@dataclass(frozen=True)
class PhysicsSpec:
    """What the physical track needs to know about a case.

    Attributes:
        rules: rule ids from the 14-rule taxonomy expected to apply (``"gravity"``...).
        objects: objects to segment, each ``{"name", "color"?: [r,g,b], "box"?: [x0,y0,x1,y1]}``
            (box in pixels of the first frame).
        ground_truth: per-frame object states, inline (``{"objects": {name: {"position": [[x,y,z]...]}}}``)
            or a path (relative to the case file) to a ``.json``/``.npz`` file holding them.
    """

    rules: tuple[str, ...] = ()
    objects: tuple[Mapping[str, Any], ...] = ()
    ground_truth: Mapping[str, Any] | str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"rules": list(self.rules), "objects": [dict(o) for o in self.objects], "ground_truth": self.ground_truth}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PhysicsSpec:
        return cls(
            rules=tuple(d.get("rules") or ()),
            objects=tuple(dict(o) for o in d.get("objects") or ()),
            ground_truth=d.get("ground_truth"),
        )


@dataclass(frozen=True)
class Case:
    """One evaluation item (schema: ``worldolympiad/schema/case.schema.json``).

    Paths (``conditioning``, ``reference``, string ``physics.ground_truth``) are stored
    as written in the file; :meth:`resolve` turns them into absolute paths using
    ``base_dir`` (the folder of the case or suite file).
    """

    id: str
    scenario: Scenario
    fps: float
    num_frames: int
    resolution: tuple[int, int]  # [H, W]
    prompt: str = ""
    suite: str = ""
    chunks: tuple[Chunk, ...] = ()
    conditioning: str | None = None
    reference: str | None = None
    camera: CameraSpec | None = None
    physics: PhysicsSpec | None = None
    tracks: tuple[str, ...] = TRACKS
    metadata: Mapping[str, Any] = field(default_factory=dict)
    base_dir: str | None = field(default=None, compare=False)

    def resolve(self, path: str | None) -> Path | None:
        """Absolute path for a path field of this case (``None`` stays ``None``)."""
        if path is None:
            return None
        p = Path(path)
        if not p.is_absolute() and self.base_dir:
            p = Path(self.base_dir) / p
        return p

    @property
    def height(self) -> int:
        return self.resolution[0]

    @property
    def width(self) -> int:
        return self.resolution[1]

    @property
    def duration(self) -> float:
        return self.num_frames / self.fps

    def chunk_at(self, frame: int) -> Chunk | None:
        for c in self.chunks:
            if c.frame_start <= frame < c.frame_end:
                return c
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "scenario": self.scenario,
            "suite": self.suite,
            "fps": self.fps,
            "num_frames": self.num_frames,
            "resolution": list(self.resolution),
            "prompt": self.prompt,
            "chunks": [c.to_dict() for c in self.chunks],
            "conditioning": self.conditioning,
            "reference": self.reference,
            "camera": self.camera.to_dict() if self.camera else None,
            "physics": self.physics.to_dict() if self.physics else None,
            "tracks": list(self.tracks),
            "metadata": dict(self.metadata),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], base_dir: str | Path | None = None) -> Case:
        """Build a case from its JSON form. Raises :class:`CaseError` naming the bad field.

        Use :func:`worldolympiad.validate.validate_case` for a report of *every* problem.
        """
        from worldolympiad.validate import validate_case_dict

        problems = validate_case_dict(d)
        if problems:
            where = f" in {base_dir}" if base_dir else ""
            raise CaseError(f"invalid case{where}: " + "; ".join(str(p) for p in problems))
        return cls(
            id=str(d["id"]),
            scenario=d["scenario"],
            suite=str(d.get("suite", "") or ""),
            fps=float(d["fps"]),
            num_frames=int(d["num_frames"]),
            resolution=(int(d["resolution"][0]), int(d["resolution"][1])),
            prompt=str(d.get("prompt", "") or ""),
            chunks=tuple(Chunk.from_dict(c) for c in d.get("chunks") or ()),
            conditioning=d.get("conditioning"),
            reference=d.get("reference"),
            camera=CameraSpec.from_dict(d["camera"]) if d.get("camera") else None,
            physics=PhysicsSpec.from_dict(d["physics"]) if d.get("physics") else None,
            tracks=tuple(d.get("tracks") or TRACKS),
            metadata=dict(d.get("metadata") or {}),
            base_dir=str(base_dir) if base_dir is not None else None,
        )

    @classmethod
    def load(cls, path: str | Path) -> Case:
        path = Path(path)
        try:
            from worldolympiad.validate import parse_json

            d = parse_json(path.read_text())
        except json.JSONDecodeError as e:
            raise CaseError(f"{path}: not valid JSON ({e.msg} at line {e.lineno} col {e.colno}); fix the file") from e
        return cls.from_dict(d, base_dir=path.parent.resolve())

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2))


def even_chunks(num_frames: int, num_chunks: int, captions: Sequence[str] = (), actions: Sequence[Action] = ()) -> tuple[Chunk, ...]:
    """Split ``num_frames`` into ``num_chunks`` contiguous chunks (the last takes the remainder)."""
    if num_chunks < 1 or num_chunks > num_frames:
        raise ValueError(f"num_chunks must be in [1, num_frames={num_frames}], got {num_chunks}")
    size = num_frames // num_chunks
    out = []
    for i in range(num_chunks):
        start = i * size
        end = num_frames if i == num_chunks - 1 else (i + 1) * size
        out.append(
            Chunk(
                index=i,
                frame_start=start,
                frame_end=end,
                caption=captions[i] if i < len(captions) else "",
                action=actions[i] if i < len(actions) else None,
            )
        )
    return tuple(out)


# -------------------------------------------------------------------------- video


@dataclass
class Video:
    """Decoded frames plus what is needed to interpret them.

    Attributes:
        frames: ``uint8 [T, H, W, 3]`` RGB.
        fps: frames per second.
        chunks: chunk boundaries (may be empty when unknown).
        source: path the frames came from, if any.
        metadata: free-form provenance (model name, generation timings...).
    """

    frames: np.ndarray
    fps: float
    chunks: tuple[Chunk, ...] = ()
    source: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        f = self.frames
        if not isinstance(f, np.ndarray) or f.dtype != np.uint8 or f.ndim != 4 or f.shape[-1] != 3:
            shape = getattr(f, "shape", None)
            dtype = getattr(f, "dtype", None)
            raise ValueError(f"Video.frames must be uint8 [T, H, W, 3], got dtype={dtype} shape={shape}")
        if not self.fps or self.fps <= 0 or not math.isfinite(self.fps):
            raise ValueError(f"Video.fps must be a positive number, got {self.fps!r}")

    @property
    def num_frames(self) -> int:
        return int(self.frames.shape[0])

    @property
    def resolution(self) -> tuple[int, int]:
        return int(self.frames.shape[1]), int(self.frames.shape[2])

    @property
    def duration(self) -> float:
        return self.num_frames / self.fps

    def chunk_frames(self, chunk: Chunk) -> np.ndarray:
        return self.frames[chunk.frame_start : chunk.frame_end]


# ------------------------------------------------------------------------ results


@dataclass
class MetricValue:
    """One number a track measured, with its provenance.

    ``normalized`` is in ``[0, 1]`` with 1 best (``None`` when not ok).
    ``status`` is ``ok``, ``not_applicable`` or ``failed``; the latter two carry a ``reason``
    and never a silent zero.
    """

    name: str
    raw: float | None
    normalized: float | None
    higher_is_better: bool = True
    version: str = "1"
    details: dict[str, Any] = field(default_factory=dict)
    status: Status = "ok"
    reason: str | None = None

    def __post_init__(self) -> None:
        if self.status == "ok":
            if self.raw is not None and isinstance(self.raw, float) and math.isnan(self.raw):
                raise ValueError(f"metric {self.name}: raw is NaN with status ok; report status='failed' with a reason")
            if self.normalized is not None and not (0.0 <= self.normalized <= 1.0):
                raise ValueError(f"metric {self.name}: normalized must be in [0, 1], got {self.normalized}")
        elif not self.reason:
            raise ValueError(f"metric {self.name}: status {self.status!r} needs a reason")

    @classmethod
    def not_applicable(cls, name: str, reason: str, *, version: str = "1", higher_is_better: bool = True) -> MetricValue:
        return cls(name, None, None, higher_is_better, version, {}, "not_applicable", reason)

    @classmethod
    def failed(cls, name: str, reason: str, *, version: str = "1", higher_is_better: bool = True,
               normalized: float | None = None, details: dict[str, Any] | None = None) -> MetricValue:
        """A metric that could not be computed. ``normalized`` may be set to a documented floor
        (e.g. the geometry track gives an unreconstructable video the lowest score)."""
        return cls(name, None, normalized, higher_is_better, version, details or {}, "failed", reason)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "raw": _json_float(self.raw),
            "normalized": _json_float(self.normalized),
            "higher_is_better": self.higher_is_better,
            "version": self.version,
            "details": _jsonable(self.details),
            "status": self.status,
            "reason": self.reason,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MetricValue:
        return cls(
            name=d["name"],
            raw=_from_json_float(d.get("raw")),
            normalized=d.get("normalized"),
            higher_is_better=bool(d.get("higher_is_better", True)),
            version=str(d.get("version", "1")),
            details=dict(d.get("details") or {}),
            status=d.get("status", "ok"),
            reason=d.get("reason"),
        )


@dataclass
class TrackResult:
    """One row of ``results.jsonl``: a track's verdict on one (case, seed)."""

    case_id: str
    model: str
    seed: int
    track: str
    score: float | None
    metrics: list[MetricValue] = field(default_factory=list)
    coverage: dict[str, Any] = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    status: Status = "ok"
    track_version: str = "1"
    scenario: str = ""
    suite: str = ""
    # what the row was computed from (worldolympiad.inputs: per-file fingerprints), so a changed
    # input recomputes it; and input checks (4:2:0, lossy, size, length, fps) that weaken its evidence
    inputs: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # why a ``not_applicable`` row has no score (not an error: ``errors`` is for ``failed`` rows)
    reason: str = ""

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.case_id, self.seed, self.track)

    def metric(self, name: str) -> MetricValue | None:
        for m in self.metrics:
            if m.name == name:
                return m
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "model": self.model,
            "seed": self.seed,
            "track": self.track,
            "track_version": self.track_version,
            "scenario": self.scenario,
            "suite": self.suite,
            "status": self.status,
            "score": _json_float(self.score),
            "metrics": [m.to_dict() for m in self.metrics],
            "coverage": _jsonable(self.coverage),
            "artifacts": dict(self.artifacts),
            "timings": {k: round(float(v), 6) for k, v in self.timings.items()},
            "errors": list(self.errors),
            **({"reason": self.reason} if self.reason else {}),
            **({"warnings": list(self.warnings)} if self.warnings else {}),
            **({"inputs": _jsonable(self.inputs)} if self.inputs else {}),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TrackResult:
        return cls(
            case_id=d["case_id"],
            model=d["model"],
            seed=int(d["seed"]),
            track=d["track"],
            score=d.get("score"),
            metrics=[MetricValue.from_dict(m) for m in d.get("metrics") or ()],
            coverage=dict(d.get("coverage") or {}),
            artifacts=dict(d.get("artifacts") or {}),
            timings=dict(d.get("timings") or {}),
            errors=list(d.get("errors") or ()),
            status=d.get("status", "ok"),
            track_version=str(d.get("track_version", "1")),
            scenario=d.get("scenario", ""),
            suite=d.get("suite", ""),
            inputs=dict(d.get("inputs") or {}),
            warnings=list(d.get("warnings") or ()),
            reason=str(d.get("reason") or ""),
        )


@dataclass(frozen=True)
class RunSpec:
    """A frozen recipe for one evaluation run (HELM-style).

    The :attr:`hash` covers everything that changes the numbers (model, suite, tracks and
    their versions, seeds, judge, options, and the model's weights where the model can
    fingerprint them: ``model_fingerprint``, so new weights behind the same spec start a new
    run instead of resuming the old one's rows), and the format generated videos are stored and
    scored in (``video_format``). Provenance (``package_versions``, ``git_hash``)
    is recorded but not hashed, so a rerun after an unrelated commit resumes the same
    run directory.
    """

    model: str
    suite: str
    tracks: tuple[str, ...]
    seeds: tuple[int, ...] = (0,)
    judge: str = "none"
    options: tuple[tuple[str, Any], ...] = ()
    track_versions: tuple[tuple[str, str], ...] = ()
    package_versions: tuple[tuple[str, str], ...] = ()
    git_hash: str | None = None
    model_fingerprint: str | None = None
    # how generated videos are stored and decoded back for scoring (``h264 yuv444p qp18``); None in
    # specs written before it was recorded, which stored 4:2:0 (see worldolympiad.evaluator.video_format)
    video_format: str | None = None

    def _hashed(self) -> dict[str, Any]:
        fp = {"model_fingerprint": self.model_fingerprint} if self.model_fingerprint else {}
        if self.video_format:
            fp["video_format"] = self.video_format
        return fp | {
            "model": self.model,
            "suite": self.suite,
            "tracks": list(self.tracks),
            "seeds": list(self.seeds),
            "judge": self.judge,
            "options": [[k, v] for k, v in self.options],
            "track_versions": [[k, v] for k, v in self.track_versions],
        }

    @property
    def hash(self) -> str:
        blob = json.dumps(self._hashed(), sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    @property
    def dirname(self) -> str:
        def slug(s: str) -> str:
            return "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in s).strip("-")[:40]

        return f"{slug(self.model)}__{slug(Path(self.suite).stem if '/' in self.suite else self.suite)}__{self.hash}"

    @property
    def option_dict(self) -> dict[str, Any]:
        return dict(self.options)

    def to_dict(self) -> dict[str, Any]:
        d = self._hashed()
        d["package_versions"] = dict(self.package_versions)
        d["git_hash"] = self.git_hash
        d["hash"] = self.hash
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunSpec:
        return cls(
            model=d["model"],
            suite=d["suite"],
            tracks=tuple(d["tracks"]),
            seeds=tuple(int(s) for s in d.get("seeds", (0,))),
            judge=d.get("judge", "none"),
            options=tuple((k, v) for k, v in d.get("options", ())),
            track_versions=tuple((k, v) for k, v in d.get("track_versions", ())),
            package_versions=tuple(sorted((d.get("package_versions") or {}).items())),
            git_hash=d.get("git_hash"),
            model_fingerprint=d.get("model_fingerprint"),
            video_format=d.get("video_format"),
        )


# ------------------------------------------------------------------------ helpers


def _json_float(x: float | None) -> float | str | None:
    """JSON has no inf/nan: encode them as strings so rows stay valid JSON."""
    if x is None:
        return None
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _from_json_float(x: Any) -> float | None:
    if x is None:
        return None
    return float(x)


def _jsonable(obj: Any) -> Any:
    """Convert numpy scalars/arrays, tuples and non-finite floats into plain JSON values."""
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return _json_float(float(obj))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _jsonable(dataclasses.asdict(obj))
    return obj


jsonable = _jsonable
