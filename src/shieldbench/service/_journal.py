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
has no raw tab or newline: JSON escapes them). The file is locked (``flock``) by the
server that writes it: a second server on the same store is refused, and a reader
only replays a journal nobody holds.

Damage: a line is a record only when it is whole and self-consistent (its hash is
``sha256(prev_hash + body)`` of its own bytes, its body's ``seq`` is its ``seq``), so
a torn write (a full disk, a lowered file-size limit, a power loss) or a corrupted
byte is never taken for a record. :meth:`Journal.scan` yields every record it can
read and, separately, the bytes it cannot (:class:`Unreadable`); a damaged line never
stops the lines after it, and a whole record glued behind a torn fragment (the next
write after a failed one) is found and read. The unreadable bytes are appended to
the quarantine file beside the journal (:func:`quarantine_path`, kept until an
operator moves it away; ``audit verify`` fails while it exists). A failed write
also cuts its torn bytes off at once (``ftruncate``), so the next record starts a
line.

Where: beside a SQLite file (``history.db.audit-journal``); for another database in
``$SHIELDBENCH_STATE_DIR`` (default ``~/.local/state/shieldbench``), named after a
hash of the URL; ``SHIELDBENCH_AUDIT_JOURNAL`` names the file outright.

Replicas: the single SQLite server writes the chain ``main`` into that file. On
PostgreSQL every server process (a replica) starts a chain of its own
(:func:`new_chain_id`) and journals it in ``<journal>.<chain>``
(:func:`chain_journal_path`), locked while it lives and deleted when it closes
cleanly. A replica that dies leaves its file; whoever opens the store next on the
host (another replica starting, ``audit verify``) finds it (:func:`chain_journals`),
takes its lock, moves its records in and deletes it.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import json
import logging
import os
import re
import secrets
import socket
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from shieldbench.errors import StoreError

__all__ = [
    "ENV_JOURNAL",
    "ENV_REPLICA",
    "ENV_STATE_DIR",
    "MAIN_CHAIN",
    "Journal",
    "JournalLine",
    "Record",
    "Unreadable",
    "chain_hash",
    "chain_hash_bytes",
    "chain_journal_path",
    "chain_journals",
    "encode_line",
    "journal_path",
    "line_bytes",
    "new_chain_id",
    "quarantine",
    "quarantine_files",
    "quarantine_path",
    "quarantined_count",
]

_log = logging.getLogger("shieldbench.service.audit")
ENV_JOURNAL = "SHIELDBENCH_AUDIT_JOURNAL"
ENV_STATE_DIR = "SHIELDBENCH_STATE_DIR"
ENV_REPLICA = "SHIELDBENCH_REPLICA"
_DEFAULT_STATE = "~/.local/state/shieldbench"
#: The chain of the single server (SQLite) and of every record written before replicas.
MAIN_CHAIN = "main"
_QUARANTINE = ".quarantine"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def new_chain_id(replica: str | None = None) -> str:
    """A fresh chain id: ``<replica>.<8 hex>`` (at most 48 characters).

    ``replica`` (else ``$SHIELDBENCH_REPLICA``, else ``<host>-<pid>``) names the
    process in ``audit verify``'s reports and the metrics' ``replica`` label; the
    random suffix makes every start a new chain, so two processes never share one,
    even across hosts. Characters other than letters, digits, ``-`` and ``_`` become
    ``-`` (the id is part of a file name)."""
    name = replica or os.environ.get(ENV_REPLICA) or f"{socket.gethostname()}-{os.getpid()}"
    name = _UNSAFE.sub("-", name).strip("-")[:39] or "replica"
    return f"{name}.{secrets.token_hex(4)}"


def chain_journal_path(journal: Path, chain: str) -> Path:
    """The journal of one replica's chain (``<journal>.<chain>``); ``main``: ``journal``."""
    if chain == MAIN_CHAIN:
        return journal
    return journal.with_name(f"{journal.name}.{chain}")


def chain_journals(journal: Path) -> list[Path]:
    """The replica journals of a store on this host (live or left by a dead replica)."""
    found = journal.parent.glob(f"{glob_escape(journal.name)}.*")
    return sorted(p for p in found if not p.name.endswith(_QUARANTINE))


def glob_escape(name: str) -> str:
    """``name`` with glob's special characters escaped."""
    return re.sub(r"([*?\[])", r"[\1]", name)


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


def chain_hash(prev_hash: str, body: str) -> str:
    """``sha256(prev_hash + body)`` as hex."""
    return chain_hash_bytes(prev_hash, body.encode("utf-8", "surrogatepass"))


def chain_hash_bytes(prev_hash: str, body: bytes) -> str:
    """:func:`chain_hash` of a body already encoded (what the writer journals)."""
    return hashlib.sha256(prev_hash.encode() + body).hexdigest()


def quarantine_path(journal: Path) -> Path:
    """Where the unreadable bytes of ``journal`` are kept (``<journal>.quarantine``)."""
    return journal.with_name(journal.name + ".quarantine")


@dataclass(frozen=True, slots=True)
class JournalLine:
    """One chained record as the journal holds it."""

    seq: int
    prev_hash: str
    hash: str
    body: str


@dataclass(frozen=True, slots=True)
class Unreadable:
    """Bytes of the journal that hold no whole record: where (1-based ``line`` and the
    byte ``offset`` in the file), what they are, and why they were not read."""

    line: int
    offset: int
    data: bytes
    reason: str


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
        self._torn = False

    @classmethod
    def open(cls, path: Path, *, wait: bool = False, create: bool = True) -> Journal | None:
        """Open (create) and lock the journal; ``None`` if another process holds it
        (``wait=False``) or, with ``create=False``, if it does not exist. Raises
        :class:`StoreError` when the file cannot be opened."""
        flags = os.O_RDWR | os.O_APPEND | os.O_CLOEXEC | (os.O_CREAT if create else 0)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, flags, 0o600)
        except FileNotFoundError:
            if create:
                raise StoreError(f"audit journal {path}: cannot be created") from None
            return None
        except OSError as exc:
            raise StoreError(f"audit journal {path}: {exc.strerror or exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            return None
        return cls(path, fd)

    def scan(self) -> Iterator[Record | Unreadable]:
        """Every readable record (with its parsed body) and every unreadable stretch of
        bytes, in file order; nothing stops the scan before the end of the file."""
        with open(self._fd, "rb", closefd=False) as fh:
            fh.seek(0)
            offset = 0
            for number, raw in enumerate(fh, 1):
                yield from _scan_line(raw, number, offset)
                offset += len(raw)

    def write(self, data: bytes) -> None:
        """Append ``data`` (one ``write`` call when the kernel takes it whole).

        A write that fails (``OSError``: disk full, file-size limit) leaves no torn
        bytes behind: the file is cut back to its size before the call. Should that
        fail too, the next write starts with a newline, so the fragment is a line of
        its own (quarantined by the next recovery) and never the head of a record."""
        if self._torn:
            data = b"\n" + data
        try:
            written = os.write(self._fd, data)
            if written < len(data):
                view = memoryview(data)[written:]
                while view:
                    view = view[os.write(self._fd, view) :]
        except OSError:
            self._cut_back()
            raise
        self._torn = False
        self.size += len(data)

    def _cut_back(self) -> None:
        try:
            os.ftruncate(self._fd, self.size)
            self._torn = False
        except OSError as exc:
            self._torn = os.fstat(self._fd).st_size != self.size
            self.size = os.fstat(self._fd).st_size
            _log.error("audit journal %s: cannot cut a torn write back: %s", self.path, exc)

    def sync(self) -> None:
        """Flush the file to the disk (``fdatasync``)."""
        os.fdatasync(self._fd)

    def clear(self) -> None:
        """Empty the file (every record in it is in the store)."""
        os.ftruncate(self._fd, 0)
        self.size = 0

    def remove(self) -> None:
        """Delete the file (still locked; call :meth:`close` next): a replica's
        journal, empty, whose chain is over."""
        self.path.unlink(missing_ok=True)

    def close(self) -> None:
        """Release the lock and the file."""
        os.close(self._fd)  # closing drops the flock


@dataclass(frozen=True, slots=True)
class Record:
    """A readable record: the line, its parsed JSON body, and where it was."""

    line: JournalLine
    body: dict[str, Any]
    number: int = 0
    offset: int = 0

    def unreadable(self, reason: str) -> Unreadable:
        """This record as bytes to quarantine (readable, but refused: ``reason``)."""
        return Unreadable(self.number, self.offset, encode_line(self.line), reason)


_HEX64 = re.compile(rb"[0-9a-f]{64}")
#: Where a record may start inside a damaged line: digits, a tab, two hashes.
_RECORD_START = re.compile(rb"[0-9]+\t[0-9a-f]{64}\t[0-9a-f]{64}\t")


def _scan_line(raw: bytes, number: int, offset: int) -> Iterator[Record | Unreadable]:
    """One line of the file: a record, or unreadable bytes (then the whole record
    glued behind them, if any: the write after a torn one)."""
    parsed = _parse(raw, number, offset)
    if not isinstance(parsed, str):
        yield parsed
        return
    position = 0  # candidates overlap (a torn hash's hex digits run into the next seq)
    while (match := _RECORD_START.search(raw, position)) is not None:
        digits_end = raw.index(b"\t", match.start())
        for start in range(max(match.start(), 1), digits_end):
            found = _parse(raw[start:], number, offset + start)
            if not isinstance(found, str):
                reason = f"{parsed}; a whole record follows on the same line and was read"
                yield Unreadable(number, offset, raw[:start], reason)
                yield found
                return
        position = digits_end + 1
    yield Unreadable(number, offset, raw, parsed)


def _parse(raw: bytes, number: int, offset: int) -> Record | str:
    """The record of one line, or why the line is not one."""
    if not raw.endswith(b"\n"):
        return "no line end (a torn write)"
    fields = raw[:-1].split(b"\t", 3)
    if len(fields) != 4:
        return "not a record (fields missing)"
    seq, prev, digest, body = fields
    hashes = _HEX64.fullmatch(prev) and _HEX64.fullmatch(digest)
    if not (seq.isdigit() and len(seq) < 19 and seq == b"%d" % int(seq) and hashes):
        return "not a record (malformed sequence number or hash)"
    if chain_hash_bytes(prev.decode(), body) != digest.decode():
        return "the bytes do not match the record's hash (corrupted or torn)"
    try:
        text = body.decode("utf-8", "surrogatepass")
        data = json.loads(text)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return "the body is not JSON"
    if not (
        isinstance(data, dict)
        and data.get("seq") == int(seq)
        and isinstance(data.get("id"), str)
        and isinstance(data.get("kind"), str)
        and isinstance(data.get("created"), int | float)
        and not isinstance(data.get("created"), bool)
    ):
        return "the body is not an audit record of this sequence number"
    line = JournalLine(int(seq), prev.decode(), digest.decode(), text)
    return Record(line, data, number, offset)


def quarantine(journal: Path, found: Iterable[Unreadable]) -> int:
    """Append the unreadable stretches to the journal's quarantine file and sync it;
    how many. One JSON line each: when, where (journal, line, offset), why, and the
    bytes themselves (base64)."""
    now = datetime.now(UTC).isoformat()
    lines = [
        json.dumps(
            {
                "quarantined": now,
                "journal": str(journal),
                "line": item.line,
                "offset": item.offset,
                "reason": item.reason,
                "length": len(item.data),
                "base64": base64.b64encode(item.data).decode(),
            }
        ).encode()
        + b"\n"
        for item in found
    ]
    if not lines:
        return 0
    path = quarantine_path(journal)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    with open(fd, "ab") as fh:
        fh.write(b"".join(lines))
        fh.flush()
        os.fsync(fh.fileno())
    return len(lines)


def quarantined_count(journal: Path) -> int:
    """How many unreadable stretches the quarantine file of ``journal`` holds (0: none)."""
    try:
        with quarantine_path(journal).open("rb") as fh:
            return sum(1 for _ in fh)
    except FileNotFoundError:
        return 0


def quarantine_files(journal: Path) -> list[Path]:
    """The quarantine files of a store's journals (``main`` and every replica's)."""
    pattern = f"{glob_escape(journal.name)}*{_QUARANTINE}"
    return sorted(p for p in journal.parent.glob(pattern) if p.is_file())
