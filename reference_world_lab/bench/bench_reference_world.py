"""Reference world model vs its baselines: action following on `gaming`, and 60 s streaming on CPU.

1. **Direction accuracy** (the interaction track's ``analyze_following``, with the reference video
   as the track uses it) on the rendered `gaming` suite, for ``inferix:reference-world``,
   ``inferix:reference-world-random``, ``repeat-first-frame`` and ``reference``; chunk-weighted
   and per game; plus two ceilings: the reference squeezed through the model's generation size
   (``reference@Npx``) and, in addition, through its codec (``reference@codec``: what a perfect
   DiT would score — for a learned codec this is the first number to check).
   Every chunk a model gets wrong is also given its reason: ``lost`` (the tracker finds the
   agent sprite in under half the chunk's frames: the model dissolved or recoloured it),
   ``still`` (found, but it did not move although the action moves it), ``moved`` (it moved
   under a still action) or ``wrong_way``; and ``persistence`` is the share of frames in which
   the agent is found at all, in the generated video and in the reference. A model whose
   failures are all ``lost`` needs to keep its sprites before it can show that it follows the
   actions. Camera-driven cases (the maze) have no ``lost``.
   **Chance** is printed beside them: a uniformly random action of the case's vocabulary per
   chunk, shown exactly (``tracks.interaction.following.chance_following``), with each model's
   one-sided binomial p-value of being above it (issue 9: the baselines must be at chance or below).
   Without ``--limit`` every case of the suite is scored (the acceptance number); ``--limit 24``
   takes 6 cases per game, round-robin, the per-game-balanced sample used for quick comparisons.
2. **One block from a clean frame** (``--one-block``): per game, one block generated from a single
   reference frame with its chunk's action and caption (the engine's pipeline and sampler), scored
   on the latent cells that change in the reference: the model's squared error over that of
   repeating the frame (1 = no better than copying it, 0 = exact), and its error on the cells
   that do not change. This separates "does not learn the move" from "compounds its own errors
   over a rollout", which direction accuracy mixes. The pipeline has no action guidance, so this
   is the unguided model whatever its bundle says.
3. **60 s generation** with ``reference-world`` through the engine (rolling KV window, the
   model's own sampler and action guidance, as ``inferix generate`` serves it): FPS (decode
   included), KV bytes per block (flat = bounded memory), and peak RSS of a 60 s vs a 5 s
   ``inferix generate`` run, each in a fresh process.

Usage::

    python reference_world_lab/bench/bench_reference_world.py [--suite-dir /tmp/rw/gaming] [--limit N] [--games G,G] [--model-dir DIR]
        [--option KEY=VALUE] [--skip-fps] [--one-block] [--json out.json [--resume]] [--strips DIR] [--compare OLD.json]
    python reference_world_lab/bench/bench_reference_world.py --paired OLD.json NEW.json

``--json`` is rewritten after every scored case (``"partial": true`` until the run ends), with each
case's chunk verdicts, actions, failure reasons and agent persistence (``direction.<spec>.rows``);
``--resume`` reads it back and scores only the cases it lacks, so a run that was stopped or died
goes on where it was (the file must name the same models and ``--option`` values).

``--compare`` reads an earlier run's ``--json`` and prints, game by game, the chunks the trained
model now gets right that it got wrong then and the reverse, on the cases both runs scored, with
the exact two-sided McNemar p-value of those discordant chunks (a paired test: the same cases,
the same actions; e.g. a fine-tuned checkpoint's ``--model-dir`` run against the shipped weights').
``--paired OLD.json NEW.json`` prints the same for two finished (or stopped) runs and loads no model.

``--option KEY=VALUE`` gives the trained model a bridge option (``evaluate-model --option
model.KEY=VALUE``), e.g. ``dtype=bfloat16`` or ``action_guidance=1``; the JSON records them.

``--suite-dir`` is a folder written by ``worldolympiad scenarios render gaming DIR`` (rendered
there when missing). ``--model-dir`` evaluates an exported bundle (``inferix:DIR``) instead of
the shipped weights (e.g. a checkpoint exported with ``reference_world_lab.recipe.export_checkpoint``).
Prints ratios/numbers; never fails on a timing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from worldolympiad.models.base import WorldModel


def _cases(suite_dir: Path, limit: int | None, games: list[str] | None = None) -> list[Any]:
    from worldolympiad.types import Case

    if not (suite_dir / "suite.json").is_file():
        subprocess.run([sys.executable, "-m", "worldolympiad", "scenarios", "render", "gaming", str(suite_dir)],
                       check=True)
    rels = json.loads((suite_dir / "suite.json").read_text())["cases"]
    cases = [Case.load(suite_dir / r) for r in rels]
    if games:
        unknown = sorted(set(games) - {_game(c) for c in cases})
        if unknown:
            raise SystemExit(f"--games: no case of {unknown} in {suite_dir} (games: {sorted({_game(c) for c in cases})})")
        cases = [c for c in cases if _game(c) in games]
    if limit:
        # round-robin over games so a limited run still covers every game
        by_game: dict[str, list[Any]] = defaultdict(list)
        for c in cases:
            by_game[_game(c)].append(c)
        cases = []
        while len(cases) < limit and any(by_game.values()):
            for g in sorted(by_game):
                if by_game[g] and len(cases) < limit:
                    cases.append(by_game[g].pop(0))
    return cases


def _game(case: Any) -> str:
    return str(case.metadata.get("game") or case.metadata.get("generator", "?")).split(".")[-1]


class _DownsampledReference(WorldModel):
    """The reference seen through a ``side``-pixel bottleneck (down with the area filter, back up
    bilinearly): the best a model generating at that size can score once the bridge resizes it."""

    def __init__(self, side: int) -> None:
        self.side = side
        self.name = f"reference@{side}px"

    def generate(self, case: Any, seed: int = 0) -> Any:
        import cv2

        from worldolympiad.types import Video
        from worldolympiad.video.io import read_video

        ref = read_video(case.resolve(case.reference)).frames
        hh, ww = ref.shape[1:3]
        k = self.side / max(hh, ww)
        h, w = max(1, round(hh * k)), max(1, round(ww * k))
        low = np.stack([cv2.resize(cv2.resize(f, (w, h), interpolation=cv2.INTER_AREA), (ww, hh),
                                   interpolation=cv2.INTER_LINEAR) for f in ref])
        return Video(frames=low, fps=case.fps, chunks=case.chunks)


class _CodecReference(_DownsampledReference):
    """The reference resized to the model's grid, passed through its codec (encode -> decode) and
    resized back: what the model would score with a perfect DiT (the codec's own ceiling)."""

    def __init__(self, model: str) -> None:
        from inferix.registry import load_model

        self.lm = load_model(model)
        self.name = "reference@codec"

    def generate(self, case: Any, seed: int = 0) -> Any:
        import cv2
        import torch

        from worldolympiad.types import Video
        from worldolympiad.video.io import read_video

        ref = read_video(case.resolve(case.reference)).frames
        hh, ww = ref.shape[1:3]
        h, w = self.lm.pixel_hw(self.lm.latent_hw_for((hh, ww)))
        low = np.stack([cv2.resize(f, (w, h), interpolation=cv2.INTER_AREA) for f in ref])
        x = torch.from_numpy(low).permute(3, 0, 1, 2)[None].float() / 127.5 - 1.0
        rec = ((self.lm.codec.decode(self.lm.codec.encode(x))[0].permute(1, 2, 3, 0) + 1) * 127.5).round()
        rec = rec.clamp(0, 255).to(torch.uint8).numpy()
        up = np.stack([cv2.resize(f, (ww, hh), interpolation=cv2.INTER_LINEAR) for f in rec])
        return Video(frames=up, fps=case.fps, chunks=case.chunks)


def _model(spec: str, **options: Any) -> Any:
    from worldolympiad.models.base import build_model
    from worldolympiad.registry import UnknownNameError

    if spec.startswith("reference@codec:"):  # reference@codec:MODEL = through MODEL's grid and codec
        return _CodecReference(spec[len("reference@codec:"):])
    if spec.startswith("reference@") and spec.endswith("px"):
        return _DownsampledReference(int(spec[len("reference@"):-2]))
    try:
        return build_model(spec, **options)
    except UnknownNameError:
        if spec == "repeat-first-frame":  # until the registry entry lands
            from worldolympiad.models.baselines import RepeatFirstFrameModel

            m = RepeatFirstFrameModel()
            m.name = spec
            return m
        raise


def save_strip(path: Path, frames: np.ndarray, reference: np.ndarray, n: int = 12) -> None:
    """``n`` evenly spaced frames of the generated video over the same frames of the reference, one PNG."""
    from PIL import Image

    idx = np.linspace(0, min(len(frames), len(reference)) - 1, n).round().astype(int)
    rows = [np.concatenate([v[i] for i in idx], 1) for v in (frames, reference)]
    sep = np.full((2, rows[0].shape[1], 3), 255, np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.concatenate([rows[0], sep, rows[1]], 0)).save(path)


FAILURE_REASONS = ("lost", "still", "moved", "wrong_way")
# under this share of a chunk's frames with the agent found, the chunk failed because the sprite was lost
MIN_FOUND = 0.5


def failure_reason(chunk: Any, found: float | None, floor: float) -> str | None:
    """Why a chunk of ``analyze_following`` failed: ``None`` when it did not (``direction_ok``),
    else one of :data:`FAILURE_REASONS`. ``found``: the share of the chunk's frames in which the
    agent sprite was found (``None`` for camera targets: nothing to lose); ``floor``: the speed
    below which the track calls the motion still (``TRANSLATE_FLOOR``)."""
    if chunk.direction_ok:
        return None
    if found is not None and found < MIN_FOUND:
        return "lost"
    v = np.asarray(chunk.mean_motion, dtype=float)
    if not np.isfinite(v).all():
        return "lost"
    speed = float(np.linalg.norm(v))
    should_move = chunk.mode != "none" and chunk.expectation != "reference"
    if chunk.expectation == "reference":  # judged against the reference's own (e.g. wall-stopped) motion
        return "moved" if speed > floor else "still"
    if should_move:
        return "still" if speed <= floor else "wrong_way"
    return "moved"


def found_shares(frames: np.ndarray, case: Any) -> list[float | None]:
    """Per chunk of ``case``: the share of its frames in which the tracker finds the agent sprite
    (the interaction track's colour tracker); ``None`` for every chunk when the case has no agent
    appearance (camera-driven cases)."""
    from tracks.interaction.actions import agent_appearance
    from tracks.interaction.motion import agent_motion

    app = agent_appearance(case)
    if not app:
        return [None] * len(case.chunks)
    areas = agent_motion(frames, app).areas
    out: list[float | None] = []
    for ch in case.chunks:
        seg = areas[ch.frame_start : min(ch.frame_end, len(areas))]
        out.append(float(np.mean(seg > 0)) if len(seg) else None)
    return out


def case_row(case: Any, rep: Any, found: dict[int, float | None], ref_found: list[float | None]) -> dict[str, Any]:
    """One scored case of one model, as ``--json`` keeps it (``direction.<spec>.rows``) so that a
    stopped run resumes without scoring it again: per chunk the verdict, the action and the failure
    reason; the share of frames with the agent found, in the generated video and in the reference
    (``None`` for camera-driven cases)."""
    from tracks.interaction.following import TRANSLATE_FLOOR

    shares = [f for f in found.values() if f is not None]
    refs = [f for f in ref_found if f is not None]
    return {
        "game": _game(case),
        "ok": [bool(ch.direction_ok) for ch in rep.chunks],
        "actions": [str(ch.action) for ch in rep.chunks],
        "why": [failure_reason(ch, found.get(ch.index), TRANSLATE_FLOOR) for ch in rep.chunks],
        "found": float(np.mean(shares)) if shares else None,
        "ref_found": (float(np.mean(refs)) if refs else float("nan")) if shares else None,
    }


def summarize(rows: dict[str, dict[str, Any]], seconds: float, errors: list[str]) -> dict[str, Any]:
    """One model's direction results from its per-case ``rows`` (:func:`case_row`, in case order):
    chunk-weighted accuracy in all, per game and per action, chunk by chunk per case, failure reasons
    and agent persistence. The rows are kept in the result, so a run can resume from it."""
    ok: list[bool] = []
    per_game: dict[str, list[bool]] = defaultdict(list)
    per_action: dict[str, list[bool]] = defaultdict(list)
    why: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(FAILURE_REASONS, 0))
    seen: dict[str, list[float]] = defaultdict(list)  # per case: share of frames with the agent found
    seen_ref: dict[str, list[float]] = defaultdict(list)
    for row in rows.values():
        game = row["game"]
        for good, action, reason in zip(row["ok"], row["actions"], row["why"], strict=True):
            ok.append(good)
            per_game[game].append(good)
            per_action[f"{game}:{action}"].append(good)
            if reason is not None:
                why[game][reason] += 1
        if row["found"] is not None:
            seen[game].append(row["found"])
            seen_ref[game].append(row["ref_found"])
    return {
        "direction_accuracy": float(np.mean(ok)) if ok else None,
        "chunks": len(ok),
        "per_game": {g: round(float(np.mean(v)), 3) for g, v in sorted(per_game.items())},
        "per_action": {a: round(float(np.mean(v)), 3) for a, v in sorted(per_action.items())},
        "per_case": {cid: row["ok"] for cid, row in rows.items()},
        "why": {g: dict(r) for g, r in sorted(why.items())},
        "per_case_why": {cid: row["why"] for cid, row in rows.items()},
        "persistence": {g: {"generated": round(float(np.mean(v)), 3), "reference": round(float(np.mean(seen_ref[g])), 3)}
                        for g, v in sorted(seen.items())},
        "seconds": round(seconds, 1),
        "errors": errors,
        "rows": rows,
    }


