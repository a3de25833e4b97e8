"""Camera recovery from video frames: pycolmap SfM, with an OpenCV essential-matrix chain as fallback.

pycolmap path (the default):
    SIFT on the sampled frames (dynamic regions masked out) → matching: exhaustive when few
    frames (it contains every loop closure), otherwise sequential with quadratic overlap
    (frames i±1, 2, 4, 8...) plus vocabulary-tree loop detection when a vocab tree file is
    given → incremental mapping. Known intrinsics (``case.camera``) are fixed (PINHOLE, no BA
    refinement); unknown ones are estimated (SIMPLE_RADIAL, COLMAP's 1.2·max(H, W) prior).

Self-consistency (judged without the case's camera):
    The incremental model is cross-checked by a second estimator on the same matches, COLMAP's
    global mapper (rotation averaging + global positioning), ~1 s on 24 small frames. The two
    agree when their camera paths differ by at most ``AGREEMENT_POSITION`` of the path length
    (Sim(3)-aligned, as ATE) and their frame-to-frame rotations by at most ``AGREEMENT_ROTATION_DEG``
    on average (as RPE rotation). Only
    when they disagree, or the first model is unreliable on its own (registers too little, or is
    *thin*: fewer than ``MIN_POINTS_PER_FRAME`` 3-D points per registered frame), are the
    alternatives tried (bounded: one more feature extraction, three more mappings and the
    OpenCV chain): incremental mapping that accepts lower parallax, DSP-SIFT features with
    either mapper. The kept model is the one most other estimators agree with (ties: the denser
    model). If no two estimators agree on positions but they agree on the frame-to-frame rotations,
    the reconstruction is *unreliable* (the motion does not pin the path down: a camera that mostly
    turns): the trajectory metrics are then not applicable, with the reason, rather than a low score
    for a video whose reconstruction, not its geometry, failed. If they disagree even on rotations,
    which two views of one rigid world fix without any parallax, the *video* is inconsistent (jitter,
    shuffled or warped frames measured 5-8 deg where clean renders measured < 0.7 deg) and is
    scored from the kept model like any other.

OpenCV fallback (pycolmap failed or registered too few frames):
    SIFT + ratio test between consecutive sampled frames → essential matrix (RANSAC) →
    ``recoverPose``; relative translations are unit length, re-scaled by the median depth ratio
    of points seen in the overlapping pair, so the chain keeps one scale.

The result reports registration rate, mean reprojection error (px), mean track length, the
observations of each 3-D point (for photometric consistency) and the reliability verdict.

Isolation: every pycolmap call (feature extraction and matching, each mapping) runs in a spawned child
process (:func:`isolated`). A failed COLMAP ``CHECK`` aborts its process through glog; in the evaluator's own
process that ended the whole run, and a resumed run met the same video again. A child that dies is a
failure of that step like a mapper that gives up: the alternatives and the OpenCV chain still run, and the
row is scored or fails with the reason.
"""

from __future__ import annotations

import logging
import math
import multiprocessing as mp
import shutil
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)


#: Two estimators agree on the camera path when their Sim(3)-aligned positions differ by at most this
#: fraction of the path length (a quarter of the ATE metric's 0-0.2 range) ...
AGREEMENT_POSITION = 0.05
#: ... and their frame-to-frame rotations by at most this many degrees on average (a fifth of RPE
#: rotation's 0-5 degree range).
AGREEMENT_ROTATION_DEG = 1.0
#: A model with fewer 3-D points per registered frame is too thin to trust without a second opinion.
MIN_POINTS_PER_FRAME = 5.0


@dataclass
class Reliability:
    """Whether the recovered cameras can be trusted, judged without any reference camera.

    Attributes:
        positions: two estimators agree on the camera positions (ATE, RPE translation and the
            camera score may be computed).
        rotations: two estimators agree on the camera orientations (RPE rotation may be computed).
        reason: why positions or orientations are not reliable (``None`` when both are).
        checks: provenance for the report: each estimator tried (name, registration, points,
            reprojection error, how many others agree with it) and the pairwise disagreements.
    """

    positions: bool
    rotations: bool
    reason: str | None = None
    checks: dict[str, Any] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        """``"reliable"`` (positions agree), ``"unreliable"`` (orientations agree, positions do not: the
        video's motion does not pin the path down, e.g. a camera that mostly turns; the trajectory
        metrics are then not applicable) or ``"inconsistent"`` (the estimators disagree even on the
        frame-to-frame rotations, which any two views of one rigid world fix without parallax: that is
        evidence against the video, so its trajectory is still scored from the kept model)."""
        if self.positions:
            return "reliable"
        return "unreliable" if self.rotations else "inconsistent"


