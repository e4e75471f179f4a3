"""The guard service's HTTP layer: h11 on asyncio's loop against httptools on uvloop.

``shieldbench serve`` speaks HTTP/1.1 through uvicorn's httptools protocol (with the
service's bounds on a request's headers, ``shieldbench.service.http_protocol``) on
uvloop's event loop. Before, it ran uvicorn's h11 protocol (pure Python) on asyncio's
loop. This script measures both on the same machine, in the same run: one server
process each (the guard app with the ``pattern`` defense over SQLite, the default
``serve``, plus the harness's bare ASGI ``/floor`` route in front), the same lean
load client (``_service_rawclient``), the same new texts (no verdict cache hit), at
concurrency 32; the two servers take turns, round by round, so a drift of the
machine's speed hits both.

Per server and route: requests/s, p50 and p99 at concurrency 32, the p50 of 1,000
requests sent one at a time, and the server process's CPU per request at concurrency
32 (user + system, from ``/proc``, which holds on a loaded machine where the rates do
not). Then the ratios new / old: CPU per request of ``/floor`` and of ``/v1/check``,
checks/s, and the p50 of a check at concurrency 32 and 1.

Run: ``python benchmarks/http_protocol.py [--rounds N] [--n N]``; the output is saved
to ``benchmarks/results/http_protocol.txt``. Rerun on an idle machine before quoting.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "src")]

import _service_rawclient  # noqa: E402
from _service_harness import _with_floor  # noqa: E402

RESULTS = HERE / "results" / "http_protocol.txt"
CONCURRENCY = 32
SOLO = 1300  # the first 300 texts warm up, the next 1,000 are sent one at a time
#: name -> (uvicorn ``http``, uvicorn ``loop``); "serve" is what ``shieldbench serve`` runs.
SERVERS = {"h11 + asyncio": ("h11", "asyncio"), "serve: httptools + uvloop": ("serve", "uvloop")}
_TICK = os.sysconf("SC_CLK_TCK")


def _serve(http: str, loop: str, db: str, port: int) -> None:
    """The server (in a subprocess)."""
    import uvicorn

    from shieldbench.service import ServeConfig, build_defenses, create_app, http_protocol

    cfg = ServeConfig(defense="pattern", db=db)
    app = _with_floor(create_app(cfg, build_defenses(cfg)))
    protocol = http_protocol() if http == "serve" else http
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
        http=protocol,
        loop=loop,
    )
    uvicorn.Server(config).run()


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def _server(http: str, loop: str, tmp: Path) -> Iterator[tuple[str, int]]:
    import httpx

    port = _free_port()
    db = f"sqlite:///{tmp / f'{http}-{loop}-{time.monotonic_ns()}.db'}"
    env = dict(os.environ, PYTHONPATH=str(HERE.parent / "src"), HF_HUB_OFFLINE="1")
    cmd = [sys.executable, __file__, "serve", http, loop, db, str(port)]
    process = subprocess.Popen(cmd, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/readyz").status_code == 200:
                    break
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError(f"the {http}/{loop} server did not start")
            time.sleep(0.1)
        yield url, process.pid
    finally:
        process.terminate()
        process.wait(60)


def _measure(url: str, pid: int, path: str, bodies: list[dict[str, str]]) -> dict[str, float]:
    _service_rawclient.load(url + path, bodies[:300], concurrency=CONCURRENCY)  # warm up
    alone, _, _ = _service_rawclient.load(url + path, bodies[300:SOLO], concurrency=1)
    cpu = _cpu_s(pid)
    latencies, wall, answers = _service_rawclient.load(
        url + path, bodies[SOLO:], concurrency=CONCURRENCY
    )
    cpu = _cpu_s(pid) - cpu
    bad = [a for a in answers if a[0] != 200]
    if bad:
        raise RuntimeError(f"{path}: {len(bad)} answers not 200, first {bad[0]!r}")
    latencies.sort()
    n = len(latencies)
    return {
        "rate": n / wall,
        "p50": latencies[n // 2],
        "p99": latencies[min(n - 1, int(n * 0.99))],
        "cpu_us": 1e6 * cpu / n,
        "p50_c1": statistics.median(alone),
    }


def main(*, rounds: int, n: int) -> None:
    results: dict[str, dict[str, list[dict[str, float]]]] = {
        name: {"/floor": [], "/v1/check": []} for name in SERVERS
    }
    tmp = Path(tempfile.mkdtemp(prefix="sb-http-"))
    for round_ in range(rounds):
        for name, (http, loop) in SERVERS.items():
            with _server(http, loop, tmp) as (url, pid):
                for path in ("/floor", "/v1/check"):
                    bodies = [
                        {"text": f"round {round_} {name} {path} text {i}: summarise the report"}
                        for i in range(n + SOLO)
                    ]
                    results[name][path].append(_measure(url, pid, path, bodies))
    lines = [
        f"http_protocol.py: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.node() or '?'},"
        f" {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; one server process"
        f" each (pattern, SQLite), {n} requests per route x {rounds} round(s), concurrency"
        f" {CONCURRENCY}, lean client; medians of the rounds"
    ]
    med: dict[tuple[str, str, str], float] = {}
    for name in SERVERS:
        for path, runs in results[name].items():
            for key in ("rate", "p50", "p99", "cpu_us", "p50_c1"):
                med[name, path, key] = statistics.median(r[key] for r in runs)
            lines.append(
                f"  {name:26s} {path:10s} {med[name, path, 'rate']:7.0f} req/s  p50"
                f" {1e3 * med[name, path, 'p50']:6.2f} ms  p99 {1e3 * med[name, path, 'p99']:6.2f}"
                f" ms  server CPU {med[name, path, 'cpu_us']:4.0f} us/request; concurrency 1:"
                f" p50 {1e3 * med[name, path, 'p50_c1']:5.3f} ms"
            )
    old, new = SERVERS

    def ratio(a: str, b: str, path_a: str, path_b: str, key: str) -> float:
        return med[a, path_a, key] / med[b, path_b, key]

    lines += [
        f"  new / old, server CPU per request: /floor"
        f" {ratio(new, old, '/floor', '/floor', 'cpu_us'):.2f}x, /v1/check"
        f" {ratio(new, old, '/v1/check', '/v1/check', 'cpu_us'):.2f}x",
        f"  new / old, checks/s {ratio(new, old, '/v1/check', '/v1/check', 'rate'):.2f}x;"
        f" p50 of a check {ratio(new, old, '/v1/check', '/v1/check', 'p50'):.2f}x, at"
        f" concurrency 1 {ratio(new, old, '/v1/check', '/v1/check', 'p50_c1'):.2f}x",
        f"  p50 check / floor: old {ratio(old, old, '/v1/check', '/floor', 'p50'):.2f}x,"
        f" new {ratio(new, new, '/v1/check', '/floor', 'p50'):.2f}x (a cheaper HTTP"
        " layer lowers both routes by the same CPU, so the ratio rises)",
    ]
    text = "\n".join(lines)
    print(text)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        _serve(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--n", type=int, default=4000, help="requests per route and round")
    args = parser.parse_args()
    main(rounds=args.rounds, n=args.n)
