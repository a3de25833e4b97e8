"""Held-out validity harness (issue 56, item 1): does every track rank videos correctly on cases it was
never tuned on, in the encodings users write, with and without a reference?

What it does, in order (every step resumes: files that exist are kept, the evaluator reuses finished rows):

1. **Held-out cases** — the ``heldout`` split of :mod:`scenarios.heldout.splits` (``--quick``: two tiny
   cases), rendered exactly (lossless) with case files and ground truth under ``OUT/render``.
2. **Defects** — for each clean video and each track of its case, the defects of that track's family from
   the perturbation library (:data:`DEFECTS`) at three strengths, written lossless; each defect video is a
   case of its own (``<case>.<defect>-<strength>``) that lists only the defect's track.
3. **Encodings** — every video also as users write it (:func:`worldolympiad.video.io.encode_like_users`):
   H.264 yuv420p crf 23, and yuv420p crf 35 after a 0.75x resize.
4. **Scoring through the public CLI** — ``evaluate-model --model videos:DIR --suite SUITE.json`` (its
   ``main``, in-process) per encoding and track (one run each, so a track whose version changes is rescored alone), with the case files as rendered (``reference`` condition) and, for
   physics, interaction and long video (since session 58), with ``reference`` stripped from them, and the generator that could render one, and the simulator's
   ground truth (``no_reference`` condition: users rarely have any of these); and for physics cases that declare
   rules, with those rules removed and the reference kept (``no_rules``: the rules must then be found).
   ``--conditions`` picks among them.
5. **Statistics** (:func:`statistics`) per condition, encoding, track and metric: pair accuracy (clean >
   every defect, weaker defect > stronger; ties count half; a defect video that is the clean video again —
   under :data:`NOOP_SHARE` of the defect's object changed, or for a defect that only replays the clip's frames
   (:data:`REORDER_DEFECTS`) of the clean video's own one-step motion — is left out and listed), mean Spearman of the score against
   defect-freeness (strength negated; clean = strength 0; 1 = perfectly ordered), and per video the gap
   between encodings, ``max |score(enc) - score(lossless)|``.
6. **Report** — ``OUT/validity.json`` and ``OUT/validity.md`` + ``OUT/validity.png``; ``--record NAME``
   also copies them to ``bench/records/NAME.{json,md,png}``. The report states the commit it measured.

``--baselines`` is the other mode (issue 56, acceptance 3): ``reference``, ``repeat-first-frame`` and
``inferix:reference-world-random`` on ``smoke`` at seeds 0-2 and ``standard`` at seed 0 (``--baseline-suites``),
then per track whether ``reference`` beats both, on the track mean and per case. Generated videos are kept in
the run directories (the random model is slow on CPU: a rerun resumes).

Usage::

    OMP_NUM_THREADS=1 python bench/validity.py --quick --out /tmp/validity_quick          # minutes
    OMP_NUM_THREADS=1 python bench/validity.py --out bench/_out/validity --record validity_s45
    OMP_NUM_THREADS=1 python bench/validity.py --baselines --out bench/_out/baselines \\
        --baseline-suites smoke:0,1,2 standard:0:1 --record baselines_s45   # standard: 1 case per generator
    python bench/validity.py --tracks interaction,longvideo --cases ho-photo-coffee-sweep   # a subset
    python bench/validity.py --tuning-suite physics_tune --tracks physics --out /tmp/v_tune   # tune here

Tuning split vs held-out split: see :mod:`scenarios.heldout.splits` (``SPLITS``). Nothing here may be
used to tune a track; the report says so.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import math
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

#: track -> defects of its family: (perturbation name, three strengths, weakest first)
DEFECTS: dict[str, tuple[tuple[str, tuple[float, float, float]], ...]] = {
    "physics": (("teleport", (0.25, 0.5, 1.0)), ("gravity_reversed", (0.34, 0.67, 1.0)), ("vanish", (0.34, 0.67, 1.0))),
    "geometry": (("homography_jitter", (0.5, 1.0, 2.0)), ("frame_shuffle", (0.25, 0.5, 1.0))),
    "interaction": (("action_ignored", (0.34, 0.67, 1.0)), ("seam_cut", (0.5, 1.0, 2.0))),
    "longvideo": (("blur_drift", (0.5, 1.0, 2.0)), ("color_drift", (0.5, 1.0, 2.0)), ("frozen", (0.34, 0.67, 1.0))),
}
#: --quick: one defect per track
QUICK_DEFECTS: dict[str, tuple[tuple[str, tuple[float, float, float]], ...]] = {t: d[:1] for t, d in DEFECTS.items()}
#: encoding name -> (crf, scale), None = the lossless render itself
ENCODINGS: dict[str, tuple[int, float] | None] = {"lossless": None, "crf23": (23, 1.0), "crf35_s0.75": (35, 0.75)}
CONDITIONS: tuple[str, ...] = ("reference", "no_reference", "no_rules")
#: tracks scored also in the ``no_reference`` condition (geometry reads the case camera, never the reference video)
NO_REFERENCE_TRACKS: tuple[str, ...] = ("physics", "interaction", "longvideo")
#: the ``no_rules`` condition: the reference kept, the case's declared ``physics.rules`` removed (a user with a reference
#: video who names no rules: the rules then come from a judge or, without one, from the checks run on the reference,
#: ``tracks/physics/track.py: AUTO_RULES``). Only cases that declare rules are in it (the rest are the ``reference`` rows).
NO_RULES_TRACKS: tuple[str, ...] = ("physics",)
BASELINE_MODELS: tuple[str, ...] = ("reference", "repeat-first-frame", "inferix:reference-world-random")
CLEAN = "clean"
#: the evaluator runs this process scored: condition, encoding, run directory, its git hash and track versions
RUNS: list[dict[str, Any]] = []
#: a defect video whose largest per-frame change (pixels off by more than NOOP_LEVEL in some channel) is
#: under NOOP_SHARE of the area of the object the defect acts on is the clean video again (a "gravity reversal" of balls
#: rolling on a floor, a "freeze" of a scene whose motion had ended): its pairs with the clean video and
#: with other such videos cannot be ordered and are left out (listed in the report), not counted as ties.
NOOP_LEVEL = 30
NOOP_SHARE = 0.25
#: the defects that move or erase one object (the render's masks say how large it is)
OBJECT_DEFECTS: frozenset[str] = frozenset({"teleport", "gravity_reversed", "vanish"})
#: the defects that only replay the clip's own frames in another order (hold, freeze, shuffle): over a stretch where
#: nothing moves they are the clean video again; their change is measured against the clean video's own motion
REORDER_DEFECTS: frozenset[str] = frozenset({"frozen", "action_ignored", "frame_shuffle"})
#: defect videos a perturbation refused to make (e.g. ``vanish`` when the object has left the frame), with why
SKIPPED: list[dict[str, str]] = []


# ============================================================================ statistics (pure)


def series_spearman(series: dict[float, float]) -> float:
    """Spearman correlation of the values with defect-freeness (``-strength``); 0 when the values are all
    equal (an undecided metric is not a correct one)."""
    from scipy.stats import spearmanr

    keys = sorted(series)
    vals = [series[k] for k in keys]
    if len(keys) < 2 or np.ptp(vals) == 0:
        return 0.0
    rho = spearmanr([-k for k in keys], vals).statistic
    return 0.0 if rho is None or math.isnan(rho) else float(rho)


def statistics(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Pair accuracy, Spearman and encoding gap from a score table.

    Args:
        records: one per scored value: ``{"condition", "encoding", "case", "track", "metric", "defect",
            "strength", "value"}`` with ``defect == "clean"`` and ``strength == 0`` for the clean video of a
            case (shared by every defect of that case); ``value`` may be ``None`` (not scored).

    Returns:
        ``{"ranking": {condition: {encoding: {track: {metric: {...}}}}}, "encoding_gap": {condition: {track:
        {metric: {...}}}}}``. Ranking entries: ``pair_accuracy`` (ties count half), ``pairs``, ``noop_pairs``
        (pairs of videos that are all the clean one again, left out: records with ``noop``),
        ``identical_pairs`` (two strengths whose videos are the same frames, records' ``video`` sha, or replay the
        same frames but for under :data:`NOOP_SHARE` of the clean video's one-step motion, records' ``alike``: no
        metric can order them, left out), ``spearman``
        (mean over (case, defect) series), ``series``, ``missing`` (values that were ``None``). Gap entries:
        ``max``, ``mean``, ``clean_max`` over the videos scored in the lossless and at least one other
        encoding, and ``per_encoding`` maxima.
    """
    # (condition, encoding, track, metric, case) -> defect -> strength -> value
    table: dict[tuple[str, str, str, str, str], dict[str, dict[float, float]]] = defaultdict(lambda: defaultdict(dict))
    missing: dict[tuple[str, str, str, str], int] = defaultdict(int)
    noop: set[tuple[str, str, float]] = set()  # (case, defect, strength) whose video is the clean one again
    video: dict[tuple[str, str, float], str] = {}  # (case, defect, strength) -> sha of its lossless frames
    for r in records:
        key = (r["condition"], r["encoding"], r["track"], r["metric"], r["case"])
        if r.get("noop"):
            noop.add((r["case"], r["defect"], float(r["strength"])))
        if r.get("alike") or r.get("video"):
            video[(r["case"], r["defect"], float(r["strength"]))] = r.get("alike") or r["video"]
        if r["value"] is None:
            missing[key[:4]] += 1
            continue
        table[key][r["defect"]][float(r["strength"])] = float(r["value"])
    ranking: dict[str, Any] = {}
    acc: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    rhos: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    skipped: dict[tuple[str, str, str, str], int] = defaultdict(int)
    identical: dict[tuple[str, str, str, str], int] = defaultdict(int)
    for (cond, enc, track, metric, case), by_defect in table.items():
        clean = by_defect.get(CLEAN, {}).get(0.0)
        for defect, series in by_defect.items():
            if defect == CLEAN:
                continue
            same = {0.0} | {s for s in series if (case, defect, s) in noop}  # strengths showing the clean video
            full = {s: v for s, v in series.items() if s not in same}  # no-op defects: not defects
            if clean is not None:
                full[0.0] = clean
            keys = sorted(set(series) | {0.0})
            skipped[(cond, enc, track, metric)] += sum(1 for i, a in enumerate(keys) for b in keys[i + 1:]
                                                       if a in same and b in same)
            ks = sorted(full)
            repeats: set[float] = set()  # strengths showing a weaker strength's video again
            for i, sa in enumerate(ks):
                for sb in ks[i + 1:]:
                    va = video.get((case, CLEAN, 0.0) if sa == 0.0 else (case, defect, sa))
                    if va is not None and va == video.get((case, CLEAN, 0.0) if sb == 0.0 else (case, defect, sb)):
                        identical[(cond, enc, track, metric)] += 1  # one video at two strengths: no order
                        repeats.add(sb)
                        continue
                    a, b = full[sa], full[sb]
                    acc[(cond, enc, track, metric)].append(1.0 if a > b else 0.5 if a == b else 0.0)
            # one video is one point of the series, at the weakest strength that made it: counted again at a stronger
            # strength its score ties with itself, and no metric could reach a correlation of 1
            ranked = {k: v for k, v in full.items() if k not in repeats}
            if len(ranked) >= 2:
                rhos[(cond, enc, track, metric)].append(series_spearman(ranked))
    for group in sorted(set(acc) | set(rhos) | set(missing)):
        cond, enc, track, metric = group
        pairs = acc.get(group, [])
        ranking.setdefault(cond, {}).setdefault(enc, {}).setdefault(track, {})[metric] = {
            "pair_accuracy": float(np.mean(pairs)) if pairs else None, "pairs": len(pairs),
            "spearman": float(np.mean(rhos[group])) if rhos.get(group) else None, "series": len(rhos.get(group, [])),
            "missing": missing.get(group, 0), "noop_pairs": skipped.get(group, 0),
            "identical_pairs": identical.get(group, 0)}
    # encoding gap: the same video (case, defect, strength) in each encoding against the lossless one
    values: dict[tuple[str, str, str, str, str, float], dict[str, float]] = defaultdict(dict)
    for (cond, enc, track, metric, case), by_defect in table.items():
        for defect, series in by_defect.items():
            for s, v in series.items():
                values[(cond, track, metric, case, defect, s)][enc] = v
    gaps: dict[tuple[str, str, str], list[tuple[float, bool, dict[str, float]]]] = defaultdict(list)
    for (cond, track, metric, _case, defect, _s), by_enc in values.items():
        if "lossless" not in by_enc or len(by_enc) < 2:
            continue
        per = {e: abs(v - by_enc["lossless"]) for e, v in by_enc.items() if e != "lossless"}
        gaps[(cond, track, metric)].append((max(per.values()), defect == CLEAN, per))
    gap_out: dict[str, Any] = {}
    for (cond, track, metric), items in sorted(gaps.items()):
        per_enc: dict[str, float] = {}
        for _, _, per in items:
            for e, g in per.items():
                per_enc[e] = max(per_enc.get(e, 0.0), g)
        clean_gaps = [g for g, is_clean, _ in items if is_clean]
        gap_out.setdefault(cond, {}).setdefault(track, {})[metric] = {
            "max": max(g for g, _, _ in items), "mean": float(np.mean([g for g, _, _ in items])),
            "clean_max": max(clean_gaps) if clean_gaps else None, "videos": len(items), "per_encoding": per_enc}
    return {"ranking": ranking, "encoding_gap": gap_out}


