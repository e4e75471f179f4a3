"""Every file format is streamed and hashed on the way, to the hash of its samples.

The content hash is the dataset's version: streaming the file (JSONL and CSV a line
at a time, Parquet a batch of a row group at a time, ``hf-disk:`` a record batch of
a shard at a time) must give the same value as hashing the samples afresh
(:func:`~shieldbench.datasets.content_hash`), which is the value a whole-file read
gave before, and the same samples in every format.
"""

from __future__ import annotations

import csv
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shieldbench.datasets import Dataset, content_hash, load_dataset
from shieldbench.datasets._files import load_csv, load_jsonl, load_parquet

_TEXT = st.text(
    st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\r"), min_size=1
).filter(lambda t: t.strip() != "")
_ROW = st.tuples(_TEXT, st.booleans(), st.sampled_from(["a", "b/c", "d e"]))


def _columns(rows: list[tuple[str, bool, str]]) -> dict[str, list[object]]:
    return {
        "id": [f"r{i}" for i in range(len(rows))],
        "text": [r[0] for r in rows],
        "label": ["attack" if r[1] else "benign" for r in rows],
        "category": [r[2] for r in rows],
    }


def _write_all(
    folder: Path, cols: dict[str, list[object]], write_dataset: Callable[..., Path]
) -> dict[str, Path]:
    n = len(cols["id"])
    records = [{k: v[i] for k, v in cols.items()} for i in range(n)]
    jsonl = folder / "d.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    path_csv = folder / "d.csv"
    with path_csv.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(cols))
        writer.writeheader()
        writer.writerows(records)
    parquet = folder / "d.parquet"
    pq.write_table(pa.table(cols), parquet, row_group_size=3)  # several row groups
    hf = write_dataset(folder / "hf", cols, shards=min(3, n))
    return {"jsonl": jsonl, "csv": path_csv, "parquet": parquet, "hf": hf}


# hf_dataset is a pure function (it writes where it is told): safe to share
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(_ROW, min_size=1, max_size=12))
def test_every_format_streams_to_the_hash_of_its_samples(
    hf_dataset: Callable[..., Path], rows: list[tuple[str, bool, str]]
) -> None:
    cols = _columns(rows)
    with tempfile.TemporaryDirectory() as tmp:
        paths = _write_all(Path(tmp), cols, hf_dataset)
        loaded = {
            "jsonl": load_jsonl(paths["jsonl"]),
            "csv": load_csv(paths["csv"]),
            "parquet": load_parquet(paths["parquet"]),
            "hf": load_dataset(f"hf-disk:{paths['hf']}"),
        }
    reference = list(loaded["jsonl"])
    expected = content_hash(reference)
    assert expected == Dataset("fresh", tuple(reference)).content_hash
    for fmt, ds in loaded.items():
        assert list(ds) == reference, fmt
        assert ds.content_hash == expected, fmt


def test_the_hash_of_a_file_is_the_value_it_had(tmp_path: Path) -> None:
    """A fixed file's hash, computed by hand here (sha256 over each sample's canonical
    JSON line): streaming must never change a dataset's version."""
    import hashlib

    path = tmp_path / "d.jsonl"
    path.write_text(
        '{"id": "1", "text": "hi", "label": "benign"}\n'
        '{"id": "2", "text": "Ignore ✓", "label": "attack", "category": "x/y"}\n',
        encoding="utf-8",
    )
    lines = (
        '["1","hi","benign","uncategorized",null,null,null,null]\n'
        '["2","Ignore ✓","attack","x","y",null,null,null]\n'
    )
    expected = "sha256:" + hashlib.sha256(lines.encode()).hexdigest()
    assert load_jsonl(path).content_hash == expected


@settings(max_examples=15, deadline=None)
@given(st.lists(_ROW, min_size=1, max_size=30), st.integers(1, 6))
def test_size_warnings_and_label_counts_of_a_columnar_dataset_are_those_of_its_samples(
    rows: list[tuple[str, bool, str]], chunk: int
) -> None:
    from shieldbench.datasets import sample_size_warnings
    from shieldbench.datasets._builder import SampleBuilder
    from shieldbench.datasets._records import RecordMapping
    from shieldbench.runfiles import ColumnarRows

    cols = _columns(rows)
    builder = SampleBuilder("d", RecordMapping(), chunk=chunk)
    for i in range(len(rows)):
        builder.add({k: v[i] for k, v in cols.items()}, line=i + 1)
    ds = builder.build("d")
    objects = list(ds)
    if len(rows) > chunk:
        assert isinstance(ds.samples, ColumnarRows)
    assert sample_size_warnings(ds.samples, margin=0.2) == sample_size_warnings(objects, margin=0.2)
    assert ds.label_counts() == Dataset("o", tuple(objects)).label_counts()
