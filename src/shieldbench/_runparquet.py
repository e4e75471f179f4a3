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
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from shieldbench._views import RecordView
from shieldbench.errors import RunError
from shieldbench.types import (
    DatasetInfo,
    DefenseInfo,
    Outcome,
    Run,
    RunConfig,
    Sample,
    Verdict,
)

__all__ = ["ROW_GROUP", "load_run_parquet", "run_header", "save_run_parquet"]

ROW_GROUP = 65_536
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


def _json_or_none(mapping: Any) -> str | None:
    return json.dumps(dict(mapping), ensure_ascii=False, sort_keys=True) if mapping else None


def _columns(samples: Sequence[Sample], outcomes: Sequence[Outcome]) -> dict[str, list[Any]]:
    verdicts = [o.verdict for o in outcomes]
    return {
        "id": [s.id for s in samples],
        "text": [s.text for s in samples],
        "label": [s.label for s in samples],
        "category": [s.category for s in samples],
        "subcategory": [s.subcategory for s in samples],
        "severity": [s.severity for s in samples],
        "tier": [s.tier for s in samples],
        "source": [s.source for s in samples],
        "metadata": [_json_or_none(s.metadata) for s in samples],
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
            for start in range(0, len(run.samples), ROW_GROUP):
                stop = start + ROW_GROUP
                cols = _columns(run.samples[start:stop], run.outcomes[start:stop])
                writer.write_table(pa.table(cols, schema=schema))
            if not run.samples:
                writer.write_table(pa.table(_columns((), ()), schema=schema))
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
        pa.default_memory_pool().release_unused()  # give the row groups' buffers back
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


class _Rows(RecordView[Any]):
    """One kind of record (samples or outcomes) over the rows of an Arrow table."""

    def __init__(self, table: Any, make: Callable[[dict[str, list[Any]]], list[Any]]) -> None:
        self._table = table
        self._make = make
        self._cache: tuple[int, list[Any]] = (-1, [])

    def __len__(self) -> int:
        return int(self._table.num_rows)

    def _chunk(self, k: int) -> list[Any]:
        if self._cache[0] != k:
            part = self._table.slice(k * ROW_GROUP, ROW_GROUP)
            cols = {name: part.column(name).to_pylist() for name in part.column_names}
            self._cache = (k, self._make(cols))
        return self._cache[1]

    def chunks(self) -> Iterator[list[Any]]:
        for k in range(0, len(self), ROW_GROUP):
            yield self._chunk(k // ROW_GROUP)

    def _get(self, index: int) -> Any:
        return self._chunk(index // ROW_GROUP)[index % ROW_GROUP]


def _samples(c: dict[str, list[Any]]) -> list[Sample]:
    return [
        Sample(i, t, lab, cat, sub, sev, tier, src, json.loads(meta) if meta else {})
        for i, t, lab, cat, sub, sev, tier, src, meta in zip(
            c["id"], c["text"], c["label"], c["category"], c["subcategory"], c["severity"],
            c["tier"], c["source"], c["metadata"], strict=True,
        )
    ]  # fmt: skip


def _outcomes(c: dict[str, list[Any]]) -> list[Outcome]:
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
        samples = _Rows(table.select(sample_cols), _samples)
        outcomes = _Rows(table.select(outcome_cols), _outcomes)
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