# ============================================================================ preparing the videos


def register_heldout() -> None:
    """Make the held-out generators known to the registry (they are not a default scenario subpackage)."""
    import scenarios.heldout
    from worldolympiad.registries import GENERATORS

    scenarios.heldout.register(GENERATORS)


def tuning_suite_dir(name: str) -> Path:
    """The folder of a tuning-split suite given by path or by name (``physics_tune``); anything else exits."""
    from scenarios.heldout.splits import SPLITS, tuning_suite

    folder = tuning_suite(name)
    if folder is None:
        raise SystemExit(f"--tuning-suite: {name!r} is not a tuning-split suite; known: "
                         f"{', '.join(sorted(p.name for p in SPLITS['tuning']))} "
                         "(the held-out split is the default; see scenarios/heldout/splits.py)")
    return folder


def heldout_cases(quick: bool, only: Sequence[str] = (), suite_dir: Path | None = None) -> list[Any]:
    """The held-out split's cases (``--quick``: its two tiny ones), built through the generators;
    ``suite_dir``: a tuning-split suite's cases instead (development runs, never an acceptance figure)."""
    from scenarios.heldout.splits import HERE
    from scenarios.suites import build_suite

    cases = build_suite(str(suite_dir if suite_dir is not None else HERE / ("quick" if quick else "suite")))
    if only:
        unknown = sorted(set(only) - {c.id for c in cases})
        if unknown:
            where = "the tuning suite" if suite_dir is not None else "the held-out split"
            raise SystemExit(f"--cases: {', '.join(unknown)} not in {where}; known: {', '.join(c.id for c in cases)}")
        cases = [c for c in cases if c.id in set(only)]
    return cases


