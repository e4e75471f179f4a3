"""Start-up stays fast: importing the library or the command line pulls in no heavy
third-party module; those are imported by the functions that use them.

Nothing here is timed (``benchmarks/startup.py`` measures the times): each check
imports a module in a fresh interpreter and looks at ``sys.modules``.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("scipy", "matplotlib", "datasketch", "pyarrow", "torch", "ray")
# Everything a model, a store, a service or a report needs: neither ``import
# shieldbench`` nor ``shieldbench --help`` may load any of it.
LIBRARY_STACK = ("numpy", "pandas", "pydantic", "sqlalchemy", "alembic", "psycopg", "jinja2",
    "yaml", "httpx", "aiohttp", "sklearn", "transformers", "onnxruntime", "fastapi", "uvicorn",
    "starlette", "re2", "asyncio")  # fmt: skip
# Each entry point and what it must not import (on top of HEAVY).
ENTRY_POINTS = {
    "shieldbench": LIBRARY_STACK,
    "shieldbench.cli": ("jinja2", "yaml", "httpx", "aiohttp", "sklearn"),
    "shieldbench.datasets": ("numpy",),
    "shieldbench.attacks": ("numpy",),
    "shieldbench.metrics": (),
    "shieldbench.reports": ("jinja2",),
}


def _imported_by(statements: str) -> set[str]:
    """Top-level names of the modules loaded after running ``statements``."""
    code = f"import json, sys\n{statements}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    return {name.split(".")[0] for name in json.loads(out)}


@pytest.mark.parametrize("module", sorted(ENTRY_POINTS))
@pytest.mark.slow
def test_importing_pulls_in_no_heavy_module(module: str) -> None:
    imported = _imported_by(f"import {module}")
    assert module.split(".")[0] in imported  # the probe really imported it
    unwanted = sorted(imported & {*HEAVY, *ENTRY_POINTS[module]})
    assert not unwanted, f"import {module} imports {unwanted}; import them where they are used"


@pytest.mark.slow
def test_the_probe_sees_heavy_imports() -> None:
    """The check above would notice: a confidence interval does import scipy."""
    imported = _imported_by("from shieldbench.metrics import rate\nrate(3, 10)")
    assert "scipy" in imported


@pytest.mark.parametrize("package", ["shieldbench", "shieldbench.defenses", "shieldbench.attacks"])
def test_every_public_name_resolves(package: str) -> None:
    """Names exported lazily (PEP 562) are still there, with their real objects."""
    module = importlib.import_module(package)
    for name in module.__all__:
        value = getattr(module, name)
        assert value is not None, name
        assert getattr(module, name) is value  # cached after the first lookup
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        getattr(module, "no_such_name")  # noqa: B009  (the lookup is what is tested)


# What each command may import: ``--version`` nothing heavy; a pattern-only run only
# what it uses (numpy and scipy for the statistics, jinja2 for the HTML report, re2
# for the pattern defense; its charts are plain SVG, no matplotlib), never a model
# runtime, the history store, the service, Ray or file formats it does not read.
LIGHT_COMMAND_FORBIDDEN = frozenset({*HEAVY, "numpy", "jinja2", "yaml", "sqlalchemy", "alembic",
    "psycopg", "fastapi", "uvicorn", "starlette", "transformers", "onnxruntime", "tokenizers",
    "sklearn", "httpx", "aiohttp", "prometheus_client", "re2"})  # fmt: skip
PATTERN_RUN_FORBIDDEN = frozenset({"matplotlib", "torch", "transformers", "onnxruntime",
    "tokenizers", "sklearn", "sentence_transformers", "sqlalchemy", "alembic", "psycopg", "pyarrow",
    "fastapi", "uvicorn", "starlette", "prometheus_client", "ray", "datasketch", "httpx",
    "aiohttp"})  # fmt: skip


def _imported_by_command(args: list[str], cwd: Path, *, full: bool = False) -> set[str]:
    """Top-level names of the modules loaded by ``shieldbench ARGS`` (run to its end);
    ``full``: their full dotted names."""
    code = (
        "import json, sys\n"
        "from shieldbench.cli import main\n"
        f"sys.argv = ['shieldbench', *{args!r}]\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "finally:\n    print('MODULES', json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300,
        cwd=cwd, env={**os.environ, "HF_HUB_OFFLINE": "1"},
    ).stdout  # fmt: skip
    line = next(x for x in out.splitlines() if x.startswith("MODULES "))
    names = json.loads(line.removeprefix("MODULES "))
    return set(names) if full else {name.split(".")[0] for name in names}


def test_version_imports_no_heavy_module(tmp_path: Path) -> None:
    imported = _imported_by_command(["--version"], tmp_path)
    assert "shieldbench" in imported
    unwanted = sorted(imported & LIGHT_COMMAND_FORBIDDEN)
    assert not unwanted, f"shieldbench --version imports {unwanted}"


@pytest.mark.slow
def test_a_pattern_only_run_imports_only_what_it_uses(tmp_path: Path) -> None:
    args = ["run", "-d", "pattern", "-D", "builtin:smoke", "--no-store", "--out", "out"]
    modules = _imported_by_command(args, tmp_path, full=True)
    imported = {name.split(".")[0] for name in modules}
    assert (tmp_path / "out" / "report.html").is_file()  # the whole run happened
    assert {"re2", "numpy", "scipy.special", "jinja2"} <= imported | modules
    unwanted = sorted(imported & PATTERN_RUN_FORBIDDEN)
    assert not unwanted, f"a pattern-only run imports {unwanted}; import them where used"
    # The statistics use scipy.special: scipy.stats (every distribution, a second) is
    # not needed.
    assert "scipy.stats" not in modules


# What the commands use; ``--help`` (which registers every command) loads none of it,
# and neither does importing the package root (every ``shieldbench.X`` import runs it
# first), which re-exports some of these names lazily. The command line does load
# shieldbench.types, for the option texts (the error policies) and defaults.
LIBRARY_PACKAGES = ("shieldbench.attacks", "shieldbench.benchmark", "shieldbench.datasets",
    "shieldbench.defenses", "shieldbench.engine", "shieldbench.metrics", "shieldbench.reports",
    "shieldbench.runfiles", "shieldbench.runio", "shieldbench.store")  # fmt: skip


def _loaded(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(
        m for m in modules if m in packages or m.startswith(tuple(f"{p}." for p in packages))
    )


def test_importing_the_package_loads_only_its_errors() -> None:
    code = "import json, sys, shieldbench\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    modules = set(json.loads(out))
    assert "shieldbench.errors" in modules  # the probe saw the package
    assert not _loaded(modules, (*LIBRARY_PACKAGES, "shieldbench.types"))


def test_the_package_root_lists_and_imports_every_public_name() -> None:
    """The lazy names are in ``dir()`` before first use, and ``from shieldbench import
    X`` gives the object of the module that defines it."""
    code = (
        "import json, shieldbench\n"
        "listed = set(dir(shieldbench)) >= set(shieldbench.__all__)\n"
        "from shieldbench import Dataset, Run, build_defense, run_benchmark, save_run\n"
        "from shieldbench.benchmark import run_benchmark as rb\n"
        "from shieldbench.datasets import Dataset as D\n"
        "from shieldbench.types import Run as R\n"
        "print(json.dumps([listed, Dataset is D, Run is R, run_benchmark is rb]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert json.loads(out) == [True, True, True, True]


HELP_FORBIDDEN = ("rich.markdown", "rich.traceback", "rich.syntax", "rich.pretty", "markdown_it",
    "pygments")  # fmt: skip


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["defenses", "--help"]])
def test_help_loads_no_library_package_and_no_markdown(args: list[str], tmp_path: Path) -> None:
    """``--help`` registers every command without importing what the commands use, and
    formats with typer's rich formatter without its Markdown and traceback modules."""
    modules = _imported_by_command(args, tmp_path, full=True)
    assert "typer.rich_utils" in modules  # the probe saw the help formatted
    assert not _loaded(modules, LIBRARY_PACKAGES + HELP_FORBIDDEN)
    # Parsing a command's options (a sub-command's --help included) is typer's own
    # pydantic-based coercion (typer._adapters); the root --help parses none.
    allowed = {"pydantic", "pydantic_core"} if len(args) > 1 else set()
    unwanted = sorted({m.split(".")[0] for m in modules} & {*HEAVY, *LIBRARY_STACK} - allowed)
    assert not unwanted, f"shieldbench {' '.join(args)} imports {unwanted}"


