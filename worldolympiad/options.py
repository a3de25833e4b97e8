"""Declared ``--option`` keys: every component that reads one declares it with type, default and help.

Keys are ``<component>.<key>``:

* ``<track>.<key>`` — declared in the track's ``track.yaml`` (``options:``; see
  :mod:`worldolympiad.trackspec`), or by a plugin track's ``OPTIONS`` class attribute;
* ``model.<key>`` — declared by the model adapter (``OPTIONS`` class attribute of the class
  the model registry names, e.g. :class:`worldolympiad.models.inferix.InferixModel`);
* ``video.<key>`` — how the evaluator stores generated videos (:data:`CORE_OPTIONS`).

:func:`check_options` rejects an unknown key (naming the close ones and every valid key) and a
value its type cannot read, before a run starts; ``worldolympiad ls options`` lists them all.
Values are kept as given, so a run's hash does not change when its options are checked.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "CORE_OPTIONS",
    "OptionError",
    "OptionSpec",
    "as_bool",
    "check_options",
    "declared_options",
    "model_options",
    "parse_option_specs",
]

TYPES = ("int", "float", "bool", "str", "path", "list")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def as_bool(value: Any) -> bool:
    """A ``bool`` option's value as given (``--option`` passes text: ``1/true/yes/on`` are true, any other text
    false; a YAML default or a Python caller passes a bool)."""
    if isinstance(value, str):
        return value.strip().lower() in _TRUE
    return bool(value)


class OptionError(ValueError):
    """An ``--option`` key nobody declares, or a value its declared type cannot read."""


@dataclass(frozen=True)
class OptionSpec:
    """One declared option.

    Attributes:
        type: ``int``, ``float``, ``bool``, ``str``, ``path`` or ``list`` (a JSON list or comma-separated).
        default: The value used when the option is not given (``None``: off / the component's own).
        help: One line for ``worldolympiad ls options``.
        choices: When not empty, the only values accepted (compared as lower-case strings).
    """

    type: str
    default: Any
    help: str
    choices: tuple[str, ...] = ()

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is not a valid value of this option, or ``None`` when it is."""
        if value is None:
            return None
        text = str(value).strip().lower() if not isinstance(value, bool) else str(value).lower()
        if self.choices and text in {c.lower() for c in self.choices}:
            return None
        if self.choices and self.type == "str":
            return f"expected one of {', '.join(self.choices)}, got {value!r}"
        try:
            if self.type == "int":
                if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                    raise ValueError
                int(value)
            elif self.type == "float":
                if isinstance(value, bool):
                    raise ValueError
                float(value)
            elif self.type == "bool":
                if not (isinstance(value, bool) or text in _TRUE | _FALSE):
                    raise ValueError
            elif self.type == "list":
                if not isinstance(value, (list, str)):
                    raise ValueError
            elif isinstance(value, (dict, list)):
                raise ValueError
        except (TypeError, ValueError):
            allowed = f" or one of {', '.join(self.choices)}" if self.choices else ""
            return f"expected {self.type}{allowed}, got {value!r}"
        return None


CORE_OPTIONS: dict[str, OptionSpec] = {
    "video.pix_fmt": OptionSpec("str", "yuv444p", "pixel format generated videos are stored and scored in "
                                "(yuv420p plays everywhere but erases the colour of 1-2 px sprites)"),
    "video.qp": OptionSpec("int", 18, "constant H.264 quantizer of stored generated videos"),
}


def parse_option_specs(where: str | Path, d: Any) -> dict[str, OptionSpec]:
    """``{key: {type, default, help[, choices]}}`` (a ``track.yaml``'s ``options``) → specs.

    Raises:
        ValueError: a malformed declaration; the message names ``where`` and the key.
    """
    if d is None:
        return {}
    if not isinstance(d, Mapping):
        raise ValueError(f"{where}: 'options' must map each key to {{type, default, help}}, got {d!r}")
    out: dict[str, OptionSpec] = {}
    for key, spec in d.items():
        if not isinstance(spec, Mapping) or not {"type", "default", "help"} <= set(spec):
            raise ValueError(f"{where}: options.{key} must be a mapping with type, default and help, got {spec!r}")
        if spec["type"] not in TYPES:
            raise ValueError(f"{where}: options.{key}.type must be one of {', '.join(TYPES)}, got {spec['type']!r}")
        choices = tuple(str(c) for c in spec.get("choices") or ())
        out[str(key)] = OptionSpec(str(spec["type"]), spec["default"], str(spec["help"]).strip(), choices)
    return out


def model_options(model: str) -> dict[str, OptionSpec] | None:
    """``OPTIONS`` of the adapter class ``model`` resolves to (or its ``options_for(arg)``); ``None`` when it
    declares nothing (a plugin, or a ``py:`` class whose ``__init__`` takes ``**kwargs``): any key."""
    from worldolympiad.registries import MODELS, parse_spec

    try:
        prefix, arg = parse_spec(model)
        cls = MODELS.get(prefix)
    except (KeyError, ValueError, ImportError, AttributeError):
        return None
    options_for = getattr(cls, "options_for", None)  # a kind whose keys depend on ARG (py:MODULE:CLASS)
    declared = options_for(arg) if callable(options_for) else getattr(cls, "OPTIONS", None)
    return dict(declared) if isinstance(declared, Mapping) else None


def declared_options(model: str | None = None) -> dict[str, OptionSpec]:
    """Every declared key (``component.key``): the core's, every registered track's, and ``model``'s.

    Args:
        model: A model SPEC; its adapter's ``model.*`` keys are included (none when ``None``).
    """
    from worldolympiad.registries import TRACKS

    out = dict(CORE_OPTIONS)
    for name in TRACKS.names():
        cls = TRACKS.get(name)
        getter = getattr(cls, "declared_options", None)
        for key, spec in (getter() if getter else {}).items():
            out[f"{name}.{key}"] = spec
    for key, spec in (model_options(model) or {}).items() if model else ():
        out[f"model.{key}"] = spec
    return out


def _component(key: str, declared: Mapping[str, OptionSpec]) -> str:
    """The component ``key`` names (``physics``), or the declared one closest to a misspelt one."""
    component = key.partition(".")[0]
    known = sorted({k.partition(".")[0] for k in declared})
    if component in known:
        return component
    near = difflib.get_close_matches(component, known, n=1, cutoff=0.6)
    return near[0] if near else component


def _close_keys(key: str, declared: Mapping[str, OptionSpec]) -> list[str]:
    """Declared keys close to ``key``: within its component by the part after the dot (so the shared
    ``physics.`` prefix does not make every physics key look close), else among all keys."""
    component, rest = _component(key, declared), key.partition(".")[2]
    same = {k.partition(".")[2]: k for k in declared if k.partition(".")[0] == component}
    if same:
        return [same[k] for k in difflib.get_close_matches(rest, list(same), n=3, cutoff=0.6)]
    return difflib.get_close_matches(key, list(declared), n=3, cutoff=0.6)


def check_options(options: Mapping[str, Any], model: str | None = None) -> None:
    """Reject unknown keys and unreadable values before a run starts.

    ``model.*`` keys are checked against ``model``'s adapter when it declares ``OPTIONS``
    (a plugin adapter that declares none takes any ``model.*`` key).

    Raises:
        OptionError: one line per bad key: the key, the close valid keys, then every valid key.
    """
    declared = declared_options(model)
    open_model = model is not None and model_options(model) is None
    problems, bad = [], []
    for key, value in options.items():
        if key in declared:
            why = declared[key].problem(value)
            if why:
                problems.append(f"--option {key}: {why}")
                bad.append(key)
        elif not (open_model and key.startswith("model.")):
            close = _close_keys(key, declared)
            hint = f" (did you mean {' or '.join(close)}?)" if close else ""
            problems.append(f"unknown --option {key}{hint}")
            bad.append(key)
    if problems:
        component = {_component(k, declared) for k in bad}
        valid = sorted(k for k in declared if k.split(".", 1)[0] in component) or sorted(declared)
        raise OptionError("; ".join(problems) + f"; valid keys: {', '.join(valid)} "
                          "(`worldolympiad ls options` lists them all with types, defaults and help)")
