"""Samples and outcomes in columnar (Arrow) memory, made into objects a chunk at a time.

A million ``Sample`` and ``Outcome`` objects cost about a kilobyte each in Python;
the same fields as Arrow columns cost a tenth of that. Large datasets and large runs
therefore keep their records here:

- :func:`sample_columns` / :func:`outcome_columns` turn records into plain column
  lists and :func:`samples_from` / :func:`outcomes_from` turn columns back into
  records, through the records' one codec (:mod:`shieldbench.runfiles`: one column
  per field, the layout the Parquet run file uses);
- :class:`ArrowRows` is a :class:`~shieldbench._views.RecordView` over an Arrow
  table: iteration builds the records of one chunk of :data:`CHUNK` rows at a time,
  a block of rows is another view (:meth:`ArrowRows.rows`, no copy) and
  :meth:`ArrowRows.column` gives a column to code that works on Arrow arrays (the metrics);
- :class:`ColumnBuilder` collects records as they come (a dataset loader, the
  engine) and moves every full chunk into Arrow memory, so at most one chunk of
  objects is alive while a large dataset loads or a large run finishes.

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

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar

from shieldbench._views import RecordView
from shieldbench.runfiles import (
    OUTCOME_COLUMNS,
    SAMPLE_COLUMNS,
    Columns,
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

CHUNK = 65_536
"""Rows per chunk: a row group of a Parquet run file, a batch of a columnar dataset."""

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


class ArrowRows(RecordView[R]):
    """Records of one kind over the rows of an Arrow table (see the module docstring).

    ``make`` turns a dict of column lists (one chunk) into records.
    """

    def __init__(self, table: Any, make: Callable[[Columns], list[R]]) -> None:
        self.table = table
        self._make = make
        self._cache: tuple[int, list[R]] = (-1, [])

    def __len__(self) -> int:
        return int(self.table.num_rows)

    def column(self, name: str) -> Any:
        """One column as a ``pyarrow.ChunkedArray`` (no records made)."""
        return self.table.column(name)

    def _records(self, start: int) -> list[R]:
        part = self.table.slice(start, CHUNK)
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
        return ArrowRows(self.table.slice(start, max(stop - start, 0)), self._make)


class ColumnBuilder(Generic[R]):
    """Collects records and keeps them as Arrow record batches of ``chunk`` rows.

    ``encode`` turns a list of records into column lists, ``make`` turns columns
    back into records (for the :class:`ArrowRows` that :meth:`finish` returns).
    """

    def __init__(
        self,
        encode: Callable[[Sequence[R]], Columns],
        make: Callable[[Columns], list[R]],
        *,
        chunk: int = CHUNK,
    ) -> None:
        self._encode = encode
        self._make = make
        self._chunk = chunk
        self._pending: list[R] = []
        self._batches: list[Any] = []
        self._schema: Any = None
        self.rows = 0

    @property
    def pending(self) -> int:
        """Records not yet moved into Arrow memory."""
        return len(self._pending)

    @property
    def stored(self) -> int:
        """Records already in Arrow memory."""
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
        self._batches.append(pa.record_batch(cols, schema=self._schema))
        self._pending = []

    def finish(self) -> ArrowRows[R]:
        """The records collected, as a view over their Arrow table."""
        import pyarrow as pa

        if self._pending or not self._batches:
            self._flush()
        table = pa.Table.from_batches(self._batches, schema=self._schema)
        self._batches = []
        pa.default_memory_pool().release_unused()  # the converters' scratch memory
        return ArrowRows(table, self._make)
