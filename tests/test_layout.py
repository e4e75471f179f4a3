"""The package's layout: no import cycles, and every defense in its family folder.

The import graph is read from the source with :mod:`ast`, not by importing: every
``import`` and ``from ... import`` anywhere in a module (at the top, inside functions,
under ``if TYPE_CHECKING``) is an edge, relative imports resolved. ``from a import b``
is an edge to ``a.b`` when that is a module, else to ``a``. Importing a module also
runs its packages' ``__init__``, but that is not counted as an edge: a package may
import its own sub-modules to re-export their names.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import shieldbench
from shieldbench.defenses import registry

ROOT = Path(shieldbench.__file__).parent
FAMILIES = ("rules", "models", "adapters", "remote", "compose")


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = ("shieldbench", *path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imported(name: str, path: Path, modules: dict[str, Path]) -> Iterator[str]:
    """The package modules that module ``name`` (at ``path``) imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join([*base_parts, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            subs = [f"{base}.{alias.name}" for alias in node.names]
            targets = [sub if sub in modules else base for sub in subs]
        else:
            continue
        for target in targets:
            # ``import a.b.c`` names the deepest module of the package it reaches
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                yield target


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: set(_imported(name, path, modules)) for name, path in modules.items()}


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as ``[a, b, ..., a]``, or ``None`` (iterative DFS)."""
    done: set[str] = set()
    for start in sorted(graph):
        if start in done:
            continue
        stack: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        on_path = [start]
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                on_path.pop()
                done.add(node)
            elif child in on_path:
                return [*on_path[on_path.index(child) :], child]
            elif child not in done:
                stack.append((child, iter(sorted(graph.get(child, ())))))
                on_path.append(child)
    return None


def test_the_cycle_finder_finds_a_cycle_and_names_it() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _find_cycle(graph) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_the_graph_sees_relative_and_function_level_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    source = "def f():\n    from . import b\n    from .b import x\n    import pkg.c\n"
    (pkg / "a.py").write_text(source, encoding="utf-8")
    modules = {"pkg": pkg / "__init__.py", "pkg.a": pkg / "a.py"}
    modules |= {"pkg.b": pkg / "b.py", "pkg.c": pkg / "c.py"}
    assert set(_imported("pkg.a", pkg / "a.py", modules)) == {"pkg.b", "pkg.c"}


@pytest.mark.slow
def test_the_package_has_no_import_cycle() -> None:
    graph = _graph()
    assert len(graph) > 100  # the walk found the package
    assert (
        "shieldbench.defenses.compose._composite" in graph["shieldbench.defenses.compose._routing"]
    )
    cycle = _find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


@pytest.mark.parametrize("family", FAMILIES)
def test_every_defense_family_is_a_package(family: str) -> None:
    assert (ROOT / "defenses" / family / "__init__.py").is_file()


def test_every_defense_subfolder_with_code_is_a_package() -> None:
    for folder in (ROOT / "defenses").iterdir():
        if folder.is_dir() and any(folder.rglob("*.py")):
            assert (folder / "__init__.py").is_file(), folder


def test_every_builtin_defense_lives_in_a_family_package() -> None:
    prefixes = tuple(f"shieldbench.defenses.{family}." for family in FAMILIES)
    # the output-side detectors (secrets, pii, leak, refusal, none) are registered by
    # the judges package that implements them (issue 14)
    prefixes += ("shieldbench.judges._defenses",)
    homes = {
        info.name: info.factory.__module__
        for info in registry
        if info.origin == "builtin" and info.factory.__module__.startswith("shieldbench.")
    }
    assert len(homes) >= 20
    for name, module in homes.items():
        assert module.startswith(prefixes), f"{name!r} is registered in {module}"
    expected = {"pattern": "rules", "semantic": "models", "promptsafe": "adapters"}
    expected |= {"python": "adapters", "http": "remote", "any": "compose"}
    for name, family in expected.items():
        assert homes[name].split(".")[2] == family, (name, homes[name])


# The layers of issue 32: training apart from the run time, experiments apart from both.
TRAIN = "shieldbench.train"
TRAIN_IMPORTERS = frozenset({"shieldbench.cli._train"})  # the `train` command, on use
SHARED_HELPERS = frozenset({"shieldbench._lazy"})  # project-wide, not another package's


def _in_train(module: str) -> bool:
    return module == TRAIN or module.startswith(TRAIN + ".")


def _top_level_imports(path: Path) -> Iterator[str]:
    """The first component of every absolute import in the file at ``path``."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            yield node.module.split(".")[0]


@pytest.mark.slow
def test_only_the_train_command_imports_the_train_package() -> None:
    graph = _graph()
    assert "shieldbench.train.shieldguard._mix" in graph  # the walk sees the package
    offenders = sorted(
        f"{name} imports {target}"
        for name, targets in graph.items()
        if not _in_train(name) and name not in TRAIN_IMPORTERS
        for target in targets
        if _in_train(target)
    )
    assert not offenders, "the run time must not import training: " + "; ".join(offenders)


@pytest.mark.slow
def test_the_train_package_imports_other_packages_public_names_only() -> None:
    graph = _graph()
    offenders = sorted(
        f"{name} imports {target}"
        for name, targets in graph.items()
        if _in_train(name)
        for target in targets
        if not _in_train(target)
        and target not in SHARED_HELPERS
        and any(part.startswith("_") for part in target.split("."))
    )
    assert not offenders, "; ".join(offenders)


@pytest.mark.slow
def test_nothing_in_the_package_imports_research_or_benchmarks() -> None:
    offenders = sorted(
        f"{path.relative_to(ROOT)} imports {top}"
        for path in ROOT.rglob("*.py")
        for top in _top_level_imports(path)
        if top in {"research", "benchmarks"}
    )
    assert not offenders, "; ".join(offenders)


def test_the_rules_see_a_forbidden_import(tmp_path: Path) -> None:
    """The checks above would fail on the imports they forbid (not vacuous)."""
    source = "from research.shieldguard_eval import paired\nimport benchmarks.bench_core\n"
    (tmp_path / "m.py").write_text(source, encoding="utf-8")
    assert list(_top_level_imports(tmp_path / "m.py")) == ["research", "benchmarks"]
    pkg = tmp_path / "shieldbench"
    (pkg / "defenses").mkdir(parents=True)
    (pkg / "defenses" / "x.py").write_text("def f():\n    from shieldbench.train import t\n")
    modules = {"shieldbench.defenses.x": pkg / "defenses" / "x.py", TRAIN: pkg / "train.py"}
    assert set(_imported("shieldbench.defenses.x", pkg / "defenses" / "x.py", modules)) == {TRAIN}


@pytest.mark.slow
def test_the_run_time_never_loads_the_train_package() -> None:
    """Import the command line and every built-in defense: no ``shieldbench.train`` module."""
    code = (
        "import sys, shieldbench.cli, shieldbench.defenses._builtin\n"
        "from shieldbench.defenses import registry\n"
        "names = [info.name for info in registry]\n"
        "print(sorted(m for m in sys.modules if m.startswith('shieldbench.train')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


# --- layers and private modules (issue 32) ---------------------------------------------
#
# Every top-level package (and top-level module) of shieldbench sits on a layer; a module
# may import from its own layer or below, never above. Within a layer the cycle test
# above keeps imports one-way. A name not in LAYERS fails the test: a new package must
# be placed. Reading a layer bottom-up gives the order a newcomer should read the code in.
LAYERS: tuple[frozenset[str], ...] = tuple(
    frozenset(layer.split())
    for layer in (
        # shared vocabulary: records, errors, specs, the registry, run-file codecs, and
        # the root's own private helpers (shieldbench._lazy, _lru, _views, ...)
        "<private> types errors spec registry identity locking config runfiles runio charts",
        "metrics",
        "datasets",
        "defenses",  # and the one guarded-call mechanism (timeout, retries, dedup)
        "targets",
        "judges",
        "engine",
        "attacks reports alerts gate",
        "store",
        "service trend benchmark",
        "monitor view train",
        "cli __main__",
    )
)
# Imports that run up the layers today and are being moved away, each with its reason.
# Keep this short: an entry is a debt, not a permission.
KNOWN_UPWARD: set[tuple[str, str]] = set()


def _package_of(module: str) -> str:
    """The top-level package (or module) ``module`` belongs to; ``<private>`` for the
    root's private helpers (``shieldbench._lru``), which every package may use."""
    parts = module.split(".")
    if len(parts) == 1:
        return "shieldbench"
    return "<private>" if parts[1].startswith("_") and parts[1] != "__main__" else parts[1]


def _layer_of(package: str) -> int:
    for i, layer in enumerate(LAYERS):
        if package in layer:
            return i
    raise AssertionError(f"{package!r} is on no layer: add it to LAYERS in tests/test_layout.py")


def _private_owner(module: str) -> str | None:
    """The package whose private module ``module`` is (``shieldbench.a._b.c`` -> ``a``),
    or None when every part of its dotted name is public (or it is the root's)."""
    parts = module.split(".")
    for i, part in enumerate(parts[1:], start=1):
        if part.startswith("_") and part != "__main__":
            return None if i == 1 else _package_of(".".join(parts[:i]))
    return None


def _upward_imports(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for name, targets in sorted(graph.items()):
        if name == "shieldbench":  # the root re-exports the public API from above
            continue
        for target in sorted(targets):
            here, there = _package_of(name), _package_of(target)
            if there == "shieldbench" or (name, there) in KNOWN_UPWARD:
                continue
            if _layer_of(there) > _layer_of(here):
                found.append(f"{name} ({here}) imports {target} ({there})")
    return found


def _private_imports(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for name, targets in sorted(graph.items()):
        for target in sorted(targets):
            owner = _private_owner(target)
            if owner is not None and owner != _package_of(name):
                found.append(f"{name} imports {target}, private to {owner}")
    return found


def test_the_layer_helpers_place_modules_and_find_private_owners() -> None:
    assert _package_of("shieldbench.engine._threads") == "engine"
    assert _package_of("shieldbench._lru") == "<private>"
    assert _package_of("shieldbench.trend") == "trend"
    assert _private_owner("shieldbench.defenses.adapters._python_spec") == "defenses"
    assert _private_owner("shieldbench.reports._charts") == "reports"
    assert _private_owner("shieldbench.defenses.remote") is None
    assert _private_owner("shieldbench._lazy") is None
    assert _layer_of("defenses") < _layer_of("engine") < _layer_of("service")


def test_the_checks_catch_an_upward_and_a_private_import() -> None:
    graph = {
        "shieldbench.defenses._x": {"shieldbench.engine"},
        "shieldbench.engine._y": {"shieldbench.defenses._protocol", "shieldbench.engine._z"},
        "shieldbench.trend": {"shieldbench.reports._charts", "shieldbench._lru"},
        "shieldbench.cli._a": {"shieldbench.engine", "shieldbench.defenses"},
    }
    assert _upward_imports(graph) == [
        "shieldbench.defenses._x (defenses) imports shieldbench.engine (engine)"
    ]
    assert _private_imports(graph) == [
        "shieldbench.engine._y imports shieldbench.defenses._protocol, private to defenses",
        "shieldbench.trend imports shieldbench.reports._charts, private to reports",
    ]
    with pytest.raises(AssertionError, match="on no layer"):
        _layer_of("newpackage")


@pytest.mark.slow
def test_no_import_runs_up_the_layers() -> None:
    graph = _graph()
    for name in graph:
        if name != "shieldbench":
            _layer_of(_package_of(name))  # every package is placed
    upward = _upward_imports(graph)
    assert not upward, "imports that run up the layers:\n" + "\n".join(upward)


@pytest.mark.slow
def test_packages_import_only_each_others_public_names() -> None:
    private = _private_imports(_graph())
    assert not private, (
        "imports of another package's private module (export the name in the owning"
        " package's __init__ and import it from there):\n" + "\n".join(private)
    )


def test_the_mechanisms_page_names_public_homes_that_exist() -> None:
    """docs/development/mechanisms.md: every name it gives a home is public there."""
    import importlib
    import re

    page = ROOT.parents[1] / "docs" / "development" / "mechanisms.md"
    rows = [
        line for line in page.read_text(encoding="utf-8").splitlines() if "| `shieldbench." in line
    ]
    assert len(rows) >= 5
    for row in rows:
        home = row.split("|")[2]
        match = re.match(r"\s*`(shieldbench[\w.]*)`:(.*?)(?:\(in |$)", home)
        assert match, row
        package = importlib.import_module(match[1])
        names = re.findall(r"`(\w+)`", match[2])
        assert names, row
        for name in names:
            assert name in package.__all__, f"{match[1]}.{name} is not public"
