"""Harness of the ``service_*`` benchmarks: a guard server in a subprocess, an aiohttp load.

``python benchmarks/_service_harness.py serve ARGS...`` runs the guard app (the same
``create_app`` ``shieldbench serve`` runs) on uvicorn on a free loopback port, with one
extra route: ``/floor`` (any method) reads the request body and answers a constant
JSON body straight from a bare ASGI function placed in front of the app. It is the
floor of the overhead benchmark: same process, same server, same client, same request
bodies, same run; the difference to ``/v1/check`` is what the service adds (routing,
validation, preprocessing, dedup, the defense, the audit journal, metrics).

:func:`start` launches it and returns the URL; :func:`load` drives it with aiohttp
(cheaper per request than httpx's async client on 2 cores) and returns latencies.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
FLOOR = b'{"decision": "allow", "blocked": false}'

Scope = MutableMapping[str, Any]
ASGI = Callable[[Scope, Any, Any], Awaitable[None]]


def _with_floor(app: ASGI) -> ASGI:
    async def floored(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/floor":
            more = True
            while more:  # a POST's body is read, as the check reads it
                message = await receive()
                more = message["type"] == "http.request" and message.get("more_body", False)
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", b"%d" % len(FLOOR)),
            ]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": FLOOR})
            return
        await app(scope, receive, send)

    return floored


def _serve(args: Sequence[str]) -> None:
    import uvicorn

    from shieldbench.service import ServeConfig, build_defenses, create_app, http_protocol

    options = dict(zip(args[::2], args[1::2], strict=True))
    cfg = ServeConfig(
        defense=options.get("--defense", "pattern"),
        warn=options.get("--warn"),
        upstream=options.get("--upstream"),
        db=options["--db"],
    )
    app = create_app(cfg, build_defenses(cfg))
    config = uvicorn.Config(  # the HTTP layer and event loop of `serve`
        _with_floor(app),
        host="127.0.0.1",
        port=0,
        log_level="warning",
        http=http_protocol(),
        loop="uvloop",
    )
    server = uvicorn.Server(config)

    async def main() -> None:
        task = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        print(f"READY http://127.0.0.1:{port}", flush=True)
        await task

    asyncio.run(main())


@dataclass
class Server:
    process: subprocess.Popen[str]
    url: str

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()


def start(*args: str) -> Server:
    """Start a server (``--defense``, ``--warn``, ``--upstream`` as in ``serve``); wait ready."""
    db = Path(tempfile.mkdtemp(prefix="sb-bench-")) / "guard.db"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), str(HERE)]), HF_HUB_OFFLINE="1")
    process = subprocess.Popen(
        [sys.executable, str(Path(__file__)), "serve", *args, "--db", f"sqlite:///{db}"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    match = re.match(r"READY (\S+)", line)
    if match is None:
        process.kill()
        raise RuntimeError(f"server did not start: {line!r}")
    url = match.group(1)
    import httpx

    deadline = time.monotonic() + 120
    while httpx.get(f"{url}/readyz").status_code != 200:
        if time.monotonic() > deadline:
            raise RuntimeError("server not ready")
        time.sleep(0.1)
    return Server(process, url)


async def _load(
    url: str,
    method: str,
    bodies: Sequence[Any],
    concurrency: int,
    headers: dict[str, str] | None,
) -> tuple[list[float], float, list[Any]]:
    import aiohttp

    latencies: list[float] = []
    answers: list[Any] = []
    queue = list(reversed(bodies))
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def worker() -> None:
            while queue:
                body = queue.pop()
                start = time.perf_counter()
                if method == "GET":
                    async with session.get(url, headers=headers) as r:
                        data = await r.read()
                else:
                    async with session.post(url, data=json.dumps(body), headers=headers) as r:
                        data = await r.read()
                latencies.append(time.perf_counter() - start)
                answers.append((r.status, data))

        wall = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        wall = time.perf_counter() - wall
    return latencies, wall, answers


def load(
    url: str,
    bodies: Sequence[Any],
    *,
    concurrency: int,
    method: str = "POST",
    headers: dict[str, str] | None = None,
) -> tuple[list[float], float, list[Any]]:
    """Send every body (``method`` to ``url``) over ``concurrency`` connections."""
    headers = headers or {"content-type": "application/json"}
    return asyncio.run(_load(url, method, bodies, concurrency, headers))


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (inclusive method)."""
    return statistics.quantiles(values, n=1000, method="inclusive")[int(q * 1000) - 1]


def ms(values: Sequence[float]) -> str:
    """p50 / p99 in milliseconds."""
    return (
        f"p50 {quantile(values, 0.5) * 1000:7.2f} ms  p99 {quantile(values, 0.99) * 1000:7.2f} ms"
    )


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "serve":
    _serve(sys.argv[2:])
