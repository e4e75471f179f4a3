"""The bound on a request's header size, against a real ``shieldbench serve`` on loopback.

The service speaks HTTP/1.1 through httptools, which bounds nothing itself; the
service's protocol (``shieldbench.service._conn``) refuses a request whose target and
header names and values come to more than ``max_header_bytes`` with 431 and closes the
connection. Attacked here:

- the bound is exact: any request at the bound is answered, any request one byte over
  it is refused (hypothesis over the number and sizes of headers and the target);
- the count is per request: a kept-alive connection sends many requests near the bound,
  pipelined or one by one, and none is refused; a pipelined request over it is refused
  after the ones before it are answered;
- one endless header is refused as it streams in, long before it ends and long before
  the header timeout, so a client cannot fill the server's memory with it;
- ``max_header_bytes`` is configured strictly.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from guardtest import Server, cli, launch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

LIMIT = 2048
HEADER_TIMEOUT_S = 30.0  # far longer than any test here: a close is the size bound's


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("header-bounds")
    config = tmp / "serve.yaml"
    config.write_text(
        f"defense: pattern\nmax_header_bytes: {LIMIT}\nheader_timeout_s: {HEADER_TIMEOUT_S}\n",
        encoding="utf-8",
    )
    s = launch(tmp, "--config", str(config))
    yield s
    s.stop()


def _connect(server: Server) -> socket.socket:
    host, port = server.url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def _request(target: str, headers: list[tuple[str, str]]) -> tuple[bytes, int]:
    """A ``GET`` with these headers (and a host) and the bytes the bound counts."""
    fields = [("host", "x"), *headers]
    head = f"GET {target} HTTP/1.1\r\n" + "".join(f"{n}: {v}\r\n" for n, v in fields)
    counted = len(target) + sum(len(n) + len(v) for n, v in fields)
    return (head + "\r\n").encode(), counted


def _padded(headers: list[tuple[str, str]], total: int) -> bytes:
    """A ``GET /healthz?...`` whose counted bytes are exactly ``total``."""
    _, base = _request("/healthz?p=", headers)
    pad = total - base
    assert pad >= 0
    data, counted = _request("/healthz?p=" + "a" * pad, headers)
    assert counted == total
    return data


def _answers(sock: socket.socket, count: int) -> list[bytes]:
    """The status lines of the next ``count`` answers (fewer if the server closes)."""
    buffer, statuses = b"", []
    while len(statuses) < count:
        end = buffer.find(b"\r\n\r\n")
        if end >= 0:
            head = buffer[:end].lower()
            length = int(head.split(b"content-length: ", 1)[1].split(b"\r\n", 1)[0])
            if len(buffer) >= end + 4 + length:  # the whole answer is in
                statuses.append(buffer.split(b"\r\n", 1)[0])
                buffer = buffer[end + 4 + length :]
                continue
        chunk = sock.recv(65536)
        if not chunk:
            break
        buffer += chunk
    return statuses


def _closed(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


HEADERS = st.lists(
    st.tuples(
        st.text("abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=20).map(lambda s: "x" + s),
        st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=400),
    ),
    max_size=6,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(headers=HEADERS, over=st.booleans())
def test_the_bound_is_exact(server: Server, headers: list[tuple[str, str]], over: bool) -> None:
    data = _padded(headers, LIMIT + 1 if over else LIMIT)
    with _connect(server) as sock:
        sock.sendall(data)
        statuses = _answers(sock, 1)
        if over:
            assert statuses == [b"HTTP/1.1 431 Request Header Fields Too Large"]
            assert _closed(sock)
        else:
            assert statuses == [b"HTTP/1.1 200 OK"]


def test_the_count_is_per_request_on_a_kept_alive_connection(server: Server) -> None:
    near = _padded([("x-a", "b" * 500)], LIMIT)  # each request at the bound
    with _connect(server) as sock:
        for _ in range(20):  # one by one
            sock.sendall(near)
            assert _answers(sock, 1) == [b"HTTP/1.1 200 OK"]
        sock.sendall(near * 20)  # pipelined: 20 requests in one write, 40 KiB together
        assert _answers(sock, 20) == [b"HTTP/1.1 200 OK"] * 20


def test_a_pipelined_request_over_the_bound_is_refused_after_the_ones_before(
    server: Server,
) -> None:
    fine = _padded([], 100)
    over = _padded([("x-a", "b" * 100)], LIMIT + 1)
    with _connect(server) as sock:
        sock.sendall(fine + fine + over + fine)
        statuses = _answers(sock, 4)
        assert statuses == [b"HTTP/1.1 200 OK"] * 2 + [
            b"HTTP/1.1 431 Request Header Fields Too Large"
        ]
        assert _closed(sock)


def test_an_endless_header_is_refused_as_it_streams_in(server: Server) -> None:
    started = time.monotonic()
    sent = 0
    with _connect(server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-endless: ")
        chunk = b"a" * 65536
        refused = False
        while sent < 512 * 1024 * 1024 and not refused:  # far past any socket buffer
            try:
                sock.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError):
                refused = True
            else:
                sent += len(chunk)
    assert refused, f"the server read {sent} bytes of one header"
    elapsed = time.monotonic() - started
    # Refused after one read past the bound; what the client got out before it saw the
    # close is the loopback's socket buffers, a few MiB, not the 512 MiB it meant to send.
    assert sent < 64 * 1024 * 1024, sent
    assert elapsed < HEADER_TIMEOUT_S / 2, elapsed
    with _connect(server) as sock:  # and the server answers the next client
        sock.sendall(_padded([], 100))
        assert _answers(sock, 1) == [b"HTTP/1.1 200 OK"]


@pytest.mark.parametrize(("value", "message"), [("0", "max_header_bytes = 0"), ('"16k"', "16k")])
def test_the_bound_is_configured_strictly(tmp_path: Path, value: str, message: str) -> None:
    config = tmp_path / "serve.yaml"
    config.write_text(f"max_header_bytes: {value}\n", encoding="utf-8")
    result = cli("serve", "--config", str(config))
    assert result.returncode == 2, result.stderr
    assert "max_header_bytes" in result.stderr, result.stderr
    assert message in result.stderr, result.stderr
