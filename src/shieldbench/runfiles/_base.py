"""What every columnar record view offers: :class:`ColumnarRows`.

A run's samples and outcomes are tuples of objects when small, and when large a
columnar view: rows in Arrow memory (:class:`~shieldbench.runfiles.ArrowRows`) or
in a Parquet file read a row group at a time
(:class:`~shieldbench.runfiles.ParquetRows`). Code that needs a few fields of every
row (the metrics, the run file writer, the history store) reads them through this
interface, one block of rows at a time with :meth:`ColumnarRows.batches`, so its
memory is one block whatever the size of the run.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

from shieldbench._views import RecordView
from shieldbench.runfiles._table import Columns

__all__ = ["CHUNK", "ColumnarRows", "Columns"]

CHUNK = 65_536
"""Rows per chunk: a row group of a Parquet run file, a batch of a columnar dataset."""

R = TypeVar("R")


class ColumnarRows(RecordView[R]):
    """A :class:`~shieldbench._views.RecordView` whose rows can be read as Arrow tables."""

    columns: tuple[str, ...]
    """The fields (columns) the records are made of."""

    @abstractmethod
    def slice_table(self, start: int, stop: int, columns: Sequence[str] | None = None) -> Any:
        """Rows ``[start, stop)`` (clipped like a slice) of ``columns`` (default: all of
        the records' columns) as one ``pyarrow.Table``."""

    @abstractmethod
    def rows(self, start: int, stop: int) -> ColumnarRows[R]:
        """Rows ``[start, stop)`` as another view of the same kind (no copy)."""

    def batches(self, columns: Sequence[str] | None = None, *, size: int = CHUNK) -> Iterator[Any]:
        """The rows in order as ``pyarrow.Table`` blocks of ``size`` rows (the last may be
        shorter; none for no rows): the streaming read every whole-run figure uses."""
        for start in range(0, len(self), size):
            yield self.slice_table(start, start + size, columns)

    def column(self, name: str) -> Any:
        """One whole column as a ``pyarrow.ChunkedArray``: memory grows with the rows;
        prefer :meth:`batches` for anything computed over a large run."""
        return self.slice_table(0, len(self), [name]).column(name)

    @property
    def table(self) -> Any:
        """Every row and column as one ``pyarrow.Table`` (the whole run in memory: for
        small runs and tests; large runs read :meth:`batches`)."""
        return self.slice_table(0, len(self))