def variant_id(case_id: str, defect: str, strength: float) -> str:
    """The case id of one defect video (a valid case id: letters, digits, ``_ . -``)."""
    return f"{case_id}.{defect}-{strength:g}"


def _rendered_from_disk(case: Any, render_dir: Path) -> Any:
    """The reference frames with the render's masks (what physics perturbations move), read back."""
    from worldolympiad.scenario import Rendered
    from worldolympiad.video.io import read_video

    video = read_video(render_dir / "videos" / f"{case.id}.mp4", chunks=case.chunks)
    video.fps = case.fps
    npz = np.load(render_dir / "ground_truth" / f"{case.id}.npz")
    masks = npz["masks"] if "masks" in npz.files else None
    ids = json.loads(str(npz["object_ids"])) if "object_ids" in npz.files else {}
    return Rendered(video=video, masks=masks, object_ids=ids)


def changed_share(clean: np.ndarray, bad: np.ndarray, masks: np.ndarray | None, object_id: int | None = None) -> float:
    """The largest per-frame count of pixels ``bad`` changes (any channel off by more than :data:`NOOP_LEVEL`),
    as a share of the defect's object's median area in the render's masks (``object_id``; without it the
    smallest object's, without masks the frame's)."""
    T = min(len(clean), len(bad))
    diff = np.abs(clean[:T].astype(np.int16) - bad[:T].astype(np.int16)).max(axis=3) > NOOP_LEVEL
    most = float(diff.reshape(T, -1).sum(axis=1).max()) if T else 0.0
    area = float(clean.shape[1] * clean.shape[2])
    if masks is not None and masks.size:
        ids = [object_id] if object_id is not None else [i for i in np.unique(masks) if i > 0]
        per = []
        for i in ids:
            a = (masks == i).reshape(len(masks), -1).sum(axis=1)
            if (a > 0).any():
                per.append(float(np.median(a[a > 0])))
        area = min(per, default=area)
    return most / max(area, 1.0)


def motion_area(frames: np.ndarray) -> float:
    """The largest count of pixels that change between consecutive frames (any channel off by more than
    :data:`NOOP_LEVEL`): how much of the picture the clean video itself moves in one step."""
    if len(frames) < 2:
        return 0.0
    step = np.abs(np.diff(frames.astype(np.int16), axis=0)).max(axis=3) > NOOP_LEVEL
    return float(step.reshape(len(step), -1).sum(axis=1).max())


def reorder_changed_share(clean: np.ndarray, bad: np.ndarray) -> float:
    """For a defect that replays the clip's own frames: its largest per-frame change as a share of the clean video's
    largest one-step motion (:func:`motion_area`). A freeze after the motion ended changes nothing (0); a freeze of
    a moving object changes at least about one step's motion (>= 1)."""
    return replay_step_share(clean, clean, bad)


def replay_step_share(clean: np.ndarray, weaker: np.ndarray, stronger: np.ndarray) -> float:
    """For a defect that replays the clip's own frames: how much its stronger strength's video differs from its weaker
    one's, as a share of the clean video's largest one-step motion (:func:`motion_area`). Under :data:`NOOP_SHARE`
    the stronger strength only held still what barely moved (a robot's gripper closing: 30 pixels where the arm's
    step moves 190), and the two videos cannot be ordered, as a defect video that is the clean one again cannot."""
    frame = float(clean.shape[1] * clean.shape[2])
    return changed_share(weaker, stronger, None) * frame / max(motion_area(clean), 1.0)


