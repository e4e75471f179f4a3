"""Datasets: the record, the registry of loaders, and how to load one.

>>> from shieldbench.datasets import load_dataset
>>> ds = load_dataset("builtin:smoke")   # doctest: +SKIP
"""

from __future__ import annotations

from shieldbench.datasets._dataset import Dataset, content_hash
from shieldbench.errors import SpecError
from shieldbench.registry import datasets as registry
from shieldbench.spec import Spec

__all__ = ["Dataset", "content_hash", "load_dataset", "registry"]


def load_dataset(spec: str | Spec) -> Dataset:
    """Load the dataset a spec string names (see ``shieldbench datasets list``)."""
    obj = registry.create(spec)
    if not isinstance(obj, Dataset):
        text = spec if isinstance(spec, str) else spec.text
        raise SpecError(f"{text!r} built a {type(obj).__name__}, not a Dataset")
    return obj