@dataclass
class CameraRecovery:
    """Recovered cameras of the sampled frames.

    Attributes:
        frame_indices: video frame index of each sampled frame ``[S]``.
        registered: whether each sampled frame got a pose ``[S]`` (bool).
        poses: camera-to-world ``[S, 4, 4]`` (identity where not registered).
        K: intrinsics used/estimated ``[3, 3]`` (pinhole; radial distortion dropped).
        points: sparse 3-D points ``[M, 3]`` and their ``colors`` ``[M, 3]`` uint8.
        reprojection_error: mean reprojection error in pixels (``nan`` if none).
        track_length: mean number of frames observing a point.
        method: ``"pycolmap"`` or ``"opencv"``.
        failure: why recovery failed (``None`` when it worked).
        observations: ``[N, 4]`` rows ``(point index, sampled frame index, x, y)``: where each 3-D
            point was observed (pixels; empty when unknown).
        reliability: the self-consistency verdict (``None`` when not judged, e.g. ``method="opencv"``).
    """

    frame_indices: np.ndarray
    registered: np.ndarray
    poses: np.ndarray
    K: np.ndarray
    points: np.ndarray
    colors: np.ndarray
    reprojection_error: float
    track_length: float
    method: str
    failure: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    observations: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))
    reliability: Reliability | None = None

    @property
    def registration_rate(self) -> float:
        return float(self.registered.mean()) if len(self.registered) else 0.0

    @property
    def ok(self) -> bool:
        return self.failure is None


def sample_frames(num_frames: int, max_frames: int) -> np.ndarray:
    """Evenly spaced frame indices (all frames when there are at most ``max_frames``)."""
    if num_frames <= max_frames:
        return np.arange(num_frames)
    return np.unique(np.round(np.linspace(0, num_frames - 1, max_frames)).astype(int))


def recover_cameras(
    frames: np.ndarray,  # uint8 [S, H, W, 3], already sampled
    frame_indices: np.ndarray,  # [S]
    work_dir: Path,
    *,
    K: np.ndarray | None = None,
    masks: np.ndarray | None = None,  # bool [S, H, W], True = dynamic (ignore)
    method: str = "auto",
    exhaustive_max: int = 40,
    vocab_tree: str | None = None,
    min_registration: float = 0.5,
    cross_check: bool = True,
    seed: int = 0,
) -> CameraRecovery:
    """Recover camera poses for ``frames``; never raises for a bad video (see ``failure``).

    Args:
        method: ``"auto"`` (pycolmap, then OpenCV if it registers < ``min_registration``),
            ``"pycolmap"`` or ``"opencv"``.
        cross_check: judge the pycolmap model against a second estimator and try the
            alternatives when it is unreliable (module docstring); ``False`` keeps the first
            incremental model unjudged (``reliability`` is then ``None``).
    """
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8:
        raise ValueError(f"frames must be uint8 [S, H, W, 3], got {frames.dtype} {frames.shape}")
    if method == "opencv":
        return _opencv_recover(frames, frame_indices, K=K, masks=masks)
    if method not in ("auto", "pycolmap"):
        raise ValueError(f"method must be 'auto', 'pycolmap' or 'opencv', got {method!r}")
    try:
        session = _ColmapSession(frames, frame_indices, Path(work_dir) / "colmap", K=K, masks=masks,
                                 exhaustive_max=exhaustive_max, vocab_tree=vocab_tree, seed=seed)
        rec = session.run(VARIANTS[0])
    except ImportError as e:  # pragma: no cover - pycolmap is a declared dependency
        session, rec = None, _failed(frames, frame_indices, K, "pycolmap", f"pycolmap unavailable: {e}")
    if session is not None and cross_check:
        rec = _judge(rec, session, frames, frame_indices, K=K, masks=masks, with_opencv=method == "auto",
                     min_registration=min_registration)
        if rec.ok and rec.registration_rate >= min_registration:
            return rec
    if method == "pycolmap" or (rec.ok and rec.registration_rate >= min_registration):
        return rec
    fallback = _opencv_recover(frames, frame_indices, K=K, masks=masks)
    best = max((rec, fallback), key=lambda r: (r.ok, r.registration_rate))
    best.details["fallback_from"] = rec.failure or f"pycolmap registered {rec.registration_rate:.2f}"
    if best is fallback and rec.reliability is not None:
        best.reliability = Reliability(False, False, "only the OpenCV chain registered enough frames; no second "
                                       "estimator agrees with it", rec.reliability.checks)
    return best


# ------------------------------------------------------------------ self-consistency


@dataclass(frozen=True)
class SfMVariant:
    """One way to run pycolmap: which features and which mapper.

    Attributes:
        name: label in the report.
        features: ``"sift"`` (the default extraction) or ``"dsp"`` (domain-size-pooled SIFT with
            affine shape: more stable descriptors on small, blurred or compressed frames).
        mapper: ``"incremental"`` or ``"global"`` (GLOMAP-style rotation averaging + positioning).
        init_min_tri_angle: incremental mapper's minimum triangulation angle of the initial pair (deg).
        filter_min_tri_angle: minimum triangulation angle kept for 3-D points (deg); lower accepts
            the small parallax of a camera that mostly turns.
    """

    name: str
    features: str = "sift"
    mapper: str = "incremental"
    init_min_tri_angle: float = 4.0
    filter_min_tri_angle: float = 1.5


