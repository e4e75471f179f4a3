"""The service's audit writer: chain and journal each record now, move it to the store soon.

:meth:`AuditWriter.submit` runs on the event loop: it gives the record the next
sequence number, hashes it onto the chain and appends it to the journal
(:mod:`~shieldbench.service._journal`), about 20 us; when it returns, the record
survives the death of the process, and the answer may go out. A writer thread wakes
every ``period_s`` (20 ms), moves what was journalled meanwhile into the store in one
transaction per ``max_batch`` records (group commit; on PostgreSQL one ``COPY`` in
autocommit: one round trip), and empties the journal whenever the store has caught
up. A batch costs a fixed amount of CPU here and in the database whatever it holds
(measured on PostgreSQL: ~0.25 ms in this thread, as much as ~20 records), so while
rounds are small (fewer than ``target_batch`` records) the thread waits longer, in
proportion, up to ``max_wait_s`` (100 ms): a replica at a few hundred checks a second
commits ten times a second, not 50. It is not woken per record: a
woken thread wants the interpreter's lock back, and the event loop then waits for it
at its next system call (measured: up to a millisecond a request on 2 busy cores).
A failing store (a database that is down) does not stop the answers: records wait
in the journal (and in memory) and the thread retries with a back-off; a journal
that cannot be written (disk full) fails :meth:`submit`, and the caller refuses to
answer unlogged.

:meth:`flushed` awaits the store having every record submitted so far (feedback
looks a decision up there); it wakes the thread at once. :meth:`close` moves the rest
and empties the journal.

Chains: ``chain="main"`` (the default; the single SQLite server) continues the store's
``main`` chain in the store's journal, which one process at a time may hold: a second
writer is refused. Any other chain id (:func:`~shieldbench.service._journal.new_chain_id`,
one per replica process) has its own journal file and its own chain, so any number of
writers run side by side on one store; a replica's journal is deleted when it closes
with every record in the store.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import threading
import time
from typing import Any

from shieldbench.errors import StoreError
from shieldbench.service._audit import (
    AuditStore,
    audit_row,
    canonical_bytes,
    chain_hash_bytes,
    scrub_record,
)
from shieldbench.service._journal import (
    MAIN_CHAIN,
    Journal,
    JournalLine,
    Unreadable,
    chain_journal_path,
    line_bytes,
    quarantine,
)

__all__ = ["AuditWriter"]

_log = logging.getLogger("shieldbench.service.audit")
_Waiter = tuple[int, asyncio.Future[None]]
#: A journalled record on its way to the store: seq, previous hash, hash, JSON, body.
_Written = tuple[int, str, str, bytes, dict[str, Any]]


class AuditWriter:
    """The journal in front of the store (see the module docstring)."""

    def __init__(
        self,
        store: AuditStore,
        *,
        fsync_s: float | None = None,
        max_batch: int = 512,
        period_s: float = 0.02,
        max_wait_s: float = 0.1,
        target_batch: int = 64,
        lock_wait_s: float = 5.0,
        chain: str = MAIN_CHAIN,
    ) -> None:
        path = chain_journal_path(store.journal_path, chain)
        journal = Journal.open(path)
        deadline = time.monotonic() + lock_wait_s  # a reader (audit verify) may be replaying
        while journal is None and time.monotonic() < deadline:
            time.sleep(0.1)
            journal = Journal.open(path)
        if journal is None:
            raise StoreError(
                f"audit journal {path} is held by another running server on this store;"
                " a SQLite store takes one server process: to run several (--workers N, or"
                " replicas on several hosts) use a PostgreSQL store (--db postgresql://...)"
            )
        try:
            store.replay(journal)  # what a killed predecessor left, before anything new
        except BaseException:
            journal.close()
            raise
        self.store = store
        self.chain = chain
        self.journal = journal
        self.fsync_s = fsync_s
        self.max_batch = max_batch
        self.period_s = min(period_s, fsync_s) if fsync_s else period_s
        # never longer than the background sync's interval, never shorter than a period
        self.max_wait_s = max(self.period_s, min(max_wait_s, fsync_s or max_wait_s))
        self.target_batch = target_batch
        self._seq, self._prev = store.head(chain)
        self._moved = self._seq
        self._lock = threading.Lock()  # the chain's order: retention appends from a thread
        self._records: collections.deque[_Written] = collections.deque()
        self._later: collections.deque[dict[str, Any]] = collections.deque()
        self._wake = threading.Event()
        self._stopping = False
        self._waiters: list[_Waiter] = []
        self._dirty = False
        self._closed = False
        self._synced = time.monotonic()
        self.written = 0
        self.failed = 0
        self._thread = threading.Thread(target=self._run, name="shieldbench-audit", daemon=True)
        self._thread.start()

    def submit(self, body: dict[str, Any]) -> None:
        """Chain ``body`` and journal it; when this returns, the record is durable
        (against a process crash; see ``fsync_s``). Raises ``OSError`` if it is not.
        ``body`` is the caller's no more: the writer thread reads it later.

        The body is redacted first (:func:`~shieldbench.service._audit.scrub_record`).
        On the event loop, so in bytes: the JSON as orjson writes it, hashed and
        written as is (what ``chain_hash`` and ``encode_line`` compute from the text);
        the store's row is made by the writer thread."""
        scrub_record(body)  # redacted before it is hashed, journalled or stored
        with self._lock:
            seq, prev = self._seq + 1, self._prev
            body["seq"] = seq  # the caller's no more (see above)
            body["chain"] = self.chain
            data = canonical_bytes(body)
            digest = chain_hash_bytes(prev, data)
            self.journal.write(line_bytes(seq, prev, digest, data))
            if self.fsync_s == 0:
                self.journal.sync()
            else:
                self._dirty = True
            self._seq, self._prev = seq, digest
            self._records.append((seq, prev, digest, data, body))

    def submit_later(self, body: dict[str, Any]) -> None:
        """Queue a record nobody waits for (a warn-only verdict after the answer): the
        writer thread chains and journals it on its next round (within ``period_s``),
        off the event loop. A crash before then loses it (it was never promised)."""
        self._later.append(body)

    async def flushed(self) -> None:
        """Return once the store holds every record submitted before the call."""
        target = self._seq
        if self._moved >= target:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        with self._lock:
            self._waiters.append((target, future))
        self._wake.set()
        if self._moved >= target:  # moved meanwhile: the thread may have missed us
            self._settle_waiters()
        await future

    def _settle_waiters(self) -> None:
        moved = self._moved
        with self._lock:
            due = [w for w in self._waiters if w[0] <= moved]
            self._waiters = [w for w in self._waiters if w[0] > moved]
        for _, future in due:
            future.get_loop().call_soon_threadsafe(_settle, future)

    def _run(self) -> None:
        pending: list[dict[str, Any]] = []
        backoff = 0.0
        wait = self.period_s
        while True:
            self._wake.wait(backoff or wait)
            self._wake.clear()
            moved = self._moved
            stopping = self._stopping
            while self._later:
                body = self._later.popleft()
                try:
                    self.submit(body)
                except OSError as exc:
                    _log.error("audit journal write failed; %s record lost: %s", body["kind"], exc)
            while self._records:
                seq, prev, digest, data, body = self._records.popleft()
                text = data.decode("utf-8", "surrogatepass")
                pending.append(audit_row(JournalLine(seq, prev, digest, text), body))
            self._background_sync()
            while pending:
                batch = pending[: self.max_batch]
                try:
                    self._quarantine(batch, self.store.insert_isolating(batch))
                except Exception as exc:
                    self.failed += 1
                    backoff = min(5.0, backoff * 2 or 0.05)
                    _log.error(
                        "audit store write of %d record(s) failed (kept in the journal;"
                        " retry in %.2f s): %s",
                        len(pending),
                        backoff,
                        exc,
                    )
                    break
                backoff = 0.0
                del pending[: len(batch)]
                self.written += len(batch)
                self._moved = int(batch[-1]["seq"])
            wait = self._next_wait(self._moved - moved)
            if not pending:
                with self._lock:
                    caught_up = self._moved == self._seq  # the store has it all
                    if caught_up and self.journal.size and not self._closed:
                        self.journal.clear()
                        self._dirty = False
                self._settle_waiters()
                if stopping and not self._records and not self._later:
                    return

    def _next_wait(self, moved: int) -> float:
        """How long to wait for the next round after one that moved ``moved`` records:
        ``period_s`` while rounds hold ``target_batch`` records or more; longer in
        proportion while they hold fewer, up to ``max_wait_s`` (see the module doc)."""
        if moved >= self.target_batch:
            return self.period_s
        stretched = self.period_s * self.target_batch / max(moved, 1)
        return min(self.max_wait_s, max(self.period_s, stretched))

    def _quarantine(self, batch: list[dict[str, Any]], refused: list[tuple[int, str]]) -> None:
        """Records the store will never take (a constraint, a value too long) go to the
        quarantine file, not back in the queue, where they would hold back every record
        behind them. The chain's gap they leave is ``audit verify``'s to report."""
        if not refused:
            return
        found = []
        for index, why in refused:
            row = batch[index]
            body = str(row["body"]).encode("utf-8", "surrogatepass")
            data = line_bytes(int(row["seq"]), str(row["prev_hash"]), str(row["hash"]), body)
            found.append(Unreadable(0, 0, data, f"the store refused the record: {why}"))
            _log.error("audit record seq=%s refused by the store: %s", row["seq"], why)
        try:
            quarantine(self.journal.path, found)
        except OSError as exc:  # the log keeps them, at least
            for item in found:
                _log.error("audit quarantine unwritable (%s); record: %r", exc, item.data)

    def _background_sync(self) -> None:
        if self.fsync_s and self._dirty and time.monotonic() - self._synced >= self.fsync_s:
            self._dirty = False
            self._synced = time.monotonic()
            self.journal.sync()  # not under the lock: submit goes on writing meanwhile

    def close(self, timeout_s: float = 30.0) -> None:
        """Move what is queued into the store, empty the journal, stop the thread."""
        self._stopping = True
        self._wake.set()
        self._thread.join(timeout_s)
        with self._lock:
            self._closed = True
            if self._thread.is_alive():  # the file stays open: the thread may still use it
                _log.error("audit store still failing at shutdown: the journal keeps the records")
                return
            if self.chain != MAIN_CHAIN and self.journal.size == 0:
                self.journal.remove()  # the chain is over and all of it is in the store
        self.journal.close()


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