def prepare(out: Path, cases: Sequence[Any], tracks: Sequence[str], defects: dict[str, Any]) -> list[dict[str, Any]]:
    """Render the clean cases, write every defect video lossless and a case file per defect video.

    Returns:
        the variants: ``{"id", "case", "track" (None for clean: every track of its case), "defect", "strength"}``.
    """
    from scenarios.render import render_cases
    from worldolympiad.registries import PERTURBATIONS
    from worldolympiad.types import Case, jsonable
    from worldolympiad.video.io import read_video, write_video

    render_dir = out / "render"
    report = render_cases(cases, render_dir, name="heldout", description="held-out validity cases (bench/validity.py)")
    if report.failed:
        print(f"render failed for {len(report.failed)} case(s): {report.failed}", file=sys.stderr)
    lossless = out / "videos" / "lossless"
    lossless.mkdir(parents=True, exist_ok=True)
    variants: list[dict[str, Any]] = []
    changed_file = render_dir / "changed.json"  # variant id -> changed_share (cached: reading videos back is slow)
    changed: dict[str, float] = json.loads(changed_file.read_text()) if changed_file.exists() else {}
    sha_file = render_dir / "frames_sha.json"  # variant id -> sha1 of its lossless frames (identical videos)
    shas: dict[str, str] = json.loads(sha_file.read_text()) if sha_file.exists() else {}
    # variant id -> share of the clean video's one-step motion by which a replaying defect's video differs from the
    # next weaker strength's (:func:`replay_step_share`; cached like ``changed``)
    step_file = render_dir / "replay_step.json"
    steps: dict[str, float] = json.loads(step_file.read_text()) if step_file.exists() else {}

    decoded: dict[Path, np.ndarray] = {}  # the lossless videos of the defect being prepared, each decoded once

    def frames_at(path: Path) -> np.ndarray:
        if path not in decoded:
            decoded[path] = read_video(path).frames
        return decoded[path]

    def frames_sha(vid: str, path: Path) -> str:
        if vid not in shas:
            shas[vid] = hashlib.sha1(frames_at(path).tobytes()).hexdigest()
        return shas[vid]

    for case0 in cases:
        if case0.id in report.failed:
            continue
        case_file = render_dir / "cases" / f"{case0.id}.json"
        case = Case.load(case_file)
        case_tracks = [t for t in case.tracks if t in tracks]
        if not case_tracks:
            continue
        clean_dst = lossless / f"{case.id}.mp4"
        if not clean_dst.exists():
            shutil.copyfile(render_dir / "videos" / f"{case.id}.mp4", clean_dst)
        variants.append({"id": case.id, "case": case.id, "track": None, "defect": CLEAN, "strength": 0.0,
                         "video": frames_sha(case.id, clean_dst)})
        raw = json.loads(case_file.read_text())
        rendered = None
        for track in case_tracks:
            for defect, strengths in defects[track]:
                weaker: dict[str, Any] | None = None  # the variant of the next weaker strength
                decoded.clear()
                for s in strengths:
                    vid = variant_id(case.id, defect, s)
                    dst = lossless / f"{vid}.mp4"
                    made = None
                    if not dst.exists():
                        if rendered is None:
                            rendered = _rendered_from_disk(case, render_dir)
                        fn = PERTURBATIONS.get(defect)
                        try:
                            bad = fn(rendered.video, case, s, np.random.default_rng(0), rendered)
                        except ValueError as e:  # the defect cannot apply to this clip: say so, keep the rest
                            print(f"skipped {vid}: {e}", file=sys.stderr)
                            SKIPPED.append({"id": vid, "reason": str(e)})
                            continue
                        write_video(dst, bad.frames, case.fps, lossless=True)
                        made = bad
                    if vid not in changed and defect in REORDER_DEFECTS:
                        if rendered is None:
                            rendered = _rendered_from_disk(case, render_dir)
                        changed[vid] = reorder_changed_share(rendered.video.frames, frames_at(dst))
                    if vid not in changed and defect in OBJECT_DEFECTS:
                        if rendered is None:
                            rendered = _rendered_from_disk(case, render_dir)
                        if rendered.masks is not None:
                            # the perturbation names the object it moved (a video already on disk: made again,
                            # deterministically, for that name)
                            if made is None:
                                made = PERTURBATIONS.get(defect)(rendered.video, case, s, np.random.default_rng(0), rendered)
                            oid = (made.metadata.get("perturbation") or {}).get("object_id")
                            changed[vid] = changed_share(rendered.video.frames, frames_at(dst), rendered.masks,
                                                         None if oid is None else int(oid))
                    doc = dict(raw, id=vid, tracks=[track])
                    doc["metadata"] = dict(raw.get("metadata") or {}, validity={"case": case.id, "defect": defect,
                                                                               "strength": s, "track": track})
                    (render_dir / "cases" / f"{vid}.json").write_text(json.dumps(jsonable(doc), indent=1))
                    variant = {"id": vid, "case": case.id, "track": track, "defect": defect, "strength": s,
                               "changed": changed.get(vid), "noop": changed.get(vid, np.inf) < NOOP_SHARE,
                               "video": frames_sha(vid, dst)}
                    variant["alike"] = variant["video"]
                    if defect in REORDER_DEFECTS and weaker is not None:
                        if vid not in steps:
                            if rendered is None:
                                rendered = _rendered_from_disk(case, render_dir)
                            steps[vid] = replay_step_share(rendered.video.frames, frames_at(lossless / f"{weaker['id']}.mp4"),
                                                           frames_at(dst))
                        if steps[vid] < NOOP_SHARE:
                            variant["alike"] = weaker["alike"]  # the stronger strength replays what the weaker showed
                    variants.append(variant)
                    weaker = variant
    changed_file.write_text(json.dumps(changed, indent=1, sort_keys=True))
    sha_file.write_text(json.dumps(shas, indent=1, sort_keys=True))
    step_file.write_text(json.dumps(steps, indent=1, sort_keys=True))
    return variants


#: scoring order: the cheap tracks first, so a stopped run has the most to show (geometry fits a splat per video)
TRACK_ORDER: tuple[str, ...] = ("longvideo", "interaction", "physics", "geometry")


def write_suites(out: Path, variants: Sequence[dict[str, Any]], tracks: Sequence[str],
                 conditions: Sequence[str] = CONDITIONS) -> dict[tuple[str, str], Path]:
    """One suite per condition and track (``OUT/render/validity_<condition>_<track>_<content hash>.json``): the clean videos
    of the cases that list the track and the track's defect videos. The ``no_reference`` suites
    (:data:`NO_REFERENCE_TRACKS`) point at copies of the case files with ``reference`` stripped, one per track, in
    ``render/cases_noref/`` so relative paths
    still resolve; the ``no_rules`` suites (physics) at copies with the declared ``physics.rules`` removed and the
    reference kept, in ``render/cases_norules/``, of the cases that declared rules. One evaluator run per suite and
    encoding: a track whose version changes is rescored alone. ``conditions``: the conditions to write (all by default).
    """
    render_dir = out / "render"
    noref_dir = render_dir / "cases_noref"
    noref_dir.mkdir(parents=True, exist_ok=True)
    norules_dir = render_dir / "cases_norules"
    norules_dir.mkdir(parents=True, exist_ok=True)
    suites: dict[tuple[str, str], Path] = {}
    for cond in [c for c in CONDITIONS if c in conditions]:
        for track in tracks:
            if cond == "no_reference" and track not in NO_REFERENCE_TRACKS:
                continue
            if cond == "no_rules" and track not in NO_RULES_TRACKS:
                continue
            items: list[str] = []
            for v in variants:
                doc = json.loads((render_dir / "cases" / f"{v['id']}.json").read_text())
                if track not in doc["tracks"] or (v["track"] is not None and v["track"] != track):
                    continue
                if cond == "no_rules":
                    # what a user with a reference video who names no rules runs: the rules must be found
                    if not (doc.get("physics") or {}).get("rules"):
                        continue  # declares none: already a `reference` row
                    doc["tracks"] = [track]
                    doc["physics"] = dict(doc["physics"], rules=[])
                    (norules_dir / f"{v['id']}.json").write_text(json.dumps(doc, indent=1))
                    items.append(f"cases_norules/{v['id']}.json")
                elif cond == "no_reference":
                    # what a user's case holds: no reference video and nothing to render one from (the evaluator
                    # renders a reference from metadata.generator when the file is missing), no simulator truth
                    doc["tracks"] = [track]
                    doc.pop("reference", None)
                    meta = dict(doc.get("metadata") or {})
                    for key in ("generator", "generator_version", "ground_truth_files"):
                        meta.pop(key, None)
                    doc["metadata"] = meta
                    if doc.get("physics"):
                        doc["physics"] = dict(doc["physics"], ground_truth=None)
                    # one file per track (a clean video is in every track's suite, each file naming its track);
                    # physics keeps the name it had before other tracks joined, so earlier out folders resume
                    name = f"{v['id']}.json" if track == "physics" else f"{v['id']}.{track}.json"
                    (noref_dir / name).write_text(json.dumps(doc, indent=1))
                    items.append(f"cases_noref/{name}")
                else:
                    items.append(f"cases/{v['id']}.json")
            if not items:
                continue
            # The evaluator keys finished rows by (case id, seed, track) within a run directory named from the
            # suite's path, so a changed case file would reuse stale rows: name the suite after its content.
            import hashlib

            digest = hashlib.sha1("".join((render_dir / i).read_text() for i in items).encode()).hexdigest()[:10]
            path = render_dir / f"validity_{cond}_{track}_{digest}.json"
            path.write_text(json.dumps({"name": f"validity_{cond}_{track}", "version": "1",
                                        "description": f"held-out {track} cases and their defect videos ({cond}; "
                                                       "bench/validity.py)", "cases": items}, indent=1))
            suites[(cond, track)] = path
    return suites


