"""The ``hf-disk:`` loader: a Hugging Face dataset written by ``save_to_disk``.

It reads the folder with pyarrow alone (the ``datasets`` library is not needed).
The layout ``save_to_disk`` writes:

- a ``Dataset``: ``state.json`` (lists the ``_data_files``), ``dataset_info.json``
  (the features) and one or more ``data-0000N-of-0000M.arrow`` files in Arrow's
  IPC *stream* format;
- a ``DatasetDict``: ``dataset_dict.json`` (``{"splits": [...]}``) and one such
  folder per split -- choose one with ``split=NAME``.

A ``ClassLabel`` label column is stored as integers; they are turned into the
class names from ``dataset_info.json`` before label mapping, so
``names: ["benign", "injection"]`` works with the default vocabulary. The usual
mapping options apply (``text=``, ``label=``, ``attack=``, ...); errors name the
1-based row as the line. The shards are read a record batch at a time (never a
whole table), so a dataset larger than memory loads in the memory of one batch.

Example:
    >>> from shieldbench.datasets import load_dataset
    >>> ds = load_dataset("hf-disk(./my_dataset, split=test, text=prompt)")  # doctest: +SKIP
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from shieldbench.datasets._dataset import Dataset
from shieldbench.datasets._files import read_utf8, rows_to_dataset
from shieldbench.datasets._records import MAPPING_OPTIONS, RecordMapping
from shieldbench.errors import DatasetError
from shieldbench.registry import datasets
from shieldbench.spec import Spec

__all__ = ["load_hf_disk"]


def _json(path: Path) -> Any:
    try:
        return json.loads(read_utf8(path))
    except json.JSONDecodeError as exc:
        raise DatasetError(f"malformed JSON: {exc.msg}", path=path, line=exc.lineno) from None


def _split_folder(root: Path, split: str | None) -> Path:
    dict_file = root / "dataset_dict.json"
    if dict_file.is_file():
        splits = _json(dict_file).get("splits") or []
        if split is None:
            raise DatasetError(
                f"this is a DatasetDict with splits {', '.join(splits)}; choose one with"
                " split=NAME, e.g. hf-disk(PATH, split=" + (splits[0] if splits else "test") + ")",
                path=root,
            )
        if split not in splits:
            raise DatasetError(
                f"no split {split!r}; the splits are {', '.join(splits)}", path=root, field="split"
            )
        return root / split
    if split is not None:
        state = root / "state.json"
        saved = _json(state).get("_split") if state.is_file() else None
        if saved != split:
            raise DatasetError(
                f"split={split!r} given, but this folder holds one dataset (split {saved!r});"
                " drop the split option",
                path=root,
                field="split",
            )
    return root


def _class_names(folder: Path) -> dict[str, list[str]]:
    info = folder / "dataset_info.json"
    if not info.is_file():
        return {}
    features = _json(info).get("features") or {}
    return {
        name: list(feature["names"])
        for name, feature in features.items()
        if isinstance(feature, dict) and feature.get("_type") == "ClassLabel"
    }


def _open_stream(arrow: Path) -> Any:
    """An Arrow IPC stream reader over one data file (read, not memory-mapped: mapped
    pages would count in the process's resident memory)."""
    import pyarrow as pa

    try:
        return pa.ipc.open_stream(pa.OSFile(str(arrow), "r"))
    except (pa.ArrowException, OSError) as exc:
        raise DatasetError(f"not a readable Arrow stream file: {exc}", path=arrow) from None


def _rows(
    first: Any, arrows: list[Path], class_names: dict[str, list[str]], folder: Path
) -> Iterator[dict[str, Any]]:
    """Every row of every shard, a record batch at a time, class indices made names."""
    import pyarrow as pa

    index = 0
    for k, arrow in enumerate(arrows):
        reader = first if k == 0 else _open_stream(arrow)
        try:
            for batch in reader:
                for row in batch.to_pylist():
                    index += 1
                    _name_classes(row, class_names, folder, index)
                    yield row
        except pa.ArrowException as exc:
            raise DatasetError(f"not a readable Arrow stream file: {exc}", path=arrow) from None
    if index == 0:
        raise DatasetError("the dataset has no rows", path=folder)


def _name_classes(
    row: dict[str, Any], class_names: dict[str, list[str]], folder: Path, index: int
) -> None:
    for column, names in class_names.items():
        value = row.get(column)
        if isinstance(value, int) and not isinstance(value, bool):
            if not 0 <= value < len(names):
                raise DatasetError(
                    f"class index {value} outside the ClassLabel names {names}",
                    path=folder,
                    line=index,
                    field=column,
                )
            row[column] = names[value]


def load_hf_disk(
    path: str | Path,
    *,
    split: str | None = None,
    mapping: RecordMapping | None = None,
    name: str | None = None,
) -> Dataset:
    """Load a ``save_to_disk`` folder (see the module docstring), streamed: one record
    batch of one shard at a time, hashed as it goes."""
    root = Path(path)
    if not root.is_dir():
        what = "folder not found" if not root.exists() else "not a folder"
        raise DatasetError(f"{what}; hf-disk: expects the folder save_to_disk wrote", path=root)
    folder = _split_folder(root, split)
    state_file = folder / "state.json"
    if not state_file.is_file():
        raise DatasetError(
            "not a save_to_disk folder: no state.json (nor dataset_dict.json)", path=folder
        )
    files = [f.get("filename") for f in _json(state_file).get("_data_files") or []]
    if not files:
        raise DatasetError("state.json lists no _data_files", path=state_file)
    arrows = [folder / str(filename) for filename in files]
    first = _open_stream(arrows[0])
    columns = list(first.schema.names)
    rows = _rows(first, arrows, _class_names(folder), folder)
    return rows_to_dataset(
        rows,
        columns,
        path=str(folder),
        mapping=mapping or RecordMapping(),
        name=name or f"hf-disk:{path}",
        # Not the folder name: a renamed copy keeps its ids and its content hash.
        id_prefix="row" if split is None else f"row-{split}",
    )


@datasets.register(
    "hf-disk",
    description="A Hugging Face dataset saved with save_to_disk (read with pyarrow);"
    " split= picks a DatasetDict split; same mapping options as jsonl/csv.",
    usage="hf-disk:PATH | hf-disk(PATH, split=NAME, text=COLUMN, label=COLUMN, attack=V)",
)
def _hf_disk_factory(spec: Spec) -> Dataset:
    spec.check_options(MAPPING_OPTIONS | {"split"})
    return load_hf_disk(
        spec.require_arg("PATH"),
        split=spec.str_option("split"),
        mapping=RecordMapping.from_spec(spec),
        name=spec.text,
    )
