"""Run files in columnar form: one Parquet file, one row per (sample, outcome).

For large runs a JSON file is slow to write and read and costs a dict per sample
and per outcome at once; a Parquet run file is written and read in row groups of
:data:`ROW_GROUP` rows, so memory stays at one row group of columns plus the run's
own records. The run's header (id, defense, dataset, config, environment, times,
schema version) is one JSON document in the file's key-value metadata under
``shieldbench.run``; the rows hold the sample fields (``id``, ``text``, ``label``,
``category``, ``subcategory``, ``severity``, ``tier``, ``source``, ``metadata`` as
JSON) and the outcome fields (``status``, ``error``, ``latency_ms``, ``attempts``,
``blocked``, ``score``, ``verdict_label``, ``reasons``, ``details`` as JSON; the
verdict columns are null when the outcome has no verdict).

Any Parquet reader (pandas, DuckDB, Polars, Spark) reads the rows directly.
:func:`shieldbench.runio.save_run` writes this form for a path ending in
``.parquet`` and :func:`shieldbench.runio.load_run` reads it back (a JSON run file
stays readable as before). Reading keeps the rows in Arrow memory: the Run's
``samples`` and ``outcomes`` are :class:`~shieldbench._views.RecordView` objects
that build ``Sample`` / ``Outcome`` objects a chunk at a time as metrics and
reports iterate them.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from datetime import datetime
from itertools import islice
from pathlib import Path
from typing import Any

from shieldbench._columns import (
    CHUNK,
    SAMPLE_FIELDS,
    ArrowRows,
    outcome_columns,
    outcomes_from,
    sample_columns,
    samples_from,
)
from shieldbench.errors import RunError
from shieldbench.types import DatasetInfo, DefenseInfo, Outcome, Run, RunConfig, Sample

__all__ = ["ROW_GROUP", "load_run_parquet", "run_header", "save_run_parquet"]

ROW_GROUP = CHUNK
_KEY = b"shieldbench.run"


def _schema() -> Any:
    import pyarrow as pa

    text = pa.string()
    return pa.schema(
        [
            ("id", text), ("text", text), ("label", text), ("category", text),
            ("subcategory", text), ("severity", text), ("tier", text), ("source", text),
            ("metadata", text), ("status", text), ("error", text),
            ("latency_ms", pa.float64()), ("attempts", pa.int32()), ("blocked", pa.bool_()),
            ("score", pa.float64()), ("verdict_label", text), ("reasons", pa.list_(text)),
            ("details", text),
        ]
    )  # fmt: skip


def _rows(samples: Sequence[Sample], outcomes: Sequence[Outcome]) -> dict[str, list[Any]]:
    return {k: v for k, v in sample_columns(samples).items() if k != "messages"} | {
        k: v for k, v in outcome_columns(outcomes).items() if k != "id"
    }


def _groups(run: Run, schema: Any) -> Iterator[Any]:
    """The run's rows as Arrow tables of :data:`ROW_GROUP` rows each.

    Columnar samples and outcomes (:class:`~shieldbench._columns.ArrowRows`) are
    sliced and joined as Arrow arrays; records held as objects are encoded a row
    group at a time.
    """
    import pyarrow as pa

    samples, outcomes = run.samples, run.outcomes
    sample_it, outcome_it = iter(samples), iter(outcomes)
    for start in range(0, len(samples), ROW_GROUP):
        if isinstance(samples, ArrowRows) and isinstance(outcomes, ArrowRows):
            part_s = samples.table.slice(start, ROW_GROUP)
            part_o = outcomes.table.slice(start, ROW_GROUP)
            arrays = [
                (part_s if name in SAMPLE_FIELDS else part_o).column(name).cast(field.type)
                for name, field in zip(schema.names, schema, strict=True)
            ]
            yield pa.Table.from_arrays(arrays, schema=schema)
        else:
            part = list(islice(sample_it, ROW_GROUP)), list(islice(outcome_it, ROW_GROUP))
            yield pa.table(_rows(*part), schema=schema)
    if not samples:
        yield pa.table(_rows((), ()), schema=schema)


def run_header(run: Run) -> dict[str, Any]:
    """A run's fields but its samples and outcomes (shared with the JSON run file)."""
    return {
        "schema_version": run.schema_version,
        "kind": "shieldbench.run",
        "id": run.id,
        "defense": run.defense.to_dict(),
        "dataset": run.dataset.to_dict(),
        "config": run.config.to_dict(),
        "environment": dict(run.environment),
        "started": run.started.isoformat(),
        "finished": run.finished.isoformat(),
    }


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


def load_run_parquet(path: str | Path, *, schema_version: int) -> Run:
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
    try:
        head = json.loads(meta[_KEY])
        if head.get("schema_version") != schema_version:
            raise RunError(
                f"{source}: run schema_version {head.get('schema_version')!r} is not supported"
                f" (this shieldbench reads version {schema_version})"
            )
        table = pq.read_table(source)
        sample_cols = ["id", "text", "label", "category", "subcategory", "severity", "tier",
                       "source", "metadata"]  # fmt: skip
        outcome_cols = ["id", "status", "error", "latency_ms", "attempts", "blocked", "score",
                        "verdict_label", "reasons", "details"]  # fmt: skip
        samples = ArrowRows(table.select(sample_cols), samples_from)
        outcomes = ArrowRows(table.select(outcome_cols), outcomes_from)
        return Run(
            id=str(head["id"]),
            defense=DefenseInfo.from_dict(head["defense"]),
            dataset=DatasetInfo.from_dict(head["dataset"]),
            config=RunConfig.from_dict(head["config"]),
            samples=samples,
            outcomes=outcomes,
            started=datetime.fromisoformat(head["started"]),
            finished=datetime.fromisoformat(head["finished"]),
            environment=head.get("environment") or {},
            schema_version=int(head["schema_version"]),
        )
    except (KeyError, TypeError, ValueError, pa.ArrowException) as exc:
        raise RunError(
            f"{source}: not a valid shieldbench run file ({type(exc).__name__}: {exc})"
        ) from None