#: The first is the default model, the second its cross-check, the rest the alternatives.
VARIANTS = (
    SfMVariant("incremental"),
    SfMVariant("global", mapper="global"),
    SfMVariant("incremental, low parallax", init_min_tri_angle=2.0, filter_min_tri_angle=0.5),
    SfMVariant("dsp-sift incremental", features="dsp"),
    SfMVariant("dsp-sift global", features="dsp", mapper="global"),
)


def rotation_disagreement(a: np.ndarray, b: np.ndarray) -> float:
    """Mean angle (deg) between the frame-to-frame rotations of two sets of cameras ``[N, 4, 4]``
    (RPE rotation of one against the other: 0 for the same cameras in any world frame)."""
    from tracks.geometry.trajectory import rotation_angle_deg

    ra = np.einsum("tji,tjk->tik", a[:-1, :3, :3], a[1:, :3, :3])  # R_i^T R_{i+1}
    rb = np.einsum("tji,tjk->tik", b[:-1, :3, :3], b[1:, :3, :3])
    return float(rotation_angle_deg(np.einsum("tji,tjk->tik", ra, rb)).mean())


def position_disagreement(a: np.ndarray, b: np.ndarray) -> float:
    """Symmetric Sim(3)-aligned ATE between two camera paths ``[N, 4, 4]``, as a fraction of path length
    (``inf`` when a path does not move or the paths cannot be aligned)."""
    from tracks.geometry.trajectory import TrajectoryError, path_length, trajectory_errors

    out = []
    for x, y in ((a, b), (b, a)):
        length = path_length(y)
        if length <= 1e-9:
            return math.inf
        try:
            out.append(trajectory_errors(x, y).ate_rmse / length)
        except TrajectoryError:
            return math.inf
    return float(np.mean(out))


def _disagreement(a: CameraRecovery, b: CameraRecovery) -> tuple[float, float]:
    """``(positions, rotations)`` disagreement of two recoveries on the frames both registered."""
    both = a.registered & b.registered
    if both.sum() < 3:
        return math.inf, math.inf
    return position_disagreement(a.poses[both], b.poses[both]), rotation_disagreement(a.poses[both], b.poses[both])


def _thin(rec: CameraRecovery) -> bool:
    n = int(rec.registered.sum())
    return rec.method == "pycolmap" and n > 0 and len(rec.points) < MIN_POINTS_PER_FRAME * n


def _usable(rec: CameraRecovery, min_registration: float) -> bool:
    return rec.ok and int(rec.registered.sum()) >= 3 and rec.registration_rate >= min_registration


