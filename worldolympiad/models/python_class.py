"""``py:package.module:Class`` and ``py:path/to/file.py:Class`` — a user's own :class:`WorldModel`.

The class is imported where the model is built (in each worker), constructed with the options its
``__init__`` accepts, and used as is::

    evaluate-model --model py:my_pkg.model:MyModel --suite smoke --option model.scale=0.5
    evaluate-model --model py:models/mine.py:MyModel --suite smoke

* ``:Class`` may be left out when the module defines exactly one ``WorldModel`` subclass.
* A module name is looked up on ``sys.path`` and then in the current folder; a file is loaded
  from its path (its folder is put on ``sys.path`` so it can import its neighbours).
* Options (``--option model.KEY=VALUE``): the class's own ``OPTIONS`` when it declares them
  (:class:`worldolympiad.options.OptionSpec`); else the keyword arguments of its ``__init__``
  (typed by their annotation or default); an ``__init__`` with ``**kwargs`` takes any key.
  Values are converted to the declared type. ``cache_dir`` (the reference cache) and ``device``
  are passed too when ``__init__`` names them or takes ``**kwargs``.
* A class whose ``__init__`` has a required positional parameter gets the spec's argument
  there (``mymodel:ARG`` for a plugin; ``None`` for ``py:``), as built-in adapters do.

The same loader serves third-party plugins (``[project.entry-points."worldolympiad.plugins"]``
``"models.NAME" = "pkg.module:Class"``, see :mod:`worldolympiad.registry`): :func:`plugin_model`
wraps an entry point's value so a plain ``WorldModel`` subclass works there too.

Every way the spec can be wrong (no module, no file, no class, not a ``WorldModel``, a class that
overrides neither ``generate`` nor ``rollout``) is a one-line :class:`ModelSpecError` with the fix,
raised by ``evaluate-model`` before any work (exit 2).
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from worldolympiad.models.base import ModelSpecError, WorldModel
from worldolympiad.options import OptionSpec

__all__ = ["PythonClassModels", "load_class", "plugin_model"]

# what the evaluator passes every adapter besides the user's model.* options
_RUNTIME_KEYS = ("cache_dir", "device")
_ANNOTATION_TYPES = {"int": "int", "float": "float", "bool": "bool", "str": "str", "Path": "path", "list": "list"}
USAGE = "--model py:package.module:Class or py:path/to/file.py:Class"


def _split(target: str) -> tuple[str, str | None]:
    """``"pkg.mod:Class"`` → ``("pkg.mod", "Class")``; ``"dir/f.py"`` → ``("dir/f.py", None)``."""
    where, sep, name = target.rpartition(":")
    if not sep or "/" in name or name.endswith(".py"):
        return target, None
    return where, name or None


def _is_file(where: str) -> bool:
    return where.endswith(".py") or os.sep in where or "/" in where


def _import_file(path: Path, shown: str) -> Any:
    if not path.is_file():
        raise ModelSpecError(f"{shown}: no file {path}; pass an existing .py file ({USAGE})")
    path = path.resolve()
    mod_name = f"_worldolympiad_user_{path.stem}_{hashlib.sha1(str(path).encode()).hexdigest()[:8]}"
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))  # so the file can import its neighbours
    spec = importlib.util.spec_from_file_location(mod_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module  # dataclasses and pickling look the module up here
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        del sys.modules[mod_name]
        raise ModelSpecError(f"{shown}: running {path} failed: {type(e).__name__}: {_one_line(e)}; fix the file") from e
    return module


def _import_module(name: str, shown: str) -> Any:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        missing = e.name or name
        cwd = os.getcwd()
        if (name == missing or name.startswith(missing + ".")) and cwd not in sys.path and "" not in sys.path:
            sys.path.append(cwd)  # `python script.py` would find a module in the current folder; so do we
            try:
                return importlib.import_module(name)
            except ModuleNotFoundError:
                pass
        if name == missing or name.startswith(missing + "."):
            raise ModelSpecError(f"{shown}: no module named {missing!r}; install the package that provides it or put "
                                 f"its folder on PYTHONPATH, or load a file directly with py:path/to/file.py:Class") from None
        raise ModelSpecError(f"{shown}: importing {name} failed: it needs module {missing!r}, which is not "
                             "installed; install it") from e
    except Exception as e:
        raise ModelSpecError(f"{shown}: importing {name} failed: {type(e).__name__}: {_one_line(e)}; "
                             "fix the module") from e


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())


def _world_models_in(module: Any) -> list[str]:
    return sorted(n for n, v in vars(module).items()
                  if inspect.isclass(v) and issubclass(v, WorldModel) and v is not WorldModel
                  and getattr(v, "__module__", None) == module.__name__)


def load_class(target: str, shown: str | None = None) -> type[WorldModel]:
    """Import ``pkg.module[:Class]`` or ``path/to/file.py[:Class]`` and return the ``WorldModel`` subclass.

    Args:
        target: what follows ``py:``.
        shown: how to name the spec in messages (default ``--model py:TARGET``).

    Raises:
        ModelSpecError: one line saying what is wrong and how to fix it.
    """
    shown = shown or f"--model py:{target}"
    if not target:
        raise ModelSpecError(f"{shown}: name the class: {USAGE}")
    where, name = _split(target)
    module = _import_file(Path(where).expanduser(), shown) if _is_file(where) else _import_module(where, shown)
    found = _world_models_in(module)
    if name is None:
        if len(found) != 1:
            which = f"it defines {', '.join(found)}" if found else "it defines no WorldModel subclass"
            raise ModelSpecError(f"{shown}: name the class ({which}): {USAGE}")
        name = found[0]
    obj: Any = module
    for part in name.split("."):
        if not hasattr(obj, part):
            close = difflib.get_close_matches(name, found or [n for n in vars(module) if not n.startswith("_")], n=3)
            hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            listed = f" WorldModel subclasses there: {', '.join(found)}." if found else ""
            raise ModelSpecError(f"{shown}: {where} has no {name!r}.{hint}{listed}")
        obj = getattr(obj, part)
    if not (inspect.isclass(obj) and issubclass(obj, WorldModel)):
        what = f"class {obj.__name__}" if inspect.isclass(obj) else type(obj).__name__
        raise ModelSpecError(f"{shown}: {name} is a {what}, not a WorldModel; subclass "
                             "worldolympiad.models.base.WorldModel and override generate(case, seed) or rollout")
    if obj.generate is WorldModel.generate and obj.rollout is WorldModel.rollout:
        raise ModelSpecError(f"{shown}: {name} overrides neither generate(case, seed) nor rollout(case, controls, "
                             "seed); override one of them")
    return obj


def _init_params(cls: type) -> tuple[list[inspect.Parameter], bool]:
    """``__init__``'s parameters after ``self`` and whether it takes ``**kwargs``."""
    init: Any = cls.__init__  # type: ignore[misc]
    if init is object.__init__:
        return [], False
    try:
        params = list(inspect.signature(init).parameters.values())[1:]
    except (TypeError, ValueError):
        return [], True
    return ([p for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)],
            any(p.kind is p.VAR_KEYWORD for p in params))


