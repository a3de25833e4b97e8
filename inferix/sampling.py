"""How each block is sampled: every sampling knob, declared once.

:class:`SamplingConfig` is the one place a sampling setting (timesteps, action guidance and its
rescale, joint caption guidance, the context timestep, the anchor level, starting from the
anchor) is named, typed, validated and documented. Everything else reads it:

* :class:`inferix.engine.EngineConfig` holds one (``EngineConfig.sampling``);
* a loaded model carries its own (:attr:`inferix.loaded.LoadedModel.sampling`, from ``bundle.json``'s
  ``sampler`` section: :meth:`SamplingConfig.from_bundle`) and the one it serves a content with
  (:meth:`inferix.loaded.LoadedModel.sampling_for`);
* ``inferix generate/stream/serve`` flags and the WorldOlympiad bridge's ``--option model.KEY=VALUE``
  options are generated from :data:`KNOBS`, and both hand their values to
  :meth:`SamplingConfig.with_overrides`.

Adding a knob is adding a field here (with ``metadata=knob(...)``) and reading it where it acts.
This module imports nothing heavy (no torch): the benchmark declares its options from it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Self-Forcing's 4 steps [1000, 750, 500, 250] warped with shift 5 (REFERENCE.md §C).
SELF_FORCING_TIMESTEPS: tuple[float, ...] = (1000.0, 937.5, 833.3333333333334, 625.0)


@dataclass(frozen=True)
class Knob:
    """A sampling setting a user may override (a CLI flag, a ``model.KEY`` option, a ``bundle.json`` key).

    Attributes:
        name: the field of :class:`SamplingConfig` (``steps`` truncates ``timesteps``).
        type: ``"int"``, ``"float"`` or ``"bool"``.
        help: one line for ``--help`` and the option table.
        flag: the command-line flag (``--action-guidance``).
    """

    name: str
    type: str
    help: str
    flag: str

    def parse(self, value: Any) -> Any:
        """``value`` (a string from the command line or an option, or already typed) as this knob's
        type; None stays None (keep the model's own)."""
        if value is None:
            return None
        if self.type == "bool":
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off"):
                return False
            raise ValueError(f"{self.name} is true or false, got {value!r}")
        try:
            if isinstance(value, bool):
                raise ValueError
            return int(value) if self.type == "int" else float(value)
        except ValueError:
            raise ValueError(f"{self.name} must be {'an integer' if self.type == 'int' else 'a number'}, "
                             f"got {value!r}") from None


def knob(help: str, flag: str | None = None) -> dict[str, Any]:
    """``dataclasses.field`` metadata marking a :class:`SamplingConfig` field as user-overridable."""
    return {"knob": help, "flag": flag}


@dataclass(frozen=True)
class SamplingConfig:
    """How the engine samples each block.

    Attributes:
        timesteps: denoising timesteps of a block, in (0, 1000], first = 1000 (pure noise) unless
            ``start_from_anchor``. The ``steps`` knob keeps the first N.
        action_guidance: classifier-free guidance on the action: each denoising pass of an
            action-conditioned model also runs with the default action (``action_encoder(None)``,
            the model's "idle") and uses ``v_idle + g (v_action - v_idle)``; 1 = off. Only the
            block being denoised is guided: committed context keeps the actions it was made with.
        action_guidance_rescale: phi in [0, 1] of guidance rescale (Lin et al. 2024, "Common
            Diffusion Noise Schedules and Sample Steps are Flawed", sec. 3.4; diffusers'
            ``guidance_rescale``): the guided velocity is scaled back to the per-sample std of the
            action-conditioned one and mixed, ``phi * rescaled + (1 - phi) * guided``, so a large
            ``g`` steers without over-saturating the frame. 0 = off.
        guidance_drops_caption: the unguided pass also drops the caption (the empty prompt,
            which caption dropout trained), so the guidance extrapolates from "idle action, no
            caption" towards "this action, this caption": text and action guided jointly.
        context_timestep: timestep in [0, 1000) at which each generated block's keys/values are
            committed: the finished block is noised to it (fresh noise from the session's
            generator) and passed at that timestep, so later blocks attend to it as slightly
            uncertain context (Diffusion Forcing, Chen et al. 2024, "stabilizing autoregressive
            generation": a model trained with per-block noise levels has seen such context).
            The clean block is still what is decoded and what the next block is anchored on;
            conditioning frames (``image_latents``) stay clean. 0 = clean context (Self-Forcing).
        anchor_level: for a model with an anchor-level input (``WanConfig.anchor_level``): the
            noise std it is told its anchors and clean context carry, on every pass. 0 (the
            default) says they are exact, as in the clean clips of its training; a small value
            says its own generated context is a little off, as the noised clips were.
        start_from_anchor: start each block from the session's anchor (its last clean latent
            frame: the first frame, then each block's last) noised to the first timestep, instead of
            from pure noise, so the sampler refines the previous frame rather than drawing the
            block anew (SDEdit, Meng et al. 2022, applied per block). Needs a model conditioned on
            the previous frame, a first timestep below 1000 (at 1000 the anchor would get no
            weight) and sessions started with ``image_latents``. Set by a bundle's expert
            (``experts.NAME.start: "anchor"``), not a user knob.
    """

    timesteps: tuple[float, ...] = SELF_FORCING_TIMESTEPS
    action_guidance: float = field(default=1.0, metadata=knob(
        "classifier-free guidance on the action (v_idle + g (v_action - v_idle)); 1 = off"))
    action_guidance_rescale: float = field(default=0.0, metadata=knob(
        "guidance rescale phi in [0, 1]: pull the guided velocity back to the conditional one's std, so a large "
        "action guidance does not over-saturate; 0 = off", flag="--guidance-rescale"))
    guidance_drops_caption: bool = field(default=False, metadata=knob(
        "joint guidance: the unguided pass also drops the caption (idle action, empty prompt)"))
    context_timestep: float = field(default=0.0, metadata=knob(
        "commit each generated block to the KV cache noised to this timestep in [0, 1000), so later blocks "
        "treat it as slightly uncertain (Diffusion Forcing); 0 = clean"))
    anchor_level: float = field(default=0.0, metadata=knob(
        "for a model with an anchor-level input: the noise std it is told its anchors and context carry; "
        "0 = exact"))
    start_from_anchor: bool = False

    def __post_init__(self) -> None:
        ts = tuple(float(t) for t in self.timesteps)
        object.__setattr__(self, "timesteps", ts)
        if not ts or any(not (0 < t <= 1000) for t in ts):
            raise ValueError(f"timesteps must be non-empty values in (0, 1000], got {ts}")
        if not 0.0 <= self.action_guidance_rescale <= 1.0:
            raise ValueError(f"action_guidance_rescale must be in [0, 1], got {self.action_guidance_rescale}")
        if not 0.0 <= self.context_timestep < 1000.0:
            raise ValueError(f"context_timestep must be in [0, 1000), got {self.context_timestep}")
        if not 0.0 <= self.anchor_level < 1.0:
            raise ValueError(f"anchor_level is a noise std in [0, 1), got {self.anchor_level}")
        if self.start_from_anchor and ts[0] >= 1000:
            raise ValueError(f"start_from_anchor needs a first timestep below 1000 (at 1000 the anchor gets no "
                             f"weight), got timesteps {ts}")

    @property
    def num_steps(self) -> int:
        return len(self.timesteps)

    def with_overrides(self, overrides: Mapping[str, Any] | None = None, **more: Any) -> SamplingConfig:
        """This config with the user's settings applied: each :data:`KNOBS` name, ``None`` = keep the
        value here; ``steps`` keeps the first N timesteps.

        Raises:
            ValueError: an unknown name (the message lists the knobs), a bad value, or ``steps``
                outside ``1..len(timesteps)``.
        """
        given = {k: v for k, v in {**(overrides or {}), **more}.items() if v is not None}
        unknown = sorted(set(given) - set(KNOBS))
        if unknown:
            raise ValueError(f"unknown sampling setting(s) {', '.join(unknown)}; the settings are: "
                             f"{', '.join(KNOBS)}")
        values = {k: KNOBS[k].parse(v) for k, v in given.items()}
        steps = values.pop("steps", None)
        ts = self.timesteps
        if steps is not None:
            if not 1 <= steps <= len(ts):
                raise ValueError(f"steps must be in 1..{len(ts)} (this sampler has {len(ts)} timesteps), got {steps}")
            ts = ts[:steps]
        return dataclasses.replace(self, timesteps=ts, **values)

    @classmethod
    def from_bundle(cls, sampler: Mapping[str, Any], timesteps: tuple[float, ...]) -> SamplingConfig:
        """The config of ``bundle.json``'s ``sampler`` section (its knobs by name, absent or null = the
        default) with ``timesteps`` (already warped from its ``steps`` and ``shift``)."""
        values = {k: KNOBS[k].parse(sampler[k]) for k in KNOBS if k != "steps" and sampler.get(k) is not None}
        if not values.get("action_guidance", 1.0):
            values["action_guidance"] = 1.0  # a bundle's 0 or null guidance means off, as 1 does
        return cls(timesteps=timesteps, **values)

    def to_bundle(self) -> dict[str, Any]:
        """The knob values as ``bundle.json``'s ``sampler`` section names them (timesteps excluded: a
        bundle stores ``steps`` and ``shift``)."""
        return {k: getattr(self, k) for k in KNOBS if k != "steps"}


def _knobs() -> dict[str, Knob]:
    out = {"steps": Knob("steps", "int", "use the first N denoising steps of the model's sampler", "--steps")}
    for f in dataclasses.fields(SamplingConfig):
        if "knob" in f.metadata:
            kind = {"float": "float", "bool": "bool", "int": "int"}[str(f.type)]
            out[f.name] = Knob(f.name, kind, f.metadata["knob"], f.metadata["flag"] or "--" + f.name.replace("_", "-"))
    return out


#: the user-overridable sampling settings, by name: ``steps`` and every :class:`SamplingConfig` field
#: declared with :func:`knob` metadata
KNOBS: dict[str, Knob] = _knobs()
