"""``serve --workers N`` answers without Nagle's algorithm on its connections.

The workers share a listening socket the supervisor makes (``shieldbench.cli._workers``).
uvicorn writes an answer as two segments (its head, then its body); with Nagle on, the
body waits until the client acknowledges the head, and a client delays that ACK by
about 40 ms (Linux), so every request took 40 ms whatever the server did and
``--workers 2`` answered no more than one worker (issue 37). asyncio turns Nagle off
(``TCP_NODELAY``) only on a socket whose protocol number reads ``IPPROTO_TCP``, and an
accepted socket copies that number from the listening one.

- the mechanism: every connection a worker's asyncio loop accepts on the shared socket
  has ``TCP_NODELAY`` set (each worker reports it for the socket it accepted);
- the effect, on a real ``serve --workers 2`` over PostgreSQL: one keep-alive
  connection's sequential checks are not each held for the delayed ACK (with Nagle on,
  every one after the first few takes at least 40 ms: the lower quartile shows it).
"""

from __future__ import annotations

import json
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import pytest
from guardtest import Server, _env

#: A supervisor of 2 workers, each an asyncio server on the shared socket that answers
#: a connection with its pid and the ``TCP_NODELAY`` of the socket it accepted.
_PROBE = """
import asyncio, json, logging, os, socket, sys
from shieldbench.cli._workers import run_workers

class Report(asyncio.Protocol):
    def connection_made(self, transport):
        sock = transport.get_extra_info("socket")
        nodelay = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        transport.write(json.dumps({"pid": os.getpid(), "nodelay": nodelay}).encode())
        transport.close()

def serve(sock, slot):
    async def main():
        server = await asyncio.get_running_loop().create_server(Report, sock=sock)
        await server.serve_forever()
    asyncio.run(main())
    return 0

logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
sys.exit(run_workers(serve, host="127.0.0.1", port=0, workers=2))
"""


def _ask(port: int) -> dict[str, int]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        data = b""
        while chunk := conn.recv(4096):
            data += chunk
    answer: dict[str, int] = json.loads(data)
    return answer


def test_every_connection_a_worker_accepts_has_nagle_off() -> None:
    with subprocess.Popen(
        [sys.executable, "-c", _PROBE], stdout=subprocess.PIPE, text=True, env=_env(None)
    ) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            port = int(line.split("127.0.0.1:")[1].split()[0])
            answers = [_ask(port) for _ in range(40)]
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(30)
    assert all(a["nodelay"] for a in answers), answers


def _sequential_check_ms(url: str, n: int) -> list[float]:
    """``n`` checks one after another on one keep-alive connection (raw HTTP/1.1)."""
    host, port = url.removeprefix("http://").split(":")
    body = json.dumps({"text": "a message about the weather"}).encode()
    request = (
        b"POST /v1/check HTTP/1.1\r\nhost: %s\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n%s" % (url.encode(), len(body), body)
    )
    took = []
    with socket.create_connection((host, int(port)), timeout=30) as conn:
        for _ in range(n):
            started = time.perf_counter()
            conn.sendall(request)
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, _, rest = data.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200"), head
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            while len(rest) < length:
                rest += conn.recv(65536)
            took.append((time.perf_counter() - started) * 1e3)
    return took


@pytest.mark.slow
def test_workers_answer_checks_without_waiting_for_delayed_acks(
    start_server: Callable[..., Server], postgres_url: str
) -> None:
    server = start_server("--defense", "pattern", "--workers", "2", db=postgres_url)
    took = _sequential_check_ms(server.url, 60)[10:]  # past TCP's quick-ACK start
    lower_quartile = statistics.quantiles(took, n=4)[0]
    # With Nagle on, every one of these waits for the client's delayed ACK (>= 40 ms).
    assert lower_quartile < 35.0, sorted(took)