def _positional(params: list[inspect.Parameter]) -> inspect.Parameter | None:
    """The required positional parameter that receives the spec's argument, if any."""
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty:
            return p
    return None


def class_options(cls: type[WorldModel]) -> dict[str, OptionSpec] | None:
    """The ``model.*`` keys ``cls`` reads: its own ``OPTIONS``, else its ``__init__`` keywords; None: any key."""
    if cls.OPTIONS is not WorldModel.OPTIONS:
        return dict(cls.OPTIONS)
    params, var_kw = _init_params(cls)
    if var_kw:
        return None
    arg = _positional(params)
    out: dict[str, OptionSpec] = {}
    for p in params:
        if p is arg or p.name in _RUNTIME_KEYS or p.kind is p.POSITIONAL_ONLY:
            continue
        default = None if p.default is p.empty else p.default
        ann = p.annotation if isinstance(p.annotation, str) else getattr(p.annotation, "__name__", "")
        kind = _ANNOTATION_TYPES.get(str(ann).split("|")[0].strip())
        if kind is None:
            kind = {bool: "bool", int: "int", float: "float", list: "list"}.get(type(default), "str")
        out[p.name] = OptionSpec(kind, default, f"keyword argument of {cls.__name__}.__init__")
    return out


def _convert(spec: OptionSpec | None, value: Any) -> Any:
    """A ``--option`` value (kept as written, usually a string) as the declared type."""
    if spec is None or not isinstance(value, str):
        return value
    if spec.type == "int":
        return int(value)
    if spec.type == "float":
        return float(value)
    if spec.type == "bool":
        return value.strip().lower() in {"1", "true", "yes", "on"}
    if spec.type == "list":
        text = value.strip()
        return json.loads(text) if text.startswith("[") else [v.strip() for v in text.split(",") if v.strip()]
    if spec.type == "path":
        return Path(value).expanduser()
    return value


