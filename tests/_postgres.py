"""A real PostgreSQL server for the tests, and the ``store_url`` fixture over both backends.

Registered as a plugin by ``tests/conftest.py`` (``pytest_plugins``), so every test
directory can ask for:

- ``postgres_server`` (session): a private PostgreSQL cluster made with ``initdb``
  in a temporary folder and started with ``pg_ctl`` on a free loopback port, as an
  unprivileged user (``nobody`` when the tests run as root, which PostgreSQL
  refuses); stopped and deleted at the end of the session. Skipped, with the
  reason, when the server binaries are not installed (Debian: ``apt-get install
  postgresql``; they live in ``/usr/lib/postgresql/*/bin``; ``SHIELDBENCH_PG_BIN``
  points elsewhere).
- ``postgres_url`` (function): a fresh, empty database on that server.
- ``store_url`` (function, parametrized ``sqlite`` / ``postgresql``): a fresh empty
  history database URL on each backend; a test that takes it runs twice.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

__all__ = ["PostgresServer"]

_USER = "shieldbench"
_counter = itertools.count()


@dataclass(frozen=True)
class PostgresServer:
    """A running test cluster: connect as ``user`` (trust auth) on ``127.0.0.1:port``."""

    port: int
    user: str
    bin_dir: Path
    data_dir: Path

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A new empty database; its URL."""
        import psycopg

        name = f"t{os.getpid()}_{next(_counter)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def _bin_dir() -> Path | None:
    explicit = os.environ.get("SHIELDBENCH_PG_BIN")
    candidates = [explicit] if explicit else sorted(glob.glob("/usr/lib/postgresql/*/bin"))
    for folder in reversed(candidates):
        if folder and (Path(folder) / "initdb").is_file() and (Path(folder) / "pg_ctl").is_file():
            return Path(folder)
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_user(args: list[str]) -> list[str]:
    """Run as ``nobody`` when we are root (PostgreSQL refuses to run as root)."""
    if os.geteuid() != 0:
        return args
    runuser = shutil.which("runuser")
    if runuser is None:
        return ["su", "-s", "/bin/sh", "nobody", "-c", subprocess.list2cmdline(args)]
    return [runuser, "-u", "nobody", "--", *args]


def _start(bin_dir: Path, base: Path) -> PostgresServer:
    data = base / "data"
    log = base / "server.log"
    if os.geteuid() == 0:
        nobody = pwd.getpwnam("nobody")
        os.chown(base, nobody.pw_uid, nobody.pw_gid)
    env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
    subprocess.run(
        _as_user(
            [
                *(str(bin_dir / "initdb"), "-D", str(data), "-U", _USER, "-A", "trust"),
                *("-E", "UTF8", "--no-locale", "--no-sync"),
            ]
        ),
        check=True,
        capture_output=True,
        env=env,
        cwd=base,
    )
    last_error = ""
    for _attempt in range(5):  # a free port can be taken between probe and bind
        port = _free_port()
        options = (
            f"-c listen_addresses=127.0.0.1 -p {port} -k {base} -F"
            " -c max_connections=60 -c shared_buffers=16MB"
        )
        started = subprocess.run(
            _as_user(
                [
                    *(str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log)),
                    *("-o", options, "-w", "-t", "60", "start"),
                ]
            ),
            capture_output=True,
            text=True,
            env=env,
            cwd=base,
        )
        if started.returncode == 0:
            return PostgresServer(port, _USER, bin_dir, data)
        last_error = started.stderr + (log.read_text() if log.exists() else "")
    raise RuntimeError(f"could not start the test PostgreSQL server:\n{last_error}")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    bin_dir = _bin_dir()
    if bin_dir is None:
        pytest.skip(
            "PostgreSQL server binaries not found in /usr/lib/postgresql/*/bin"
            " (install Debian's postgresql package, or set SHIELDBENCH_PG_BIN)"
        )
    pytest.importorskip("psycopg", reason="psycopg 3 is needed to talk to PostgreSQL")
    base = Path(tempfile.mkdtemp(prefix="shieldbench-pg-"))
    try:
        server = _start(bin_dir, base)
        try:
            yield server
        finally:
            subprocess.run(
                _as_user(
                    [str(bin_dir / "pg_ctl"), "-D", str(server.data_dir), "-m", "fast", "stop"]
                ),
                capture_output=True,
                cwd=base,
            )
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    return postgres_server.create_database()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty history database URL: a SQLite file, then a PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'history.db'}"
    server: PostgresServer = request.getfixturevalue("postgres_server")
    return server.create_database()
