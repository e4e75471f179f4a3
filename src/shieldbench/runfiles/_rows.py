"""Samples and outcomes in columnar (Arrow) memory, made into objects a chunk at a time.

A million ``Sample`` and ``Outcome`` objects cost about a kilobyte each in Python;
the same fields as Arrow columns cost a tenth of that. Large datasets and large runs
therefore keep their records here:

- :func:`sample_columns` / :func:`outcome_columns` turn records into plain column
  lists and :func:`samples_from` / :func:`outcomes_from` turn columns back into
  records, through the records' one codec (:mod:`shieldbench.runfiles`: one column
  per field, the layout the Parquet run file uses);
- :class:`ColumnBuilder` collects records as they come (a dataset loader, the
  engine) and writes every full chunk to a spill file on disk, so at most one chunk
  of objects is alive while a large dataset loads or a large run finishes, and its
  :meth:`~ColumnBuilder.finish` gives a :class:`~shieldbench.runfiles.ParquetRows`
  that reads the file back a row group at a time;
- :class:`ArrowRows` is the same kind of view (:class:`~shieldbench.runfiles.ColumnarRows`)
  over an Arrow table in memory: iteration builds the records of one chunk of
  :data:`CHUNK` rows at a time, a block of rows is another view
  (:meth:`ArrowRows.rows`, no copy).

Example:
    >>> from shieldbench.types import Sample
    >>> builder = ColumnBuilder(sample_columns, samples_from, chunk=2)
    >>> for i in range(5):
    ...     builder.add(Sample(str(i), f"text {i}", "benign"))
    >>> rows = builder.finish()
    >>> len(rows), rows[3].text, [s.id for s in rows.rows(1, 3)]
    (5, 'text 3', ['1', '2'])
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar

from shieldbench.runfiles._base import CHUNK, ColumnarRows, Columns
from shieldbench.runfiles._spill import ParquetRows, ParquetSource
from shieldbench.runfiles._table import (
    OUTCOME_COLUMNS,
    SAMPLE_COLUMNS,
    arrow_type,
    decode_columns,
    encode_columns,
)
from shieldbench.types import Outcome, Sample

__all__ = [
    "CHUNK",
    "OUTCOME_FIELDS",
    "SAMPLE_FIELDS",
    "ArrowRows",
    "ColumnBuilder",
    "outcome_columns",
    "outcomes_from",
    "sample_columns",
    "samples_from",
]

SAMPLE_FIELDS: tuple[str, ...] = tuple(c.name for c in SAMPLE_COLUMNS)
OUTCOME_FIELDS: tuple[str, ...] = tuple(c.name for c in OUTCOME_COLUMNS)

R = TypeVar("R")


def sample_columns(samples: Sequence[Sample]) -> Columns:
    """The samples as column lists (:data:`~shieldbench.runfiles.SAMPLE_COLUMNS`)."""
    return encode_columns(samples, SAMPLE_COLUMNS)


def outcome_columns(outcomes: Sequence[Outcome]) -> Columns:
    """The outcomes as column lists (verdict fields null when there is no verdict)."""
    return encode_columns(outcomes, OUTCOME_COLUMNS)


def samples_from(c: Columns, *, where: str = "samples") -> list[Sample]:
    """Samples from column lists (a column the data lacks reads as absent)."""
    return decode_columns(Sample, SAMPLE_COLUMNS, c, where=where)


def outcomes_from(c: Columns, *, where: str = "outcomes") -> list[Outcome]:
    """Outcomes from column lists (a column the data lacks reads as absent)."""
    return decode_columns(Outcome, OUTCOME_COLUMNS, c, where=where)


_TYPES = {c.name: c for c in (*SAMPLE_COLUMNS, *OUTCOME_COLUMNS)}


def _schema(names: Sequence[str]) -> Any:
    import pyarrow as pa

    return pa.schema([(n, arrow_type(_TYPES[n])) for n in names])


def _remove_quietly(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


class ArrowRows(ColumnarRows[R]):
    """Records of one kind over the rows of an Arrow table in memory (small runs, tests).

    ``make`` turns a dict of column lists (one chunk) into records.
    """

    def __init__(self, table: Any, make: Callable[[Columns], list[R]]) -> None:
        self._table = table
        self._make = make
        self.columns = tuple(table.column_names)
        self._cache: tuple[int, list[R]] = (-1, [])

    def __len__(self) -> int:
        return int(self._table.num_rows)

    @property
    def table(self) -> Any:
        return self._table

    def slice_table(self, start: int, stop: int, columns: Sequence[str] | None = None) -> Any:
        start, stop, _ = slice(start, stop).indices(len(self))
        part = self._table.slice(start, max(stop - start, 0))
        return part if columns is None else part.select(list(columns))

    def _records(self, start: int) -> list[R]:
        part = self._table.slice(start, CHUNK)
        return self._make({n: part.column(n).to_pylist() for n in part.column_names})

    def _chunk(self, k: int) -> list[R]:
        if self._cache[0] != k:
            self._cache = (k, self._records(k * CHUNK))
        return self._cache[1]

    def chunks(self) -> Iterator[list[R]]:
        for start in range(0, len(self), CHUNK):
            yield self._records(start)

    def _get(self, index: int) -> R:
        return self._chunk(index // CHUNK)[index % CHUNK]

    def rows(self, start: int, stop: int) -> ArrowRows[R]:
        """Rows ``[start, stop)`` as another view over the same memory (no copy)."""
        start, stop, _ = slice(start, stop).indices(len(self))
        return ArrowRows(self._table.slice(start, max(stop - start, 0)), self._make)


class ColumnBuilder(Generic[R]):
    """Collects records; every full chunk of ``chunk`` rows goes to a spill file on disk.

    ``encode`` turns a list of records into column lists, ``make`` turns columns
    back into records. The first full chunk opens a temporary Parquet file (one row
    group per chunk, zstd); :meth:`finish` closes it and returns a
    :class:`~shieldbench.runfiles.ParquetRows` over it (see
    :mod:`shieldbench.runfiles._spill`), so at most one chunk of records is in
    memory while a large dataset loads or a large run's outcomes come in, and none
    of them once it is built. With ``spill=False`` the chunks stay in Arrow memory
    and :meth:`finish` returns an :class:`ArrowRows` (tests, small data).
    """

    def __init__(
        self,
        encode: Callable[[Sequence[R]], Columns],
        make: Callable[[Columns], list[R]],
        *,
        chunk: int = CHUNK,
        spill: bool = True,
    ) -> None:
        self._encode = encode
        self._make = make
        self._chunk = chunk
        self._spill = spill
        self._pending: list[R] = []
        self._batches: list[Any] = []
        self._schema: Any = None
        self._writer: Any = None
        self._path: str | None = None
        self.rows = 0

    @property
    def pending(self) -> int:
        """Records not yet moved into columns."""
        return len(self._pending)

    @property
    def stored(self) -> int:
        """Records already in columns (on disk, or in Arrow memory without spilling)."""
        return self.rows - len(self._pending)

    def take_pending(self) -> list[R]:
        """The records still held as objects (all of them when no chunk filled up)."""
        pending, self._pending = self._pending, []
        self.rows -= len(pending)
        return pending

    def add(self, record: R) -> None:
        self._pending.append(record)
        self.rows += 1
        if len(self._pending) >= self._chunk:
            self._flush()

    def extend(self, records: Sequence[R]) -> None:
        for record in records:
            self.add(record)

    def _flush(self) -> None:
        import pyarrow as pa

        cols = self._encode(self._pending)
        if self._schema is None:
            self._schema = _schema(list(cols))
        batch = pa.record_batch(cols, schema=self._schema)
        self._pending = []
        if not self._spill:
            self._batches.append(batch)
            return
        if self._writer is None:
            import pyarrow.parquet as pq

            fd, self._path = tempfile.mkstemp(prefix="shieldbench-spill-", suffix=".parquet")
            os.close(fd)
            # a load or run that fails midway drops its builder: the file goes with it
            weakref.finalize(self, _remove_quietly, self._path)
            self._writer = pq.ParquetWriter(self._path, self._schema, compression="zstd")
        self._writer.write_batch(batch, row_group_size=self._chunk)

    def finish(self) -> ColumnarRows[R]:
        """The records collected, as a view over their spill file (or Arrow table)."""
        import pyarrow as pa

        if self._pending or (not self._batches and self._writer is None):
            self._flush()
        names = list(self._schema.names)
        if self._writer is not None and self._path is not None:
            self._writer.close()
            self._writer = None
            source = ParquetSource(self._path, temporary=True)
            pa.default_memory_pool().release_unused()  # the writer's buffers
            return ParquetRows(source, self._make, names)
        table = pa.Table.from_batches(self._batches, schema=self._schema)
        self._batches = []
        pa.default_memory_pool().release_unused()  # the converters' scratch memory
        return ArrowRows(table, self._make)

    def discard(self) -> None:
        """Drop what was collected and remove the spill file (a failed load or run)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._path)
            self._path = None
        self._pending, self._batches = [], []