def construct(cls: type[WorldModel], arg: str | None, options: Mapping[str, Any], shown: str) -> WorldModel:
    """``cls`` built with ``arg`` (when it takes one) and the options its ``__init__`` accepts, converted."""
    params, var_kw = _init_params(cls)
    declared = class_options(cls) or {}
    names = {p.name for p in params if p.kind is not p.POSITIONAL_ONLY}
    kwargs: dict[str, Any] = {}
    for key, value in options.items():
        if var_kw or key in names:
            kwargs[key] = _convert(declared.get(key), value)
        elif key not in _RUNTIME_KEYS:
            raise ModelSpecError(f"{shown}: {cls.__name__}.__init__ takes no {key!r}; add a keyword argument "
                                 f"{key}=... (or **options) to it, or drop --option model.{key}")
    positional = _positional(params)
    if positional is not None:
        kwargs.pop(positional.name, None)
        return cls(arg, **kwargs)  # type: ignore[call-arg]
    if arg:
        raise ModelSpecError(f"{shown}: {cls.__name__} takes no argument; give its __init__ a first parameter "
                             "to receive it, or drop the ':ARG'")
    return cls(**kwargs)


class PythonClassModels:
    """The ``py`` entry of the model registry: ``factory(arg, **options) -> WorldModel`` plus the checks.

    Args:
        target: a fixed ``module:Class`` (a plugin's entry-point value); ``None`` for ``py:TARGET``, where
            the spec's argument names the class.
        name: the registry name, for messages.
    """

    def __init__(self, target: str | None = None, name: str = "py") -> None:
        self.target = target
        self.name = name

    def _resolve(self, arg: str | None) -> tuple[type[WorldModel], str | None, str]:
        if self.target is None:
            return load_class(arg or "", f"--model py:{arg or ''}"), None, f"--model py:{arg or ''}"
        shown = f"--model {self.name}" + (f":{arg}" if arg else "")
        return load_class(self.target, f"{shown} (plugin {self.target})"), arg, shown

    def _plugin_factory(self) -> Any:
        """A plugin whose entry point names a factory function ``(arg, **options)``, not a class; else None."""
        if self.target is None:
            return None
        from worldolympiad.registry import import_target

        try:
            obj = import_target(self.target)
        except Exception:  # noqa: BLE001 - load_class reports it in one line
            return None
        return obj if callable(obj) and not inspect.isclass(obj) else None

    def __call__(self, arg: str | None = None, **options: Any) -> WorldModel:
        factory = self._plugin_factory()
        if factory is not None:
            return factory(arg, **options)  # type: ignore[no-any-return]
        cls, model_arg, shown = self._resolve(arg)
        return construct(cls, model_arg, options, shown)

    def check(self, arg: str | None) -> None:
        """Import the class and check that it is a usable ``WorldModel`` (nothing is constructed)."""
        if self._plugin_factory() is None:
            self._resolve(arg)

    def options_for(self, arg: str | None) -> dict[str, OptionSpec] | None:
        """The ``model.*`` keys the class reads (None: any key, or the class cannot be loaded yet)."""
        if self._plugin_factory() is not None:
            return None
        try:
            return class_options(self._resolve(arg)[0])
        except ModelSpecError:
            return None  # check_model_spec says why, in one line

    def fingerprint(self, arg: str | None) -> str | None:
        """Digest of the source file the class lives in (a changed model starts a new run)."""
        try:
            cls = self._resolve(arg)[0]
            source = inspect.getsourcefile(cls)
            return hashlib.sha256(Path(source).read_bytes()).hexdigest()[:16] if source else None
        except (ModelSpecError, OSError, TypeError):
            return None


def plugin_model(name: str, value: str) -> PythonClassModels:
    """The model registry's target for a ``worldolympiad.plugins`` entry point ``models.NAME = VALUE``."""
    return PythonClassModels(value, name)


PY = PythonClassModels()
