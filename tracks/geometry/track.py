"""The geometry track (DESIGN.md §5): cameras → Gaussian splats → consistency metrics.

::

    video ──sample──▶ frames ──motion masks──▶ SfM (pycolmap | OpenCV) ──▶ poses, K, sparse points
                                                   │                         │
            case.camera.trajectory / reference SfM ┘                         ▼
                 ATE · RPE · camera score                 splat fit on train frames (k-th held out)
                 reprojection error · registration rate     ▼
                                                 held-out PSNR · SSIM · LPIPS, meta view, PLY, VLM
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from tracks.geometry import FAILURE_FLOOR
from worldolympiad.options import as_bool
from worldolympiad.track import EvalContext, Track, TrackOutput, mean_normalized
from worldolympiad.trackspec import TrackSpec, load_track_spec
from worldolympiad.types import Case, MetricValue, Video

logger = logging.getLogger(__name__)

SPEC_PATH = Path(__file__).with_name("track.yaml")
_SPLAT_METRICS = ("heldout_psnr", "heldout_ssim", "heldout_lpips")


def track_spec() -> TrackSpec:
    """The geometry track's declared metrics, weights and option defaults (``track.yaml``)."""
    return load_track_spec(SPEC_PATH)


class GeometryTrack(Track):
    """Camera recovery, Gaussian-splat reconstruction and trajectory metrics for one video."""

    name: ClassVar[str] = "geometry"
    version: ClassVar[str] = track_spec().version

    def applicability(self, case: Case) -> str | None:
        reason = super().applicability(case)
        if reason:
            return reason
        if case.num_frames < 3:
            return f"case {case.id!r} has {case.num_frames} frames; geometry needs at least 3 views"
        return None

    # ------------------------------------------------------------------ helpers
    def _opt(self, ctx: EvalContext, key: str) -> Any:
        return ctx.option(f"geometry.{key}", track_spec().options.get(key))

    def _recover(self, ctx: EvalContext, frames: np.ndarray, idx: np.ndarray, work: Path, K: np.ndarray | None,
                 prefix: str = "") -> tuple[Any, np.ndarray | None]:
        """Motion masks (when ``mask_dynamic``) and SfM with the track's options: (reconstruction, masks).

        The one pipeline for the video and for a reference video that stands in for a trajectory.
        """
        from tracks.geometry.sfm import motion_masks, recover_cameras

        masks = None
        if as_bool(self._opt(ctx, "mask_dynamic")):
            with ctx.timed(f"{prefix}motion_masks"):
                masks = motion_masks(frames)
        with ctx.timed(f"{prefix}sfm"):
            rec = recover_cameras(frames, idx, work, K=K, masks=masks, method=str(self._opt(ctx, "sfm_method")),
                                  exhaustive_max=int(self._opt(ctx, "exhaustive_max")),
                                  vocab_tree=self._opt(ctx, "vocab_tree"),
                                  cross_check=as_bool(self._opt(ctx, "sfm_cross_check")), seed=ctx.seed)
        return rec, masks

    @staticmethod
    def _case_K(case: Case, video: Video) -> np.ndarray | None:  # noqa: N802 - K is the intrinsics matrix
        """The case's intrinsics rescaled to the video's resolution (``None`` when unknown)."""
        if case.camera is None or not case.camera.intrinsics:
            return None
        K = case.camera.K.copy()
        H, W = video.resolution
        sx, sy = W / case.width, H / case.height
        K[0] *= sx
        K[1] *= sy
        return K

    # --------------------------------------------------------------- evaluate
    def evaluate(self, video: Video, case: Case, ctx: EvalContext) -> TrackOutput:
        from tracks.geometry.metrics.camera import NAMES as CAMERA_NAMES
        from tracks.geometry.metrics.camera import camera_metrics
        from tracks.geometry.metrics.photometric import appearance_drift_metric
        from tracks.geometry.metrics.structure import registration_rate_metric, reprojection_error_metric
        from tracks.geometry.sfm import sample_frames

        spec = track_spec()
        specs = spec.metrics
        work = Path(ctx.work_dir)
        work.mkdir(parents=True, exist_ok=True)
        errors: list[str] = []
        artifacts: dict[str, str] = {}

        idx = sample_frames(video.num_frames, int(self._opt(ctx, "max_frames")))
        frames = video.frames[idx]
        K = self._case_K(case, video)
        rec, masks = self._recover(ctx, frames, idx, work, K)
        n_reg = int(rec.registered.sum())
        usable = rec.ok and n_reg >= 3
        failure = rec.failure or (f"only {n_reg} of {len(idx)} sampled frames registered (need >= 3)" if not usable else None)
        if failure:
            errors.append(f"reconstruction failed: {failure}")

        metrics: list[MetricValue] = [registration_rate_metric(specs["registration_rate"], rec)]
        metrics.append(reprojection_error_metric(specs["reprojection_error"], rec) if usable
                       else specs["reprojection_error"].failed(f"unreconstructable video: {failure}", floor=FAILURE_FLOOR))
        metrics.append(appearance_drift_metric(specs["appearance_drift"], frames, rec) if usable
                       else specs["appearance_drift"].failed(f"unreconstructable video: {failure}", floor=FAILURE_FLOOR))

        # ---- camera trajectory vs reference poses
        with ctx.timed("camera_metrics"):
            cam_metrics, turn = self._camera(video, case, ctx, rec, idx, masks, usable, failure, specs, camera_metrics,
                                             CAMERA_NAMES)
            metrics += cam_metrics
        if turn is not None:
            # The camera is followed by the turn-in-place fit: its placements, its tracks' reprojection error and
            # the colours of its tracks, not those of SfM's model, which invents a baseline for a pure rotation.
            metrics[0] = registration_rate_metric(specs["registration_rate"], rec, turn=turn)
            metrics[1:3] = self._turn_structure(frames, rec.K, turn, specs)
            if failure and int(turn.registered.sum()) >= 3:
                # SfM failing on a pure rotation is SfM's failure, not the video's: no metric comes from it here
                errors.remove(f"reconstruction failed: {failure}")
            elif int(turn.registered.sum()) < 3:
                errors.append(f"the turn-in-place fit placed only {int(turn.registered.sum())} of {len(idx)} sampled "
                              "frames (need >= 3)")

        # ---- splat fit and held-out views
        renders_for_judge: list[np.ndarray] = []
        splat_input = self._splat_input(frames, rec, turn, usable, ctx)
        if splat_input is not None:
            try:
                splat_metrics, renders_for_judge, arts = self._splats(*splat_input, ctx, work, specs)
                metrics += splat_metrics
                artifacts.update(arts)
            except (ValueError, RuntimeError) as e:
                logger.warning("splat fit failed: %s", e)
                errors.append(f"splat fit failed: {e}")
                metrics += [specs[n].failed(f"splat fit failed: {e}", floor=FAILURE_FLOOR) for n in _SPLAT_METRICS]
        else:
            why = failure or "SfM produced no 3-D points to initialise Gaussians"
            metrics += [specs[n].failed(f"unreconstructable video: {why}", floor=FAILURE_FLOOR) for n in _SPLAT_METRICS]

        from tracks.geometry.metrics.vlm import vlm_metric

        with ctx.timed("judge"):
            judge = ctx.judge()
            if judge is not None and not renders_for_judge:
                metrics.append(specs["vlm_render_rating"].failed(f"no renders to rate: {failure or 'splat fit failed'}", floor=FAILURE_FLOOR))
            else:
                metrics.append(vlm_metric(specs["vlm_render_rating"], judge, renders_for_judge,
                                          samples=int(self._opt(ctx, "vlm_samples"))))

        score = mean_normalized(metrics, spec.weights)
        coverage = {
            "metrics_ok": sum(m.status == "ok" for m in metrics),
            "metrics_total": len(metrics),
            "sampled_frames": int(len(idx)),
            "registered_frames": n_reg,
            "sfm_method": rec.method,
            "sfm_variant": rec.details.get("variant"),
            "reconstruction": "failed" if failure else (None if rec.reliability is None else rec.reliability.verdict),
            "camera_model": "SfM" if turn is None else "turn-in-place fit",
            "intrinsics": "case" if K is not None else "estimated",
            "dynamic_mask_fraction": float(masks.mean()) if masks is not None else 0.0,
            "splat_cameras": None if splat_input is None else splat_input[-1]["cameras"],
        }
        return TrackOutput(metrics=metrics, score=score, coverage=coverage, artifacts=artifacts, errors=errors)

    def _camera(self, video: Video, case: Case, ctx: EvalContext, rec: Any, idx: np.ndarray, masks: np.ndarray | None,
                usable: bool, failure: str | None, specs: dict, camera_metrics: Any,
                names: tuple[str, ...]) -> tuple[list[MetricValue], Any]:
        """The trajectory metrics, and the turn-in-place fit when the reference camera turns in place (else ``None``).

        The turn-in-place fit does not need the SfM model (only its intrinsics): a camera that only turns
        gives SfM no baseline, and SfM failing there is not evidence against the video.
        """
        mode = str(self._opt(ctx, "reference_poses"))
        ref_poses: np.ndarray | None = None
        ref_valid = np.ones(len(idx), bool)
        source = ""
        traj = case.camera.poses if case.camera is not None else np.zeros((0, 4, 4))
        if mode == "none":
            return ([specs[n].not_applicable("reference poses disabled (geometry.reference_poses=none)") for n in names],
                    None)
        if len(traj) >= video.num_frames and len(traj) > 0:
            ref_poses, source = traj[idx], "case.camera.trajectory"
        elif len(traj) > 0:
            return ([specs[n].not_applicable(f"case trajectory has {len(traj)} poses but the video has "
                                             f"{video.num_frames} frames; cannot match frames") for n in names], None)
        else:
            ref = ctx.reference()
            if ref is None:
                return ([specs[n].not_applicable("case has no camera trajectory and no reference video") for n in names],
                        None)
            if not usable:
                return ([specs[n].failed(f"unreconstructable video: {failure}", floor=FAILURE_FLOOR) for n in names], None)
            ridx = idx[idx < ref.num_frames]
            rrec, _ = self._recover(ctx, ref.frames[ridx], ridx, Path(ctx.work_dir) / "reference",
                                    self._case_K(case, ref), prefix="reference_")
            if not rrec.ok or rrec.registered.sum() < 3:
                return ([specs[n].not_applicable(f"reference video could not be reconstructed: {rrec.failure}")
                         for n in names], None)
            if rrec.reliability is not None and rrec.reliability.verdict != "reliable":
                return ([specs[n].not_applicable(f"reference video's cameras are unreliable: {rrec.reliability.reason}")
                         for n in names], None)
            ref_poses = np.tile(np.eye(4), (len(idx), 1, 1))
            ref_poses[: len(ridx)] = rrec.poses
            ref_valid = np.zeros(len(idx), bool)
            ref_valid[: len(ridx)] = rrec.registered
            source = "reference video SfM"
        from tracks.geometry.trajectory import reference_motion

        if ref_valid.sum() >= 3 and reference_motion(ref_poses[ref_valid]) == "rotation":
            # A camera that turns in place gives SfM no baseline: its invented translation bends the
            # rotations. Fit the turn-in-place model itself (tracks/geometry/turn.py).
            from tracks.geometry.turn import fit_turn

            with ctx.timed("turn_fit"):
                fit = fit_turn(video.frames[idx], rec.K, masks, seed=ctx.seed)
            both = fit.registered & ref_valid
            if both.sum() < 3:
                return ([specs[n].failed(f"the turn-in-place fit placed only {int(both.sum())} of the frames with a "
                                         "reference pose", floor=FAILURE_FLOOR) for n in names], fit)
            return (camera_metrics(specs, fit.poses()[both], ref_poses[both], source,
                                   coverage=float(both.sum()) / max(1, int(ref_valid.sum())), turn=fit.details), fit)
        if not usable:
            return ([specs[n].failed(f"unreconstructable video: {failure}", floor=FAILURE_FLOOR) for n in names], None)
        both = rec.registered & ref_valid
        if both.sum() < 3:
            return ([specs[n].failed(f"only {int(both.sum())} frames have both estimated and reference poses",
                                     floor=FAILURE_FLOOR) for n in names], None)
        return (camera_metrics(specs, rec.poses[both], ref_poses[both], source,
                               coverage=float(both.sum()) / max(1, int(ref_valid.sum())), reliability=rec.reliability,
                               frame_idx=np.asarray(idx)[both], fps=video.fps), None)

    @staticmethod
    def _turn_structure(frames: np.ndarray, K: np.ndarray, turn: Any, specs: dict) -> list[MetricValue]:  # noqa: N803
        """``reprojection_error`` and ``appearance_drift`` of the turn-in-place fit (a camera turning in place).

        Both are the SfM metrics' counterparts on the fit's feature tracks (keypoints its pairwise rotations
        map onto one another, joined across pairs). Too few placed frames is the video's failure to be the
        turn the reference demands (the camera metrics fail the same way), so the lowest score.
        """
        from tracks.geometry.metrics.photometric import appearance_drift_metric
        from tracks.geometry.metrics.structure import turn_reprojection_error_metric

        placed = int(turn.registered.sum())
        if placed < 3:
            why = f"the turn-in-place fit placed only {placed} of {len(turn.registered)} sampled frames (need >= 3)"
            return [specs[n].failed(why, floor=FAILURE_FLOOR) for n in ("reprojection_error", "appearance_drift")]
        obs = turn.observations()  # one set of feature tracks for both metrics
        return [turn_reprojection_error_metric(specs["reprojection_error"], turn, K, obs),
                appearance_drift_metric(specs["appearance_drift"], frames, observations=obs,
                                        method="turn-in-place fit", least_squares_start=True)]

    def _splat_config(self, ctx: EvalContext) -> Any:
        from tracks.geometry.splat import SplatConfig

        iters = int(self._opt(ctx, "splat_iterations"))
        densify = self._opt(ctx, "densify")
        return SplatConfig(
            iterations=iters,
            holdout_every=int(self._opt(ctx, "holdout_every")),
            densify=iters >= 200 if str(densify) == "auto" else as_bool(densify),
            max_gaussians=int(self._opt(ctx, "max_gaussians")),
            seed=ctx.seed,
        )

    def _splat_input(self, frames: np.ndarray, rec: Any, turn: Any, usable: bool,
                     ctx: EvalContext) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                dict[str, Any]] | None:
        """What the splat is fitted on: ``(images, c2w, K, points, colours, meta pose, provenance)``, or ``None``.

        When the reference camera turns in place the cameras are the turn-in-place fit's (its
        orientations, one common centre, the intrinsics it used), not SfM's, which registers a part of
        such a sweep and bends its rotations with an invented baseline. A pure rotation has no parallax:
        the points start on the unit sphere around the centre (``splat.bearing_init``) and the held-out
        views then measure whether each frame is the same panorama seen in the fitted direction
        (cross-view consistency of appearance), not the scene's depth.
        """
        from tracks.geometry.splat import bearing_init, meta_view_pose, split_train_test, turn_meta_pose

        if turn is not None and int(turn.registered.sum()) >= 3:
            reg = np.nonzero(turn.registered)[0]
            rot = turn.rotations[reg]
            train, _ = split_train_test(len(reg), self._splat_config(ctx).holdout_every)
            points, colors = bearing_init(frames[reg], rot, rec.K, train)
            return (frames[reg], turn.poses()[reg], rec.K, points, colors, turn_meta_pose(rot),
                    {"cameras": "turn-in-place fit", "depth": "unit sphere (a pure rotation has no parallax)"})
        if usable and len(rec.points) > 0:
            reg = np.nonzero(rec.registered)[0]
            c2w = rec.poses[reg]
            return (frames[reg], c2w, rec.K, rec.points, rec.colors,
                    meta_view_pose(c2w, rec.points, float(self._opt(ctx, "meta_distance"))), {"cameras": "SfM"})
        return None

    def _splats(self, images: np.ndarray, c2w: np.ndarray, K: np.ndarray, points: np.ndarray, colors: np.ndarray,
                meta_pose: np.ndarray, provenance: dict[str, Any], ctx: EvalContext, work: Path,
                specs: dict) -> tuple[list[MetricValue], list[np.ndarray], dict[str, str]]:
        import cv2

        from tracks.geometry.metrics.heldout import lpips_metric, psnr_metric, ssim_metric
        from tracks.geometry.splat import export_ply, fit_splats, render_views

        cfg = self._splat_config(ctx)
        H, W = images.shape[1:3]
        device = "cuda" if str(ctx.device).startswith("cuda") else "cpu"
        with ctx.timed("splat_fit"):
            fit = fit_splats(images, c2w, K, points, colors, cfg, device=device)
        if not fit.test_ids:
            reason = f"too few registered frames ({len(images)}) to hold any out"
            return [specs[n].failed(reason, floor=FAILURE_FLOOR) for n in _SPLAT_METRICS], [], {}
        with ctx.timed("splat_render"):
            preds = render_views(fit, c2w[fit.test_ids], K, W, H)
            meta = render_views(fit, meta_pose[None], K, W, H)[0]
        gts = images[fit.test_ids]
        metrics = [psnr_metric(specs["heldout_psnr"], gts, preds), ssim_metric(specs["heldout_ssim"], gts, preds)]
        with ctx.timed("lpips"):
            metrics.append(lpips_metric(specs["heldout_lpips"], gts, preds, self._opt(ctx, "lpips_weights"), device))
        fit_details = {"iterations": fit.iterations, "seconds": fit.seconds, "num_gaussians": fit.num_gaussians,
                       "train_views": len(fit.train_ids), "test_views": len(fit.test_ids), "backend": fit.backend,
                       "final_loss": fit.losses[-1] if fit.losses else None, **provenance}
        for m in metrics:
            if m.status == "ok":
                m.details["fit"] = fit_details
        arts: dict[str, str] = {}
        out = work / "splat"
        out.mkdir(exist_ok=True)
        arts["splats_ply"] = str(export_ply(fit, out / "splats.ply"))
        for j, (g, p) in enumerate(zip(gts, preds, strict=True)):
            path = out / f"heldout_{j:02d}.png"
            cv2.imwrite(str(path), cv2.cvtColor(np.concatenate([g, p], 1), cv2.COLOR_RGB2BGR))
            arts[f"heldout_{j:02d}"] = str(path)
        cv2.imwrite(str(out / "meta_view.png"), cv2.cvtColor(meta, cv2.COLOR_RGB2BGR))
        arts["meta_view"] = str(out / "meta_view.png")
        return metrics, [*list(preds), meta], arts