def _judge(first: CameraRecovery, session: _ColmapSession, frames: np.ndarray, idx: np.ndarray, *,
           K: np.ndarray | None, masks: np.ndarray | None, with_opencv: bool, min_registration: float) -> CameraRecovery:
    """Cross-check ``first`` with the global mapper; if they disagree or ``first`` is unreliable on its
    own, try the alternatives and keep the model most estimators agree with (module docstring)."""
    cands = [first]
    cands.append(session.run(VARIANTS[1]))
    flags = []
    if not _usable(first, min_registration):
        flags.append(first.failure or f"registered {first.registration_rate:.2f} of the sampled frames")
    if _thin(first):
        flags.append(f"thin model ({len(first.points)} 3-D points for {int(first.registered.sum())} frames)")
    if not flags:
        pos, rot = _disagreement(first, cands[1])
        if pos <= AGREEMENT_POSITION and rot <= AGREEMENT_ROTATION_DEG:
            first.reliability = Reliability(True, True, None, _checks(cands, [], {(0, 1): (pos, rot)}, [1, 1]))
            return first
        flags.append(f"the global mapper disagrees (positions {pos:.3f} of the path, orientations {rot:.2f} deg)")
    cands += [session.run(v) for v in VARIANTS[2:]]
    if with_opencv:
        cands.append(_opencv_recover(frames, idx, K=K, masks=masks))
    n = len(cands)
    pair: dict[tuple[int, int], tuple[float, float]] = {}
    for i in range(n):
        for j in range(i + 1, n):
            if _usable(cands[i], min_registration) and _usable(cands[j], min_registration):
                pair[(i, j)] = _disagreement(cands[i], cands[j])

    def support(i: int, rotations_only: bool) -> int:
        return sum(1 for (a, b), (p, r) in pair.items() if i in (a, b) and r <= AGREEMENT_ROTATION_DEG
                   and (rotations_only or p <= AGREEMENT_POSITION))

    usable = [i for i in range(n) if _usable(cands[i], min_registration)]
    pos_support = [support(i, False) for i in range(n)]
    rot_support = [support(i, True) for i in range(n)]
    # A thin model may vote but is kept only when no denser pycolmap model is usable; the pairwise OpenCV
    # chain (2-view tracks, no bundle adjustment: its reprojection error is not comparable) only when no
    # pycolmap model is.
    colmap = [i for i in usable if cands[i].method == "pycolmap"]
    pool = [i for i in colmap if not _thin(cands[i])] or colmap or usable
    if not pool:
        first.reliability = Reliability(False, False, "no estimator reconstructed the video: " + "; ".join(flags),
                                        _checks(cands, flags, pair, pos_support))
        return first
    # Prefer agreement, then a pycolmap model (multi-view tracks, bundle-adjusted) over the pairwise
    # OpenCV chain, then coverage, then the most agreement, then the denser model.
    best = max(pool, key=lambda i: (pos_support[i] > 0, rot_support[i] > 0, cands[i].method == "pycolmap",
                                    cands[i].registration_rate, pos_support[i], len(cands[i].points)))
    chosen = cands[best]
    positions, rotations = pos_support[best] > 0, rot_support[best] > 0
    reason = None
    if not positions:
        near = min((p for (a, b), (p, _) in pair.items() if best in (a, b)), default=math.inf)
        reason = (f"no two camera estimators agree on the camera path (the closest differs by {near:.3f} of the path "
                  f"length, tolerance {AGREEMENT_POSITION}); {len(usable)} of {n} estimators reconstructed the video")
        if not rotations:
            near_rot = min((r for (a, b), (_, r) in pair.items() if best in (a, b)), default=math.inf)
            reason += (f", nor on the frame-to-frame rotations (closest {near_rot:.2f} deg, tolerance "
                       f"{AGREEMENT_ROTATION_DEG} deg), which any two views of one rigid world determine: "
                       "the frames are not consistent views")
    chosen.reliability = Reliability(positions, rotations, reason, _checks(cands, flags, pair, pos_support))
    chosen.details["chosen_from"] = [c.details.get("variant", c.method) for c in cands]
    return chosen


def _checks(cands: list[CameraRecovery], flags: list[str], pair: dict[tuple[int, int], tuple[float, float]],
            support: list[int]) -> dict[str, Any]:
    names = [c.details.get("variant", c.method) for c in cands]
    return {
        "flags": [f for f in flags if f],
        "estimators": [{"name": names[i], "registration": round(c.registration_rate, 3), "points": int(len(c.points)),
                        "reprojection_error": None if not math.isfinite(c.reprojection_error) else round(c.reprojection_error, 3),
                        "failure": c.failure, "agreeing": support[i] if i < len(support) else 0}
                       for i, c in enumerate(cands)],
        "disagreement": [{"a": names[a], "b": names[b], "positions": None if not math.isfinite(p) else round(p, 4),
                          "rotations_deg": None if not math.isfinite(r) else round(r, 3)} for (a, b), (p, r) in pair.items()],
    }


def default_K(height: int, width: int) -> np.ndarray:  # noqa: N802 - K is the intrinsics matrix
    """COLMAP's prior for unknown intrinsics: focal 1.2·max(H, W), centred principal point."""
    f = 1.2 * max(height, width)
    return np.array([[f, 0, width / 2], [0, f, height / 2], [0, 0, 1.0]])


def _failed(frames: np.ndarray, idx: np.ndarray, K: np.ndarray | None, method: str, reason: str) -> CameraRecovery:
    S, H, W = frames.shape[:3]
    return CameraRecovery(
        frame_indices=np.asarray(idx), registered=np.zeros(S, bool), poses=np.tile(np.eye(4), (S, 1, 1)),
        K=K if K is not None else default_K(H, W), points=np.zeros((0, 3)), colors=np.zeros((0, 3), np.uint8),
        reprojection_error=float("nan"), track_length=0.0, method=method, failure=reason,
    )


# ------------------------------------------------------------------------- pycolmap


