"""Samples and outcomes in columnar (Arrow) memory, made into objects a chunk at a time.

A million ``Sample`` and ``Outcome`` objects cost about a kilobyte each in Python;
the same fields as Arrow columns cost a tenth of that. Large datasets and large runs
therefore keep their records here:

- :func:`sample_columns` / :func:`outcome_columns` turn records into plain column
  lists (the encoding the Parquet run file uses: metadata, details and messages as
  JSON text, verdict fields null when there is no verdict), and
  :func:`samples_from` / :func:`outcomes_from` turn columns back into records;
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

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar

from shieldbench._views import RecordView
from shieldbench.types import Outcome, Sample, Verdict

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

SAMPLE_FIELDS = ("id", "text", "label", "category", "subcategory", "severity", "tier",
                 "source", "metadata")  # fmt: skip
OUTCOME_FIELDS = ("id", "status", "error", "latency_ms", "attempts", "blocked", "score",
                  "verdict_label", "reasons", "details")  # fmt: skip

R = TypeVar("R")
Columns = dict[str, list[Any]]


def _json_or_none(mapping: Any, *, sort_keys: bool = True) -> str | None:
    return json.dumps(dict(mapping), ensure_ascii=False, sort_keys=sort_keys) if mapping else None


def sample_columns(samples: Sequence[Sample]) -> Columns:
    """The samples as column lists (``messages`` as JSON text, null when absent)."""
    return {
        "id": [s.id for s in samples],
        "text": [s.text for s in samples],
        "label": [s.label for s in samples],
        "category": [s.category for s in samples],
        "subcategory": [s.subcategory for s in samples],
        "severity": [s.severity for s in samples],
        "tier": [s.tier for s in samples],
        "source": [s.source for s in samples],
        # insertion order kept: a sample's metadata reads back as it was loaded
        "metadata": [_json_or_none(s.metadata, sort_keys=False) for s in samples],
        "messages": [
            None if s.messages is None else json.dumps([dict(m) for m in s.messages])
            for s in samples
        ],
    }


def outcome_columns(outcomes: Sequence[Outcome]) -> Columns:
    """The outcomes as column lists (verdict fields null when there is no verdict)."""
    verdicts = [o.verdict for o in outcomes]
    return {
        "id": [o.sample_id for o in outcomes],
        "status": [o.status for o in outcomes],
        "error": [o.error for o in outcomes],
        "latency_ms": [o.latency_ms for o in outcomes],
        "attempts": [o.attempts for o in outcomes],
        "blocked": [None if v is None else v.blocked for v in verdicts],
        "score": [None if v is None else v.score for v in verdicts],
        "verdict_label": [None if v is None else v.label for v in verdicts],
        "reasons": [None if v is None else list(v.reasons) for v in verdicts],
        "details": [None if v is None else _json_or_none(v.details) for v in verdicts],
    }


def samples_from(c: Columns) -> list[Sample]:
    """Samples from column lists (a ``messages`` column is optional)."""
    messages = c.get("messages") or [None] * len(c["id"])
    return [
        Sample(i, t, lab, cat, sub, sev, tier, src, json.loads(meta) if meta else {},
               None if msg is None else tuple(json.loads(msg)))
        for i, t, lab, cat, sub, sev, tier, src, meta, msg in zip(
            c["id"], c["text"], c["label"], c["category"], c["subcategory"], c["severity"],
            c["tier"], c["source"], c["metadata"], messages, strict=True,
        )
    ]  # fmt: skip


def outcomes_from(c: Columns) -> list[Outcome]:
    """Outcomes from column lists."""
    return [
        Outcome(
            i,
            None if blocked is None else Verdict(
                blocked, score, label, tuple(reasons or ()), json.loads(det) if det else {}
            ),
            status, error, latency, attempts,
        )
        for i, status, error, latency, attempts, blocked, score, label, reasons, det in zip(
            c["id"], c["status"], c["error"], c["latency_ms"], c["attempts"], c["blocked"],
            c["score"], c["verdict_label"], c["reasons"], c["details"], strict=True,
        )
    ]  # fmt: skip


def _schema(names: Sequence[str]) -> Any:
    import pyarrow as pa

    types = {"latency_ms": pa.float64(), "attempts": pa.int32(), "blocked": pa.bool_(),
             "score": pa.float64(), "reasons": pa.list_(pa.string())}  # fmt: skip
    return pa.schema([(n, types.get(n, pa.string())) for n in names])


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
