"""Material phenomena as law-based time-lapse renders.

* color_mixing — two dye drops in a still, shallow tray spread by diffusion. The exact
  2-D solution for a point release is a Gaussian, ``c_i = M_i / (4 pi D (u + u0)) exp(-|x -
  x_i|^2 / (4 D (u + u0)))``; colours follow Beer-Lambert, ``I = I_0 exp(-sum_i eps_i c_i)``
  per channel, so where a blue and a yellow dye overlap the water turns green
  (subtractive mixing). Total dye mass is conserved (exported).
* dissolving — a crystal in a glass of water dissolves by the Noyes-Whitney law
  ``dm/du = -k A (c_s - c)`` with ``A ~ m^(2/3)`` and ``c`` the dissolved mass per volume;
  when the crystal holds more than ``c_s V`` the solution saturates and a residue
  remains (the solubility limit). The water's tint is proportional to ``c``.
* hardness — two presses descend at the same speed on a steel block and a clay block.
  Steel is rigid (its height never changes; its press stops on contact). Clay flows
  plastically: its height follows the press and its width grows so that its area
  (volume per unit depth) is conserved.
* combustion — a wooden log and a stone are lit by the same flame. Wood burns at its
  surface, ``dm/du = -k m^(2/3)`` (shrinking fuel), so ``m = (m0^(1/3) - k u / 3)^3``; the
  flame height follows Heskestad's ``L ~ Q^(2/5)`` with heat release ``Q ~ -dm/du``;
  the burnt surface chars. The stone is not combustible and never changes.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from scenarios.procedural.common import Canvas, ProceduralGenerator, pct, table_background
from scenarios.procedural.thermal import _p
from worldolympiad.scenario import Rendered
from worldolympiad.types import Case

DYES: dict[str, tuple[tuple[int, int, int], tuple[float, float, float]]] = {
    # name: (display rgb, absorbance per unit concentration for R, G, B)
    "blue": ((40, 80, 220), (2.2, 1.0, 0.1)),
    "yellow": ((240, 210, 30), (0.05, 0.25, 2.4)),
    "red": ((220, 40, 40), (0.1, 2.0, 1.6)),
}


class ColorMixing(ProceduralGenerator):
    """A blue and a yellow drop of dye spread in a tray of water and mix to green."""

    name: ClassVar[str] = "material.color_mixing"
    rules: ClassVar[tuple[str, ...]] = ("color_mixing",)
    objects = (("blue_dye", (40, 80, 220)), ("yellow_dye", (240, 210, 30)), ("mixed_dye", (60, 160, 60)))
    roles = {"mixed_dye": "product"}
    prompt_text: ClassVar[str] = "a drop of blue dye and a drop of yellow dye are placed in a white tray of still water."
    law: ClassVar[str] = "2-D diffusion from point releases (Gaussian kernel, sigma^2 = 2 D (u + u0)); Beer-Lambert colour"
    threshold: ClassVar[float] = 0.15  # concentration (peak-normalised) that counts as dyed in the masks

    def background(self, rng: np.random.Generator, H: int, W: int) -> np.ndarray:
        return table_background(rng, H, W, base=(245, 245, 242), wall=(200, 200, 196), horizon=0.12)

    def quantities(self, rng: np.random.Generator, params: dict[str, Any], u: np.ndarray) -> dict[str, Any]:
        D = _p(params, "diffusivity", rng.uniform(0.008, 0.014))  # (width units)^2 per clip
        u0 = 0.15
        sep = _p(params, "separation", rng.uniform(0.2, 0.28))
        cy = rng.uniform(0.5, 0.6)
        centres = np.array([[0.5 - sep / 2, cy], [0.5 + sep / 2, cy]])
        var = 2 * D * (u + u0)  # per-axis variance, width units
        return {"diffusivity": D, "centres": centres, "sigma": np.sqrt(var), "u0": u0}

    def fields(self, q: dict[str, Any], k: int, H: int, W: int) -> np.ndarray:
        """Dye concentrations ``[2, H, W]`` (each integrates to 1 over the plane, width units)."""
        ys, xs = np.mgrid[0:H, 0:W]
        px, py = (xs + 0.5) / W, (ys + 0.5) / W  # both in width units
        var = q["sigma"][k] ** 2
        out = []
        for x, y in q["centres"]:
            y_w = y * H / W
            out.append(np.exp(-((px - x) ** 2 + (py - y_w) ** 2) / (2 * var)) / (2 * np.pi * var))
        return np.stack(out)

    def draw(self, q: dict[str, Any], k: int, c: Canvas, rng: np.random.Generator) -> None:
        c.rect(0.06, 0.2, 0.94, 0.94, (250, 250, 250))  # tray
        conc = self.fields(q, k, c.H, c.W)
        scale = 2 * np.pi * q["sigma"][0] ** 2  # peak of the first frame → 1
        a = conc * scale * 3.0  # absorbance: the fresh drop is saturated, the spread cloud pale
        absorb = np.zeros((c.H, c.W, 3), np.float32)
        for name, ci in zip(("blue", "yellow"), a, strict=True):
            absorb += ci[..., None] * np.array(DYES[name][1], np.float32)
        tray = np.zeros((c.H, c.W), bool)
        tray[int(0.2 * c.H) : int(0.94 * c.H), int(0.06 * c.W) : int(0.94 * c.W)] = True
        img = c.img.astype(np.float32)
        img[tray] = img[tray] * np.exp(-absorb[tray])
        c.img = np.clip(img, 0, 255).round().astype(np.uint8)
        dyed = a > self.threshold
        c.mask[tray & dyed[0] & ~dyed[1]] = 1
        c.mask[tray & dyed[1] & ~dyed[0]] = 2
        c.mask[tray & dyed[0] & dyed[1]] = 3

    def render(self, case: Case) -> Rendered:
        out = super().render(case)
        (H, W) = out.video.resolution
        q = out.states
        mass, overlap = [], []
        for k in range(out.video.num_frames):
            conc = self.fields(q, k, H, W)
            px_area = 1.0 / (W * W)
            mass.append((conc.sum(axis=(1, 2)) * px_area).tolist())
            overlap.append(float(np.minimum(conc[0], conc[1]).sum() * px_area))
        out.states["dye_mass"] = mass
        out.states["overlap"] = overlap
        return out

    def caption(self, q: dict[str, Any], start: int, end: int) -> str:
        s1 = q["sigma"][end - 1]
        sep = abs(q["centres"][1][0] - q["centres"][0][0])
        if 2.0 * s1 < sep / 2:
            return "the blue and yellow drops spread out slowly in the water"
        if 2.0 * q["sigma"][start] < sep / 2:
            return "the spreading blue and yellow clouds meet and turn green where they overlap"
        return "the dyes keep diffusing and the green mixed region grows"


class Dissolving(ProceduralGenerator):
    """A coloured crystal dissolves in a glass of water (and may saturate it)."""

    name: ClassVar[str] = "material.dissolving"
    version: ClassVar[str] = "3"  # 3: the tint follows the concentration to the end (no clip)
    rules: ClassVar[tuple[str, ...]] = ("solubility",)
    objects = (("crystal", (30, 90, 200)), ("solution", (150, 190, 235)))
    roles = {"crystal": "subject", "solution": "product"}
    prompt_text: ClassVar[str] = "a blue copper-sulphate crystal is dropped into a glass of water."
    law: ClassVar[str] = "Noyes-Whitney dm/du = -k m^(2/3) (c_s - c), c = (m0 - m) / V; saturates when m0 > c_s V"

    def quantities(self, rng: np.random.Generator, params: dict[str, Any], u: np.ndarray) -> dict[str, Any]:
        # amount relative to what the water can hold: < 1 dissolves fully, > 1 leaves a residue
        amount = _p(params, "amount", rng.choice([rng.uniform(0.4, 0.8), rng.uniform(1.4, 2.0)]))
        k_rate = _p(params, "rate", rng.uniform(2.5, 4.0))
        m0, cs = 1.0, 1.0 / amount  # V = 1: saturation mass = cs
        n_sub = 200
        m = np.empty(len(u))
        mi, ui = m0, 0.0
        for j, uj in enumerate(u):  # explicit RK2 on a fine grid between frames
            steps = max(1, int(np.ceil((uj - ui) * n_sub)))
            h = (uj - ui) / steps
            for _ in range(steps):
                f = lambda mm: -k_rate * max(mm, 0.0) ** (2 / 3) * max(cs - (m0 - mm), 0.0)  # noqa: E731
                mid = mi + 0.5 * h * f(mi)
                mi = max(mi + h * f(mid), 0.0)
            ui = uj
            m[j] = mi
        conc = m0 - m
        return {"solid_mass": m, "concentration": conc, "saturation_concentration": cs, "amount_over_solubility": amount,
                "saturates": bool(amount > 1.0)}

    def draw(self, q: dict[str, Any], k: int, c: Canvas, rng: np.random.Generator) -> None:
        x0, x1, y0, y1 = 0.3, 0.7, 0.25, 0.88
        c.rect(x0 - 0.02, y0, x1 + 0.02, y1 + 0.02, (215, 225, 232))  # glass
        # Beer-Lambert tint proportional to the concentration (1 = the whole crystal dissolved);
        # version 2 clipped it at 60 %, so the water stopped deepening while the crystal shrank.
        tint = min(1.0, q["concentration"][k])
        col = tuple(int(round(a * (1 - tint) + b * tint)) for a, b in zip((225, 235, 245), (70, 120, 215), strict=True))
        c.rect(x0, y0 + 0.1, x1, y1, col, oid=2)
        m = q["solid_mass"][k]
        if m > 1e-3:
            a = 0.14 * m ** (1 / 3)
            c.poly([(0.5 - a, y1), (0.5 - a * 0.6, y1 - a * 1.3), (0.5 + a * 0.7, y1 - a * 1.2), (0.5 + a, y1)], (30, 90, 200), oid=1)

    def caption(self, q: dict[str, Any], start: int, end: int) -> str:
        m0, m1 = q["solid_mass"][start], q["solid_mass"][end - 1]
        if m1 < 1e-3 and m0 >= 1e-3:
            return "the crystal dissolves completely and the water turns evenly blue"
        if m1 < 1e-3:
            return "the crystal is gone; the blue solution stays clear"
        if m0 - m1 < 0.01 and q["saturates"]:
            return "the solution is saturated: the rest of the crystal stops dissolving"
        return f"the crystal shrinks as it dissolves ({pct(1 - m1)} dissolved) and the water turns bluer"


class Hardness(ProceduralGenerator):
    """Presses descend on a steel block (rigid) and a clay block (flattens)."""

    name: ClassVar[str] = "material.hardness"
    rules: ClassVar[tuple[str, ...]] = ("hardness", "compression")
    objects = (("steel_block", (150, 155, 165)), ("clay_block", (190, 110, 70)), ("press", (60, 60, 70)))
    rigid = {"steel_block": True, "clay_block": False, "press": True}
    prompt_text: ClassVar[str] = "two identical presses come down on a steel block and on a lump of soft clay."
    law: ClassVar[str] = "rigid: height constant, press stops on contact; plastic: height = press gap, width * height conserved"

    def quantities(self, rng: np.random.Generator, params: dict[str, Any], u: np.ndarray) -> dict[str, Any]:
        h0 = _p(params, "block_height", rng.uniform(0.2, 0.26))
        w0 = 0.16
        speed = _p(params, "press_speed", rng.uniform(0.35, 0.5))  # height units per clip
        floor_y = 0.85
        start_gap = 0.12  # press bottom starts this far above the block tops
        travel = speed * u
        clay_h = np.clip(h0 - np.maximum(travel - start_gap, 0.0), 0.35 * h0, h0)
        clay_w = w0 * h0 / clay_h
        steel_press = floor_y - h0 - start_gap + np.minimum(travel, start_gap)
        clay_press = floor_y - clay_h - np.where(travel < start_gap, start_gap - travel, 0.0)
        return {"steel_height": np.full(len(u), h0), "steel_width": np.full(len(u), w0), "clay_height": clay_h,
                "clay_width": clay_w, "clay_area": clay_h * clay_w, "steel_press_y": steel_press, "clay_press_y": clay_press,
                "floor_y": floor_y}

    def draw(self, q: dict[str, Any], k: int, c: Canvas, rng: np.random.Generator) -> None:
        fy = q["floor_y"]
        c.rect(0.0, fy, 1.0, 1.0, (110, 100, 90))
        for cx, h, w, py, oid, col in (
            (0.28, q["steel_height"][k], q["steel_width"][k], q["steel_press_y"][k], 1, (150, 155, 165)),
            (0.72, q["clay_height"][k], q["clay_width"][k], q["clay_press_y"][k], 2, (190, 110, 70)),
        ):
            c.rect(cx - 0.13, py - 0.06, cx + 0.13, py, (60, 60, 70), oid=3)  # press plate
            c.rect(cx - 0.025, 0.0, cx + 0.025, py - 0.06, (80, 80, 90), oid=3)  # ram
            c.rect(cx - w / 2, fy - h, cx + w / 2, fy, col, oid=oid)  # block last: the plate only touches it

    def caption(self, q: dict[str, Any], start: int, end: int) -> str:
        h0 = q["clay_height"][0]
        c0, c1 = q["clay_height"][start], q["clay_height"][end - 1]
        if c1 >= h0 - 1e-6:
            return "the two presses come down toward the steel block and the clay"
        if c0 >= h0 - 1e-6:
            return "the presses touch down: the steel block holds its shape while the clay starts to squash and spread"
        return f"the clay is flattened to {pct(c1 / h0)} of its height and bulges sideways; the steel block is unchanged"


class Combustion(ProceduralGenerator):
    """A wooden log catches fire and burns down next to a stone that does not burn."""

    name: ClassVar[str] = "material.combustion"
    rules: ClassVar[tuple[str, ...]] = ("combustibility",)
    objects = (("wood", (140, 90, 50)), ("stone", (130, 130, 135)), ("flame", (250, 160, 30)))
    roles = {"wood": "subject", "flame": "product"}
    rigid = {"stone": True}
    prompt_text: ClassVar[str] = "a wooden log and a stone lie side by side on a fire pit and a flame is held to both."
    law: ClassVar[str] = "surface burning dm/du = -k m^(2/3) after ignition; flame height ~ Q^(2/5) (Heskestad), Q ~ -dm/du"

    def background(self, rng: np.random.Generator, H: int, W: int) -> np.ndarray:
        return table_background(rng, H, W, base=(70, 60, 55), wall=(35, 40, 55), horizon=0.55)

    def quantities(self, rng: np.random.Generator, params: dict[str, Any], u: np.ndarray) -> dict[str, Any]:
        u_ign = _p(params, "ignition_time", rng.uniform(0.1, 0.2))
        k = _p(params, "burn_rate", rng.uniform(2.2, 3.2))
        tb = np.maximum(u - u_ign, 0.0)
        m = np.clip(1.0 - k * tb / 3.0, 0.0, None) ** 3  # m0 = 1
        rate = np.where((u >= u_ign) & (m > 0), k * m ** (2 / 3), 0.0)
        flame = 0.35 * (rate / k) ** 0.4
        char = np.clip(tb * 3.0, 0.0, 1.0)
        return {"fuel_mass": m, "burn_rate": rate, "flame_height": flame, "char": char, "ignition_time": u_ign,
                "stone_mass": np.ones(len(u))}

    def draw(self, q: dict[str, Any], k: int, c: Canvas, rng: np.random.Generator) -> None:
        base = 0.82
        c.rect(0.0, base, 1.0, 1.0, (50, 45, 42))
        c.ellipse(0.72, base - 0.07, 0.11, 0.08, (130, 130, 135), oid=2)  # stone
        m = q["fuel_mass"][k]
        ch = q["char"][k]
        col = tuple(int(round(a * (1 - ch) + b * ch)) for a, b in zip((140, 90, 50), (45, 35, 30), strict=True))
        if m > 1e-3:
            s = m ** (1 / 3)
            c.ellipse(0.3, base - 0.07 * s, 0.16 * s, 0.07 * s, col, oid=1)
        else:
            c.ellipse(0.3, base - 0.01, 0.12, 0.012, (90, 90, 90))  # ash
        fh = q["flame_height"][k]
        if fh > 0.01:
            for j, (col_f, scale) in enumerate((((250, 120, 20), 1.0), ((255, 200, 60), 0.65), ((255, 245, 200), 0.3))):
                flick = 1.0 + 0.15 * rng.standard_normal()
                c.ellipse(0.3 + 0.01 * rng.standard_normal(), base - 0.1 - fh * scale * flick * 0.5, 0.09 * scale + 0.02,
                          fh * scale * flick * 0.5, col_f, oid=3, alpha=0.9 if j == 0 else 1.0)
        elif q["times"][k] / q["times"][-1] < q["ignition_time"]:
            c.rect(0.44, base - 0.35, 0.46, base - 0.1, (200, 180, 140))  # the match between them
            c.ellipse(0.45, base - 0.37, 0.015, 0.03, (255, 190, 60), oid=3)

    def caption(self, q: dict[str, Any], start: int, end: int) -> str:
        m1 = q["fuel_mass"][end - 1]
        u = q["times"] / q["times"][-1]
        if u[end - 1] < q["ignition_time"]:
            return "a match is held between the log and the stone"
        if u[start] < q["ignition_time"]:
            return "the wooden log catches fire while the stone does not burn"
        if m1 <= 1e-3:
            return "the log burns down to ash; the stone is unchanged"
        return f"the log burns and blackens, {pct(1 - m1)} of the wood consumed; the stone stays the same"
