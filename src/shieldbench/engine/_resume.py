"""Resuming from a checkpoint in memory that does not grow with the run.

Each outcome line of a checkpoint names its sample's **position** in the dataset
(``"position": 12345``, written by :class:`~shieldbench.engine._checkpoint.CheckpointWriter`).
:func:`open_checkpoint` streams the file once, a line at a time: every outcome is
checked and written, with its position, to a spill file on disk (Parquet, one row
group per :data:`~shieldbench.runfiles.CHUNK` lines), and only each row group's
lowest and highest position stay in memory. The engine then asks, window by window,
for the outcomes of positions ``[start, start + len(ids))``
(:meth:`SpilledCheckpoint.window`): only the row groups whose position range meets
the window are read (a checkpoint is written nearly in dataset order, so that is
one or two), and each outcome's sample id is checked against the id at its
position. No set of every id is ever built.

A checkpoint written before lines carried positions is read the old way
(:func:`~shieldbench.engine._checkpoint.read_checkpoint`: every outcome by id, in
memory), so it still resumes.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from shieldbench.datasets import Dataset
from shieldbench.engine._checkpoint import (
    CheckpointHeader,
    CheckpointWriter,
    _parse,
    read_checkpoint,
)
from shieldbench.errors import RunError
from shieldbench.runfiles import (
    CHUNK,
    OUTCOME_COLUMNS,
    ParquetSource,
    arrow_type,
    decode_record,
    outcome_columns,
    outcomes_from,
)
from shieldbench.types import DefenseInfo, Outcome, RunConfig

__all__ = ["Begun", "Restore", "SpilledCheckpoint", "begin", "open_checkpoint"]


class SpilledCheckpoint:
    """A checkpoint's outcomes on disk, looked up a window of positions at a time."""

    def __init__(
        self,
        header: CheckpointHeader,
        source: ParquetSource | None,
        ranges: list[tuple[int, int]],
        valid_bytes: int,
        where: str,
    ) -> None:
        self.header = header
        self.valid_bytes = valid_bytes
        self._source = source
        self._ranges = ranges
        self._where = where
        self.restored = 0
        """Outcomes handed out by :meth:`window` so far."""

    def window(self, start: int, ids: Sequence[str]) -> list[Outcome | None]:
        """The restored outcome of each position ``start + i`` (``None``: none), its
        sample id checked against ``ids[i]``; a position's first line wins."""
        import pyarrow.compute as pc

        found: list[Outcome | None] = [None] * len(ids)
        stop = start + len(ids)
        if self._source is None:
            return found
        for k, (low, high) in enumerate(self._ranges):
            if high < start or low >= stop:
                continue
            group = self._source.parquet.read_row_group(k)
            position = group.column("position")
            rows = group.filter(pc.and_(pc.greater_equal(position, start), pc.less(position, stop)))
            if not rows.num_rows:
                continue
            names = [n for n in rows.column_names if n != "position"]
            made = outcomes_from({n: rows.column(n).to_pylist() for n in names}, where=self._where)
            for p, outcome in zip(rows.column("position").to_pylist(), made, strict=True):
                i = p - start
                if outcome.sample_id != ids[i]:
                    raise RunError(
                        f"{self._where}: outcome for sample {outcome.sample_id!r}, which is not"
                        f" in the dataset at position {p} (it has {ids[i]!r} there); the"
                        " checkpoint belongs to other data, delete it to start over"
                    )
                if found[i] is None:
                    found[i] = outcome
                    self.restored += 1
        return found


def _lines(path: Path) -> Iterator[tuple[int, bytes, int]]:
    """``(line number, line, end offset)`` of each complete line (a cut-off last line,
    without its newline, is not yielded)."""
    offset = 0
    with path.open("rb") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.endswith(b"\n"):
                return
            offset += len(line)
            yield number, line, offset


