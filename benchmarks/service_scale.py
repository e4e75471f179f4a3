"""Service scale-out: checks/s with 1 and 2 worker processes on one PostgreSQL store.

Same server code as ``shieldbench serve --workers N`` (the forked workers of
``shieldbench.cli._workers`` on one listening socket, each a replica with its own
audit chain), with the harness's bare ASGI ``/floor`` route in front of the app
(:mod:`_service_harness`); same aiohttp client, same request bodies, same run, and
the servers take turns (1 worker, 2 workers, again), so a load change on the machine
hits both. Figures: checks/s at concurrency 32 (goal: 2 workers >= 1.7x 1 worker) and
the p50 of ``/v1/check`` against ``/floor`` of the same server at concurrency 32
(goal: <= 1.3x with 2 workers).

The store is ``--db URL`` (a PostgreSQL database), else a private PostgreSQL server
started for the run (``tests/_postgres.py``; its binaries must be installed).

CPU time per check: what the workers, the PostgreSQL server (when started here) and
the client itself spend per ``/v1/check`` (and per ``/floor`` request), read from
``/proc`` around the measured load. These figures hold on a loaded machine, where the
rates do not, and they bound the scale-out: with every process on the same cores,
no number of workers answers more than ``cores / (workers' + PostgreSQL's + client's
CPU per check)`` checks/s, so a client that costs as much CPU per request as a
worker caps 2 workers on 2 cores near 1x whatever the server does. The p50 goal has a
bound of the same kind: at concurrency 32 the cores are saturated, so a ``/v1/check``
waits about ``(W + P + C) per check / (W + C) per /floor request`` times as long as a
``/floor`` request; the output prints that ratio next to the measured one.

A p50 of about 44 ms for ``/floor`` and ``/v1/check`` alike, at any concurrency (even
1), is not the server's work: it is Nagle's algorithm meeting the client's delayed ACK
(40 ms on Linux), which ``serve --workers`` once left on (issue 37;
``tests/service/test_workers_socket.py``).

The client: by default the lean one of :mod:`_service_rawclient` (a prepared request
per ``write``, answers parsed by their length), because on 2 cores the client shares
the cores with the workers and aiohttp's client costs about as much CPU per request as
the server's floor; ``--client aiohttp`` measures with the other benchmarks' client.

``--profile DIR``: every worker runs under :mod:`cProfile` and writes
``DIR/worker-<workers>w-<pid>.prof`` when it stops (``python -m pstats FILE``).

Besides the pooled figures (the median rate of the rounds, the p50 of every round's
latencies), the output gives both ratios round by round, with their median and range:
the two servers of a round run back to back, so a drift of the machine's speed
(measured: 10-15% between runs minutes apart on the idle development machine) moves
both sides of a round's ratio alike.

Run: ``python benchmarks/service_scale.py [--quick] [--rounds N] [--db URL]
[--client raw|aiohttp] [--profile DIR]`` (5 rounds by default); the
output is saved to ``benchmarks/results/service_scale.txt``. Timings taken on a shared,
loaded machine say little: rerun on an idle one before quoting them.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "src"), str(HERE.parent / "tests")]

import _service_rawclient  # noqa: E402
from _service_harness import _with_floor, ms, quantile  # noqa: E402
from _service_harness import load as aiohttp_load  # noqa: E402

#: The load client: the lean one (default), or aiohttp (``--client aiohttp``).
load = _service_rawclient.load

RESULTS = HERE / "results" / "service_scale.txt"
CONCURRENCY = 32


def _serve(workers: int, db: str) -> None:
    """The server (in a subprocess): ``workers`` forked workers, the floor in front."""
    import cProfile
    import signal
    import socket

    import uvicorn

    from shieldbench.cli._workers import run_workers
    from shieldbench.service import ServeConfig, build_defenses, create_app, http_protocol

    cfg = ServeConfig(defense="pattern", db=db)
    defenses = build_defenses(cfg)

    profile_dir = os.environ.get("SB_SCALE_PROFILE")

    def serve(sock: socket.socket, slot: int) -> int:
        app = _with_floor(create_app(cfg, defenses))
        config = uvicorn.Config(
            app, log_level="warning", access_log=False, http=http_protocol(), loop="uvloop"
        )
        server = uvicorn.Server(config)
        if not profile_dir:
            server.run(sockets=[sock])
            return 0
        # uvicorn re-raises the SIGTERM it caught once it has stopped: a handler that
        # ignores it lets the profile be written before the worker exits.
        signal.signal(signal.SIGTERM, lambda *_: None)
        profiler = cProfile.Profile()
        profiler.runcall(server.run, sockets=[sock])
        profiler.dump_stats(f"{profile_dir}/worker-{workers}w-{os.getpid()}.prof")
        return 0

    import logging

    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    sys.exit(run_workers(serve, host="127.0.0.1", port=0, workers=workers))


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _tree(pid: int) -> list[int]:
    """``pid`` and every live descendant (Linux ``/proc``; ``[pid]`` elsewhere)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(x) for x in (task / "children").read_text().split()]
    return found


