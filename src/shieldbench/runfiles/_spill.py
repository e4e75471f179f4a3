"""Records over a Parquet file, read a row group at a time: :class:`ParquetRows`.

A run of ten million samples does not fit in memory as objects, nor comfortably as
Arrow columns (about 130 bytes a sample of text, ids and labels: 1.3 GB). So the
records of a large dataset, of a large run's outcomes and of a Parquet run file
read back stay **on disk**: a :class:`ParquetRows` holds an open Parquet file and
builds ``Sample`` / ``Outcome`` objects, or Arrow tables of a few columns, one row
group at a time as code reads them. Memory is one row group (plus what the reader
keeps of it), whatever the number of rows.

Two kinds of file back it:

- a **spill file**: :class:`~shieldbench.runfiles.ColumnBuilder` writes every full
  chunk of records it is given to a temporary Parquet file (in ``TMPDIR``), opens it
  for reading and removes its name at once, so the file lives exactly as long as the
  view and nothing is left behind if the process is killed (POSIX; elsewhere it is
  removed when the view is garbage-collected);
- a **run file**: :func:`~shieldbench.runfiles.load_run_parquet` reads a Parquet run
  file's rows from the file itself (the samples and the outcomes are two views over
  the same open file).
"""

from __future__ import annotations

import bisect
import os
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from shieldbench.runfiles._base import CHUNK, ColumnarRows, Columns

__all__ = ["ParquetRows", "ParquetSource"]

R = TypeVar("R")


def _remove(path: str) -> None:
    Path(path).unlink(missing_ok=True)


class ParquetSource:
    """An open Parquet file and where each of its row groups starts.

    ``temporary``: the file is a spill file; its name is removed now (POSIX: the
    open file lives on until this object is collected) or when this object is.
    """

    def __init__(self, path: str | Path, *, temporary: bool = False) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.path = str(path)
        self._file = pa.OSFile(self.path, "r")
        self.parquet = pq.ParquetFile(self._file)
        meta = self.parquet.metadata
        self.starts: list[int] = []
        total = 0
        for k in range(meta.num_row_groups):
            self.starts.append(total)
            total += meta.row_group(k).num_rows
        self.num_rows = total
        self.names: tuple[str, ...] = tuple(self.parquet.schema_arrow.names)
        if temporary:
            try:
                os.unlink(self.path)
            except OSError:  # pragma: no cover (Windows: an open file keeps its name)
                weakref.finalize(self, _remove, self.path)

    def read(self, start: int, stop: int, columns: Sequence[str]) -> Any:
        """Rows ``[start, stop)`` of ``columns`` as one Arrow table (only the row groups
        that hold them are read)."""
        import pyarrow as pa

        if stop <= start:
            schema = self.parquet.schema_arrow
            return pa.schema([schema.field(c) for c in columns]).empty_table()
        first = bisect.bisect_right(self.starts, start) - 1
        last = bisect.bisect_right(self.starts, stop - 1) - 1
        table = self.parquet.read_row_groups(range(first, last + 1), columns=list(columns))
        return table.slice(start - self.starts[first], stop - start)


class ParquetRows(ColumnarRows[R]):
    """Records of one kind over rows ``[start, stop)`` of a :class:`ParquetSource`.

    ``columns`` are the file's columns these records are made of (a run file holds
    the sample and the outcome columns side by side); ``make`` turns a dict of
    column lists (one chunk) into records.
    """

    def __init__(
        self,
        source: ParquetSource,
        make: Callable[[Columns], list[R]],
        columns: Sequence[str],
        start: int = 0,
        stop: int | None = None,
    ) -> None:
        self.source = source
        self._make = make
        self.columns = tuple(columns)
        self._start = start
        self._stop = source.num_rows if stop is None else stop
        self._cache: tuple[int, list[R]] = (-1, [])

    def __len__(self) -> int:
        return self._stop - self._start

    def slice_table(self, start: int, stop: int, columns: Sequence[str] | None = None) -> Any:
        start, stop, _ = slice(start, stop).indices(len(self))
        names = self.columns if columns is None else tuple(columns)
        return self.source.read(self._start + start, self._start + max(stop, start), names)

    def _records(self, start: int) -> list[R]:
        part = self.slice_table(start, start + CHUNK)
        return self._make({n: part.column(n).to_pylist() for n in part.column_names})

    def _get(self, index: int) -> R:
        k = index // CHUNK
        if self._cache[0] != k:
            self._cache = (k, self._records(k * CHUNK))
        return self._cache[1][index % CHUNK]

    def chunks(self) -> Iterator[list[R]]:
        for start in range(0, len(self), CHUNK):
            yield self._records(start)

    def rows(self, start: int, stop: int) -> ParquetRows[R]:
        """Rows ``[start, stop)`` as another view over the same file (nothing read)."""
        start, stop, _ = slice(start, stop).indices(len(self))
        return ParquetRows(
            self.source,
            self._make,
            self.columns,
            self._start + start,
            self._start + max(stop, start),
        )