def test_the_help_stand_ins_build_the_real_rich_objects() -> None:
    """typer's formatter loaded the light way still renders Markdown (markup mode
    "markdown") and pretty tracebacks, with rich's own classes, on first use."""
    code = (
        "import json, sys\n"
        "from shieldbench.cli._richhelp import load_rich_help\n"
        "load_rich_help()\n"
        "from typer import rich_utils\n"
        "light = 'rich.markdown' not in sys.modules and 'rich.traceback' not in sys.modules\n"
        "md = rich_utils._make_rich_text(text='**bold**', markup_mode='markdown')\n"
        "try:\n    raise ValueError('x')\nexcept ValueError as exc:\n    err = exc\n"
        "tb = rich_utils.Traceback.from_exception(ValueError, err, err.__traceback__)\n"
        "from rich.markdown import Markdown\nfrom rich.traceback import Traceback\n"
        "print(json.dumps([light, type(md) is Markdown, type(tb) is Traceback]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert json.loads(out) == [True, True, True]


def test_option_texts_copied_into_the_cli_match_the_library() -> None:
    """The command line names the attack strategies without importing
    :mod:`shieldbench.attacks`; its copies must not drift."""
    from shieldbench import attacks
    from shieldbench.cli import _attack, _attack_options

    assert _attack_options.STRATEGIES == attacks.STRATEGIES
    assert _attack.LLM_STRATEGIES == attacks.LLM_STRATEGIES
