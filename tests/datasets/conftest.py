"""Fixtures for the dataset tests: folders in the layout ``save_to_disk`` produces.

``save_to_disk`` writes, per dataset: ``data-00000-of-0000N.arrow`` files in Arrow's
IPC *stream* format, ``dataset_info.json`` (with the features, ``ClassLabel``
names included) and ``state.json`` (listing the data files); a ``DatasetDict``
adds ``dataset_dict.json`` with the split names and one such folder per split.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest


def _feature(column: str, array: pa.Array, class_names: Mapping[str, Sequence[str]]) -> Any:
    if column in class_names:
        return {"names": list(class_names[column]), "_type": "ClassLabel"}
    dtype = "string" if pa.types.is_string(array.type) else str(array.type)
    return {"dtype": dtype, "_type": "Value"}


def write_dataset(
    folder: Path,
    columns: Mapping[str, list[Any]],
    *,
    class_names: Mapping[str, Sequence[str]] | None = None,
    shards: int = 1,
    split: str | None = None,
) -> Path:
    """One ``Dataset`` folder; ``shards`` > 1 splits the rows over several arrow files."""
    folder.mkdir(parents=True, exist_ok=True)
    table = pa.table(dict(columns))
    names = class_names or {}
    per_shard = -(-table.num_rows // shards)
    files = []
    for index in range(shards):
        name = f"data-{index:05d}-of-{shards:05d}.arrow"
        part = table.slice(index * per_shard, per_shard)
        with (
            pa.OSFile(str(folder / name), "wb") as sink,
            pa.ipc.new_stream(sink, table.schema) as w,
        ):
            w.write_table(part)
        files.append({"filename": name})
    features = {c: _feature(c, table.column(c), names) for c in table.column_names}
    info = {"citation": "", "description": "", "features": features, "homepage": "", "license": ""}
    (folder / "dataset_info.json").write_text(json.dumps(info, indent=2))
    state = {
        "_data_files": files,
        "_fingerprint": "0123456789abcdef",
        "_format_columns": None,
        "_format_kwargs": {},
        "_format_type": None,
        "_output_all_columns": False,
        "_split": split,
    }
    (folder / "state.json").write_text(json.dumps(state, indent=2))
    return folder


def write_dataset_dict(
    folder: Path, splits: Mapping[str, Mapping[str, list[Any]]], **kw: Any
) -> Path:
    """A ``DatasetDict`` folder with one sub-folder per split."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, columns in splits.items():
        write_dataset(folder / name, columns, split=name, **kw)
    (folder / "dataset_dict.json").write_text(json.dumps({"splits": list(splits)}))
    return folder


@pytest.fixture
def hf_dataset() -> Callable[..., Path]:
    """``hf_dataset(folder, columns, class_names=..., shards=..., split=...)``."""
    return write_dataset


@pytest.fixture
def hf_dataset_dict() -> Callable[..., Path]:
    """``hf_dataset_dict(folder, {split: columns}, class_names=...)``."""
    return write_dataset_dict