def _in_order(cases: list[Any], new: dict[str, Any], earlier: dict[str, Any]) -> dict[str, Any]:
    """The rows of ``cases`` scored now or reused from an earlier run, in case order."""
    return {c.id: new[c.id] if c.id in new else earlier[c.id] for c in cases if c.id in new or c.id in earlier}


def direction_accuracy(specs: list[str], cases: list[Any], strips: Path | None = None,
                       options: dict[str, dict[str, str]] | None = None,
                       done: dict[str, dict[str, dict[str, Any]]] | None = None,
                       on_case: Callable[[str, dict[str, Any]], None] | None = None,
                       refs: dict[str, np.ndarray] | None = None) -> dict[str, Any]:
    """Per model spec: direction accuracy over ``cases`` (:func:`summarize`); ``options`` gives a
    spec its model options (``--option`` for the trained model). ``done``: per spec, rows of cases
    an earlier run already scored (``--resume``); they are not generated again. ``on_case(spec,
    summary)`` is called after every newly scored case with the spec's results so far, so a caller
    can save them before the next case (a stopped run loses at most the case in progress).
    ``refs``: the cases' reference frames by case id (:func:`reference_frames`), read here if not given."""
    from tracks.interaction.following import analyze_following

    out: dict[str, Any] = {}
    refs = refs if refs is not None else reference_frames(cases)
    ref_found_by_case = {c.id: found_shares(refs[c.id], c) for c in cases}
    for spec in specs:
        earlier = (done or {}).get(spec, {})
        todo = [c for c in cases if c.id not in earlier]
        if len(todo) < len(cases):
            print(f"  [{spec}] {len(cases) - len(todo)} of {len(cases)} cases reused from the earlier run",
                  file=sys.stderr, flush=True)
        rows: dict[str, dict[str, Any]] = {}
        errors: list[str] = []
        t0 = time.perf_counter()

        model = _model(spec, **(options or {}).get(spec, {})) if todo else None
        try:
            for i, case in enumerate(todo, 1):
                try:
                    video = model.generate(case, seed=0)
                except Exception as e:  # noqa: BLE001 - recorded, the bench goes on
                    errors.append(f"{case.id}: {type(e).__name__}: {e}")
                    print(f"  [{spec} {i}/{len(todo)}] {case.id}: failed ({type(e).__name__})", file=sys.stderr, flush=True)
                    continue
                ref = refs[case.id]
                frames = video.frames[: len(ref)]
                rep = analyze_following(frames, case, case.chunks, reference=ref if ref.shape == frames.shape else None)
                if strips is not None:
                    save_strip(strips / spec.replace(":", "_").replace("/", "_") / f"{case.id}.png", frames, ref)
                found = dict(zip([c.index for c in case.chunks], found_shares(frames, case), strict=True))
                rows[case.id] = case_row(case, rep, found, ref_found_by_case[case.id])
                print(f"  [{spec} {i}/{len(todo)}] {case.id}: {sum(rows[case.id]['ok'])}/{len(rep.chunks)} chunks followed "
                      f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
                if on_case is not None:
                    on_case(spec, summarize(_in_order(cases, rows, earlier), time.perf_counter() - t0, errors))
        finally:
            if model is not None:
                model.close()
        out[spec] = summarize(_in_order(cases, rows, earlier), time.perf_counter() - t0, errors)
        print(f"{spec:34s} direction accuracy {out[spec]['direction_accuracy']}  ({out[spec]['chunks']} chunks, "
              f"{out[spec]['seconds']} s)  per game {out[spec]['per_game']}", flush=True)
        for g in sorted(set(out[spec]["why"]) | set(out[spec]["persistence"])):
            failed = ", ".join(f"{r} {n}" for r, n in out[spec]["why"].get(g, {}).items() if n) or "none"
            pers = out[spec]["persistence"].get(g)
            agent = (f"; agent found in {pers['generated']:.0%} of frames (reference {pers['reference']:.0%})"
                     if pers else "")
            print(f"    {g:10s} failed chunks: {failed}{agent}", flush=True)
    return out


def reference_frames(cases: list[Any]) -> dict[str, np.ndarray]:
    """Each case's reference video frames, by case id."""
    from worldolympiad.video.io import read_video

    return {c.id: read_video(c.resolve(c.reference)).frames for c in cases}


def chance_level(cases: list[Any], refs: dict[str, np.ndarray]) -> dict[str, Any]:
    """Chunk-weighted direction accuracy of chance over ``cases``, in all and per game: a uniformly
    random action of each case's vocabulary per chunk, shown exactly and judged as the track judges
    (against the reference, ``refs[case.id]``, where the reference does not show the commanded move;
    :func:`tracks.interaction.following.chance_following`)."""
    from tracks.interaction.following import chance_following

    per_game: dict[str, list[float]] = defaultdict(list)
    for c in cases:
        per_game[_game(c)] += chance_following(c, c.chunks, reference=refs[c.id])
    every = [p for v in per_game.values() for p in v]
    return {"direction_accuracy": float(np.mean(every)) if every else None, "chunks": len(every),
            "per_game": {g: round(float(np.mean(v)), 3) for g, v in sorted(per_game.items())},
            "per_chunk": {g: [round(p, 4) for p in v] for g, v in sorted(per_game.items())}}


def _binomial_above(k: int, n: int, p0: float) -> float:
    from scipy.stats import binomtest

    return float(binomtest(k, n, min(max(p0, 1e-9), 1 - 1e-9), alternative="greater").pvalue) if n else 1.0


def against_chance(summary: dict[str, Any], chance: dict[str, Any]) -> dict[str, Any]:
    """A model's chunks right against chance's: the one-sided exact binomial p-value that the model
    is above chance (success probability = chance's mean over the same chunks), in all and, when
    the summary keeps its per-case ``rows``, per game."""
    n = int(summary["chunks"])
    k = round(float(summary["direction_accuracy"] or 0.0) * n)
    p0 = float(chance["direction_accuracy"])
    out: dict[str, Any] = {"right": k, "chunks": n, "chance": round(p0, 4),
                           "p_above": float(f"{_binomial_above(k, n, p0):.3g}")}
    right: dict[str, list[bool]] = defaultdict(list)
    for row in summary.get("rows", {}).values():
        right[row["game"]] += [bool(x) for x in row["ok"]]
    games = {}
    for g, oks in sorted(right.items()):
        chunk_chance = chance.get("per_chunk", {}).get(g)
        if chunk_chance and len(chunk_chance) == len(oks):
            pg = float(np.mean(chunk_chance))
            games[g] = {"right": sum(oks), "chunks": len(oks), "chance": round(pg, 4),
                        "p_above": float(f"{_binomial_above(sum(oks), len(oks), pg):.3g}")}
    if games:
        out["per_game"] = games
    return out


def paired_change(old: dict[str, list[bool]], new: dict[str, list[bool]],
                  game_of: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Chunk-by-chunk change between two runs' ``per_case`` direction results, per game and in all.

    Only cases both runs scored count, chunk ``i`` against chunk ``i``. ``gained`` = chunks right
    now and wrong before, ``lost`` = the reverse; ``p`` is the exact two-sided McNemar test of those
    discordant pairs (binomial, one half), 1.0 when there are none. ``game_of`` maps a case id to
    its game (a case it does not name is its own row).
    """
    from scipy.stats import binomtest

    rows: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    for cid in sorted(set(old) & set(new)):
        game = game_of.get(cid, cid)
        if len(old[cid]) != len(new[cid]):
            raise ValueError(f"case {cid}: {len(old[cid])} chunks then, {len(new[cid])} now - not the same render")
        for a, b in zip(old[cid], new[cid], strict=True):
            rows[game].append((bool(a), bool(b)))
            rows["all"].append((bool(a), bool(b)))
    out = {}
    for game, pairs in sorted(rows.items(), key=lambda kv: (kv[0] == "all", kv[0])):
        gained = sum(b and not a for a, b in pairs)
        lost = sum(a and not b for a, b in pairs)
        p = binomtest(gained, gained + lost, 0.5).pvalue if gained + lost else 1.0
        out[game] = {"chunks": len(pairs), "old": round(sum(a for a, _ in pairs) / len(pairs), 3),
                     "new": round(sum(b for _, b in pairs) / len(pairs), 3), "gained": gained, "lost": lost,
                     "p": round(float(p), 4)}
    return out


def print_paired(change: dict[str, dict[str, Any]], against: str) -> None:
    """Print :func:`paired_change`'s table."""
    print(f"paired against {against} (chunks right then -> now; gained / lost; exact McNemar p):")
    for game, r in change.items():
        print(f"  {game:10s} {r['old']:.3f} -> {r['new']:.3f}  +{r['gained']} / -{r['lost']} of {r['chunks']}  p = {r['p']}")


def paired_files(old: dict[str, Any], new: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """:func:`paired_change` of the trained models of two ``--json`` files (partial ones too: only the
    cases both scored count), each case's game read from the rows. Loads no model."""
    game_of = {cid: row["game"] for run in (old, new) for res in run.get("direction", {}).values()
               for cid, row in res.get("rows", {}).items()}
    return paired_change(_trained_per_case(old), _trained_per_case(new), game_of)


def _trained_per_case(results: dict[str, Any]) -> dict[str, list[bool]]:
    """The trained model's ``per_case`` in a ``--json`` file (its ``roles``; for files written
    before roles existed, the one ``inferix:`` spec that is not a random twin)."""
    direction = results.get("direction", {})
    spec = results.get("roles", {}).get("trained")
    if spec is None:
        found = [s for s in direction if s.startswith("inferix:") and not s.endswith("-random")]
        if len(found) != 1:
            raise SystemExit(f"--compare: cannot tell which model was the trained one among {sorted(direction)}")
        spec = found[0]
    if spec not in direction or "per_case" not in direction[spec]:
        raise SystemExit(f"--compare: no per-case results of the trained model {spec!r} (was it run with --models trained?)")
    return direction[spec]["per_case"]


def one_block(model_dir: str | None, cases: list[Any], change: float = 0.05) -> dict[str, Any]:
    """Per game: one block from each chunk's first reference frame (see the module docstring).

    ``change``: a latent cell (mean |difference| over channels) counts as changed above this.
    """
    import torch

    from inferix.pipeline import generate_blocks
    from inferix.registry import load_model
    from inferix.schedulers import FlowMatchSampler
    from worldolympiad.video.io import read_video

    lm = load_model(model_dir or "reference-world")
    bf = lm.block_frames
    if lm.pixel_frames(1) != bf:
        return {"status": "not_applicable", "reason": "the codec is not one latent per frame"}
    sampler = FlowMatchSampler(lm.sampling.timesteps)
    sums: dict[str, np.ndarray] = defaultdict(lambda: np.zeros(4))  # model, copy on changed; model static, cells
    t0 = time.perf_counter()
    for case in cases:
        ref = read_video(case.resolve(case.reference)).frames
        hw = lm.latent_hw_for(tuple(ref.shape[1:3]))
        for chunk in case.chunks:
            s = chunk.frame_start
            if s + 1 + bf > min(chunk.frame_end, len(ref)):
                continue
            ctx = lm.encode_image(ref[s], hw)  # [1, C, 1, h, w]
            target = torch.cat([lm.encode_image(ref[s + 1 + k], hw) for k in range(bf)], 2)
            action = lm.action_encoder(chunk.action) if lm.action_encoder is not None else None
            res = generate_blocks(lm.model, None, lm.text_encoder(chunk.caption or case.prompt), 1, bf, sampler,
                                  latent_hw=hw, action=[action], first_latents=ctx,
                                  generator=torch.Generator().manual_seed(0))
            gen = res.latents[:, :, 1:].float()
            moved = (target - ctx).abs().mean(1) > change  # [1, bf, h, w]
            err = ((gen - target) ** 2).mean(1)
            copy = ((ctx - target) ** 2).mean(1)
            acc = sums[_game(case)]
            acc += [float(err[moved].sum()), float(copy[moved].sum()), float(err[~moved].sum()), float((~moved).sum())]

    def ratios(a: np.ndarray) -> dict[str, float | None]:
        return {"change_error_vs_copy": round(float(a[0] / a[1]), 3) if a[1] else None,
                "static_mse": round(float(a[2] / a[3]), 5) if a[3] else None}

    per_game = {g: ratios(a) for g, a in sorted(sums.items())}
    total = np.sum(list(sums.values()), axis=0) if sums else np.zeros(4)
    out: dict[str, Any] = {**ratios(total), "per_game": per_game, "seconds": round(time.perf_counter() - t0, 1)}
    print(f"one block from a clean frame ({model_dir or 'reference-world'}): changed-cell error / copy error "
          f"{out['change_error_vs_copy']}, static-cell MSE {out['static_mse']}  per game {per_game}", flush=True)
    return out


def _peak_rss(model: str, seconds: float, side: int) -> int:
    code = ("import resource,sys; from inferix.cli import main; rc = main(sys.argv[1:]); "
            "print('PEAK', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)")
    with tempfile.TemporaryDirectory() as d:
        cmd = [sys.executable, "-c", code, "generate", "--model", model, "--seconds", str(seconds), "--out",
               f"{d}/v.mp4", "--height", str(side), "--width", str(side), "--prompt", "the camera walks forward"]
        r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return int(next(line.split()[1] for line in r.stdout.splitlines() if line.startswith("PEAK")))


def streaming(model: str = "reference-world", seconds: float = 60.0, side: int = 64) -> dict[str, Any]:
    from inferix.engine import Engine
    from inferix.profiling import profile_session
    from inferix.registry import load_model

    lm = load_model(model)
    latent_hw = lm.latent_hw_for((side, side))
    blocks = lm.blocks_for_seconds(seconds)
    cfg = lm.engine_config(latent_hw, max_sessions=1, max_batch=1, max_frames=blocks * lm.block_frames + 8, device="cpu")
    engine = Engine(lm.model, lm.codec, lm.text_encoder, cfg, lm.action_encoder)
    prof = profile_session(engine, "the camera walks forward", blocks, action="forward", model_name=model)
    kv = [b.kv_bytes for b in prof.blocks]
    frames = sum(b.frames for b in prof.blocks)
    res = {"model": model, "pixels": list(lm.pixel_hw(latent_hw)), "seconds_of_video": frames / lm.fps,
           "frames": frames, "steps": lm.sampling.num_steps, "action_guidance": lm.sampling.action_guidance, "fps": round(prof.fps, 1),
           "realtime_factor": round(prof.fps / lm.fps, 2), "time_to_first_frame_s": prof.time_to_first_frame_s,
           "kv_bytes_block10": kv[min(10, len(kv) - 1)], "kv_bytes_last": kv[-1],
           "kv_flat": kv[-1] == kv[min(10, len(kv) - 1)]}
    short, long_ = _peak_rss(model, 5.0, side), _peak_rss(model, seconds, side)
    res.update({"peak_rss_5s": short, f"peak_rss_{seconds:g}s": long_, "peak_rss_ratio": round(long_ / short, 3)})
    print(f"60 s stream: {res['fps']} FPS ({res['realtime_factor']}x real time at {lm.fps:g} fps, "
          f"{res['steps']} steps, action guidance {res['action_guidance']:g}, {side}px), KV bytes block 10 {res['kv_bytes_block10']} vs last "
          f"{res['kv_bytes_last']}, peak RSS 60 s / 5 s = {res['peak_rss_ratio']}", flush=True)
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite-dir", default="/tmp/rw/gaming", help="rendered gaming suite (rendered if missing)")
    ap.add_argument("--limit", type=int, default=None, help="cases (round-robin over games)")
    ap.add_argument("--games", default=None, help="comma list: only these games' cases (e.g. freeway,pong)")
    ap.add_argument("--model-dir", default=None, help="exported bundle to evaluate instead of the shipped weights")
    ap.add_argument("--models", default="trained,random,repeat-first-frame,reference,ceiling,codec_ceiling",
                    help="comma list; 'ceiling' = the reference squeezed through the model's generation size; "
                         "'codec_ceiling' = also through its codec (encode -> decode): the score of a perfect DiT")
    ap.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                    help="model option of the trained model, as evaluate-model's model.KEY=VALUE "
                         "(repeatable; e.g. dtype=bfloat16, action_guidance=1)")
    ap.add_argument("--skip-fps", action="store_true")
    ap.add_argument("--one-block", action="store_true",
                    help="also score one block from a clean reference frame per chunk (change error vs copying)")
    ap.add_argument("--json", default=None,
                    help="write the results here; rewritten after every case (\"partial\": true until the run ends)")
    ap.add_argument("--resume", action="store_true",
                    help="reuse the cases an earlier run with the same --json, models' options and suite already "
                         "scored (a stopped run goes on where it was)")
    ap.add_argument("--strips", default=None,
                    help="folder for one PNG per model and case: 12 generated frames over the reference's")
    ap.add_argument("--compare", default=None, metavar="OLD.json",
                    help="an earlier --json run: print the trained model's paired chunk changes against it")
    ap.add_argument("--paired", nargs=2, default=None, metavar=("OLD.json", "NEW.json"),
                    help="only print the paired chunk changes of NEW's trained model against OLD's (two earlier "
                         "--json runs, partial ones too) and exit; generates nothing")
    args = ap.parse_args(argv)
    if args.paired:
        old_run, new_run = (json.loads(Path(p).read_text()) for p in args.paired)
        print_paired(paired_files(old_run, new_run), args.paired[0])
        return 0
    if args.compare and "trained" not in args.models.split(","):
        ap.error("--compare compares the trained model: keep 'trained' in --models")
    # read before the run, so a wrong file fails now and not after the benchmark
    old_per_case = _trained_per_case(json.loads(Path(args.compare).read_text())) if args.compare else None

    trained = f"inferix:{args.model_dir}" if args.model_dir else "inferix:reference-world"
    from inferix.registry import load_model

    side = getattr(load_model(args.model_dir or "reference-world"), "max_side", None) or 0
    names = {"trained": trained, "random": "inferix:reference-world-random", "ceiling": f"reference@{side}px",
             "codec_ceiling": f"reference@codec:{args.model_dir or 'reference-world'}"}
    specs = [names.get(s, s) for s in args.models.split(",") if s]
    cases = _cases(Path(args.suite_dir), args.limit, args.games.split(",") if args.games else None)
    print(f"gaming: {len(cases)} cases ({', '.join(sorted({_game(c) for c in cases}))})", flush=True)
    bad = [o for o in args.option if "=" not in o]
    if bad:
        ap.error(f"--option takes KEY=VALUE, got {bad}")
    options = dict(o.split("=", 1) for o in args.option)
    results: dict[str, Any] = {"cases": len(cases), "roles": {"trained": trained}, "options": options,
                               "partial": True, "direction": {}}
    out = Path(args.json) if args.json else None
    done = resumable_rows(out, results, cases) if args.resume else None

    def save(spec: str, summary: dict[str, Any]) -> None:
        results["direction"][spec] = summary
        if out is not None:
            _write_json(out, results)

    refs = reference_frames(cases)
    results["direction"] = direction_accuracy(specs, cases, Path(args.strips) if args.strips else None,
                                              {trained: options}, done=done, on_case=save, refs=refs)
    chance = results["chance"] = chance_level(cases, refs)
    print(f"{'chance':34s} direction accuracy {chance['direction_accuracy']:.3f}  ({chance['chunks']} chunks; "
          f"a uniformly random vocabulary action per chunk)  per game {chance['per_game']}", flush=True)
    for spec, summary in results["direction"].items():
        if summary.get("chunks"):
            r = summary["against_chance"] = against_chance(summary, chance)
            verdict = "above chance" if r["p_above"] < 0.05 else "at chance or below"
            print(f"  {spec:32s} {r['right']} of {r['chunks']} chunks; chance {r['chance']:.3f}: {verdict} "
                  f"(one-sided binomial p = {r['p_above']:.2g})", flush=True)
            for g, rg in r.get("per_game", {}).items():
                print(f"    {g:10s} {rg['right']} of {rg['chunks']}; chance {rg['chance']:.3f}, p = {rg['p_above']:.2g}"
                      + ("" if rg["p_above"] < 0.05 else "  (at chance or below)"), flush=True)
    if old_per_case is not None:
        change = paired_change(old_per_case, results["direction"][trained]["per_case"],
                               {c.id: _game(c) for c in cases})
        results["compare"] = {"against": args.compare, "per_game": change}
        print_paired(change, args.compare)
    if args.one_block:
        results["one_block"] = one_block(args.model_dir, cases)
    if not args.skip_fps:
        results["streaming"] = streaming(args.model_dir or "reference-world")
    results["partial"] = False
    if out is not None:
        _write_json(out, results)
    return 0


def _write_json(path: Path, results: dict[str, Any]) -> None:
    """Write ``results`` whole or not at all (a temp file renamed over ``path``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(results, indent=2))
    tmp.replace(path)


def resumable_rows(path: Path | None, results: dict[str, Any], cases: list[Any]) -> dict[str, dict[str, Any]]:
    """Per model spec, the rows of ``cases`` that an earlier run's ``--json`` at ``path`` already scored.

    Raises:
        SystemExit: no ``--json`` to resume from, or the file was written with other models or options.
    """
    if path is None:
        raise SystemExit("--resume reads the earlier run's --json: give --json FILE")
    if not path.is_file():
        print(f"--resume: {path} does not exist yet, starting from the first case", file=sys.stderr)
        return {}
    old = json.loads(path.read_text())
    for key in ("roles", "options"):
        if old.get(key) != results[key]:
            raise SystemExit(f"--resume: {path} was written with {key} {old.get(key)}, this run has {results[key]}; "
                             "use another --json or drop --resume")
    ids = {c.id for c in cases}
    done: dict[str, dict[str, Any]] = {}
    for spec, res in old.get("direction", {}).items():
        if "rows" not in res:
            raise SystemExit(f"--resume: {path} keeps no per-case rows for {spec} (written before --resume existed)")
        done[spec] = {cid: row for cid, row in res["rows"].items() if cid in ids}
    return done


if __name__ == "__main__":
    raise SystemExit(main())
