"""The metrics' fast path for columnar runs: figures from Arrow columns, no records made.

A run of a large dataset (or read from a Parquet run file) holds its samples and
outcomes as :class:`~shieldbench.runfiles.ColumnarRows` (on disk or in memory).
Making a million ``Sample`` and ``Outcome`` objects for every pass of every metric
is slow, so the counting metrics (:func:`~shieldbench.metrics.confusion`,
:func:`~shieldbench.metrics.breakdown`, latency, :func:`~shieldbench.metrics.has_scores`,
``score_arrays``) read the few columns they need here, a block of rows at a time,
into compact NumPy arrays. Each function gives exactly what its
object-by-object twin gives (tested on every error policy).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from shieldbench.errors import StatisticsError
from shieldbench.runfiles import CHUNK, ColumnarRows, outcomes_from
from shieldbench.types import ErrorPolicy, Run

__all__ = [
    "ERROR",
    "TIMEOUT",
    "GroupCodes",
    "bad_outcomes",
    "columnar",
    "decision_blocks",
    "decisions",
    "group_values",
    "latencies",
    "latency_blocks",
    "score_columns",
    "scored",
]


BLOCK = CHUNK
"""Rows read at a time (one row group of a run file)."""


def columnar(run: Run) -> bool:
    """Whether ``run`` keeps its samples and outcomes in columns (memory or disk)."""
    return isinstance(run.samples, ColumnarRows) and isinstance(run.outcomes, ColumnarRows)


def _gather(
    rows: Any, names: Sequence[str], dtype: Any, convert: Callable[[Any], Any]
) -> np.ndarray:
    """One compact NumPy array over every row, filled a block of rows at a time.

    ``convert`` turns a block (an Arrow table of ``names``) into that block's values;
    only one block of Arrow data is read at a time, so a run's strings (labels,
    statuses) are never whole columns in memory: what grows with the run is the
    result, one to eight bytes a row.
    """
    out = np.empty(len(rows), dtype=dtype)
    start = 0
    for block in rows.batches(list(names), size=BLOCK):
        values = np.asarray(convert(block), dtype=dtype)
        out[start : start + len(values)] = values
        start += len(values)
    return out


def _arrow_numpy(array: Any) -> Any:
    return array.to_numpy(zero_copy_only=False)


def _status(run: Run) -> np.ndarray:
    """Each outcome's status as a small code: 0 ok, 1 error, 2 timeout (no strings made)."""
    import pyarrow.compute as pc

    codes = pa_strings(["ok", "error", "timeout"])
    return _gather(
        run.outcomes,
        ["status"],
        np.int8,
        lambda b: _arrow_numpy(pc.index_in(b.column("status"), value_set=codes)),
    )


def pa_strings(values: list[str]) -> Any:
    import pyarrow as pa

    return pa.array(values, pa.string())


def decisions(run: Run, policy: ErrorPolicy) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(is_attack, blocked, status)``: blocked is 1 / 0, or -1 for an excluded outcome;
    status as coded by :func:`_status` (use :data:`ERROR` / :data:`TIMEOUT`)."""
    import pyarrow.compute as pc

    fill = {"fail_closed": 1, "fail_open": 0, "exclude": -1}[policy]
    attack = _gather(
        run.samples, ["label"], bool, lambda b: _arrow_numpy(pc.equal(b.column("label"), "attack"))
    )
    blocked = _gather(
        run.outcomes,
        ["blocked"],
        np.int8,
        lambda b: _arrow_numpy(pc.fill_null(pc.cast(b.column("blocked"), "int8"), fill)),
    )
    return attack, blocked, _status(run)


ERROR, TIMEOUT = 1, 2


def decision_blocks(
    run: Run, policy: ErrorPolicy, by: str | None = None
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, Any]]:
    """:func:`decisions` a block of rows at a time: ``(is_attack, blocked, status,
    group)`` per block, ``group`` the block's Arrow column of sample field ``by``
    (``None`` without ``by``). Memory is one block, whatever the run's size."""
    import pyarrow.compute as pc

    fill = {"fail_closed": 1, "fail_open": 0, "exclude": -1}[policy]
    codes = pa_strings(["ok", "error", "timeout"])
    samples: ColumnarRows[Any] = run.samples  # type: ignore[assignment]
    outcomes: ColumnarRows[Any] = run.outcomes  # type: ignore[assignment]
    for sb, ob in zip(
        samples.batches(["label"] if by is None else ["label", by], size=BLOCK),
        outcomes.batches(["blocked", "status"], size=BLOCK),
        strict=True,
    ):
        attack = np.asarray(_arrow_numpy(pc.equal(sb.column("label"), "attack")), dtype=bool)
        blocked = _arrow_numpy(pc.fill_null(pc.cast(ob.column("blocked"), "int8"), fill))
        status = _arrow_numpy(pc.index_in(ob.column("status"), value_set=codes))
        yield (
            attack,
            np.asarray(blocked, dtype=np.int8),
            np.asarray(status, dtype=np.int8),
            None if by is None else sb.column(by),
        )