def _cpu_s(pid: int | None) -> float:
    """CPU seconds (user + system) spent so far by ``pid`` and its live descendants."""
    if pid is None:
        return 0.0
    total = 0
    for member in _tree(pid):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = Path(f"/proc/{member}/stat").read_text().rpartition(")")[2].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)
    return total / _TICK


@contextlib.contextmanager
def _server(workers: int, db: str) -> Iterator[str]:
    env = dict(os.environ, PYTHONPATH=str(HERE.parent / "src"), HF_HUB_OFFLINE="1")
    process = subprocess.Popen(
        [sys.executable, __file__, "serve", str(workers), db],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        url = None
        for line in process.stdout:
            match = re.search(r"Uvicorn running on (http://\S+)", line)
            if match:
                url = match.group(1)
                break
        if url is None:
            raise RuntimeError("server did not start")
        import httpx

        ready = 0
        deadline = time.monotonic() + 120
        while ready < workers * 4:  # every worker answered readyz a few times
            with contextlib.suppress(httpx.HTTPError):
                ready += httpx.get(f"{url}/readyz").status_code == 200
            if time.monotonic() > deadline:
                raise RuntimeError("server not ready")
        global _SERVER_PID
        _SERVER_PID = process.pid
        yield url
    finally:
        process.terminate()
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()


@contextlib.contextmanager
def _postgres() -> Iterator[str]:
    import _postgres as pg

    bin_dir = pg._bin_dir()
    if bin_dir is None:
        raise SystemExit("no PostgreSQL binaries: pass --db postgresql://...")
    base = Path(tempfile.mkdtemp(prefix="sb-scale-pg-"))
    server = pg._start(bin_dir, base)
    global _POSTGRES_PID
    with contextlib.suppress(OSError, ValueError, IndexError):
        _POSTGRES_PID = int((server.data_dir / "postmaster.pid").read_text().split()[0])
    try:
        yield server.create_database()
    finally:
        stop = [str(bin_dir / "pg_ctl"), "-D", str(server.data_dir), "-m", "fast", "stop"]
        subprocess.run(pg._as_user(stop), capture_output=True, cwd=base)


_SERVER_PID: int | None = None
_POSTGRES_PID: int | None = None


def _cpu_per_request(run: Callable[[], object], n: int) -> tuple[object, dict[str, float]]:
    """``run()``'s result and the CPU microseconds per request it cost each party."""
    before = (_cpu_s(_SERVER_PID), _cpu_s(_POSTGRES_PID), time.process_time())
    result = run()
    after = (_cpu_s(_SERVER_PID), _cpu_s(_POSTGRES_PID), time.process_time())
    spent = [(b - a) / n * 1e6 for a, b in zip(before, after, strict=True)]
    return result, dict(zip(("workers", "postgres", "client"), spent, strict=True))


def _per_worker(url: str) -> dict[str, int]:
    """Decisions per worker (audit chain) in the store, as ``/v1/stats`` counts them."""
    import httpx

    time.sleep(0.5)  # the writers move their journals every 20 ms
    stats = httpx.get(f"{url}/v1/stats", params={"window": "1h"}, timeout=30).json()
    return dict(stats["store"]["replicas"])


def _measure(url: str, n: int) -> dict[str, list[float] | float]:
    bodies = [{"text": f"benchmark message number {i} about the weather"} for i in range(n)]
    before = _per_worker(url)
    got, floor_cpu = _cpu_per_request(
        lambda: load(f"{url}/floor", bodies, concurrency=CONCURRENCY), n
    )
    floor = got[0]  # type: ignore[index]
    got, check_cpu = _cpu_per_request(
        lambda: load(f"{url}/v1/check", bodies, concurrency=CONCURRENCY), n
    )
    check, wall, answers = got  # type: ignore[misc]
    assert all(status == 200 for status, _ in answers), "a check failed"
    after = _per_worker(url)
    counts = sorted((after[k] - before.get(k, 0) for k in after), reverse=True)
    out: dict[str, list[float] | float] = {"floor": floor, "check": check, "rate": n / wall}
    out["p50_ratio"] = quantile(check, 0.5) / quantile(floor, 0.5)  # type: ignore[arg-type]
    out["busiest_share"] = counts[0] / max(1, sum(counts))
    out.update({f"cpu_check_{k}": v for k, v in check_cpu.items()})
    out.update({f"cpu_floor_{k}": v for k, v in floor_cpu.items()})
    return out


def _cpu_line(r: dict[str, list[float]]) -> str:
    """The CPU per request of each party (median of rounds) and the cores' ceiling."""

    def med(key: str) -> float:
        values = sorted(r[key])
        return values[len(values) // 2]

    check = {k: med(f"cpu_check_{k}") for k in ("workers", "postgres", "client")}
    busiest = med("busiest_share")
    floor = {k: med(f"cpu_floor_{k}") for k in ("workers", "client")}
    ceiling = (os.cpu_count() or 1) / (sum(check.values()) / 1e6)
    return (
        f"      CPU per check: workers {check['workers']:.0f} us, PostgreSQL"
        f" {check['postgres']:.0f} us, client {check['client']:.0f} us (per /floor request:"
        f" workers {floor['workers']:.0f} us, client {floor['client']:.0f} us); all on"
        f" {os.cpu_count()} cores: at most {ceiling:.0f} checks/s; the busiest worker"
        f" answered {busiest:.0%} of the checks"
    )


def _cpu_summary(results: dict[int, dict[str, list[float]]]) -> list[str]:
    """What the CPU figures say about scaling, whatever the machine's load."""

    def med(workers: int, key: str) -> float:
        values = sorted(results[workers][key])
        return values[len(values) // 2]

    server = {w: med(w, "cpu_check_workers") + med(w, "cpu_check_postgres") for w in (1, 2)}
    w, p, c = (med(1, f"cpu_check_{k}") for k in ("workers", "postgres", "client"))
    cores = os.cpu_count() or 1
    bound = min(2.0, cores * w / (w + p + c))
    check2 = sum(med(2, f"cpu_check_{k}") for k in ("workers", "postgres", "client"))
    floor2 = sum(med(2, f"cpu_floor_{k}") for k in ("workers", "client"))
    return [
        f"  p50 check/floor that the CPU alone predicts with 2 workers: {check2 / floor2:.2f}x"
        " ((W + P + C) per check / (W + C) per /floor request: with the cores saturated at"
        f" c={CONCURRENCY}, a request waits in proportion to what each costs)",
        f"  server CPU per check (workers + PostgreSQL), 2 workers / 1 worker:"
        f" {server[2] / server[1]:.2f}x (1.00: a second worker costs nothing more per check)",
        f"  the most 2 workers can give over 1 with this client on these {cores} cores:"
        f" {bound:.2f}x (cores x W / (W + P + C) with the 1-worker CPU figures, at most 2;"
        " the client shares the cores)",
    ]


def _paired_lines(results: dict[int, dict[str, list[float]]]) -> list[str]:
    """Both ratios round by round (the two servers of a round measured back to back,
    the check and its floor on the same server): the median and the range over rounds.
    A slow drift of the machine's speed moves the pooled figures above; it moves both
    sides of a round's ratio alike."""
    scale = [b / a for a, b in zip(results[1]["rate"], results[2]["rate"], strict=True)]
    p50 = results[2]["p50_ratio"]

    def spread(values: list[float]) -> str:
        ordered = sorted(values)
        return f"{ordered[len(ordered) // 2]:.2f}x (rounds {', '.join(f'{v:.2f}' for v in values)})"

    return [
        f"  round by round: scale-out {spread(scale)}; p50 check/floor with 2 workers"
        f" {spread(p50)}",
    ]


def main(*, n: int, rounds: int, db: str | None) -> None:
    lines = [
        f"service_scale.py: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.node()},"
        f" {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f};"
        f" {n} checks x {rounds} round(s) per server, concurrency {CONCURRENCY},"
        f" client {'aiohttp' if load is aiohttp_load else 'raw'}",
    ]
    with contextlib.ExitStack() as stack:
        url_db = db or stack.enter_context(_postgres())
        results: dict[int, dict[str, list[float]]] = {1: {}, 2: {}}
        for _ in range(rounds):
            for workers in (1, 2):
                with _server(workers, url_db) as url:
                    load(f"{url}/v1/check", [{"text": "warm up"}] * 200, concurrency=8)
                    got = _measure(url, n)
                for key, value in got.items():
                    results[workers].setdefault(key, []).extend(
                        value if isinstance(value, list) else [value]
                    )
    for workers in (1, 2):
        r = results[workers]
        rate = sorted(r["rate"])[len(r["rate"]) // 2]
        ratio = quantile(r["check"], 0.5) / quantile(r["floor"], 0.5)
        lines.append(
            f"  {workers} worker(s): {rate:8.0f} checks/s (median of rounds);"
            f" check {ms(r['check'])}; floor {ms(r['floor'])};"
            f" p50 check/floor {ratio:.2f}x"
        )
        lines.append(_cpu_line(r))
    one, two = (sorted(results[w]["rate"])[len(results[w]["rate"]) // 2] for w in (1, 2))
    ratio2 = quantile(results[2]["check"], 0.5) / quantile(results[2]["floor"], 0.5)
    lines.append(f"  scale-out: 2 workers / 1 worker = {two / one:.2f}x checks/s (goal >= 1.7x)")
    lines.append(f"  p50 at c={CONCURRENCY}, 2 workers: {ratio2:.2f}x the floor (goal <= 1.3x)")
    lines += _paired_lines(results)
    lines += _cpu_summary(results)
    text = "\n".join(lines)
    print(text)
    if os.environ.get("SB_SCALE_PROFILE"):
        return  # profiled figures are not the benchmark's
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        _serve(int(sys.argv[2]), sys.argv[3])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 checks, one round")
    parser.add_argument("--db", help="a PostgreSQL URL (else a private server is started)")
    parser.add_argument("--profile", metavar="DIR", help="cProfile every worker into DIR")
    parser.add_argument("--client", choices=("raw", "aiohttp"), default="raw")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of both servers (5)")
    args = parser.parse_args()
    if args.client == "aiohttp":
        load = aiohttp_load
    if args.profile:
        Path(args.profile).mkdir(parents=True, exist_ok=True)
        os.environ["SB_SCALE_PROFILE"] = str(Path(args.profile).resolve())
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    main(n=1000 if args.quick else 5000, rounds=1 if args.quick else args.rounds, db=args.db)
