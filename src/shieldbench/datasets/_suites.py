"""The ``builtin:NAME`` loader: suites shipped inside the package.

A suite is either one file ``datasets/builtin/NAME.jsonl`` or a folder
``datasets/builtin/NAME/`` whose ``*.jsonl`` files are read in filename order
(``builtin:core`` is the folder ``core/``, ``builtin:smoke`` the file
``smoke.jsonl``). Files are read with :mod:`importlib.resources`, so suites work
from an installed wheel as well as from a checkout.

Records are checked strictly (see :class:`~shieldbench.datasets._records.RecordMapping`):
``{"id", "text", "label": "attack"|"benign", "category", "subcategory", "severity",
"tier", "language"}``, labels spelled exactly, ``language`` into
``Sample.metadata["language"]``, unknown fields and duplicate ids (across all
files of a suite) are errors.

Example:
    >>> {"core", "smoke"} <= {s.name for s in builtin_suites()}
    True
    >>> len(load_builtin("smoke"))
    38
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable

from shieldbench.datasets._builder import SampleBuilder
from shieldbench.datasets._dataset import Dataset
from shieldbench.datasets._files import decode_utf8, jsonl_records
from shieldbench.datasets._records import RecordMapping
from shieldbench.errors import DatasetError, SpecError
from shieldbench.registry import datasets
from shieldbench.spec import Spec

__all__ = ["BuiltinSuite", "builtin_suites", "load_builtin"]


def _root() -> Traversable:
    return resources.files("shieldbench.datasets").joinpath("builtin")


def _suite_files(name: str, root: Traversable | None = None) -> list[Traversable]:
    base = root if root is not None else _root()
    single = base.joinpath(f"{name}.jsonl")
    if single.is_file():
        return [single]
    folder = base.joinpath(name)
    if folder.is_dir():
        return sorted(
            (f for f in folder.iterdir() if f.is_file() and f.name.endswith(".jsonl")),
            key=lambda f: f.name,
        )
    return []


def _suite_names(root: Traversable | None = None) -> list[str]:
    base = root if root is not None else _root()
    if not base.is_dir():
        return []
    names = set()
    for entry in base.iterdir():
        if entry.is_file() and entry.name.endswith(".jsonl"):
            names.add(entry.name[: -len(".jsonl")])
        elif entry.is_dir() and _suite_files(entry.name, base):
            names.add(entry.name)
    return sorted(names)


@dataclass(frozen=True, slots=True)
class BuiltinSuite:
    """A shipped suite: its name, file count and sample counts (from a quick scan)."""

    name: str
    n_files: int
    n_samples: int
    n_attack: int
    n_benign: int

    @property
    def spec(self) -> str:
        return f"builtin:{self.name}"


def builtin_suites(*, root: Traversable | None = None) -> list[BuiltinSuite]:
    """Every shipped suite with its size, counted without full validation.

    A line that is not JSON counts as a sample of neither label; loading the
    suite reports it properly.
    """
    suites = []
    for name in _suite_names(root):
        files = _suite_files(name, root)
        attack = benign = total = 0
        for f in files:
            text = f.read_bytes().decode("utf-8-sig", errors="replace")
            for line in text.split("\n"):
                if not line.strip():
                    continue
                total += 1
                try:
                    label = json.loads(line).get("label")
                except (ValueError, AttributeError):
                    continue
                attack += label == "attack"
                benign += label == "benign"
        suites.append(BuiltinSuite(name, len(files), total, attack, benign))
    return suites


def load_builtin(name: str, *, root: Traversable | None = None) -> Dataset:
    """Load the shipped suite ``name`` (strict checks; errors name file and line)."""
    files = _suite_files(name, root)
    if not files:
        available = ", ".join(_suite_names(root)) or "none"
        raise SpecError(f"no built-in suite {name!r}; available: {available}")
    builder = SampleBuilder(str(files[0]), RecordMapping(strict=True))
    for f in files:
        builder.path = str(f)
        try:
            data = f.read_bytes()
        except OSError as exc:
            raise DatasetError(f"cannot read: {exc}", path=builder.path) from None
        for lineno, record in jsonl_records(decode_utf8(data, builder.path), builder.path):
            builder.add(record, line=lineno)
    return builder.build(f"builtin:{name}", description=f"shieldbench built-in suite {name!r}")


@datasets.register(
    "builtin",
    description="Suites shipped with shieldbench: core (the benchmark corpus: attack"
    " taxonomy + benign traffic incl. hard negatives) and smoke (38-case quick check).",
    usage="builtin:NAME (core, smoke)",
    example="builtin:smoke",
)
def _builtin_factory(spec: Spec) -> Dataset:
    spec.check_options(set())
    return load_builtin(spec.require_arg("NAME"))
