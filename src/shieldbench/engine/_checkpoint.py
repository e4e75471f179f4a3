"""The checkpoint: a JSONL file of finished outcomes, so a killed run can resume.

Format (one JSON object per line, UTF-8)::

    {"kind": "shieldbench.checkpoint", "version": 1, "run_id": ..., "defense": {...},
     "dataset": {...}, "config": {...}, "started": "2026-01-01T12:00:00+00:00"}
    {"position": 0, "sample_id": "a1", "verdict": {...}, "status": "ok", ..., "attempts": 1}
    ...

Both kinds of line are written and read by the records' one codec
(:mod:`shieldbench.runfiles`): the header's fields are the run header's
(``run_id`` is the run's ``id``), an outcome line is ``Outcome.to_dict()`` plus
``position``, the sample's index in the dataset (lines written before positions
existed have none; they resume through :func:`read_checkpoint`, in memory).

Outcome lines are appended in completion order (not dataset order). The file is
flushed every :data:`FLUSH_INTERVAL_S` and fsynced every :data:`FSYNC_INTERVAL_S`
and when the writer closes, so a killed process loses at most the last fraction
of a second of work. A kill can cut the last line short: a final line without its
newline is an interrupted write and is ignored on resume (that sample is simply
screened again); any other malformed line means the file was damaged and resuming
stops with :class:`~shieldbench.errors.RunError` naming the line.

Text UTF-8 cannot encode (a lone surrogate in an error message or a reason a
defense returned) is written as a ``\\udXXX`` JSON escape, and registered
credentials are masked (:mod:`shieldbench._redact`), like every file shieldbench writes.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from time import perf_counter
from typing import IO, Any

from shieldbench._redact import mask_secrets
from shieldbench.errors import RunError
from shieldbench.runfiles import decode_fields, decode_record, encode_fields, plain
from shieldbench.types import DatasetInfo, DefenseInfo, Outcome, RunConfig

__all__ = [
    "CHECKPOINT_KIND",
    "CHECKPOINT_VERSION",
    "FLUSH_INTERVAL_S",
    "FSYNC_INTERVAL_S",
    "CheckpointHeader",
    "CheckpointWriter",
    "Restored",
    "read_checkpoint",
]

CHECKPOINT_KIND = "shieldbench.checkpoint"
CHECKPOINT_VERSION = 1
FLUSH_INTERVAL_S = 0.2
FSYNC_INTERVAL_S = 2.0


@dataclass(frozen=True, slots=True)
class CheckpointHeader:
    """The first line: which run this is, so a resume can refuse the wrong one."""

    run_id: str
    defense: DefenseInfo
    dataset: DatasetInfo
    config: RunConfig
    started: datetime

    def to_dict(self) -> dict[str, Any]:
        values = {"id": self.run_id, "defense": self.defense, "dataset": self.dataset,
                  "config": self.config, "started": self.started}  # fmt: skip
        head = {"kind": CHECKPOINT_KIND, "version": CHECKPOINT_VERSION}
        return head | encode_fields(values, _HEADER_FIELDS, keys=_KEYS)

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, where: str) -> CheckpointHeader:
        if data.get("kind") != CHECKPOINT_KIND:
            raise RunError(f"{where}: not a shieldbench checkpoint (no {CHECKPOINT_KIND!r} header)")
        if data.get("version") != CHECKPOINT_VERSION:
            raise RunError(
                f"{where}: checkpoint version {data.get('version')!r} is not supported"
                f" (this shieldbench writes version {CHECKPOINT_VERSION}); delete it to start over"
            )
        values = decode_fields(
            data, _HEADER_FIELDS, where=f"{where}: bad checkpoint header", keys=_KEYS
        )
        return cls(
            run_id=values["id"],
            defense=values["defense"],
            dataset=values["dataset"],
            config=values["config"],
            started=values["started"],
        )


_HEADER_FIELDS = ("id", "defense", "dataset", "config", "started")
_KEYS = {"id": "run_id"}  # the run header's codec; the checkpoint calls the id run_id


@dataclass(frozen=True, slots=True)
class Restored:
    """What a checkpoint holds: its header, outcomes by sample id, and its valid length.

    ``valid_bytes`` is where the intact part of the file ends (before a cut-off
    last line); the writer truncates there before appending.
    """

    header: CheckpointHeader
    outcomes: dict[str, Outcome]
    valid_bytes: int


def read_checkpoint(path: str | Path, *, sample_ids: Collection[str]) -> Restored:
    """Read a checkpoint; outcomes for ids outside ``sample_ids`` are an error.

    A sample id that appears twice keeps its first outcome (the engine never
    writes one twice; this guards against hand-edited files).
    """
    source = Path(path)
    try:
        raw = source.read_bytes()
    except OSError as exc:
        raise RunError(f"{source}: cannot read the checkpoint ({exc.strerror})") from exc
    lines = raw.split(b"\n")
    # split() leaves the text after the last newline as the final element: empty
    # when the file ends cleanly, a cut-off write otherwise. Either way it is dropped.
    complete = lines[:-1]
    if not complete:
        raise RunError(f"{source}: empty checkpoint (no header line); delete it to start over")
    header = CheckpointHeader.from_dict(_parse(complete[0], source, 1), where=f"{source}:1")
    outcomes: dict[str, Outcome] = {}
    for number, line in enumerate(complete[1:], start=2):
        if not line.strip():
            continue
        data = _parse(line, source, number)
        data.pop("position", None)
        try:
            outcome = decode_record(Outcome, data, where=f"{source}:{number}")
        except RunError as exc:
            raise RunError(f"{exc}; delete that line or the checkpoint") from None
        if outcome.sample_id not in sample_ids:
            raise RunError(
                f"{source}:{number}: outcome for sample {outcome.sample_id!r}, which is not in"
                " the dataset; the checkpoint belongs to other data, delete it to start over"
            )
        outcomes.setdefault(outcome.sample_id, outcome)
    return Restored(header, outcomes, len(raw) - len(lines[-1]))


def _parse(line: bytes, source: Path, number: int) -> dict[str, Any]:
    try:
        data = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RunError(
            f"{source}:{number}: damaged checkpoint line ({exc}); delete that line or the"
            " checkpoint"
        ) from exc
    if not isinstance(data, dict):
        raise RunError(f"{source}:{number}: damaged checkpoint line (not a JSON object)")
    return data


class CheckpointWriter:
    """Appends outcomes to a checkpoint; thread-safe; flushes and fsyncs on a clock.

    Use :meth:`create` for a new run and :meth:`reopen` to continue one.
    """

    def __init__(self, path: Path, fh: IO[str]) -> None:
        self.path = path
        self._fh = fh
        self._lock = threading.Lock()
        self._closed = False
        now = perf_counter()
        self._flushed_at = now
        self._synced_at = now

    @classmethod
    def create(cls, path: str | Path, header: CheckpointHeader) -> CheckpointWriter:
        """Start a new checkpoint; :class:`RunError` if the file already exists."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            fh = target.open("x", encoding="utf-8", errors="backslashreplace", newline="\n")
        except FileExistsError:
            raise RunError(
                f"{target}: a checkpoint already exists; resume it (resume=True, --resume)"
                " or delete it to start over"
            ) from None
        writer = cls(target, fh)
        fh.write(json.dumps(header.to_dict(), ensure_ascii=False) + "\n")
        writer._sync()
        return writer

    @classmethod
    def reopen(cls, path: str | Path, valid_bytes: int) -> CheckpointWriter:
        """Continue a checkpoint, first cutting off a partly written last line."""
        target = Path(path)
        os.truncate(target, valid_bytes)
        fh = target.open("a", encoding="utf-8", errors="backslashreplace", newline="\n")
        return cls(target, fh)

    def add(self, outcome: Outcome, position: int | None = None) -> None:
        """Append ``outcome``; ``position`` is its sample's index in the dataset (what a
        resume looks outcomes up by, see :mod:`shieldbench.engine._resume`)."""
        record = plain(outcome.to_dict())
        if position is not None:
            record = {"position": position, **record}
        text = json.dumps(record, ensure_ascii=False)
        line = mask_secrets(text) + "\n"
        with self._lock:
            if self._closed:
                return
            self._fh.write(line)
        self.flush_due(perf_counter())

    def flush_due(self, now: float) -> None:
        """Flush if the last flush is older than the interval (fsync likewise)."""
        if now - self._flushed_at < FLUSH_INTERVAL_S:
            return
        with self._lock:
            if self._closed:
                return
            self._fh.flush()
            self._flushed_at = now
            if now - self._synced_at >= FSYNC_INTERVAL_S:
                os.fsync(self._fh.fileno())
                self._synced_at = now

    def _sync(self) -> None:
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._flushed_at = self._synced_at = perf_counter()

    def close(self) -> None:
        """Flush, fsync and close; later :meth:`add` calls are ignored."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._sync()
            finally:
                self._fh.close()
