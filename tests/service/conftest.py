"""Fixtures of the service tests (helpers live in ``guardtest.py`` beside this file)."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the tests import guardtest

from guardtest import Server, Upstream, launch, scripted_handler


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    servers: list[Server] = []

    def start(*args: str, db: str | None = None, env: dict[str, str] | None = None) -> Server:
        # One server per store (its audit journal is locked): each gets its own by default.
        db = db or f"sqlite:///{tmp_path / f'guard-{len(servers)}.db'}"
        server = launch(tmp_path, *args, db=db, env=env)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    record = Upstream(url="")
    server = ThreadingHTTPServer(("127.0.0.1", 0), scripted_handler(record))
    server.daemon_threads = True
    record.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield record
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session", autouse=True)
def _journal_state_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    # Journals of non-SQLite stores live in the state directory: a temporary one, which
    # the servers and CLI runs the tests start inherit.
    previous = os.environ.get("SHIELDBENCH_STATE_DIR")
    os.environ["SHIELDBENCH_STATE_DIR"] = str(tmp_path_factory.mktemp("state"))
    yield
    if previous is None:
        del os.environ["SHIELDBENCH_STATE_DIR"]
    else:
        os.environ["SHIELDBENCH_STATE_DIR"] = previous