class _ColmapSession:
    """Frames written once; features extracted and matched once per feature kind; any number of mappings.
    Each pycolmap step runs in a child process (:func:`isolated`)."""

    def __init__(self, frames: np.ndarray, idx: np.ndarray, root: Path, *, K: np.ndarray | None,
                 masks: np.ndarray | None, exhaustive_max: int, vocab_tree: str | None, seed: int) -> None:
        import cv2
        import pycolmap  # noqa: F401 - fail early (ImportError) when it is missing

        self.frames, self.idx, self.root, self.K, self.seed = frames, np.asarray(idx), root, K, seed
        self.exhaustive_max, self.vocab_tree = exhaustive_max, vocab_tree
        self.has_masks = masks is not None
        if root.exists():
            shutil.rmtree(root)
        self.img_dir, self.mask_dir = root / "images", root / "masks"
        for d in (self.img_dir, self.mask_dir):
            d.mkdir(parents=True)
        self.names = [f"{i:05d}.png" for i in range(len(frames))]
        for i, name in enumerate(self.names):
            cv2.imwrite(str(self.img_dir / name), cv2.cvtColor(frames[i], cv2.COLOR_RGB2BGR))
            if masks is not None:
                # COLMAP masks: zero pixels are ignored during feature extraction.
                cv2.imwrite(str(self.mask_dir / f"{name}.png"), np.where(masks[i], 0, 255).astype(np.uint8))
        self._databases: dict[str, tuple[Path, str]] = {}

    def database(self, features: str) -> tuple[Path, str]:
        """``(database path, matcher label)`` with ``features`` extracted and matched (cached)."""
        if features in self._databases:
            return self._databases[features]
        S, H, W = self.frames.shape[:3]
        K = self.K
        db = self.root / f"database_{features}.db"
        matcher = isolated(_colmap_database, db=str(db), image_dir=str(self.img_dir), names=self.names,
                           pinhole=None if K is None else [float(v) for v in (K[0, 0], K[1, 1], K[0, 2], K[1, 2])],
                           mask_dir=str(self.mask_dir) if self.has_masks else None,
                           # Small frames have few corners: keep weak peaks (the default is tuned for megapixels).
                           peak_threshold=0.004 if max(H, W) <= 160 else 0.0066, dsp=features == "dsp",
                           exhaustive=self.exhaustive_max >= S, vocab_tree=self.vocab_tree)
        self._databases[features] = (db, matcher)
        return db, matcher

    def run(self, variant: SfMVariant) -> CameraRecovery:
        """Map with ``variant``; a mapper error, a child that died or an empty result is a ``failure``, never an
        exception."""
        import pycolmap

        out_dir = self.root / f"sparse_{VARIANTS.index(variant) if variant in VARIANTS else variant.name}"
        out_dir.mkdir(parents=True, exist_ok=True)
        try:
            db, matcher = self.database(variant.features)
            written = isolated(_colmap_map, db=str(db), image_dir=str(self.img_dir), out_dir=str(out_dir),
                               mapper=variant.mapper, seed=self.seed, fixed_intrinsics=self.K is not None,
                               init_min_tri_angle=variant.init_min_tri_angle,
                               filter_min_tri_angle=variant.filter_min_tri_angle)
        except (RuntimeError, ValueError) as e:  # a mapper that gives up on a degenerate video, or died
            rec = _failed(self.frames, self.idx, self.K, "pycolmap", f"{variant.name} mapper failed: {e}")
            rec.details["variant"] = variant.name
            return rec
        if not written:
            rec = _failed(self.frames, self.idx, self.K, "pycolmap", "pycolmap could not initialise a reconstruction "
                          "(too few matched features between frames: textureless, too small, or no camera motion)")
            rec.details["variant"] = variant.name
            return rec
        _, largest = max(written, key=lambda w: w[0])  # the first of the largest, as max() over the models was
        return self._recovery(pycolmap.Reconstruction(largest), len(written), matcher, variant)

    def _recovery(self, rec: Any, num_models: int, matcher: str, variant: SfMVariant) -> CameraRecovery:
        S = len(self.frames)
        registered = np.zeros(S, bool)
        poses = np.tile(np.eye(4), (S, 1, 1))
        name_to_i = {n: i for i, n in enumerate(self.names)}
        image_to_i: dict[int, int] = {}
        for image in rec.images.values():
            if not image.has_pose:
                continue
            i = name_to_i[image.name]
            image_to_i[image.image_id] = i
            w2c = np.eye(4)
            w2c[:3] = image.cam_from_world().matrix()
            poses[i] = np.linalg.inv(w2c)
            registered[i] = True
        cam = next(iter(rec.cameras.values()))
        K_est = np.asarray(cam.calibration_matrix(), dtype=np.float64)
        pts, cols, obs = [], [], []
        for k, p in enumerate(rec.points3D.values()):
            pts.append(p.xyz)
            cols.append(p.color)
            for el in p.track.elements:
                j = image_to_i.get(el.image_id)
                if j is not None:
                    x, y = rec.images[el.image_id].points2D[el.point2D_idx].xy
                    obs.append((k, j, x, y))
        points = np.array(pts, dtype=np.float64).reshape(-1, 3)
        return CameraRecovery(
            frame_indices=self.idx, registered=registered, poses=poses, K=K_est, points=points,
            colors=np.array(cols, dtype=np.uint8).reshape(-1, 3),
            reprojection_error=float(rec.compute_mean_reprojection_error()) if len(points) else float("nan"),
            track_length=float(rec.compute_mean_track_length()) if len(points) else 0.0, method="pycolmap",
            details={"matcher": matcher, "num_models": num_models, "camera_model": cam.model.name,
                     "num_points": int(len(points)), "variant": variant.name},
            observations=np.array(obs, dtype=np.float64).reshape(-1, 4),
        )


