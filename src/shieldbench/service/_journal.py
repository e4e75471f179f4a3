"""The audit journal: an append-only local file that makes a decision durable in ~10 us.

The guard answers once a decision's audit record, already chained (``seq``, the hash
of the previous record, its own hash), is written to this file with one ``write``
call; a background thread then moves the records into the store in batches and
empties the file once the store holds all of them. The answer no longer waits for a
database transaction (~0.2 ms on SQLite, more on a network database, plus two thread
hand-offs), and the chain is still one sequence: it is computed here, in order.

What survives what:

- the server process dies (``kill -9``, a crash, the OOM killer): nothing is lost.
  A written record is in the kernel's page cache, which outlives the process; whoever
  opens the store next (the restarted server, ``shieldbench audit verify`` /
  ``export`` / ``prune``) moves the records left in the journal into the store first;
- the machine loses power, or the kernel crashes: records written since the last
  ``fsync`` may be lost (the store's own commits are what a database gives).
  ``journal_fsync_s`` bounds that: ``0`` syncs every record before its answer (slow:
  a disk flush per decision), ``N`` seconds syncs in the background at most N seconds
  apart, absent (the default) leaves it to the kernel (typically within ~30 s).

One line per record: ``seq<TAB>prev_hash<TAB>hash<TAB>canonical JSON body`` (the body
has no raw tab or newline: JSON escapes them). A torn last line (power loss in the
middle of a write) is skipped with a warning. The file is locked (``flock``) by the
server that writes it: a second server on the same store is refused, and a reader
only replays a journal nobody holds.

Where: beside a SQLite file (``history.db.audit-journal``); for another database in
``$SHIELDBENCH_STATE_DIR`` (default ``~/.local/state/shieldbench``), named after a
hash of the URL; ``SHIELDBENCH_AUDIT_JOURNAL`` names the file outright.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from shieldbench.errors import StoreError

__all__ = [
    "ENV_JOURNAL",
    "ENV_STATE_DIR",
    "Journal",
    "JournalLine",
    "encode_line",
    "journal_path",
    "line_bytes",
]

_log = logging.getLogger("shieldbench.service.audit")
ENV_JOURNAL = "SHIELDBENCH_AUDIT_JOURNAL"
ENV_STATE_DIR = "SHIELDBENCH_STATE_DIR"
_DEFAULT_STATE = "~/.local/state/shieldbench"


def journal_path(backend: str, where: str) -> Path:
    """The journal of a store (``backend`` and ``where`` as :class:`~shieldbench.store.Store`
    gives them: the SQLite file path, or the URL without its password)."""
    named = os.environ.get(ENV_JOURNAL)
    if named:
        return Path(named).expanduser()
    if backend == "sqlite":
        return Path(f"{where}.audit-journal")
    state = Path(os.environ.get(ENV_STATE_DIR) or _DEFAULT_STATE).expanduser()
    digest = hashlib.sha256(where.encode()).hexdigest()[:16]
    return state / f"audit-{digest}.journal"


@dataclass(frozen=True, slots=True)
class JournalLine:
    """One chained record as the journal holds it."""

    seq: int
    prev_hash: str
    hash: str
    body: str


def encode_line(line: JournalLine) -> bytes:
    """The bytes of one line (lone surrogates kept, as the chain hashes them)."""
    body = line.body.encode("utf-8", "surrogatepass")
    return line_bytes(line.seq, line.prev_hash, line.hash, body)


def line_bytes(seq: int, prev_hash: str, digest: str, body: bytes) -> bytes:
    """:func:`encode_line` of a body already encoded (what the writer journals)."""
    return b"%d\t%s\t%s\t%s\n" % (seq, prev_hash.encode(), digest.encode(), body)


class Journal:
    """An opened, locked journal file (see the module docstring)."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd = fd
        self.size = os.fstat(fd).st_size

    @classmethod
    def open(cls, path: Path, *, wait: bool = False) -> Journal | None:
        """Open (create) and lock the journal; ``None`` if another process holds it
        (``wait=False``). Raises :class:`StoreError` when the file cannot be opened."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise StoreError(f"audit journal {path}: {exc.strerror or exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            return None
        return cls(path, fd)

    def lines(self) -> Iterator[JournalLine]:
        """Every complete line, in order (a torn or unreadable line ends the read)."""
        with open(self._fd, "rb", closefd=False) as fh:
            fh.seek(0)
            for number, raw in enumerate(fh, 1):
                parsed = _parse(raw)
                if parsed is None:
                    _log.warning("audit journal %s: line %d is torn; ignored", self.path, number)
                    return
                yield parsed

    def write(self, data: bytes) -> None:
        """Append ``data`` (one ``write`` call when the kernel takes it whole)."""
        written = os.write(self._fd, data)
        if written < len(data):
            view = memoryview(data)[written:]
            while view:
                view = view[os.write(self._fd, view) :]
        self.size += len(data)

    def sync(self) -> None:
        """Flush the file to the disk (``fdatasync``)."""
        os.fdatasync(self._fd)

    def clear(self) -> None:
        """Empty the file (every record in it is in the store)."""
        os.ftruncate(self._fd, 0)
        self.size = 0

    def close(self) -> None:
        """Release the lock and the file."""
        os.close(self._fd)  # closing drops the flock


def _parse(raw: bytes) -> JournalLine | None:
    if not raw.endswith(b"\n"):
        return None
    try:
        parts = raw[:-1].decode("utf-8", "surrogatepass").split("\t", 3)
    except UnicodeDecodeError:
        return None
    if len(parts) != 4 or not parts[0].isdigit():
        return None
    return JournalLine(int(parts[0]), parts[1], parts[2], parts[3])
