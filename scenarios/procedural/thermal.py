"""Thermal phenomena as law-based time-lapse renders.

Time ``u`` runs from 0 to 1 over the clip. Each generator's law (also in its ``law``
string and exported with the quantities):

* melting — an ice cube on a warm plate loses volume at a rate proportional to its
  surface area (constant heat flux per area, ``dV/dt = -h dT A / (rho L)``), so its side
  shrinks linearly, ``a(u) = a0 (1 - u / u_melt)``; the melt water (same mass) spreads as
  a thin film whose area grows with the melted volume.
* freezing — water in a dish freezes from the cold rim inward; the ice front follows
  the Stefan/Neumann law ``delta(u) = R sqrt(u / u_freeze)``.
* vaporization — a pot on a burner: temperature rises linearly (``m c dT/dt = P``) up to
  100 C, then boils at constant temperature while the water level falls at
  ``dh/dt = -P / (rho L A)``; bubble count proportional to the boiling power.
* condensation — a cold glass in humid air: droplets nucleate at random times and places
  and grow by vapour diffusion as ``r ~ (u - u_i)^(1/3)``; the exported coverage is the
  droplet area fraction of the glass.
* sublimation — a dry-ice block loses volume like the ice cube but directly to vapour:
  no liquid ever appears; a fog plume's size is proportional to the sublimation rate.
* deposition — frost grows on a cold window pane from pre-existing nuclei at constant
  radial speed; the covered fraction follows 2-D site-saturated JMAK kinetics
  ``X = 1 - exp(-N pi v^2 u^2)`` (the render is the exact union of discs).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from scenarios.procedural.common import Canvas, ProceduralGenerator, pct, smooth_noise, table_background
from worldolympiad.scenario import Rendered
from worldolympiad.types import Case


def _p(params: dict[str, Any], key: str, draw: float | np.number) -> float:
    """Explicit param if given, else the seeded draw (always drawn, so later draws stay aligned)."""
    return float(params[key]) if key in params else float(draw)


# ---------------------------------------------------------------- melting


class Melting(ProceduralGenerator):
    """An ice cube melts on a warm plate into a spreading puddle."""

    name: ClassVar[str] = "thermal.melting"
    rules: ClassVar[tuple[str, ...]] = ("melting",)
    objects = (("ice_cube", (200, 235, 250)), ("water", (90, 150, 220)))
    roles = {"ice_cube": "subject", "water": "product"}
    prompt_text: ClassVar[str] = "an ice cube sits on a warm plate."
    law: ClassVar[str] = "side a(u) = a0 (1 - u / u_melt) (surface-limited heat flux); melt water film area proportional to melted volume"

    def quantities(self, rng: np.random.Generator, params: dict[str, Any], u: np.ndarray) -> dict[str, Any]:
        u_melt = _p(params, "melt_time", rng.uniform(0.8, 1.4))  # fraction of the clip
        a0 = _p(params, "size", rng.uniform(0.16, 0.22))  # fraction of width
        side = a0 * np.clip(1.0 - u / u_melt, 0.0, 1.0)
        melted = 1.0 - (side / a0) ** 3
        film = 0.9 * a0 * np.sqrt(melted * 4.0)  # film radius ∝ sqrt(volume) at fixed thickness
        return {"side": side, "melted_fraction": melted, "film_radius": film, "melt_time": u_melt, "x": rng.uniform(0.4, 0.6)}

    def draw(self, q: dict[str, Any], k: int, c: Canvas, rng: np.random.Generator) -> None:
        x, y = q["x"], 0.72
        c.ellipse(x, y + 0.06, 0.34, 0.09, (185, 185, 190))  # plate
        c.ellipse(x, y + 0.06, q["film_radius"][k], q["film_radius"][k] * 0.3, (90, 150, 220), oid=2, alpha=0.75)
        a = q["side"][k]
        if a > 0.004:
            h = a * c.W / c.H
            c.poly([(x - a / 2, y + 0.05 - h), (x + a / 2, y + 0.05 - h), (x + a / 2 + a * 0.25, y + 0.05 - h * 1.2),
                    (x - a / 2 + a * 0.25, y + 0.05 - h * 1.2)], (230, 245, 255), oid=1)  # top face
            c.rect(x - a / 2, y + 0.05 - h, x + a / 2, y + 0.05, (200, 235, 250), oid=1)
            c.poly([(x + a / 2, y + 0.05 - h), (x + a / 2 + a * 0.25, y + 0.05 - h * 1.2), (x + a / 2 + a * 0.25, y + 0.05 - h * 0.2),
                    (x + a / 2, y + 0.05)], (170, 215, 240), oid=1)  # side face

    def caption(self, q: dict[str, Any], start: int, end: int) -> str:
        m0, m1 = q["melted_fraction"][start], q["melted_fraction"][end - 1]
        if m0 >= 0.995:
            return "only a puddle of water is left on the plate"
        if m1 >= 0.995:
            return "the last of the ice cube melts away, leaving a puddle"
        return f"the ice cube shrinks as it melts ({pct(m1)} melted) and the puddle around it spreads"


# ---------------------------------------------------------------- freezing


class Freezing(ProceduralGenerator):
    """Water in a dish freezes from the rim inward."""

    name: ClassVar[str] = "thermal.freezing"
    rules: ClassVar[tuple[str, ...]] = ("freezing",)
    objects = (("ice", (225, 240, 250)), ("water", (70, 130, 210)))
    roles = {"ice": "subject"}
    prompt_text: ClassVar[str] = "a shallow dish of water stands in a freezer."
    law: ClassVar[str] = "ice front depth delta(u) = R sqrt(u / u_freeze) from the rim (Stefan/Neumann solution)"

    def background(self, rng: np.random.Generator, H: int, W: int) -> np.ndarray:
        return table_background(rng, H, W, base=(200, 210, 220), wall=(230, 235, 240), horizon=0.3)

    def quantities(self, rng: np.random.Generator, params: dict[str, Any], u: np.ndarray) -> dict[str, Any]:
        uf = _p(params, "freeze_time", rng.uniform(0.7, 1.3))
        R = 0.3
        delta = R * np.sqrt(np.clip(u / uf, 0.0, 1.0))
        inner = R - delta
        return {"front_depth": delta, "water_radius": inner, "ice_fraction": 1.0 - (inner / R) ** 2, "freeze_time": uf,
                "dish_radius": R}

    def draw(self, q: dict[str, Any], k: int, c: Canvas, rng: np.random.Generator) -> None:
        R, x, y = q["dish_radius"], 0.5, 0.62
        c.ellipse(x, y, R + 0.03, (R + 0.03) * 0.9, (160, 160, 170))  # dish rim
        c.ellipse(x, y, R, R * 0.9, (225, 240, 250), oid=1)
        tex = smooth_noise(np.random.default_rng(7), c.H, c.W, cells=12)
        c.texture(c.mask == 1, tex, 0.08)  # crystalline ice texture (static)
        r = q["water_radius"][k]
        if r > 0.003:
            c.ellipse(x, y, r, r * 0.9, (70, 130, 210), oid=2)

    def caption(self, q: dict[str, Any], start: int, end: int) -> str:
        f1 = q["ice_fraction"][end - 1]
        if q["ice_fraction"][start] >= 0.995:
            return "the water is frozen solid"
        if f1 >= 0.995:
            return "the last water in the middle freezes"
        return f"ice grows inward from the rim of the dish ({pct(f1)} frozen), fast at first and then more slowly"


# ---------------------------------------------------------------- vaporization


class Vaporization(ProceduralGenerator):
    """Water in a pot heats up, boils, and boils away."""

    name: ClassVar[str] = "thermal.vaporization"
    rules: ClassVar[tuple[str, ...]] = ("vaporization",)
    objects = (("water", (80, 140, 220)), ("steam", (235, 235, 240)), ("pot", (90, 90, 100)))
    roles = {"water": "subject", "steam": "product"}
    rigid = {"pot": True}
    prompt_text: ClassVar[str] = "a glass pot of water sits on a hot burner."
    law: ClassVar[str] = "T rises linearly (m c dT/dt = P) to 100 C, then the level falls linearly (dh/dt = -P / (rho L A))"

    def quantities(self, rng: np.random.Generator, params: dict[str, Any], u: np.ndarray) -> dict[str, Any]:
        T0 = _p(params, "start_temperature", rng.uniform(15.0, 30.0))
        u_boil = _p(params, "boil_time", rng.uniform(0.25, 0.45))
        temp = np.minimum(100.0, T0 + (100.0 - T0) * u / u_boil)
        boiling = u >= u_boil
        # The latent heat of vaporisation (2257 kJ/kg) is 5.4x the sensible heat from 20 to 100 C
        # (4.19 kJ/kg/K x 80 K); at constant power the boil-off rate in level per unit time follows.
        h0 = 0.3
        frac_per_u = (100.0 - T0) * 4.19 / 2257.0 / u_boil
        level = h0 * np.clip(1.0 - frac_per_u * np.maximum(u - u_boil, 0.0), 0.0, 1.0)
        return {"temperature_c": temp, "boiling": boiling.astype(np.int32), "water_level": level, "boil_time": u_boil,
                "bubbles": np.where(boiling, 14, np.clip((temp - 70.0) / 30.0 * 6, 0, 6)).astype(np.int32)}

    def draw(self, q: dict[str, Any], k: int, c: Canvas, rng: np.random.Generator) -> None:
        x0, x1, yb = 0.3, 0.7, 0.82
        c.rect(0.25, yb, 0.75, yb + 0.05, (40, 40, 45))  # burner
        c.rect(0.3, yb - 0.02, 0.7, yb + 0.005, (230, 80, 20))  # glowing ring
        h = q["water_level"][k]
        c.rect(x0 - 0.02, yb - 0.38, x0, yb, (90, 90, 100), oid=3)
        c.rect(x1, yb - 0.38, x1 + 0.02, yb, (90, 90, 100), oid=3)
        c.rect(x0 - 0.02, yb - 0.02, x1 + 0.02, yb, (90, 90, 100), oid=3)
        if h > 0.002:
            c.rect(x0, yb - 0.02 - h, x1, yb - 0.02, (80, 140, 220), oid=1)
            for _ in range(int(q["bubbles"][k])):
                bx, by = rng.uniform(x0 + 0.03, x1 - 0.03), rng.uniform(yb - 0.02 - h, yb - 0.03)
                c.ellipse(bx, by, 0.012, 0.012, (200, 225, 250), oid=1)
        if q["boiling"][k] and h > 0.002:
            for j in range(4):  # steam wisps above the surface
                sx = x0 + 0.06 + 0.09 * j + rng.uniform(-0.02, 0.02)
                c.ellipse(sx, yb - 0.06 - h - rng.uniform(0.05, 0.15), 0.04, 0.06, (235, 235, 240), oid=2, alpha=0.7)

    def caption(self, q: dict[str, Any], start: int, end: int) -> str:
        T1 = q["temperature_c"][end - 1]
        if not q["boiling"][end - 1]:
            return f"the water warms up to about {int(T1)} C; small bubbles form on the bottom"
        if not q["boiling"][start]:
            return "the water reaches 100 C and starts to boil, releasing steam"
        if q["water_level"][end - 1] <= 0.002:
            return "the water boils away completely, leaving the pot empty"
        return "the water keeps boiling at 100 C and its level drops as it turns to steam"


# ---------------------------------------------------------------- condensation


class Condensation(ProceduralGenerator):
    """Droplets condense on a cold glass in humid air."""

    name: ClassVar[str] = "thermal.condensation"
    rules: ClassVar[tuple[str, ...]] = ("condensation",)
    objects = (("glass", (200, 220, 230)), ("droplets", (235, 245, 250)))
    roles = {"droplets": "subject"}
    rigid = {"glass": True}
    prompt_text: ClassVar[str] = "a glass of iced water stands in warm, humid air."
    law: ClassVar[str] = "droplets nucleate at random (u_i, x_i) and grow by vapour diffusion, r = r_max ((u - u_i) / (1 - u_i))^(1/3)"

    def quantities(self, rng: np.random.Generator, params: dict[str, Any], u: np.ndarray) -> dict[str, Any]:
        n = int(_p(params, "droplets", rng.integers(25, 45)))
        born = rng.uniform(0.0, 0.6, n)
        pos = np.stack([rng.uniform(0.37, 0.63, n), rng.uniform(0.35, 0.85, n)], axis=1)
        rmax = rng.uniform(0.012, 0.022, n)
        radii = rmax[None] * np.clip((u[:, None] - born[None]) / (1.0 - born[None]), 0.0, None) ** (1.0 / 3.0)
        return {"droplet_birth": born, "droplet_pos": pos, "droplet_radius": radii,
                "droplet_count": (radii > 0).sum(axis=1), "coverage": np.zeros(len(u))}  # coverage filled in render

    def draw(self, q: dict[str, Any], k: int, c: Canvas, rng: np.random.Generator) -> None:
        c.rect(0.35, 0.3, 0.65, 0.88, (200, 220, 230), oid=1, alpha=0.85)
        c.rect(0.37, 0.42, 0.63, 0.86, (170, 200, 225), alpha=0.8)  # iced water inside
        for (x, y), r in zip(q["droplet_pos"], q["droplet_radius"][k], strict=True):
            if r > 0:
                c.ellipse(x, y, r, r * c.W / c.H, (235, 245, 250), oid=2)

    def render(self, case: Case) -> Rendered:
        out = super().render(case)
        assert out.masks is not None
        flat = out.masks.reshape(len(out.masks), -1)
        out.states["coverage"] = (flat == 2).sum(1) / (flat > 0).sum(1)  # droplet share of the glass
        return out

    def caption(self, q: dict[str, Any], start: int, end: int) -> str:
        n0, n1 = int(q["droplet_count"][start]), int(q["droplet_count"][end - 1])
        if n1 == n0:
            return "the droplets on the glass grow larger"
        return f"tiny droplets of water condense on the cold glass ({n1} visible) and grow"


# ---------------------------------------------------------------- sublimation


class Sublimation(ProceduralGenerator):
    """A block of dry ice shrinks straight into fog, leaving no liquid."""

    name: ClassVar[str] = "thermal.sublimation"
    rules: ClassVar[tuple[str, ...]] = ("sublimation",)
    objects = (("dry_ice", (235, 235, 240)), ("fog", (225, 228, 232)))
    roles = {"dry_ice": "subject", "fog": "product"}
    prompt_text: ClassVar[str] = "a block of dry ice lies on a dark tray at room temperature."
    law: ClassVar[str] = "side a(u) = a0 (1 - u / u_end) (surface-limited), no liquid phase; fog plume size proportional to -dV/du"

    def background(self, rng: np.random.Generator, H: int, W: int) -> np.ndarray:
        return table_background(rng, H, W, base=(60, 60, 70), wall=(110, 110, 120), horizon=0.5)

    def quantities(self, rng: np.random.Generator, params: dict[str, Any], u: np.ndarray) -> dict[str, Any]:
        ue = _p(params, "sublimation_time", rng.uniform(0.8, 1.4))
        a0 = _p(params, "size", rng.uniform(0.2, 0.26))
        side = a0 * np.clip(1.0 - u / ue, 0.0, 1.0)
        rate = np.where(side > 0, 3 * side**2 * a0 / ue / a0**3, 0.0)  # -dV/du in units of V0
        return {"side": side, "remaining_volume": (side / a0) ** 3, "sublimation_rate": rate, "liquid_area": np.zeros(len(u)),
                "sublimation_time": ue}

    def draw(self, q: dict[str, Any], k: int, c: Canvas, rng: np.random.Generator) -> None:
        x, y = 0.5, 0.75
        c.rect(0.15, y, 0.85, y + 0.05, (40, 40, 45))  # tray
        rate = q["sublimation_rate"][k]
        for _ in range(int(round(6 * min(rate, 2.0)))):  # fog pours out behind and around the block
            c.ellipse(x + rng.uniform(-0.2, 0.2), y - rng.uniform(0.0, 0.08), 0.08 * min(rate, 1.5) + 0.02, 0.03,
                      (225, 228, 232), oid=2, alpha=0.55)
        a = q["side"][k]
        if a > 0.004:
            h = a * c.W / c.H * 0.7
            c.rect(x - a / 2, y - h, x + a / 2, y, (235, 235, 240), oid=1)
            c.rect(x - a / 2, y - h, x + a / 2, y - h * 0.8, (250, 250, 252), oid=1)

    def caption(self, q: dict[str, Any], start: int, end: int) -> str:
        v1 = q["remaining_volume"][end - 1]
        if q["remaining_volume"][start] <= 0:
            return "the tray is dry and empty: the dry ice has turned entirely into gas"
        if v1 <= 0:
            return "the last of the dry ice vanishes into fog without leaving any liquid"
        return f"the dry ice shrinks as it turns directly into white fog ({pct(1 - v1)} gone), with no puddle forming"


# ---------------------------------------------------------------- deposition


class Deposition(ProceduralGenerator):
    """Frost crystals grow on a cold window pane straight from the vapour."""

    name: ClassVar[str] = "thermal.deposition"
    rules: ClassVar[tuple[str, ...]] = ("deposition",)
    objects = (("frost", (235, 240, 248)), ("window", (120, 150, 190)))
    roles = {"frost": "subject"}
    prompt_text: ClassVar[str] = "a window pane cools on a freezing night."
    law: ClassVar[str] = "frost discs grow from N nuclei at constant speed v; covered fraction X = 1 - exp(-N pi v^2 u^2) (2-D JMAK)"

    def background(self, rng: np.random.Generator, H: int, W: int) -> np.ndarray:
        return table_background(rng, H, W, base=(120, 95, 70), wall=(120, 95, 70), horizon=0.0)

    def quantities(self, rng: np.random.Generator, params: dict[str, Any], u: np.ndarray) -> dict[str, Any]:
        n = int(_p(params, "nuclei", rng.integers(10, 20)))
        v = _p(params, "growth_speed", rng.uniform(0.15, 0.25))  # pane widths per clip
        seeds = np.stack([rng.uniform(0.1, 0.9, n), rng.uniform(0.1, 0.9, n)], axis=1)
        radius = v * u
        area = 0.8 * 0.8  # pane area in normalised units
        jmak = 1.0 - np.exp(-n / area * math.pi * radius**2)
        return {"nuclei": seeds, "frost_radius": radius, "jmak_fraction": jmak}

    def draw(self, q: dict[str, Any], k: int, c: Canvas, rng: np.random.Generator) -> None:
        c.rect(0.1, 0.1, 0.9, 0.9, (120, 150, 190), oid=2)  # the pane
        r = q["frost_radius"][k]
        if r <= 0:
            return
        # exact union of discs (in units of the width, pixel centres), clipped to the pane
        ys, xs = np.mgrid[0 : c.H, 0 : c.W]
        px, py = (xs + 0.5) / c.W, (ys + 0.5) / c.H * c.H / c.W
        frost = np.zeros((c.H, c.W), bool)
        for x, y in q["nuclei"]:
            frost |= (px - x) ** 2 + (py - y * c.H / c.W) ** 2 < r * r
        frost &= c.mask == 2
        c.img[frost] = (235, 240, 248)
        c.mask[frost] = 1
        c.texture(frost, smooth_noise(np.random.default_rng(11), c.H, c.W, cells=16), 0.06)

    def render(self, case: Case) -> Rendered:
        out = super().render(case)
        assert out.masks is not None
        flat = out.masks.reshape(len(out.masks), -1)
        out.states["frost_fraction"] = (flat == 1).sum(1) / (flat > 0).sum(1)  # frost share of the pane
        return out

    def caption(self, q: dict[str, Any], start: int, end: int) -> str:
        f1 = q["jmak_fraction"][end - 1]
        if q["jmak_fraction"][start] < 0.01:
            return f"frost crystals appear on the glass and spread ({pct(f1)} covered)"
        return f"the frost patches grow and merge until {pct(f1)} of the window is covered"