def isolated(fn: Any, **kwargs: Any) -> Any:
    """``fn(**kwargs)`` in a spawned child process; its return value (picklable), or its ``RuntimeError`` /
    ``ValueError`` raised again here. A child that dies without answering (a COLMAP ``CHECK`` aborts through
    glog: SIGABRT) raises ``RuntimeError`` naming the signal; this process goes on. ``fn`` must be importable
    by name (a module-level function). In a daemonic process, which may not have children, ``fn`` runs here."""
    if mp.current_process().daemon:
        return fn(**kwargs)
    ctx = mp.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(send, fn, kwargs), daemon=True)
    child.start()
    send.close()  # the child holds the only sending end: a dead child makes recv() raise EOFError
    try:
        answer = receive.recv()
    except EOFError:
        answer = None
    finally:
        child.join()
        receive.close()
    if answer is None:
        code = child.exitcode
        how = (f"killed by {signal.Signals(-code).name}" if code is not None and code < 0 else f"exit code {code}")
        raise RuntimeError(f"{getattr(fn, '__name__', fn)} died ({how}; a failed COLMAP check aborts its process)")
    kind, value = answer
    if kind == "ok":
        return value
    raise (ValueError if kind == "ValueError" else RuntimeError)(value)


def _child(send: Any, fn: Any, kwargs: dict[str, Any]) -> None:
    try:
        value = fn(**kwargs)
    except ValueError as e:
        send.send(("ValueError", str(e)))
    except Exception as e:  # noqa: BLE001 - every other error crosses back as a RuntimeError with its type
        send.send(("RuntimeError", f"{type(e).__name__}: {e}" if not isinstance(e, RuntimeError) else str(e)))
    else:
        send.send(("ok", value))
    send.close()


def _colmap_database(*, db: str, image_dir: str, names: list[str], pinhole: list[float] | None, mask_dir: str | None,
                     peak_threshold: float, dsp: bool, exhaustive: bool, vocab_tree: str | None) -> str:
    """(In a child.) SIFT extraction and matching into ``db``; returns the matcher's label."""
    import pycolmap

    reader = pycolmap.ImageReaderOptions()
    if pinhole is not None:
        reader.camera_model = "PINHOLE"
        reader.camera_params = ",".join(str(v) for v in pinhole)
    else:
        reader.camera_model = "SIMPLE_RADIAL"
    if mask_dir is not None:
        reader.mask_path = mask_dir
    extraction = pycolmap.FeatureExtractionOptions()
    extraction.num_threads = 1
    extraction.sift.peak_threshold = peak_threshold
    if dsp:
        extraction.sift.domain_size_pooling = True
        extraction.sift.estimate_affine_shape = True
    pycolmap.extract_features(db, image_dir, image_names=names, camera_mode=pycolmap.CameraMode.SINGLE,
                              reader_options=reader, extraction_options=extraction, device=pycolmap.Device.cpu)
    matching = pycolmap.FeatureMatchingOptions()
    matching.num_threads = 1
    verification = pycolmap.TwoViewGeometryOptions()
    verification.min_num_inliers = 12
    if exhaustive:
        pycolmap.match_exhaustive(db, matching_options=matching, verification_options=verification,
                                  device=pycolmap.Device.cpu)
        return "exhaustive"
    pairing = pycolmap.SequentialPairingOptions()
    pairing.overlap = 8
    pairing.quadratic_overlap = True
    if vocab_tree:
        pairing.loop_detection = True
        pairing.vocab_tree_path = vocab_tree
    pycolmap.match_sequential(db, matching_options=matching, pairing_options=pairing,
                              verification_options=verification, device=pycolmap.Device.cpu)
    return "sequential+loop" if vocab_tree else "sequential(quadratic)"


