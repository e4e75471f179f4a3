"""The metrics' fast path for columnar runs: figures from Arrow columns, no records made.

A run of a large dataset (or read from a Parquet run file) holds its samples and
outcomes as :class:`~shieldbench._columns.ArrowRows`. Making a million ``Sample``
and ``Outcome`` objects for every pass of every metric is slow, so the counting
metrics (:func:`~shieldbench.metrics.confusion`, :func:`~shieldbench.metrics.breakdown`,
latency, :func:`~shieldbench.metrics.has_scores`, ``score_arrays``) read the few
columns they need as NumPy arrays here. Each function gives exactly what its
object-by-object twin gives (tested on every error policy).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shieldbench._columns import ArrowRows, outcomes_from
from shieldbench.errors import StatisticsError
from shieldbench.types import ErrorPolicy, Run

__all__ = [
    "ERROR",
    "TIMEOUT",
    "bad_outcomes",
    "columnar",
    "decisions",
    "group_values",
    "latencies",
    "score_columns",
    "scored",
]


def columnar(run: Run) -> bool:
    """Whether ``run`` keeps its samples and outcomes in Arrow columns."""
    return isinstance(run.samples, ArrowRows) and isinstance(run.outcomes, ArrowRows)


def _status(run: Run) -> np.ndarray:
    """Each outcome's status as a small code: 0 ok, 1 error, 2 timeout (no strings made)."""
    import pyarrow.compute as pc

    column = run.outcomes.column("status")  # type: ignore[attr-defined]
    codes = pc.index_in(column, value_set=pa_strings(["ok", "error", "timeout"]))
    return np.asarray(codes.to_numpy(zero_copy_only=False), dtype=np.int8)


def pa_strings(values: list[str]) -> Any:
    import pyarrow as pa

    return pa.array(values, pa.string())


def decisions(run: Run, policy: ErrorPolicy) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(is_attack, blocked, status)``: blocked is 1 / 0, or -1 for an excluded outcome;
    status as coded by :func:`_status` (use :data:`ERROR` / :data:`TIMEOUT`)."""
    import pyarrow.compute as pc

    attack = pc.equal(run.samples.column("label"), "attack")  # type: ignore[attr-defined]
    blocked_col = run.outcomes.column("blocked")  # type: ignore[attr-defined]
    fill = {"fail_closed": 1, "fail_open": 0, "exclude": -1}[policy]
    blocked = pc.fill_null(pc.cast(blocked_col, "int8"), fill)
    return (
        np.asarray(attack.to_numpy(zero_copy_only=False), dtype=bool),
        np.asarray(blocked.to_numpy(zero_copy_only=False), dtype=np.int8),
        _status(run),
    )


ERROR, TIMEOUT = 1, 2


def group_values(run: Run, by: str, unset: str) -> tuple[list[str], np.ndarray] | None:
    """``(groups, index)``: the distinct values of sample field ``by`` (``unset`` where
    unset) and each sample's index into them; None if no sample sets it."""
    import pyarrow.compute as pc

    column = run.samples.column(by)  # type: ignore[attr-defined]
    if column.null_count == len(column):
        return None
    encoded = pc.fill_null(column, unset).combine_chunks().dictionary_encode()
    index = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    return [str(v) for v in encoded.dictionary.to_pylist()], index


def bad_outcomes(run: Run) -> list[Any]:
    """The outcomes that are not ok, made as objects (only those)."""
    import pyarrow.compute as pc

    table = run.outcomes.table  # type: ignore[attr-defined]
    return list(ArrowRows(table.filter(pc.not_equal(table.column("status"), "ok")), outcomes_from))


def latencies(run: Run) -> np.ndarray:
    """The latencies of the ok outcomes that have one."""
    status = _status(run)
    values = run.outcomes.column("latency_ms").to_numpy(zero_copy_only=False)  # type: ignore[attr-defined]
    floats: np.ndarray = np.asarray(values, dtype=float)
    kept: np.ndarray = floats[(status == 0) & ~np.isnan(floats)]
    return kept


def scored(run: Run) -> bool:
    """True when every outcome with a verdict has a score (and there is one)."""
    import pyarrow.compute as pc

    blocked = run.outcomes.column("blocked")  # type: ignore[attr-defined]
    score = run.outcomes.column("score")  # type: ignore[attr-defined]
    with_verdict = len(blocked) - blocked.null_count
    missing = pc.sum(pc.and_(pc.is_valid(blocked), pc.is_null(score))).as_py() or 0
    return with_verdict > 0 and missing == 0


def score_columns(run: Run, policy: ErrorPolicy) -> tuple[np.ndarray, np.ndarray]:
    """``(is_attack, scores)`` with the error policy applied, as ``score_arrays``."""
    attack, blocked, _ = decisions(run, "exclude")
    score = run.outcomes.column("score").to_numpy(zero_copy_only=False)  # type: ignore[attr-defined]
    score = np.array(score, dtype=float)  # a copy: Arrow's zero-copy view is read-only
    has_verdict = blocked >= 0
    missing = has_verdict & np.isnan(score)
    if missing.any():
        sample_id = run.samples[int(np.flatnonzero(missing)[0])].id
        raise StatisticsError(
            f"run {run.id!r}: sample {sample_id!r} has a verdict without a score;"
            " score-based metrics need a score on every verdict"
        )
    if policy == "exclude":
        return attack[has_verdict], score[has_verdict]
    score[~has_verdict] = np.inf if policy == "fail_closed" else -np.inf
    return attack, score
