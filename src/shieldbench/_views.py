"""Record views: read-only sequences whose records are made when read, not stored.

A :class:`~shieldbench.types.Run` normally holds its samples and outcomes as
tuples. A run read from a Parquet run file holds :class:`RecordView` objects
instead: the rows stay in columnar (Arrow) memory and ``Sample`` / ``Outcome``
objects are built a chunk at a time as code iterates or indexes them. Metrics and
reports read them like tuples (iteration, ``len``, indexing, slicing), so a run of
millions of samples is summarised without millions of objects alive at once.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator, Sequence
from typing import TypeVar, overload

__all__ = ["ChainView", "RecordView", "ZipView"]

R = TypeVar("R")
A = TypeVar("A")
B = TypeVar("B")


class RecordView(Sequence[R]):
    """Base of the lazily materialised record sequences a Run keeps as they are.

    Subclasses implement :meth:`__len__`, :meth:`chunks` (the records in order, a
    list per chunk) and :meth:`_get` (one record by non-negative index). Slices
    come back as tuples.
    """

    @abstractmethod
    def chunks(self) -> Iterator[list[R]]:
        """The records in order, one list per chunk."""

    @abstractmethod
    def _get(self, index: int) -> R:
        """One record by non-negative index."""

    def __iter__(self) -> Iterator[R]:
        for chunk in self.chunks():
            yield from chunk

    @overload
    def __getitem__(self, index: int) -> R: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[R, ...]: ...

    def __getitem__(self, index: int | slice) -> R | tuple[R, ...]:
        n = len(self)
        if isinstance(index, slice):
            return tuple(self._get(i) for i in range(*index.indices(n)))
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError(f"record index {index} out of range (0..{n - 1})")
        return self._get(index)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {len(self)} records>"


class ChainView(RecordView[R]):
    """Several sequences read as one, in order (a merge of shard runs)."""

    def __init__(self, parts: Sequence[Sequence[R]]) -> None:
        self._parts = list(parts)
        self._starts: list[int] = []
        total = 0
        for part in self._parts:
            self._starts.append(total)
            total += len(part)
        self._len = total

    def __len__(self) -> int:
        return self._len

    def chunks(self) -> Iterator[list[R]]:
        for part in self._parts:
            if isinstance(part, RecordView):
                yield from part.chunks()
            else:
                yield list(part)

    def _get(self, index: int) -> R:
        for start, part in zip(reversed(self._starts), reversed(self._parts), strict=True):
            if index >= start:
                return part[index - start]
        raise IndexError(index)  # pragma: no cover (guarded by __getitem__)


class ZipView(Sequence[tuple[A, B]]):
    """Two aligned sequences read as pairs, made as read (``Run.pairs`` of a columnar run)."""

    def __init__(self, first: Sequence[A], second: Sequence[B]) -> None:
        self._a, self._b = first, second

    def __len__(self) -> int:
        return len(self._a)

    def __iter__(self) -> Iterator[tuple[A, B]]:
        return zip(self._a, self._b, strict=True)

    @overload
    def __getitem__(self, index: int) -> tuple[A, B]: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[tuple[A, B], ...]: ...

    def __getitem__(self, index: int | slice) -> tuple[A, B] | tuple[tuple[A, B], ...]:
        if isinstance(index, slice):
            return tuple(zip(self._a[index], self._b[index], strict=True))
        return self._a[index], self._b[index]
