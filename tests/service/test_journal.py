"""The audit journal and the writer in front of the store; the inline defense call.

In process, on real files and a real SQLite store: what a dead server leaves in its
journal is moved into the store by whoever opens it next (a torn last line is
quarantined: see ``test_journal_damage.py`` for damage anywhere),
a journal a live writer holds is neither replayed nor shared, the writer's chain
continues the store's, ``flushed`` waits for the store, a journal that cannot be
written refuses the record, and event-loop-safe defenses skip the thread pool until
they prove slow.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from guardtest import Server, cli

from shieldbench.errors import ConfigError, StoreError
from shieldbench.service import AuditStore, ServeConfig, build_defenses, create_app, verify_chain
from shieldbench.service._audit import canonical, chain_hash
from shieldbench.service._guard import Decision, new_id
from shieldbench.service._journal import Journal, JournalLine, encode_line, journal_path
from shieldbench.service._screen import Screen
from shieldbench.service._writer import AuditWriter
from shieldbench.types import Verdict


def _body(i: int) -> dict[str, object]:
    return {"kind": "decision", "id": f"j{i}", "created": time.time(), "decision": "allow"}


def _chained(start: tuple[int, str], count: int) -> list[JournalLine]:
    seq, prev = start
    lines = []
    for _i in range(count):
        seq += 1
        text = canonical({**_body(seq), "seq": seq})
        digest = chain_hash(prev, text)
        lines.append(JournalLine(seq, prev, digest, text))
        prev = digest
    return lines


def _ids(store: AuditStore) -> list[str]:
    return [str(row.id) for row in store.rows()]


def test_a_dead_servers_journal_is_moved_in_by_the_next_opener(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'a.db'}"
    store = AuditStore(db)
    store.append([_body(1), _body(2)])
    head = store.head()
    row = list(store.rows())[-1]
    store.close()
    known = JournalLine(int(row.seq), str(row.prev_hash), str(row.hash), str(row.body))
    lines = [known, *_chained(head, 3)]  # seq 2 is in the store already: skipped
    path = journal_path("sqlite", str(tmp_path / "a.db"))
    torn = encode_line(_chained((lines[-1].seq, lines[-1].hash), 1)[0])[:-9]
    path.write_bytes(b"".join(encode_line(line) for line in lines) + torn)
    reopened = AuditStore(db)  # a reader (audit verify / export) recovers it
    try:
        assert _ids(reopened) == ["j1", "j2", "j3", "j4", "j5"]
        assert verify_chain(reopened).ok
        assert path.read_bytes() == b""
        assert reopened.quarantined() == 1  # the torn line, kept
        kept = json.loads(reopened.quarantine_path.read_text())
        assert (kept["line"], kept["reason"]) == (5, "no line end (a torn write)")
    finally:
        reopened.close()


def test_writer_chains_on_journals_and_moves_to_the_store(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'w.db'}"
    seed = AuditStore(db)  # the chain starts in the store: the writer continues it
    seed.append([_body(0)])
    seed.close()
    store = AuditStore(db, recover=False)
    writer = AuditWriter(store, period_s=0.01)
    try:
        second = AuditStore(db, recover=False)
        with pytest.raises(StoreError, match="held by another running server"):
            AuditWriter(second, lock_wait_s=0.2)
        second.close()
        reader = AuditStore(db)  # a held journal is the live server's: not replayed
        reader.close()

        async def submit_and_flush() -> list[str]:
            for i in range(1, 51):
                writer.submit(_body(i))
            await writer.flushed()
            return _ids(store)

        assert asyncio.run(submit_and_flush()) == [f"j{i}" for i in range(51)]
    finally:
        writer.close()
    assert verify_chain(store).ok
    assert store.journal_path.read_bytes() == b""
    store.close()


def test_unwritable_journal_refuses_the_record_and_keeps_the_chain(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'f.db'}"
    store = AuditStore(db, recover=False)
    writer = AuditWriter(store, period_s=0.01)
    try:
        original = writer.journal._fd
        writer.journal._fd = os.open(os.devnull, os.O_RDONLY)  # writes fail (EBADF)
        with pytest.raises(OSError, match="Bad file descriptor"):
            writer.submit(_body(1))
        os.close(writer.journal._fd)
        writer.journal._fd = original
        writer.submit(_body(2))
        asyncio.run(writer.flushed())
    finally:
        writer.close()
    assert _ids(store) == ["j2"]
    assert verify_chain(store).ok
    store.close()


def test_fast_path_answers_503_unlogged_and_counts_only_answered_checks(tmp_path: Path) -> None:
    config = ServeConfig(defense="pattern", db=f"sqlite:///{tmp_path / 'f.db'}")
    app = create_app(config, build_defenses(config))

    async def check(text: str) -> tuple[int, dict[str, str], dict[str, object]]:
        body = json.dumps({"text": text}).encode()
        scope = {
            "type": "http",
            "method": "POST",
            "path": "/v1/check",
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", b"%d" % len(body)),
            ],
            "query_string": b"",
            "root_path": "",
            "http_version": "1.1",
        }
        sent: list[dict[str, object]] = []

        async def receive() -> dict[str, object]:
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict[str, object]) -> None:
            sent.append(message)

        await app(scope, receive, send)  # type: ignore[arg-type]
        start, answer = sent
        headers = {k.decode(): v.decode() for k, v in start["headers"]}  # type: ignore[attr-defined]
        return int(start["status"]), headers, json.loads(answer["body"])  # type: ignore[arg-type]

    async def run() -> None:
        async with app.router.lifespan_context(app):
            service = app.state.service
            while not service.guard.ready:
                await asyncio.sleep(0.01)
            status, headers, data = await check("hello there")
            assert status == 200
            assert headers["x-shieldbench-decision"] == data["id"]
            assert int(headers["content-length"]) > 0
            journal = service.writer.journal
            original = journal._fd
            journal._fd = os.open(os.devnull, os.O_RDONLY)  # writes fail (EBADF)
            try:
                status, _, data = await check("not journalled")
            finally:
                os.close(journal._fd)
                journal._fd = original
            assert status == 503
            assert data["error"]["type"] == "audit_unavailable"  # type: ignore[index]
            status, _, _ = await check("journalled again")
            assert status == 200
            scrape = service.metrics.scrape().decode()
            counted = [
                float(line.rsplit(" ", 1)[1])
                for line in scrape.splitlines()
                if line.startswith("shieldbench_guard_requests_total{")
            ]
            assert sum(counted) == 2  # counted once answered; the refused one is not

    asyncio.run(run())
    store = AuditStore(config.db)
    try:
        assert verify_chain(store).ok
        assert len(list(store.rows(kind="decision"))) == 2
    finally:
        store.close()


def test_journal_lock_and_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "x.journal"
    first = Journal.open(path)
    assert first is not None
    assert Journal.open(path) is None
    first.close()
    again = Journal.open(path)
    assert again is not None
    again.close()
    monkeypatch.delenv("SHIELDBENCH_AUDIT_JOURNAL", raising=False)
    monkeypatch.setenv("SHIELDBENCH_STATE_DIR", str(tmp_path))
    pg = journal_path("postgresql", "postgresql://u@h/db")
    assert pg.parent == tmp_path
    assert pg.name.startswith("audit-")
    assert journal_path("sqlite", "/data/h.db") == Path("/data/h.db.audit-journal")
    monkeypatch.setenv("SHIELDBENCH_AUDIT_JOURNAL", str(tmp_path / "named"))
    assert journal_path("postgresql", "postgresql://u@h/db") == tmp_path / "named"


class _Cheap:
    name = "cheap"
    event_loop_safe = True

    def __init__(self, burn_s: float = 0.0) -> None:
        self.burn_s = burn_s
        self.threads: set[str] = set()

    def check(self, text: str) -> Verdict:
        self.threads.add(threading.current_thread().name)
        end = time.thread_time() + self.burn_s
        while time.thread_time() < end:
            pass
        return Verdict(blocked="attack" in text, score=1.0 if "attack" in text else 0.0)


def test_event_loop_safe_defense_runs_inline_until_it_proves_slow() -> None:
    pool = ThreadPoolExecutor(2, thread_name_prefix="pool")
    fast, slow = _Cheap(), _Cheap(burn_s=0.03)

    async def run() -> None:
        screen = Screen(fast, timeout_s=1.0, window_s=0.0, executor=pool)
        for i in range(5):
            verdict = (await screen.screen(f"attack {i}")).verdict
            assert verdict is not None
            assert verdict.blocked
        assert screen.inline
        assert fast.threads == {"MainThread"}
        lagging = Screen(slow, timeout_s=1.0, window_s=0.0, executor=pool, inline_budget_s=0.01)
        for i in range(5):  # the first slow call (wall clock) arms the CPU clock
            await lagging.screen(f"text {i}")
        assert not lagging.inline  # three calls over budget in CPU time: back to the pool
        assert any(name.startswith("pool") for name in slow.threads)

    try:
        asyncio.run(run())
    finally:
        pool.shutdown()


def test_decision_json_has_every_field_and_ids_are_unique() -> None:
    decision = Decision(
        new_id(),
        "allow",
        False,
        0.1,
        "SAFE",
        ("r",),
        1.0,
        "fast",
        "miss",
        {"name": "p"},
        "none",
        (),
    )
    assert list(decision.to_json()) == list(Decision.__dataclass_fields__)
    assert json.loads(json.dumps(decision.to_json()))["reasons"] == ["r"]
    ids = {new_id() for _ in range(10_000)}
    assert len(ids) == 10_000
    assert all(len(i) == 32 for i in ids)


def test_canonical_json_falls_back_for_what_orjson_refuses(tmp_path: Path) -> None:
    plain = canonical({"b": 1, "a": "é", "n": None})
    assert plain == '{"a":"é","b":1,"n":null}'
    odd = {"kind": "decision", "id": "s1", "created": 1.0, "text": "\ud800", "big": 2**70}
    assert json.loads(canonical(odd))["big"] == 2**70
    store = AuditStore(f"sqlite:///{tmp_path / 's.db'}")
    try:
        store.append([odd])
        assert verify_chain(store).ok
    finally:
        store.close()
    defense = {"name": "p", "version": None}
    decision = Decision(
        "x", "block", True, None, "\ud800", (), 1.0, "fast", "miss", defense, "", ()
    )
    assert json.loads(decision.to_bytes())["label"] == "\ud800"  # ASCII with an escape


@pytest.mark.parametrize("fsync_s", [0.0, 0.01])
def test_fsync_options_keep_the_chain(tmp_path: Path, fsync_s: float) -> None:
    store = AuditStore(f"sqlite:///{tmp_path / 'y.db'}", recover=False)
    writer = AuditWriter(store, fsync_s=fsync_s, period_s=0.005)
    try:
        for i in range(20):
            writer.submit(_body(i))
            time.sleep(0.002)
        asyncio.run(writer.flushed())
    finally:
        writer.close()
    assert _ids(store) == [f"j{i}" for i in range(20)]
    assert verify_chain(store).ok
    store.close()
    with pytest.raises(ConfigError, match="journal_fsync_s"):
        ServeConfig(journal_fsync_s=-1)


@pytest.mark.slow
def test_a_second_server_on_one_store_is_refused(start_server: Callable[..., Server]) -> None:
    first = start_server("--defense", "pattern")
    second = cli("serve", "--port", "0", "--db", first.db, "--defense", "pattern")
    assert second.returncode == 2, second.stderr
    assert "one server per store" in second.stderr
    with first.client() as c:  # the first one is untouched
        assert c.post("/v1/check", json={"text": "still here"}).status_code == 200


@pytest.mark.parametrize("fsync_s", [None, 0.05])
def test_group_commit_waits_longer_only_while_rounds_are_small(
    tmp_path: Path, fsync_s: float | None
) -> None:
    """The writer's wait after a round: ``period_s`` once a round holds ``target_batch``
    records, longer in proportion below that, never past ``max_wait_s`` nor past the
    background sync's interval (records must not wait longer than ``fsync_s`` for it)."""
    store = AuditStore(f"sqlite:///{tmp_path / 'g.db'}", recover=False)
    writer = AuditWriter(store, fsync_s=fsync_s, period_s=0.02, max_wait_s=0.1, target_batch=64)
    try:
        waits = [writer._next_wait(moved) for moved in range(200)]
        ceiling = min(0.1, fsync_s or 0.1)
        assert all(0.02 <= w <= ceiling for w in waits)
        assert all(a >= b for a, b in itertools.pairwise(waits))  # more: no longer
        assert waits[64:] == [0.02] * (200 - 64)
        assert waits[0] == waits[1] == ceiling  # an idle or trickling replica
        assert writer._next_wait(16) == pytest.approx(min(0.08, ceiling))

        async def trickle() -> None:  # records still reach the store, and flushed() is prompt
            for i in range(5):
                writer.submit(_body(i))
                await asyncio.sleep(0.01)
            started = time.monotonic()
            await writer.flushed()
            assert time.monotonic() - started < 5.0

        asyncio.run(trickle())
        assert _ids(store) == [f"j{i}" for i in range(5)]
    finally:
        writer.close()
    assert verify_chain(store).ok
    store.close()
