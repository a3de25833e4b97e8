"""Small agents under users' encodings (issue 56): the tracker keeps the right candidates (track version 10),
identity reads no colour that a codec cannot keep (version 11).

On the tuning split's robot place (bench/suites/interaction_tune, itune-place-s406) the blue cube's track
started on the cube and then followed 1 px dark specks of the gravel floor: every pixel that the model
explains fully scores likelihood 1, the specks pass as the cube's dark colour (a 1 px sprite keeps little
hue under 4:2:0, so little is asked of it), and of the equal-peak components only the first six in label
order (top to bottom) were kept, so the cube below them was never a candidate. Identity consistency then
read the crf 23 video, where the cube won, as a change of identity (0.55 on a clean video).
"""

from __future__ import annotations

import numpy as np
import pytest

from tracks.interaction.motion import agent_motion

BLUE = (38, 76, 216)


def _floor_with_specks_and_a_cube(T: int = 24, H: int = 64, W: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """A light floor with dark 1 px specks above a blue 4 x 4 cube that slides right; the cube's centres."""
    rng = np.random.default_rng(0)
    floor = np.full((H, W, 3), 170, np.uint8)
    ys, xs = rng.integers(2, 30, 12), rng.integers(2, W - 2, 12)  # specks in the upper half, above the cube
    floor[ys, xs] = 57
    frames, centres = [], []
    for t in range(T):
        f = floor.copy()
        x0, y0 = 12 + t, 44
        f[y0:y0 + 4, x0:x0 + 4] = BLUE
        frames.append(f)
        centres.append((x0 + 1.5, y0 + 1.5))
    return np.stack(frames), np.array(centres)


def test_the_cube_is_followed_not_the_specks_of_its_dark_colour():
    frames, centres = _floor_with_specks_and_a_cube()
    appearance = {"color": list(BLUE), "window": None, "box": [12, 44, 16, 48], "resolution": [64, 64]}
    m = agent_motion(frames, appearance)
    assert m.positions is not None and m.areas is not None
    # every frame on the cube (version 9 kept six specks and never the cube: errors of 20-40 px)
    err = np.linalg.norm(m.positions - centres, axis=1)
    assert np.all(err < 1.0), err
    assert np.all(m.areas == 16)
    # its motion is the cube's: one pixel a frame to the right
    assert np.allclose(m.translation[:, 0] * 64, 1.0, atol=0.05)


def test_identity_reads_no_colour_on_a_sprite_of_a_few_pixels_in_both_chunks():
    """Track version 11: a clean Pong paddle of 6-14 px at crf 35 x0.75 took its hue from the background
    (identity 0.0 against 1.0 lossless, bench/suites/interaction_tune). Under MIN_AREA_PX in both chunks
    the colour does not count; a sprite that was large in one of them is still compared in full."""
    from tracks.interaction.consistency import MIN_AREA_PX, agent_identity_consistency
    from worldolympiad.types import even_chunks

    chunks = even_chunks(20, 2)
    green, orange = np.array([92.0, 186.0, 92.0]), np.array([170.0, 120.0, 60.0])
    colors = np.array([green] * 10 + [orange] * 10)
    small = np.full(20, 6.0)
    assert agent_identity_consistency(chunks, small, colors)["per_chunk"] == [1.0]
    large_then_small = np.array([float(MIN_AREA_PX)] * 10 + [6.0] * 10)
    assert agent_identity_consistency(chunks, large_then_small, colors)["per_chunk"][0] < 0.2
    # the same colours on a large sprite: a change of identity, as before
    assert agent_identity_consistency(chunks, np.full(20, 40.0), colors)["per_chunk"][0] < 0.2


def test_a_sighting_of_a_few_pixels_is_compared_by_brightness_with_a_chroma_slack():
    """Track version 24: Pong's paddle, 18 px in the first chunk, is half hidden by the top wall later (4 px).
    At crf 23 4:2:0 gave those 4 px the field's hue, (118, 168, 85) against (95, 178, 86): the clean video's
    identity fell to 0.49 (against 1.0 lossless) though its brightness is the same (luma 143.6 and 142.7).
    Such a sighting counts its luma difference in full and its chroma difference beyond CHROMA_SLACK: a speck
    of another colour (a photo pixel of the agent's brightness found where a colour-tracked agent is gone)
    still reads as a change of identity."""
    from tracks.interaction.consistency import CHROMA_SLACK, agent_identity_consistency, small_sighting_difference
    from worldolympiad.types import even_chunks

    chunks = even_chunks(20, 2)
    sizes = np.array([18.0] * 10 + [4.0] * 10)
    tinted = np.array([[95.0, 178.0, 86.0]] * 10 + [[118.0, 168.0, 85.0]] * 10)
    assert agent_identity_consistency(chunks, sizes, tinted)["per_chunk"][0] > 0.97  # v23: 0.53
    speck = np.array([[40.0, 220.0, 240.0]] * 10 + [[185.0, 166.0, 201.0]] * 10)  # cyan -> a pinkish photo pixel
    assert agent_identity_consistency(chunks, sizes, speck)["per_chunk"][0] < 0.05
    darker = np.array([[95.0, 178.0, 86.0]] * 10 + [[45.0, 128.0, 36.0]] * 10)  # the same hue, 50 levels darker
    assert agent_identity_consistency(chunks, sizes, darker)["per_chunk"][0] < 0.3
    # pure chroma under the slack does not count; beyond it, it does
    assert small_sighting_difference(np.array([10.0, -10.0, 0.0])) == pytest.approx(abs(0.299 * 10 - 0.587 * 10), abs=1e-9)
    grey_to_red = np.array([60.0, -30.0, -30.0])  # luma change 0.299*60 - 0.701*30 = -3.09; chroma 73.7
    chroma = float(np.linalg.norm(grey_to_red + 3.09))
    assert chroma > CHROMA_SLACK
    assert small_sighting_difference(grey_to_red) == pytest.approx(3.09 + chroma - CHROMA_SLACK, abs=1e-9)
