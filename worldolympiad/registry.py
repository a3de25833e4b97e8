"""A generic, lazy registry (lm-evaluation-harness style).

Entries are registered either eagerly (decorator / object) or lazily as a
``"module:attr"`` string that is imported on first :meth:`Registry.get`. Third-party
packages add entries through the entry-point group ``worldolympiad.plugins`` with
names of the form ``<registry>.<name>``::

    [project.entry-points."worldolympiad.plugins"]
    "models.mymodel" = "my_pkg.model:MyWorldModel"
    "tracks.mytrack" = "my_pkg.track:MyTrack"

A model plugin names a plain ``WorldModel`` subclass (or a factory ``(arg, **options)``); the
model registry wraps it (:mod:`worldolympiad.models.python_class`), so ``--model mymodel`` gets
the same options and one-line errors as ``--model py:my_pkg.model:MyWorldModel``.

Listing names (:meth:`Registry.names`, :meth:`Registry.describe`) never imports the
targets, so ``worldolympiad ls`` stays instant.
"""

from __future__ import annotations

import difflib
import importlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")

ENTRY_POINT_GROUP = "worldolympiad.plugins"


class UnknownNameError(KeyError):
    """Lookup of a name that is not registered; the message lists the alternatives."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain
        return str(self.args[0]) if self.args else ""


@dataclass
class _Entry:
    name: str
    target: Any  # the object, or a "module:attr" string until loaded
    description: str = ""
    source: str = "builtin"
    meta: dict[str, Any] | None = None

    @property
    def loaded(self) -> bool:
        return not isinstance(self.target, str)


def import_target(spec: str) -> Any:
    """Import ``"package.module:attr.sub"`` and return the attribute."""
    if ":" not in spec:
        raise ValueError(f"lazy target must look like 'module:attr', got {spec!r}")
    mod_name, attr = spec.split(":", 1)
    obj: Any = importlib.import_module(mod_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


class Registry(Generic[T]):
    """Name → object map with lazy targets, plugins and helpful errors.

    Args:
        kind: what is registered (``"models"``, ``"tracks"``...); also the prefix of this
            registry's entry-point names.
        providers: modules imported on first lookup; they register their own entries.
    """

    def __init__(self, kind: str, providers: tuple[str, ...] = (), plugin_target: str | None = None) -> None:
        self.kind = kind
        # "module:attr" of ``(name, entry-point value) -> target``: how this registry turns a plugin's
        # entry point into an entry (models wrap a plain WorldModel subclass; None: the value itself)
        self._plugin_target = plugin_target
        self._entries: dict[str, _Entry] = {}
        self._plugins_loaded = False
        # Modules imported on first lookup that register entries themselves
        # (e.g. ``scenarios.perturb`` fills PERTURBATIONS). They must stay light: no torch.
        self._providers = providers

    # ---------------------------------------------------------------- register
    def register(
        self,
        name: str,
        target: T | str | None = None,
        *,
        description: str = "",
        override: bool = False,
        **meta: Any,
    ) -> Callable[[T], T] | None:
        """Register ``target`` under ``name``; with no target, return a decorator.

        Raises:
            ValueError: ``name`` is already registered (pass ``override=True`` to replace it).
        """
        if target is None:

            def deco(obj: T) -> T:
                self._add(name, obj, description or _first_doc_line(obj), override, meta)
                return obj

            return deco
        self._add(name, target, description or _first_doc_line(target), override, meta)
        return None

    def _add(self, name: str, target: Any, description: str, override: bool, meta: dict[str, Any], source: str = "builtin") -> None:
        if not name or not isinstance(name, str):
            raise ValueError(f"{self.kind}: name must be a non-empty string, got {name!r}")
        if name in self._entries and not override:
            raise ValueError(
                f"{self.kind}: {name!r} is already registered (by {self._entries[name].source}); "
                "pick another name or pass override=True"
            )
        self._entries[name] = _Entry(name, target, description, source, meta or None)

    def unregister(self, name: str) -> None:
        self._entries.pop(name, None)

    # ------------------------------------------------------------------ lookup
    def get(self, name: str) -> T:
        """Return the object registered as ``name``, importing it if it is lazy.

        Raises:
            UnknownNameError: with "did you mean" suggestions and the full list.
            ImportError: the lazy target could not be imported (message says which extra to install).
        """
        entry = self._entry(name)
        if isinstance(entry.target, str):
            spec = entry.target
            try:
                entry.target = import_target(spec)
            except ImportError as e:
                raise ImportError(
                    f"{self.kind} {name!r} needs {spec!r}, which failed to import: {e}. "
                    "Install the extra it needs (see README 'Install')."
                ) from e
        return entry.target  # type: ignore[no-any-return]

    def target(self, name: str) -> str:
        """``"module:attr"`` of the entry ``name``, without importing it (a loaded entry is named
        by its object's module and qualified name)."""
        t = self._entry(name).target
        return t if isinstance(t, str) else f"{t.__module__}:{t.__qualname__}"

    def _entry(self, name: str) -> _Entry:
        self._load_plugins()
        if name not in self._entries:
            close = difflib.get_close_matches(name, list(self._entries), n=3, cutoff=0.5)
            hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            raise UnknownNameError(
                f"unknown {self.kind[:-1] if self.kind.endswith('s') else self.kind} {name!r}.{hint} "
                f"Known: {', '.join(sorted(self._entries)) or '(none)'}."
            )
        return self._entries[name]

    def __contains__(self, name: object) -> bool:
        self._load_plugins()
        return name in self._entries

    def names(self) -> list[str]:
        self._load_plugins()
        return sorted(self._entries)

    def describe(self, name: str) -> dict[str, Any]:
        """Metadata of an entry without importing it."""
        e = self._entry(name)
        return {"name": e.name, "description": e.description, "source": e.source, **(e.meta or {})}

    def items(self) -> Iterator[tuple[str, dict[str, Any]]]:
        for n in self.names():
            yield n, self.describe(n)

    # ----------------------------------------------------------------- plugins
    def _load_plugins(self) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        for mod in self._providers:
            try:
                importlib.import_module(mod)
            except ImportError as e:
                logger.debug("%s provider %s not importable: %s", self.kind, mod, e)
        from importlib.metadata import entry_points

        prefix = self.kind + "."
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            if not ep.name.startswith(prefix):
                continue
            name = ep.name[len(prefix):]
            dist = getattr(ep, "dist", None)
            source = f"plugin {dist.name}" if dist is not None else "plugin"
            if name in self._entries:
                logger.warning("%s plugin %r from %s shadows an existing entry; ignored", self.kind, name, source)
                continue
            target = ep.value if self._plugin_target is None else import_target(self._plugin_target)(name, ep.value)
            self._add(name, target, "", False, {}, source=source)


def _first_doc_line(obj: Any) -> str:
    if isinstance(obj, str):
        return ""
    doc = getattr(obj, "__doc__", None) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""
