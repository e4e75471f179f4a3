"""Spill files: records past one chunk go to a temporary Parquet file that leaves no trace.

:class:`~shieldbench.runfiles.ColumnBuilder` writes every full chunk to a spill file
and :meth:`~shieldbench.runfiles.ColumnBuilder.finish` returns a
:class:`~shieldbench.runfiles.ParquetRows` reading it back a row group at a time.
The docs promise the file's name is gone as soon as it is open (nothing left in
``TMPDIR``, even if the process is killed), and the view must read exactly the
records that went in, by iteration, index, block of rows and Arrow batch.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shieldbench.runfiles import ColumnBuilder, ParquetRows, sample_columns, samples_from
from shieldbench.types import Sample


def _samples(n: int) -> list[Sample]:
    return [
        Sample(f"s{i}", f"text {i} ✓", "attack" if i % 2 else "benign", f"c{i % 3}",
               metadata={"k": i} if i % 4 == 0 else {})
        for i in range(n)
    ]  # fmt: skip


def test_the_spill_file_leaves_no_name_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    builder = ColumnBuilder(sample_columns, samples_from, chunk=4)
    builder.extend(_samples(10))
    rows = builder.finish()
    assert isinstance(rows, ParquetRows)
    assert list(tmp_path.iterdir()) == []  # open, but nameless
    assert list(rows) == _samples(10)


def test_a_discarded_builder_removes_its_spill_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    builder = ColumnBuilder(sample_columns, samples_from, chunk=4)
    builder.extend(_samples(9))
    assert len(list(tmp_path.iterdir())) == 1
    builder.discard()
    assert list(tmp_path.iterdir()) == []


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 40), st.integers(1, 7), st.integers(0, 45), st.integers(0, 45))
def test_the_view_reads_back_exactly_what_went_in(n: int, chunk: int, a: int, b: int) -> None:
    samples = _samples(n)
    builder = ColumnBuilder(sample_columns, samples_from, chunk=chunk)
    builder.extend(samples)
    rows = builder.finish()
    assert len(rows) == n
    assert list(rows) == samples
    assert [rows[i] for i in range(-n, n)] == samples + samples
    assert list(rows.rows(a, b)) == samples[a:b]
    assert list(rows.rows(a, b).rows(1, 3)) == samples[a:b][1:3]
    table = rows.slice_table(a, b, ["id"])
    assert table.column("id").to_pylist() == [s.id for s in samples[a:b]]
    ids = [i for t in rows.batches(["id"], size=chunk + 1) for i in t.column("id").to_pylist()]
    assert ids == [s.id for s in samples]
    assert rows.column("label").to_pylist() == [s.label for s in samples]


def test_a_load_that_fails_midway_leaves_no_spill_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gc

    from shieldbench.datasets import _builder, load_jsonl
    from shieldbench.errors import DatasetError

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    original = _builder.SampleBuilder.__init__

    def small_chunks(self: _builder.SampleBuilder, *args: object, **kw: object) -> None:
        original(self, *args, **{**kw, "chunk": 3})  # type: ignore[arg-type]

    monkeypatch.setattr(_builder.SampleBuilder, "__init__", small_chunks)
    data = tmp_path / "d.jsonl"
    lines = [f'{{"text": "t{i}", "label": "benign"}}' for i in range(10)] + ["not json"]
    data.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(DatasetError, match="malformed JSON"):
        load_jsonl(data)
    gc.collect()
    assert list((tmp_path / "tmp").iterdir()) == []