def encode_all(out: Path, variants: Sequence[dict[str, Any]]) -> dict[str, Path]:
    """Every lossless video in each users' encoding (:data:`ENCODINGS`); existing files are kept."""
    from worldolympiad.video.io import encode_like_users, read_video

    dirs = {}
    for enc, setting in ENCODINGS.items():
        d = out / "videos" / enc
        dirs[enc] = d
        if setting is None:
            continue
        crf, scale = setting
        for v in variants:
            dst = d / f"{v['id']}.mp4"
            if not dst.exists():
                src = read_video(out / "videos" / "lossless" / f"{v['id']}.mp4")
                encode_like_users(dst, src.frames, src.fps, crf=crf, scale=scale)
    return dirs


# ============================================================================ scoring


def score(out: Path, suites: dict[tuple[str, str], Path], dirs: dict[str, Path],
          variants: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Score every (condition, track, encoding) through ``evaluate-model``'s ``main``; the score table."""
    from worldolympiad.cli.evaluate import main as evaluate_model
    from worldolympiad.evaluator import make_run_spec

    by_id = {v["id"]: v for v in variants}
    records: list[dict[str, Any]] = []
    runs = out / "runs"
    order = sorted(suites, key=lambda k: (TRACK_ORDER.index(k[1]) if k[1] in TRACK_ORDER else 99, CONDITIONS.index(k[0])))
    for cond, track in order:
        suite = suites[(cond, track)].resolve()
        for enc, d in dirs.items():
            model = f"videos:{d.resolve()}"
            argv = ["--model", model, "--suite", str(suite), "--tracks", track,
                    "--out", str(runs), "--no-progress", "--no-report", "--no-baselines"]
            t0 = time.perf_counter()
            print(f"$ evaluate-model {' '.join(argv)}", flush=True)
            _quiet(evaluate_model, argv)
            run_dir = runs / make_run_spec(model, str(suite), [track]).dirname
            spec = json.loads((run_dir / "run_spec.json").read_text())
            RUNS.append({"condition": cond, "encoding": enc, "track": track, "run_dir": run_dir.name,
                         "git_hash": spec.get("git_hash"), "track_versions": spec.get("track_versions")})
            n = 0
            for line in (run_dir / "results.jsonl").read_text().splitlines():
                row = json.loads(line)
                v = by_id.get(row["case_id"])
                if v is None or row["status"] == "not_applicable":
                    continue
                vals = {"score": row.get("score") if row["status"] == "ok" else None}
                for m in row.get("metrics") or []:
                    if m.get("status") != "not_applicable":
                        vals[m["name"]] = m.get("normalized")
                for metric, value in vals.items():
                    records.append({"condition": cond, "encoding": enc, "case": v["case"], "track": row["track"],
                                    "metric": metric, "defect": v["defect"], "strength": v["strength"],
                                    "value": value, "variant": v["id"], "noop": bool(v.get("noop")),
                                    "video": v.get("video"), "alike": v.get("alike")})
                n += 1
            print(f"  {cond} / {track} / {enc}: {n} rows in {time.perf_counter() - t0:.0f} s ({run_dir.name})", flush=True)
    return records


def _quiet(fn: Any, argv: list[str]) -> int:
    """Run a CLI main with its per-case tables sent to a log instead of the terminal."""
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = int(fn(argv) or 0)
    if rc:
        print(buf.getvalue()[-3000:], file=sys.stderr)
        raise SystemExit(f"evaluate-model {' '.join(argv)} exited {rc}")
    return rc


# ============================================================================ report


def git_state() -> dict[str, Any]:
    def git(*args: str) -> str:
        try:
            # no strip(): porcelain lines start with a status column that may be a space
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30).stdout.rstrip("\n")
        except (OSError, subprocess.SubprocessError):
            return ""

    return {"commit": git("rev-parse", "HEAD") or None, "dirty_tracks": [
        line[3:] for line in git("status", "--porcelain", "--", "tracks", "worldolympiad", "scenarios").splitlines()]}


def _commit_line(git: dict[str, Any]) -> str:
    """The report's provenance: the commit measured, or why it is unknown (a copy of the tree without ``.git``)."""
    if not git.get("commit"):
        return ("Commit unknown (the tree measured is not a git checkout; measure from `git worktree add --detach DIR "
                "COMMIT` to record it)")
    return f"Commit `{git['commit']}`"


def _fmt(x: Any, nd: int = 3) -> str:
    return "—" if x is None else (f"{x:.{nd}f}" if isinstance(x, float) else str(x))


def _track_versions(tracks: Sequence[str]) -> dict[str, str]:
    from worldolympiad.evaluator import _track_version

    return {t: _track_version(t) for t in tracks}


