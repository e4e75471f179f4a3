"""The ``pyrit:`` loader: PyRIT's jailbreak templates, filled with harmful objectives.

PyRIT ships several hundred single-slot jailbreak templates (YAML files under
``pyrit/datasets/jailbreak/templates/``, a Jinja ``{{ prompt }}`` slot in
``value``) and a few dozen harmful objectives (the AI Red Team seed files under
``pyrit/datasets/seed_datasets/local/airt/`` whose ``seed_type`` is
``objective``). ``pyrit:jailbreak-templates`` renders every template once, in
path order, with an objective drawn by a ``random.Random(seed)`` (``seed=0`` by
default), so the same seed always gives the same dataset. Templates under
``multi_parameter/`` are skipped (they need more than the one slot), as PyRIT
itself does. Rendering uses Jinja's sandbox with undefined variables as errors.

Each sample: category ``jailbreak``, subcategory the template's folder
(``in_the_wild``, ``pliny``, ... or ``general`` at the top level), metadata
``template`` (its path) and ``objective``.

Example:
    >>> from shieldbench.datasets import load_dataset
    >>> ds = load_dataset("pyrit(jailbreak-templates, seed=1)")  # doctest: +SKIP
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from shieldbench.datasets._builder import SampleBuilder
from shieldbench.datasets._dataset import Dataset
from shieldbench.datasets._files import read_utf8
from shieldbench.datasets._packages import package_dir
from shieldbench.datasets._records import LabelMap, RecordMapping
from shieldbench.errors import DatasetError, SpecError
from shieldbench.registry import datasets
from shieldbench.spec import Spec

__all__ = ["load_pyrit_jailbreaks"]

_INSTALL = "pip install jinja2 && pip install --no-deps pyrit"


def _yaml(path: Path) -> Any:
    import yaml  # on first use, not when the loader registers

    loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(read_utf8(path), Loader=loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = None if mark is None else mark.line + 1
        raise DatasetError(f"malformed YAML: {exc.problem}", path=path, line=line) from None


def _objectives(root: Path) -> list[str]:
    folder = root / "datasets" / "seed_datasets" / "local" / "airt"
    objectives: list[str] = []
    for path in sorted(folder.glob("*.prompt")):
        data = _yaml(path)
        if not isinstance(data, dict) or data.get("seed_type") != "objective":
            continue
        for seed in data.get("seeds") or []:
            value = seed.get("value") if isinstance(seed, dict) else None
            if isinstance(value, str) and value.strip():
                objectives.append(value.strip())
    if not objectives:
        raise DatasetError("no harmful objectives found (seed_type: objective)", path=folder)
    return objectives


def load_pyrit_jailbreaks(*, seed: int = 0, name: str = "pyrit:jailbreak-templates") -> Dataset:
    """Every single-slot PyRIT jailbreak template, filled with a seeded objective."""
    from jinja2 import StrictUndefined, TemplateError
    from jinja2.sandbox import SandboxedEnvironment

    root = package_dir("pyrit", install_hint=_INSTALL)
    folder = root / "datasets" / "jailbreak" / "templates"
    if not folder.is_dir():
        raise DatasetError("this version of pyrit ships no jailbreak templates", path=folder)
    objectives = _objectives(root)
    rng = random.Random(seed)
    env = SandboxedEnvironment(
        undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True
    )
    builder = SampleBuilder(str(folder), RecordMapping(labels=LabelMap(fixed="attack")))
    paths = sorted(p for p in folder.rglob("*.yaml") if "multi_parameter" not in p.parts)
    for path in paths:
        rel = path.relative_to(folder)
        builder.path = str(path)
        data = _yaml(path)
        value = data.get("value") if isinstance(data, dict) else None
        if not isinstance(value, str):
            raise DatasetError("the template has no text 'value'", path=path, field="value")
        objective = rng.choice(objectives)
        try:
            text = env.from_string(value).render(prompt=objective)
        except TemplateError as exc:
            raise DatasetError(
                f"cannot render the template: {exc}", path=path, field="value"
            ) from None
        record = {
            "id": "pyrit:" + rel.with_suffix("").as_posix(),
            "text": text,
            "category": "jailbreak",
            "subcategory": rel.parts[0] if len(rel.parts) > 1 else "general",
            "template": rel.as_posix(),
            "objective": objective,
        }
        builder.add(record, line=1)
    return builder.build(name)


@datasets.register(
    "pyrit",
    description="PyRIT's jailbreak templates (several hundred), each filled with one of its"
    " harmful objectives drawn with a seeded RNG.",
    usage="pyrit:jailbreak-templates | pyrit(jailbreak-templates, seed=N)",
    requires=("pyrit", "jinja2"),
    install_hint=_INSTALL,
    example="pyrit:jailbreak-templates",
)
def _pyrit_factory(spec: Spec) -> Dataset:
    spec.check_options({"seed"})
    name = spec.require_arg("SET")
    if name != "jailbreak-templates":
        raise SpecError(f"{spec.text!r}: no pyrit set {name!r}; the one set is jailbreak-templates")
    return load_pyrit_jailbreaks(seed=spec.int_option("seed", 0) or 0, name=spec.text)