def _colmap_map(*, db: str, image_dir: str, out_dir: str, mapper: str, seed: int, fixed_intrinsics: bool,
                init_min_tri_angle: float, filter_min_tri_angle: float) -> list[tuple[int, str]]:
    """(In a child.) One mapping; each model with a registered image written to ``out_dir/model_<k>``, returned
    as ``(registered images, folder)`` in the mapper's order."""
    import pycolmap

    if mapper == "global":
        gopts = pycolmap.GlobalPipelineOptions()
        gopts.num_threads = 1
        gopts.random_seed = seed
        gopts.min_num_matches = 12
        gopts.min_model_size = 3
        gopts.mapper.num_threads = 1
        gopts.mapper.random_seed = seed
        gopts.mapper.global_positioning.use_gpu = False
        gopts.mapper.bundle_adjustment.ceres.use_gpu = False
        if fixed_intrinsics:
            gopts.mapper.bundle_adjustment.refine_focal_length = False
            gopts.mapper.bundle_adjustment.refine_principal_point = False
            gopts.mapper.bundle_adjustment.refine_extra_params = False
        recs = pycolmap.global_mapping(db, image_dir, out_dir, options=gopts)
    else:
        opts = pycolmap.IncrementalPipelineOptions()
        opts.num_threads = 1
        opts.random_seed = seed
        opts.min_model_size = 3
        opts.min_num_matches = 12
        opts.extract_colors = True
        opts.mapper.init_min_num_inliers = 30
        opts.mapper.init_min_tri_angle = init_min_tri_angle
        opts.mapper.filter_min_tri_angle = filter_min_tri_angle
        opts.mapper.abs_pose_min_num_inliers = 12
        opts.mapper.random_seed = seed
        opts.triangulation.random_seed = seed
        if fixed_intrinsics:
            opts.ba_refine_focal_length = False
            opts.ba_refine_principal_point = False
            opts.ba_refine_extra_params = False
        recs = pycolmap.incremental_mapping(db, image_dir, out_dir, options=opts)
    written = []
    for k, r in recs.items():
        if r.num_reg_images() > 0:
            folder = Path(out_dir) / f"model_{k}"
            folder.mkdir(parents=True, exist_ok=True)
            r.write(folder)
            written.append((int(r.num_reg_images()), str(folder)))
    return written


# --------------------------------------------------------------------------- OpenCV


def _opencv_recover(frames: np.ndarray, idx: np.ndarray, *, K: np.ndarray | None, masks: np.ndarray | None) -> CameraRecovery:
    import cv2

    S, H, W = frames.shape[:3]
    K = K if K is not None else default_K(H, W)
    sift = cv2.SIFT_create(contrastThreshold=0.01)  # type: ignore[attr-defined]  # missing from cv2 stubs
    kps, descs = [], []
    for i in range(S):
        gray = cv2.cvtColor(frames[i], cv2.COLOR_RGB2GRAY)
        m = None if masks is None else np.where(masks[i], 0, 255).astype(np.uint8)
        kp, de = sift.detectAndCompute(gray, m)
        kps.append(np.array([k.pt for k in kp], np.float64).reshape(-1, 2))
        descs.append(de)
    matcher = cv2.BFMatcher(cv2.NORM_L2)
    poses = np.tile(np.eye(4), (S, 1, 1))
    registered = np.zeros(S, bool)
    registered[0] = True
    all_pts: list[np.ndarray] = []
    all_cols: list[np.ndarray] = []
    errs: list[np.ndarray] = []
    all_obs: list[np.ndarray] = []
    prev_depth: float | None = None
    scale = 1.0
    for i in range(1, S):
        pts = _match_pair(matcher, kps[i - 1], descs[i - 1], kps[i], descs[i])
        if pts is None or not registered[i - 1]:
            break  # the chain is broken: later frames cannot be placed in the same frame
        p0, p1 = pts
        E, inl = cv2.findEssentialMat(p0, p1, K, method=cv2.USAC_MAGSAC, prob=0.999, threshold=1.0)
        if E is None or E.shape[0] < 3:
            break
        # Consecutive video frames have small baselines: accept far points in the cheirality test
        # (OpenCV's default drops points beyond 50 baselines, i.e. most of the scene).
        n_inl, R, t, inl2, _ = cv2.recoverPose(E[:3], p0, p1, K, distanceThresh=1e4, mask=inl.copy())
        good = inl2.ravel() > 0
        if n_inl < 8:
            break
        # Triangulate in the frame of camera i-1 (unit baseline) to fix the relative scale.
        P0 = K @ np.hstack([np.eye(3), np.zeros((3, 1))])
        P1 = K @ np.hstack([R, t])
        X = cv2.triangulatePoints(P0, P1, p0[good].T, p1[good].T)
        X = (X[:3] / X[3]).T
        front = X[:, 2] > 0
        if front.sum() < 5:
            break
        depth = float(np.median(X[front, 2]))
        if prev_depth is not None:
            # Keep the scene depth seen from the shared camera i-1 constant across pairs.
            scale = scale * prev_depth / depth if depth > 0 else scale
        rel = np.eye(4)  # cam_i from cam_{i-1}
        rel[:3, :3], rel[:3, 3] = R, t.ravel() * scale
        poses[i] = poses[i - 1] @ np.linalg.inv(rel)
        registered[i] = True
        # depth of the same points seen from camera i (for the next pair's scale)
        Xi = X[front] @ R.T + t.ravel()
        prev_depth = float(np.median(Xi[:, 2]))
        proj = (P1 @ np.hstack([X[front], np.ones((front.sum(), 1))]).T).T
        err = np.linalg.norm(proj[:, :2] / proj[:, 2:3] - p1[good][front], axis=1)
        errs.append(err)
        Xw = (poses[i - 1] @ np.hstack([X[front] * scale, np.ones((front.sum(), 1))]).T).T[:, :3]
        first = int(sum(len(a) for a in all_pts))
        all_pts.append(Xw)
        k = np.arange(first, first + len(Xw), dtype=np.float64)[:, None]
        all_obs += [np.hstack([k, np.full_like(k, i - 1), p0[good][front]]), np.hstack([k, np.full_like(k, i), p1[good][front]])]
        uv = np.clip(np.round(p0[good][front]).astype(int), 0, [W - 1, H - 1])
        all_cols.append(frames[i - 1][uv[:, 1], uv[:, 0]])
    if registered.sum() < 2:
        return _failed(frames, idx, K, "opencv", "OpenCV essential-matrix chain failed at the first pair "
                       "(too few SIFT matches or no camera translation)")
    return CameraRecovery(
        frame_indices=np.asarray(idx), registered=registered, poses=poses, K=K,
        points=np.concatenate(all_pts) if all_pts else np.zeros((0, 3)),
        colors=np.concatenate(all_cols).astype(np.uint8) if all_cols else np.zeros((0, 3), np.uint8),
        reprojection_error=float(np.concatenate(errs).mean()) if errs else float("nan"),
        track_length=2.0, method="opencv", details={"chain_length": int(registered.sum()), "variant": "opencv chain"},
        observations=np.concatenate(all_obs) if all_obs else np.zeros((0, 4)),
    )