def write_report(out: Path, record: dict[str, Any]) -> tuple[Path, Path, Path | None]:
    """``validity.json``, ``validity.md`` and ``validity.png`` under ``out``."""
    stats = record["statistics"]
    js = out / "validity.json"
    js.write_text(json.dumps(record, indent=1, default=str))
    tuning = str(record["mode"]).startswith("tuning")
    lines = [f"# {'Tuning-split' if tuning else 'Held-out'} validity report ({record['mode']})", "",
             *(["**Tuning split: a development measurement on cases tracks may be tuned on, never an acceptance figure.**",
                ""] if tuning else []),
             _commit_line(record["git"])
             + (f" with uncommitted changes in {', '.join(record['git']['dirty_tracks'])}" if record["git"]["dirty_tracks"] else "")
             + f" (at the start); {record['date']}; {record['seconds']:.0f} s on one CPU thread. Track versions: "
             + ", ".join(f"{t} v{v}" for t, v in record["track_versions"].items()) + ".", "",
             f"Command: `{record['command']}`", "",
             "Evaluator runs (the git hash each recorded when it started, and its track versions): "
             + "; ".join(f"{r['condition']}/{r['encoding']} `{str(r['git_hash'])[:10]}` "
                         + ", ".join(f"{t} v{v}" for t, v in (r["track_versions"] or [])) for r in record.get("runs", []))
             + ".", "",
             "## Splits", "",
             "Tuning split (tracks may be tuned on these): " + ", ".join(f"`{p}`" for p in record["splits"]["tuning"]) + ".",
             "Held-out split (reported here, never tuned on): " + ", ".join(f"`{p}`" for p in record["splits"]["heldout"])
             + ". Declared in `scenarios/heldout/splits.py`; `tests/scenarios/test_heldout.py` keeps them apart.", "",
             f"| {'tuning' if tuning else 'held-out'} case | generator | settings | tracks |", "|---|---|---|---|"]
    for c in record["cases"]:
        lines.append(f"| {c['id']} | {c['generator']} | `{json.dumps(c['params'], separators=(',', ':'))}` | {', '.join(c['tracks'])} |")
    if record.get("noop"):
        lines += ["", f"Defect videos that are the clean video again (under {NOOP_SHARE:.0%} of the defect's object changed, "
                  "or, for a defect that only replays frames (freeze, hold, shuffle), under "
                  f"{NOOP_SHARE:.0%} of the clean video's largest one-step motion; their pairs with the clean video and with each other are left out): "
                  + ", ".join(f"`{k}`" for k in record["noop"]) + "."]
    if record.get("alike"):
        lines += ["", "Defect videos that replay what the next weaker strength showed (they differ from its video by under "
                  f"{NOOP_SHARE:.0%} of the clean video's largest one-step motion: a gripper that closes or not; their pairs "
                  "with that strength are left out, as two strengths that made the very same frames are): "
                  + ", ".join(f"`{k}`" for k in record["alike"]) + "."]
    if record.get("skipped"):
        lines += ["", "Defect videos not made (the perturbation refused the clip): "
                  + "; ".join(f"`{k['id']}` ({k['reason']})" for k in record["skipped"]) + "."]
    lines += ["", "Defects per track (strengths weakest first): "
              + "; ".join(f"{t}: " + ", ".join(f"{d} {list(s)}" for d, s in ds) for t, ds in record["defects"].items()) + ".",
              "Encodings: lossless (the exact render), `crf23` (H.264 yuv420p crf 23), `crf35_s0.75` (yuv420p crf 35 after "
              "a 0.75x resize), written by `worldolympiad.video.io.encode_like_users`.", "",
              "Pair accuracy: share of ordered pairs (clean > each defect strength, weaker > stronger) the score orders "
              "right (ties count half; pairs of no-op defect videos, listed above, and of two strengths that made the very same frames or replay what the weaker showed, listed above, left out). Spearman: mean over (case, defect) of the rank correlation between the score and "
              "defect-freeness (clean = strength 0; 1 = perfectly ordered; a constant series counts 0). Gap: over "
              "every video, max |score(encoding) - score(lossless)|; `clean` = clean videos only.", ""]
    for cond in [c for c in CONDITIONS if c in stats["ranking"]]:
        by_enc = {e: stats["ranking"][cond][e] for e in ENCODINGS if e in stats["ranking"][cond]}
        lines += [f"## Track scores, condition `{cond}`", "",
                  "| track | " + " | ".join(f"{e} pair acc | {e} Spearman" for e in by_enc) + " | gap max | gap clean max | gap mean |",
                  "|---|" + "---|---|" * len(by_enc) + "---|---|---|"]
        tracks = sorted({t for e in by_enc.values() for t in e})
        for t in tracks:
            cells = []
            for e in by_enc:
                m = by_enc[e].get(t, {}).get("score", {})
                cells += [_fmt(m.get("pair_accuracy")) + (f" ({m.get('pairs')})" if m else ""), _fmt(m.get("spearman"))]
            g = stats["encoding_gap"].get(cond, {}).get(t, {}).get("score", {})
            lines.append(f"| {t} | " + " | ".join(cells) + f" | {_fmt(g.get('max'))} | {_fmt(g.get('clean_max'))} | {_fmt(g.get('mean'))} |")
        lines += ["", f"Clean videos, track score per encoding (`{cond}`):", "",
                  "| case | track | " + " | ".join(by_enc) + " |", "|---|---|" + "---|" * len(by_enc)]
        clean = record["clean_scores"].get(cond, {})
        for key in sorted(clean):
            case, track = key.split("|")
            lines.append(f"| {case} | {track} | " + " | ".join(_fmt(clean[key].get(e)) for e in by_enc) + " |")
        lines += ["", f"Per metric (`{cond}`; normalised values):", "",
                  "| track | metric | " + " | ".join(f"{e} pair acc | {e} Spearman" for e in by_enc) + " | gap max |",
                  "|---|---|" + "---|---|" * len(by_enc) + "---|"]
        for t in tracks:
            metrics = sorted({m for e in by_enc.values() for m in e.get(t, {})} - {"score"})
            for metric in metrics:
                cells = []
                for e in by_enc:
                    m = by_enc[e].get(t, {}).get(metric, {})
                    cells += [_fmt(m.get("pair_accuracy")), _fmt(m.get("spearman"))]
                g = stats["encoding_gap"].get(cond, {}).get(t, {}).get(metric, {})
                lines.append(f"| {t} | {metric} | " + " | ".join(cells) + f" | {_fmt(g.get('max'))} |")
        lines.append("")
    png = _plot(out / "validity.png", record)
    if png is not None:
        lines += [f"![mean track score against defect strength]({png.name})", ""]
    md = out / "validity.md"
    md.write_text("\n".join(lines) + "\n")
    return js, md, png


