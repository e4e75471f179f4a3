"""Run files in columnar form: one Parquet file, one row per (sample, outcome).

For large runs a JSON file is slow to write and read and costs a dict per sample
and per outcome at once; a Parquet run file is written and read in row groups of
:data:`ROW_GROUP` rows, so memory stays at one row group of columns plus the run's
own records. The run's header (every Run field but its samples and outcomes:
:func:`shieldbench.runfiles.run_header`, the same document as a JSON run file's
top level, end-to-end figures included) is one JSON document in the file's
key-value metadata under ``shieldbench.run``; the rows hold one column per sample
field and per outcome field (:data:`shieldbench.runfiles.SAMPLE_COLUMNS`,
:data:`~shieldbench.runfiles.OUTCOME_COLUMNS`: text and numbers as such, metadata,
messages, details and end-to-end records as JSON text; the verdict's columns are
null when the outcome has no verdict).

A file written before a column existed (the first layout had no ``messages`` and
no ``end_to_end`` column) reads that field as absent; the schema version stays 1
because every older file reads back unchanged.

Any Parquet reader (pandas, DuckDB, Polars, Spark) reads the rows directly.
:func:`shieldbench.runio.save_run` writes this form for a path ending in
``.parquet`` and :func:`shieldbench.runio.load_run` reads it back (a JSON run file
stays readable as before). Reading keeps the rows **in the file**: the Run's
``samples`` and ``outcomes`` are :class:`~shieldbench.runfiles.ParquetRows` over it
that read a row group at a time as metrics and reports iterate them, so a run
file of ten million rows is read back in the memory of one row group.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Any

from shieldbench.errors import RunError
from shieldbench.runfiles._base import CHUNK, ColumnarRows
from shieldbench.runfiles._header import check_kind, run_from_header, run_header
from shieldbench.runfiles._rows import (
    SAMPLE_FIELDS,
    outcome_columns,
    outcomes_from,
    sample_columns,
    samples_from,
)
from shieldbench.runfiles._spill import ParquetRows, ParquetSource
from shieldbench.runfiles._table import OUTCOME_COLUMNS, SAMPLE_COLUMNS, arrow_type
from shieldbench.types import Outcome, Run, Sample

__all__ = ["ROW_GROUP", "load_run_parquet", "save_run_parquet"]

ROW_GROUP = CHUNK
"""Rows per row group of a Parquet run file."""
_KEY = b"shieldbench.run"
_OUTCOME_ONLY = [c for c in OUTCOME_COLUMNS if c.name not in SAMPLE_FIELDS]


def _schema() -> Any:
    """Every sample column, then every outcome column but the shared ``id``."""
    import pyarrow as pa

    return pa.schema([(c.name, arrow_type(c)) for c in (*SAMPLE_COLUMNS, *_OUTCOME_ONLY)])


def _rows(samples: Sequence[Sample], outcomes: Sequence[Outcome]) -> dict[str, list[Any]]:
    return sample_columns(samples) | {
        k: v for k, v in outcome_columns(outcomes).items() if k not in SAMPLE_FIELDS
    }


def _groups(run: Run, schema: Any) -> Iterator[Any]:
    """The run's rows as Arrow tables of :data:`ROW_GROUP` rows each.

    Columnar samples and outcomes (:class:`~shieldbench.runfiles.ColumnarRows`: in
    memory or on disk) are read a block at a time and joined as Arrow arrays (a column
    a file from an older version lacks is written null); records held as objects are
    encoded a row group at a time. Nothing holds more than one row group.
    """
    import pyarrow as pa

    samples, outcomes = run.samples, run.outcomes
    sample_it, outcome_it = iter(samples), iter(outcomes)
    for start in range(0, len(samples), ROW_GROUP):
        if isinstance(samples, ColumnarRows) and isinstance(outcomes, ColumnarRows):
            part_s = samples.slice_table(start, start + ROW_GROUP)
            part_o = outcomes.slice_table(start, start + ROW_GROUP)
            arrays = []
            for name, field in zip(schema.names, schema, strict=True):
                part = part_s if name in SAMPLE_FIELDS else part_o
                if name in part.column_names:
                    arrays.append(part.column(name).cast(field.type))
                else:
                    arrays.append(pa.nulls(part.num_rows, field.type))
            yield pa.Table.from_arrays(arrays, schema=schema)
        else:
            part = list(islice(sample_it, ROW_GROUP)), list(islice(outcome_it, ROW_GROUP))
            yield pa.table(_rows(*part), schema=schema)
    if not samples:
        yield pa.table(_rows((), ()), schema=schema)


def save_run_parquet(run: Run, path: str | Path) -> Path:
    """Write ``run`` as Parquet, atomically (temp file + rename); returns the path."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    schema = _schema().with_metadata({_KEY: json.dumps(run_header(run), ensure_ascii=False)})
    fd, tmp = tempfile.mkstemp(prefix=".run-", suffix=".parquet", dir=target.parent)
    os.close(fd)
    try:
        with pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
            for group in _groups(run, schema):
                writer.write_table(group)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
        pa.default_memory_pool().release_unused()  # give the row groups' buffers back
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def load_run_parquet(path: str | Path) -> Run:
    """Read a run written by :func:`save_run_parquet`; :class:`RunError` on bad input."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = Path(path)
    try:
        meta = pq.read_schema(source).metadata or {}
    except FileNotFoundError:
        raise RunError(f"{source}: no such run file") from None
    except (OSError, pa.ArrowException) as exc:
        raise RunError(f"{source}: not a Parquet file ({exc})") from None
    if _KEY not in meta:
        raise RunError(f"{source}: a Parquet file, but not a shieldbench run (no run header)")
    where = str(source)
    try:
        head = json.loads(meta[_KEY])
    except ValueError as exc:
        raise RunError(f"{source}: the run header is not JSON ({exc})") from None
    if not isinstance(head, dict):
        raise RunError(f"{source}: the run header is not a JSON object")
    check_kind(head, where=where)
    try:
        rows = ParquetSource(source)
    except (OSError, pa.ArrowException) as exc:
        raise RunError(f"{source}: cannot read the rows ({exc})") from None
    missing = [n for n in ("id", "text", "label", "status") if n not in rows.names]
    if missing:
        raise RunError(f"{source}: column(s) {', '.join(missing)} missing; not a run file's rows")
    sample_cols = [c.name for c in SAMPLE_COLUMNS if c.name in rows.names]
    outcome_cols = [c.name for c in OUTCOME_COLUMNS if c.name in rows.names]
    samples = ParquetRows(rows, partial(samples_from, where=where), sample_cols)
    outcomes = ParquetRows(rows, partial(outcomes_from, where=where), outcome_cols)
    return run_from_header(head, samples=samples, outcomes=outcomes, where=where)
