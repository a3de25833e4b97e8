"""The packages' one-way dependencies (DESIGN.md §2), string imports counted (issue 57).

``inferix`` is the engine: it imports nothing of the benchmark, the leaderboard or the reference
model's lab, has no training code and no import cycle. Imports inside functions count, and so do
string targets (``"package.module:attr"``, ``import_module("package.module")``): hiding an import
in a function or a string does not make it go away.
"""

from __future__ import annotations

import ast
import graphlib
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIRST_PARTY = ("inferix", "worldolympiad", "tracks", "scenarios", "leaderboard", "reference_world_lab")
#: a string that names a first-party module the way lazy loaders do: ``pkg.mod:attr`` or ``pkg.mod``
STRING_TARGET = re.compile(rf"^({'|'.join(FIRST_PARTY)})(\.[A-Za-z_]\w*)*(:[A-Za-z_][\w.]*)?$")


def _modules(package: str) -> dict[str, Path]:
    root = REPO / package
    out = {}
    for p in sorted(root.rglob("*.py")):
        name = ".".join(p.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        out[name] = p
    return out


def _is_module(dotted: str) -> bool:
    base = REPO.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in ``path``, at any depth, and of every string that names a
    first-party module (a lazy target)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and STRING_TARGET.match(node.value):
            module = node.value.split(":")[0]
            # "pkg.mod:attr" always counts; a dotted "pkg.mod" only when it is a module here (not a
            # file name such as "leaderboard.sqlite"); a bare "tracks" is a word, not a target
            if ":" in node.value or ("." in module and _is_module(module)):
                found.append((node.lineno, module))
    return found


def test_the_engine_imports_nothing_outside_itself():
    bad = [f"{p.relative_to(REPO)}:{line} imports {mod}"
           for p in _modules("inferix").values() for line, mod in _imports(p)
           if mod.split(".")[0] in FIRST_PARTY and mod.split(".")[0] != "inferix"]
    assert not bad, "\n".join(bad)


def test_the_core_reaches_plugins_only_through_registry_entries():
    """``worldolympiad`` names ``tracks``, ``scenarios``, ``leaderboard`` (and the lab) only in
    ``worldolympiad/registries.py``'s lazy entries; the leaderboard reads tracks through them too."""
    allowed = {"worldolympiad": {"worldolympiad/registries.py"}, "leaderboard": set()}
    leaves = {"worldolympiad": ("tracks", "scenarios", "leaderboard", "reference_world_lab"),
              "leaderboard": ("tracks", "scenarios", "reference_world_lab")}
    bad = [f"{p.relative_to(REPO)}:{line} names {mod}"
           for pkg, others in leaves.items() for p in _modules(pkg).values()
           if str(p.relative_to(REPO)) not in allowed[pkg]
           for line, mod in _imports(p) if mod.split(".")[0] in others]
    assert not bad, "\n".join(bad)


def test_the_engine_has_no_training_code():
    names = [m for m in _modules("inferix") if re.search(r"\.(train|training|recipe|trainer)(\.|$)", m)]
    assert not names, names
    optim = [f"{p.relative_to(REPO)}:{line}" for p in _modules("inferix").values()
             for line, mod in _imports(p) if mod.startswith("torch.optim")]
    assert not optim, f"optimisers belong to the lab (reference_world_lab): {optim}"


def _cycle(package: str) -> list[str] | None:
    """An import cycle among ``package``'s modules (imports in functions and string targets count),
    or ``None``; found by the standard library's topological sorter."""
    mods = _modules(package)

    def owner(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        for _, target in _imports(p):
            o = owner(target) if target.split(".")[0] == package else None
            if o and o != m and o != package and not m.startswith(o + "."):
                graph[m].add(o)
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as e:
        return list(e.args[1])
    return None


def test_no_import_cycle_inside_the_engine():
    assert _cycle("inferix") is None


def test_the_scan_sees_imports_hidden_in_functions_and_strings(tmp_path):
    """The scan itself: a lazy import and a string target are both found."""
    f = tmp_path / "m.py"
    f.write_text("def f():\n    from worldolympiad.registry import X\n\nTARGET = 'leaderboard.store:Store'\n"
                 "PKG = 'tracks.longvideo.cli'\nWORD = d['tracks']\nFILE = 'leaderboard.sqlite'\n")
    mods = {m for _, m in _imports(f)}
    assert {"worldolympiad.registry", "leaderboard.store", "tracks.longvideo.cli"} <= mods
    assert not {"tracks", "leaderboard.sqlite"} & mods  # a word and a file name are not targets


def test_the_shipped_bundle_and_its_random_twin_load_without_the_lab():
    """The engine serves ``reference-world`` with the lab (training code and configs) unimportable."""
    code = ("import sys; sys.modules['reference_world_lab'] = None\n"
            "from inferix.registry import load_model\n"
            "a = load_model('reference-world'); b = load_model('reference-world-random')\n"
            "assert a.experts and not b.experts, (a.experts, b.experts)\n"
            "print(type(a).__module__, len(a.actions))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("inferix.bundle")


def test_the_built_in_track_list_is_the_registry_s():
    """``worldolympiad.types.TRACKS`` (the default of ``--tracks``) names exactly the tracks
    ``worldolympiad/registries.py`` registers, each with a ``track.yaml`` whose name matches. (Read
    from the file: tests register tracks of their own in the live registry.)"""
    from worldolympiad.registries import TRACKS as REGISTRY
    from worldolympiad.types import TRACKS

    tree = ast.parse((REPO / "worldolympiad" / "registries.py").read_text())
    registered = {call.args[0].value for call in ast.walk(tree)
                  if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                  and call.func.attr == "register" and isinstance(call.func.value, ast.Name)
                  and call.func.value.id == "TRACKS" and isinstance(call.args[0], ast.Constant)}
    assert set(TRACKS) == registered
    for name in TRACKS:
        spec = REGISTRY.get(name).spec()
        assert spec is not None and spec.name == name