def _plot(path: Path, record: dict[str, Any]) -> Path | None:
    """Mean track score against strength, per track and defect, one line style per encoding."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    recs = [r for r in record["records"] if r["metric"] == "score" and r["condition"] == "reference" and r["value"] is not None]
    tracks = sorted({r["track"] for r in recs})
    if not tracks:
        return None
    fig, axes = plt.subplots(1, len(tracks), figsize=(4.2 * len(tracks), 3.4), squeeze=False)
    styles = {"lossless": "-", "crf23": "--", "crf35_s0.75": ":"}
    for ax, t in zip(axes[0], tracks, strict=True):
        clean: dict[tuple[str, str], float] = {(r["case"], r["encoding"]): r["value"] for r in recs
                                               if r["track"] == t and r["defect"] == CLEAN}
        defects = sorted({r["defect"] for r in recs if r["track"] == t and r["defect"] != CLEAN})
        for i, d in enumerate(defects):
            for enc, ls in styles.items():
                pts: dict[float, list[float]] = defaultdict(list)
                for (case, e), v in clean.items():
                    if e == enc and any(r["case"] == case and r["defect"] == d for r in recs):
                        pts[0.0].append(v)
                for r in recs:
                    if r["track"] == t and r["defect"] == d and r["encoding"] == enc:
                        pts[float(r["strength"])].append(r["value"])
                xs = sorted(pts)
                if xs:
                    ax.plot(xs, [np.mean(pts[x]) for x in xs], ls, color=f"C{i}", marker="o", ms=3,
                            label=d if enc == "lossless" else None)
        ax.set_title(t)
        ax.set_xlabel("defect strength (0 = clean)")
        ax.set_ylim(-0.02, 1.02)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("mean track score")
    fig.suptitle("held-out cases: mean track score against defect strength (solid lossless, dashed crf 23, "
                 "dotted crf 35 + 0.75x resize)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def clean_scores(records: Sequence[dict[str, Any]]) -> dict[str, dict[str, dict[str, float | None]]]:
    out: dict[str, dict[str, dict[str, float | None]]] = defaultdict(lambda: defaultdict(dict))
    for r in records:
        if r["defect"] == CLEAN and r["metric"] == "score":
            out[r["condition"]][f"{r['case']}|{r['track']}"][r["encoding"]] = r["value"]
    return {c: dict(v) for c, v in out.items()}


# ============================================================================ --baselines


def run_baselines(out: Path, suites: dict[str, list[int]], models: Sequence[str], limit: int | None,
                  tracks: Sequence[str] | None = None) -> dict[str, Any]:
    """Score ``models`` on each suite and seed (resumable); per track and suite, does ``reference`` beat the others?
    ``tracks``: the tracks to score (default: all; one track's new version needs only its own rows)."""
    from worldolympiad.cli.evaluate import main as evaluate_model
    from worldolympiad.evaluator import make_run_spec
    from worldolympiad.types import TRACKS

    tracks = list(tracks or TRACKS)

    result: dict[str, Any] = {"suites": {}}
    for suite, seeds in suites.items():
        rows: dict[str, dict[tuple[str, str, int], float | None]] = {}
        means: dict[str, dict[str, float | None]] = {}
        why: dict[tuple[str, str, int], str] = {}
        for model in models:
            argv = ["--model", model, "--suite", suite, "--seeds", ",".join(map(str, seeds)), "--out", str(out / "runs"),
                    "--no-progress", "--no-report", "--no-baselines", "--device", "cpu", "--tracks", ",".join(tracks)]
            if limit:
                argv += ["--limit", str(limit)]
            t0 = time.perf_counter()
            print(f"$ evaluate-model {' '.join(argv)}", flush=True)
            _quiet(evaluate_model, argv)
            run_dir = out / "runs" / make_run_spec(model, suite, tracks, seeds).dirname
            if not (run_dir / "summary.json").exists():
                raise SystemExit(f"{model} on {suite}: no summary.json in {run_dir}")
            summary = json.loads((run_dir / "summary.json").read_text())
            means[model] = {t: v.get("mean") for t, v in summary["tracks"].items()}
            rows[model] = {}
            for line in (run_dir / "results.jsonl").read_text().splitlines():
                r = json.loads(line)
                if r["status"] != "not_applicable":
                    key = (r["track"], r["case_id"], int(r["seed"]))
                    rows[model][key] = r["score"] if r["status"] == "ok" else None
                    reason = cannot_tell(r)
                    if reason:
                        why[key] = reason
            print(f"  {model} on {suite}: {time.perf_counter() - t0:.0f} s", flush=True)
        result["suites"][suite] = {"seeds": seeds, "means": means, "tracks": baseline_verdicts(rows, models, why)}
    return result


def cannot_tell(row: dict[str, Any]) -> str | None:
    """Why a track cannot tell a still video from the reference on this row, from the row's own
    evidence (``None`` when it can): the long-video motion gate demands nothing when the reference
    itself does not move (a stable stack), so a still video is not penalised there."""
    for m in row.get("metrics") or []:
        d = m.get("details") or {}
        if m.get("name") == "dynamic_degree" and d.get("demand") == "reference_still":
            return f"the reference itself is still (dynamic degree {d.get('reference_dynamic_degree', 0):.3f}): {d.get('why', '')}"
    return None


def baseline_verdicts(rows: dict[str, dict[tuple[str, str, int], float | None]], models: Sequence[str],
                      why: dict[tuple[str, str, int], str] | None = None) -> dict[str, Any]:
    """Per track: the mean of each model over the (case, seed) rows all models have, and for each weak model
    whether ``models[0]`` is above it on that mean and on how many of the rows (ties fail). A failing row
    the track says it cannot decide (``why``, from :func:`cannot_tell`) is listed with that reason and
    counted in ``explained``."""
    why = why or {}
    top, weak = models[0], list(models[1:])
    out: dict[str, Any] = {}
    tracks = sorted({k[0] for m in rows.values() for k in m})
    for t in tracks:
        keys = sorted(k for k in rows[top] if k[0] == t and all(rows[m].get(k) is not None for m in models)
                      and rows[top][k] is not None)
        if not keys:
            out[t] = {"rows": 0}
            continue
        mean = {m: float(np.mean([rows[m][k] for k in keys])) for m in models}
        entry: dict[str, Any] = {"rows": len(keys), "mean": mean}
        for m in weak:
            wins = [k for k in keys if rows[top][k] > rows[m][k]]  # type: ignore[operator]
            lost = [k for k in keys if k not in wins]
            entry[m] = {"mean_ok": mean[top] > mean[m], "cases_ok": len(wins),
                        "explained": sum(k in why for k in lost),
                        "failing": [f"{k[1]}@s{k[2]}: {rows[top][k]:.3f} vs {rows[m][k]:.3f}"
                                    + (f" — cannot tell apart: {why[k]}" if k in why else "") for k in lost]}
        out[t] = entry
    return out


def write_baselines_report(out: Path, record: dict[str, Any]) -> Path:
    models = record["models"]
    lines = ["# Baseline order (issue 56, acceptance 3)", "",
             f"{_commit_line(record['git'])}; {record['date']}; {record['seconds']:.0f} s. Does `{models[0]}` score above "
             + " and ".join(f"`{m}`" for m in models[1:]) + " on every track: on the track mean, and per (case, seed)?", "",
             f"Command: `{record['command']}`", ""]
    for suite, s in record["result"]["suites"].items():
        lines += [f"## `{suite}`, seeds {s['seeds']}", "",
                  "| track | rows | " + " | ".join(f"mean {m}" for m in models) + " | "
                  + " | ".join(f"> {m}: mean / rows" for m in models[1:]) + " |",
                  "|---|---|" + "---|" * len(models) + "---|" * (len(models) - 1)]
        for t, e in s["tracks"].items():
            if not e.get("rows"):
                lines.append(f"| {t} | 0 | " + " | ".join("—" for _ in models) + " | " + " | ".join("—" for _ in models[1:]) + " |")
                continue
            cells = [f"{e['mean'][m]:.3f}" for m in models]
            verdicts = [f"{'yes' if e[m]['mean_ok'] else 'NO'} / {e[m]['cases_ok']} of {e['rows']}"
                        + (f" (+{e[m]['explained']} it cannot tell)" if e[m].get("explained") else "") for m in models[1:]]
            lines.append(f"| {t} | {e['rows']} | " + " | ".join(cells) + " | " + " | ".join(verdicts) + " |")
        fails = [(t, m, f) for t, e in s["tracks"].items() if e.get("rows") for m in models[1:] for f in e[m]["failing"]]
        if fails:
            lines += ["", "Rows where the order fails:", ""] + [f"* {t}, vs {m}: {f}" for t, m, f in fails[:60]]
        lines.append("")
    md = out / "baselines.md"
    md.write_text("\n".join(lines) + "\n")
    (out / "baselines.json").write_text(json.dumps(record, indent=1, default=str))
    return md


# ============================================================================ main


def _parse_suites(items: Sequence[str], out_dir: Path) -> dict[str, list[int]]:
    """``SUITE:SEEDS[:K]`` items -> ``{suite name or sampled suite file: seeds}``; ``K`` keeps the first K cases
    of each generator (a sampled suite written to ``OUT/sample_<suite>_k<K>.json``)."""
    out = {}
    for item in items:
        name, _, rest = item.partition(":")
        seeds, _, per_gen = rest.partition(":")
        suite = name
        if per_gen:
            from collections import Counter

            from worldolympiad.suites import load_suite, write_suite

            k, seen, cases = int(per_gen), Counter[str](), []
            for c in load_suite(name).cases:
                gen = str(c.metadata.get("generator", c.id))
                seen[gen] += 1
                if seen[gen] <= k:
                    cases.append(c)
            suite = str(write_suite(out_dir / f"sample_{name}_k{k}.json", f"{name}_k{k}", cases,
                                    description=f"the first {k} case(s) of each generator of {name}"))
        out[suite] = [int(s) for s in (seeds or "0").split(",")]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("Usage::")[1])
    ap.add_argument("--out", default="bench/_out/validity", help="working folder (renders, videos, runs); resumable")
    ap.add_argument("--quick", action="store_true", help="two tiny held-out cases, one defect per track (minutes)")
    ap.add_argument("--tracks", default="physics,geometry,interaction,longvideo",
                    help="tracks to measure (also in --baselines mode: a new version of one track needs only its rows)")
    ap.add_argument("--cases", default="", help="comma-separated held-out case ids (default: all of the split)")
    ap.add_argument("--tuning-suite", default=None, metavar="SUITE",
                    help="measure a TUNING-split suite instead (a folder of scenarios/suites or bench/suites, or its "
                         "name, e.g. physics_tune): the loop to tune a track on; its report is marked as such and is "
                         "never an acceptance figure")
    ap.add_argument("--conditions", default=",".join(CONDITIONS),
                    help="what the case files keep: `reference` (as rendered), `no_reference` (physics, interaction, "
                         "long video: no reference, no simulator truth), `no_rules` (physics: the reference kept, the "
                         "declared rules removed)")
    ap.add_argument("--record", default=None, help="also copy the report to bench/records/NAME.{json,md,png}")
    ap.add_argument("--baselines", action="store_true", help="the baseline-order mode instead (acceptance 3)")
    ap.add_argument("--baseline-suites", nargs="+", default=["smoke:0,1,2", "standard:0"], metavar="SUITE:SEEDS[:K]",
                    help="suites and seeds; a third field K samples the first K cases of each generator")
    ap.add_argument("--baseline-models", default=",".join(BASELINE_MODELS), help="the first must beat the others")
    ap.add_argument("--limit", type=int, default=None, help="--baselines: only the first N cases of each suite")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    git = git_state()  # at the start: the tracks imported below are the ones this commit (+ listed edits) holds
    command = "python bench/validity.py " + " ".join(sys.argv[1:] if argv is None else argv)
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    if args.baselines:
        models = [m.strip() for m in args.baseline_models.split(",") if m.strip()]
        tracks = [t.strip() for t in args.tracks.split(",") if t.strip()]
        result = run_baselines(out, _parse_suites(args.baseline_suites, out), models, args.limit, tracks)
        record = {"mode": "baselines", "git": git, "date": date, "command": command, "models": models,
                  "seconds": time.perf_counter() - t0, "result": result}
        md = write_baselines_report(out, record)
        print(md.read_text())
        if args.record:
            for f in (md, out / "baselines.json"):
                shutil.copyfile(f, ROOT / "bench" / "records" / f"{args.record}{f.suffix}")
        return 0
    from scenarios.heldout.splits import SPLITS

    register_heldout()
    tracks = [t.strip() for t in args.tracks.split(",") if t.strip()]
    versions = _track_versions(tracks)
    defects = QUICK_DEFECTS if args.quick else DEFECTS
    suite_dir = tuning_suite_dir(args.tuning_suite) if args.tuning_suite else None
    cases = heldout_cases(args.quick, [c for c in args.cases.split(",") if c], suite_dir)
    variants = prepare(out, cases, tracks, defects)
    conditions = [c.strip() for c in args.conditions.split(",") if c.strip()]
    unknown = sorted(set(conditions) - set(CONDITIONS))
    if unknown:
        raise SystemExit(f"--conditions: unknown {', '.join(unknown)}; known: {', '.join(CONDITIONS)}")
    suites = write_suites(out, variants, tracks, conditions)
    dirs = encode_all(out, variants)
    print(f"{len(cases)} {'TUNING-split' if suite_dir is not None else 'held-out'} cases, {len(variants)} videos x {len(dirs)} encodings; scoring", flush=True)
    records = score(out, suites, dirs, variants)
    stats = statistics(records)
    record = {
        "mode": ("tuning split: " + str(suite_dir.relative_to(ROOT))) if suite_dir is not None
        else "quick" if args.quick else "full", "git": git, "date": date, "command": command,
        "seconds": time.perf_counter() - t0, "track_versions": versions,
        "splits": {k: [str(p.relative_to(ROOT)) for p in v] for k, v in SPLITS.items()},
        "cases": [{"id": c.id, "generator": c.metadata.get("generator"), "params": c.metadata.get("params"),
                   "tracks": [t for t in c.tracks if t in tracks]} for c in cases],
        "defects": {t: [[d, list(s)] for d, s in defects[t]] for t in tracks},
        "encodings": {k: v for k, v in ENCODINGS.items()}, "statistics": stats,
        "clean_scores": clean_scores(records), "runs": RUNS, "skipped": SKIPPED,
        "noop": sorted(v["id"] for v in variants if v.get("noop")),
        "alike": sorted(v["id"] for v in variants if v.get("alike") not in (None, v.get("video"))), "records": records,
    }
    js, md, png = write_report(out, record)
    print(md.read_text())
    if args.record:
        for f in (js, md, png):  # type: ignore[assignment]
            if f is not None:
                dst = ROOT / "bench" / "records" / f"{args.record}{f.suffix}"
                if f.suffix == ".md":  # the image link names the recorded PNG
                    dst.write_text(f.read_text().replace("(validity.png)", f"({args.record}.png)"))
                else:
                    shutil.copyfile(f, dst)
        print(f"recorded bench/records/{args.record}.*")
    return 0


if __name__ == "__main__":
    sys.exit(main())