class _Spill:
    """Outcome lines, with their positions, into a temporary Parquet file."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, Outcome]] = []
        self.ranges: list[tuple[int, int]] = []
        self._writer: Any = None
        self._path: str | None = None

    def add(self, position: int, outcome: Outcome) -> None:
        self.rows.append((position, outcome))
        if len(self.rows) >= CHUNK:
            self.flush()

    def flush(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self.rows:
            return
        positions = [p for p, _ in self.rows]
        cols = outcome_columns([o for _, o in self.rows])
        schema = pa.schema(
            [("position", pa.int64()), *((c.name, arrow_type(c)) for c in OUTCOME_COLUMNS)]
        )
        table = pa.table({"position": positions, **cols}, schema=schema)
        if self._writer is None:
            fd, self._path = tempfile.mkstemp(prefix="shieldbench-resume-", suffix=".parquet")
            os.close(fd)
            self._writer = pq.ParquetWriter(self._path, schema, compression="zstd")
        self._writer.write_table(table, row_group_size=CHUNK)
        self.ranges.append((min(positions), max(positions)))
        self.rows = []

    def finish(self) -> ParquetSource | None:
        self.flush()
        if self._writer is None or self._path is None:
            return None
        self._writer.close()
        return ParquetSource(self._path, temporary=True)


def open_checkpoint(path: str | Path, *, n_samples: int) -> SpilledCheckpoint | None:
    """Stream checkpoint ``path`` into a :class:`SpilledCheckpoint`; ``None`` when its
    outcome lines carry no positions (an older checkpoint: read it the old way).

    Errors (:class:`~shieldbench.errors.RunError`) as the old reader's: no header, a
    damaged line, a position outside the dataset.
    """
    source = Path(path)
    if not source.is_file():
        raise RunError(f"{source}: cannot read the checkpoint (no such file)")
    spill = _Spill()
    header: CheckpointHeader | None = None
    valid = 0
    for number, line, end in _lines(source):
        valid = end
        if header is None:
            header = CheckpointHeader.from_dict(_parse(line, source, 1), where=f"{source}:1")
            continue
        if not line.strip():
            continue
        data = _parse(line, source, number)
        position = data.pop("position", None)
        if position is None:
            return None
        if isinstance(position, bool) or not isinstance(position, int):
            raise RunError(f"{source}:{number}: damaged checkpoint line (position {position!r})")
        if not 0 <= position < n_samples:
            raise RunError(
                f"{source}:{number}: outcome for position {position}, outside the dataset's"
                f" {n_samples} samples; the checkpoint belongs to other data, delete it to"
                " start over"
            )
        try:
            outcome = decode_record(Outcome, data, where=f"{source}:{number}")
        except RunError as exc:
            raise RunError(f"{exc}; delete that line or the checkpoint") from None
        spill.add(position, outcome)
    if header is None:
        raise RunError(f"{source}: empty checkpoint (no header line); delete it to start over")
    return SpilledCheckpoint(header, spill.finish(), spill.ranges, valid, str(source))


class Restore(Protocol):
    """Outcomes restored from a checkpoint, handed out a window of positions at a time."""

    restored: int

    def window(self, start: int, ids: Sequence[str]) -> list[Outcome | None]: ...


class InMemory:
    """A checkpoint without positions (an older one), restored by id from memory."""

    def __init__(self, outcomes: dict[str, Outcome]) -> None:
        self._outcomes = outcomes
        self.restored = 0

    def window(self, start: int, ids: Sequence[str]) -> list[Outcome | None]:
        found = [self._outcomes.pop(i, None) for i in ids]
        self.restored += sum(o is not None for o in found)
        return found


class Nothing:
    restored = 0

    def window(self, start: int, ids: Sequence[str]) -> list[Outcome | None]:
        return [None] * len(ids)


@dataclasses.dataclass(frozen=True, slots=True)
class Begun:
    """How a run starts: its id and start time, its checkpoint writer, what it restores."""

    run_id: str
    info: DefenseInfo
    started: datetime
    writer: CheckpointWriter | None
    restore: Restore


def begin(
    dataset: Dataset,
    info: DefenseInfo,
    config: RunConfig,
    checkpoint: str | Path | None,
    resume: bool,
    run_id: str | None,
    new_id: Callable[[], str],
) -> Begun:
    """Open the checkpoint: a new one, or the one to resume (checked against the run)."""
    if checkpoint is None or not (resume and Path(checkpoint).exists()):
        started = datetime.now(UTC)
        run_id = new_id() if run_id is None else run_id
        writer = None
        if checkpoint is not None:
            header = CheckpointHeader(run_id, info, dataset.info, config, started)
            writer = CheckpointWriter.create(checkpoint, header)
        return Begun(run_id, info, started, writer, Nothing())
    spilled = open_checkpoint(checkpoint, n_samples=len(dataset))
    restore: Restore
    if spilled is not None:
        header, valid, restore = spilled.header, spilled.valid_bytes, spilled
    else:  # an older checkpoint, without positions: every outcome by id, in memory
        state = read_checkpoint(checkpoint, sample_ids={s.id for s in dataset.samples})
        header, valid, restore = state.header, state.valid_bytes, InMemory(state.outcomes)
    _check_compatible(Path(checkpoint), header, info, dataset, run_id)
    writer = CheckpointWriter.reopen(checkpoint, valid)
    return Begun(header.run_id, info, header.started, writer, restore)


def _check_compatible(
    path: Path, header: CheckpointHeader, info: DefenseInfo, dataset: Dataset, run_id: str | None
) -> None:
    if header.defense.spec != info.spec:
        raise RunError(
            f"{path}: this checkpoint was written by defense {header.defense.spec!r}, not"
            f" {info.spec!r}; resume with the same defense, or delete the checkpoint to start over"
        )
    if header.dataset.content_hash != dataset.content_hash:
        raise RunError(
            f"{path}: this checkpoint was written for dataset {header.dataset.spec!r}"
            f" ({header.dataset.content_hash}), but {dataset.name!r} hashes to"
            f" {dataset.content_hash}; the data changed, so delete the checkpoint to start over"
        )
    if run_id is not None and run_id != header.run_id:
        raise RunError(
            f"{path}: this checkpoint belongs to run {header.run_id!r}, not {run_id!r};"
            " omit the run id when resuming"
        )