def match_indices(matcher: Any, k0: np.ndarray, d0: Any, k1: np.ndarray, d1: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """Ratio-test (0.8) matches of two frames' descriptors as keypoint indices ``(in frame 0, in frame 1)``,
    or ``None`` below 8 matches."""
    if d0 is None or d1 is None or len(k0) < 8 or len(k1) < 8:
        return None
    good = [m for m, n in (p for p in matcher.knnMatch(d0, d1, k=2) if len(p) == 2) if m.distance < 0.8 * n.distance]
    if len(good) < 8:
        return None
    return np.array([m.queryIdx for m in good], int), np.array([m.trainIdx for m in good], int)


def _match_pair(matcher: Any, k0: np.ndarray, d0: Any, k1: np.ndarray, d1: Any) -> tuple[np.ndarray, np.ndarray] | None:
    found = match_indices(matcher, k0, d0, k1, d1)
    return None if found is None else (k0[found[0]], k1[found[1]])


# ----------------------------------------------------------------------- motion masks


def motion_masks(frames: np.ndarray, *, threshold: float = 1.0 / 128, max_area: float = 0.3,
                 samples: int = 4000) -> np.ndarray:
    """Masks of independently moving regions ``bool [S, H, W]`` (True = dynamic, ignore).

    Each frame's dense optical flow (OpenCV DIS) to each neighbour is compared with the
    dominant (camera) motion, a homography fitted by RANSAC to the flow itself; pixels whose
    flow departs from it by more than ``threshold`` x the longer image side (1 px at 128 px)
    against *both* neighbours are dynamic. Parallax of a static scene also departs from a
    homography, so a frame whose mask covers more than ``max_area`` of the image is left
    unmasked: better keep features than mask the scene.

    Flow rather than the grey-level residual of the warped neighbour: a moving robot arm is
    large and plain, so only its edges change brightness and the old residual masked 0-5 % of it
    (orbiting-camera robotics references then had ATE of 4-20 % of the path; with flow 0.4-0.9 %).
    """
    import cv2

    S, H, W = frames.shape[:3]
    gray = [cv2.cvtColor(np.ascontiguousarray(f), cv2.COLOR_RGB2GRAY) for f in frames]
    dis = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM)  # type: ignore[attr-defined]  # missing from cv2 stubs
    yy, xx = np.mgrid[0:H, 0:W].astype(np.float32)
    grid = np.stack([xx.ravel(), yy.ravel()], 1)
    pick = np.random.default_rng(0).choice(len(grid), min(samples, len(grid)), replace=False)
    tol = threshold * max(H, W)

    def departure(i: int, j: int) -> np.ndarray | None:
        flow = dis.calc(gray[i], gray[j], None).reshape(-1, 2)
        target = grid + flow
        hm, _ = cv2.findHomography(grid[pick], target[pick], cv2.RANSAC, tol)
        if hm is None:
            return None
        camera = cv2.perspectiveTransform(grid[None], hm)[0]
        return np.linalg.norm(target - camera, axis=1).reshape(H, W)

    out = np.zeros((S, H, W), bool)
    kernel = np.ones((5, 5), np.uint8)
    for i in range(S):
        res = [r for r in (departure(i, i - 1) if i > 0 else None, departure(i, i + 1) if i < S - 1 else None) if r is not None]
        if not res:
            continue
        dyn = np.minimum.reduce(res) > tol
        dyn = cv2.dilate(cv2.morphologyEx(dyn.astype(np.uint8), cv2.MORPH_OPEN, np.ones((3, 3), np.uint8)), kernel) > 0
        if dyn.mean() <= max_area:
            out[i] = dyn
    return out
