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
# Each entry point and what it must not import (on top of HEAVY).
ENTRY_POINTS = {
    "shieldbench": ("jinja2", "yaml", "numpy", "httpx", "aiohttp", "sklearn"),
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


@pytest.mark.parametrize("package", ["shieldbench.defenses", "shieldbench.attacks"])
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