class GroupCodes:
    """Numbers the distinct values of a sample field across blocks, in order of first
    appearance (as a whole-column dictionary encoding numbers them)."""

    def __init__(self, unset: str) -> None:
        self.unset = unset
        self.groups: dict[str, int] = {}
        self.any_set = False

    def codes(self, column: Any) -> np.ndarray:
        """Each row's group number (``unset`` where the field is unset)."""
        import pyarrow.compute as pc

        self.any_set = self.any_set or column.null_count < len(column)
        encoded = pc.fill_null(column, self.unset).combine_chunks().dictionary_encode()
        local = [
            self.groups.setdefault(str(v), len(self.groups)) for v in encoded.dictionary.to_pylist()
        ]
        out: np.ndarray = np.asarray(local, dtype=np.int64)[_arrow_numpy(encoded.indices)]
        return out


def group_values(run: Run, by: str, unset: str) -> tuple[list[str], np.ndarray] | None:
    """``(groups, index)``: the distinct values of sample field ``by`` (``unset`` where
    unset) and each sample's index into them; None if no sample sets it.

    Groups are numbered in order of first appearance (as a whole-column dictionary
    encoding numbers them), a block of rows at a time.
    """
    import pyarrow.compute as pc

    groups: dict[str, int] = {}
    any_set = False

    def codes(block: Any) -> Any:
        nonlocal any_set
        column = block.column(by)
        any_set = any_set or column.null_count < len(column)
        encoded = pc.fill_null(column, unset).combine_chunks().dictionary_encode()
        local = [groups.setdefault(str(v), len(groups)) for v in encoded.dictionary.to_pylist()]
        return np.asarray(local, dtype=np.int64)[_arrow_numpy(encoded.indices)]

    index = _gather(run.samples, [by], np.int64, codes)
    if not any_set:
        return None
    return list(groups), index


def bad_outcomes(run: Run) -> list[Any]:
    """The outcomes that are not ok, made as objects (only those), a block at a time."""
    import pyarrow.compute as pc

    rows: ColumnarRows[Any] = run.outcomes  # type: ignore[assignment]
    bad: list[Any] = []
    for block in rows.batches(size=BLOCK):
        failed = block.filter(pc.not_equal(block.column("status"), "ok"))
        if failed.num_rows:
            bad.extend(
                outcomes_from({n: failed.column(n).to_pylist() for n in failed.column_names})
            )
    return bad


def latency_blocks(run: Run) -> Iterator[np.ndarray]:
    """The latencies of the ok outcomes that have one, a block of rows at a time (the
    bounded-memory twin of :func:`latencies`)."""
    import pyarrow.compute as pc

    codes = pa_strings(["ok", "error", "timeout"])
    rows: ColumnarRows[Any] = run.outcomes  # type: ignore[assignment]
    for block in rows.batches(["status", "latency_ms"], size=BLOCK):
        status = _arrow_numpy(pc.index_in(block.column("status"), value_set=codes))
        values = np.asarray(_arrow_numpy(block.column("latency_ms")), dtype=float)
        yield values[(status == 0) & ~np.isnan(values)]


def latencies(run: Run) -> np.ndarray:
    """The latencies of the ok outcomes that have one (one array: memory grows with
    the run; whole-run figures read :func:`latency_blocks`)."""
    status = _status(run)
    floats = _gather(
        run.outcomes, ["latency_ms"], float, lambda b: _arrow_numpy(b.column("latency_ms"))
    )
    kept: np.ndarray = floats[(status == 0) & ~np.isnan(floats)]
    return kept


def scored(run: Run) -> bool:
    """True when every outcome with a verdict has a score (and there is one)."""
    import pyarrow.compute as pc

    rows: ColumnarRows[Any] = run.outcomes  # type: ignore[assignment]
    with_verdict = missing = 0
    for block in rows.batches(["blocked", "score"], size=BLOCK):
        blocked, score = block.column("blocked"), block.column("score")
        with_verdict += len(blocked) - blocked.null_count
        missing += pc.sum(pc.and_(pc.is_valid(blocked), pc.is_null(score))).as_py() or 0
    return with_verdict > 0 and missing == 0


def score_columns(run: Run, policy: ErrorPolicy) -> tuple[np.ndarray, np.ndarray]:
    """``(is_attack, scores)`` with the error policy applied, as ``score_arrays``."""
    attack, blocked, _ = decisions(run, "exclude")
    score = _gather(run.outcomes, ["score"], float, lambda b: _arrow_numpy(b.column("score")))
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
