"""Fixtures of the service tests (helpers live in ``guardtest.py`` beside this file)."""

from __future__ import annotations

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
