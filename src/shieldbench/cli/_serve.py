"""``shieldbench serve`` (the guard service) and ``shieldbench audit verify|export|prune``.

``serve`` builds the defenses first (a bad spec is one line and exit 2, before any
port is opened), then runs the app on uvicorn; SIGINT/SIGTERM stop accepting, finish
in-flight requests, flush the warn checks and the audit log. The store is
``--db URL`` or ``SHIELDBENCH_DB``, else ``.shieldbench/history.db`` under the
working directory.

``--workers N`` runs N processes on one socket (:mod:`shieldbench.cli._workers`);
with separate ``serve`` processes on one host or several, each is a replica. Replicas
need a PostgreSQL store: SQLite takes one server process and refuses a second.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from shieldbench.cli._app import app, console, err_console
from shieldbench.cli._workers import run_workers
from shieldbench.errors import ConfigError, StoreError

if TYPE_CHECKING:
    import uvicorn

    from shieldbench.service import AuditStore, Defenses, ServeConfig

#: Names the replica in audit chain ids and the metrics' ``replica`` label.
ENV_REPLICA = "SHIELDBENCH_REPLICA"

__all__ = ["audit_app"]

audit_app = typer.Typer(help="Verify, export and prune the guard service's audit log.")
app.add_typer(audit_app, name="audit")


@app.command()
def serve(
    defense: Annotated[str | None, typer.Option(help="Inline (blocking) defense spec.")] = None,
    warn: Annotated[
        str | None, typer.Option(help="Warn-only defense, run after the response (dual mode).")
    ] = None,
    output_defense: Annotated[
        str | None, typer.Option("--output-defense", help="Defense that screens answers.")
    ] = None,
    upstream: Annotated[
        str | None, typer.Option(help="OpenAI-compatible base URL the proxy forwards to.")
    ] = None,
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port (0: any free port, printed).")] = 8080,
    config: Annotated[
        Path | None,
        typer.Option(
            help="serve.yaml: the service's settings (every key: docs/service/hardening.md)."
        ),
    ] = None,
    db: Annotated[str | None, typer.Option(help="Store URL (else SHIELDBENCH_DB).")] = None,
    mode: Annotated[
        str | None, typer.Option(help="enforce (default) or monitor (never blocks).")
    ] = None,
    fail_open: Annotated[
        bool, typer.Option("--fail-open", help="Allow when the defense fails (logged loudly).")
    ] = False,
    timeout: Annotated[
        float | None, typer.Option(help="Inline defense timeout in seconds (default 2).")
    ] = None,
    store_text: Annotated[
        bool, typer.Option("--store-text", help="Keep full texts in the audit log.")
    ] = False,
    workers: Annotated[
        int,
        typer.Option(min=1, help="Server processes on this port (PostgreSQL store for > 1)."),
    ] = 1,
    replica: Annotated[
        str | None,
        typer.Option(help="Replica name in audit chains and metrics (else host-pid)."),
    ] = None,
) -> None:
    """Serve a defense: check API, LiteLLM guardrail API and an OpenAI screening proxy."""
    from shieldbench.service import ServeConfig, load_config

    base = load_config(config) if config is not None else ServeConfig()
    cfg = base.with_overrides(
        defense=defense,
        warn=warn,
        output_defense=output_defense,
        upstream=upstream,
        mode=mode,
        timeout_s=timeout,
        db=db,
        fail_open=True if fail_open else None,
        store_text=True if store_text else None,
    )
    _run_service(cfg, host=host, port=port, workers=workers, replica=replica)


def _run_service(
    cfg: ServeConfig, *, host: str, port: int, workers: int, replica: str | None
) -> NoReturn:
    """Build the defenses, check the store, then serve (one process, or ``workers``
    forked ones) until a signal; exits the process with the status."""
    from shieldbench.service import AuditStore, build_defenses
    from shieldbench.service import load_api_keys as keys_of
    from shieldbench.store import display_url, resolve_url

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    if cfg.fail_open:
        logging.getLogger("shieldbench.service").error(
            "--fail-open: requests are ALLOWED when the inline defense fails or times out;"
            " every bypass is logged at ERROR and counted in shieldbench_guard_fail_open_total"
        )
    api_keys = keys_of(cfg)
    defenses = build_defenses(cfg)
    _check_store(AuditStore, cfg.db, workers)
    if replica:
        os.environ[ENV_REPLICA] = replica
    where = display_url(resolve_url(cfg.db)[0])
    err_console.print(
        f"serving {cfg.defense!r} (mode {cfg.mode}, store {where}, "
        f"{'API keys required' if api_keys else 'no API keys'}"
        f"{f', {workers} workers' if workers > 1 else ''})",
        highlight=False,
    )
    make = partial(_uvicorn_server, cfg, defenses, api_keys, host, port)
    if workers > 1:
        status = run_workers(
            partial(_serve_worker, make, replica), host=host, port=port, workers=workers
        )
        _leave(status)
    server = make()
    server.run()
    _leave(0 if server.started else 1)


def _uvicorn_server(
    cfg: ServeConfig, defenses: Defenses, api_keys: tuple[bytes, ...], host: str, port: int
) -> uvicorn.Server:
    """A uvicorn server of a fresh app (each forked worker makes its own)."""
    import uvicorn

    from shieldbench.service import create_app, http_protocol

    return uvicorn.Server(
        uvicorn.Config(
            create_app(cfg, defenses, api_keys=api_keys),
            host=host,
            port=port,
            log_level="info",
            access_log=False,
            timeout_graceful_shutdown=30,
            timeout_keep_alive=75,  # longer than the usual 60 s of load balancers in front
            # httptools with bounds on the time to send a request's headers (slowloris)
            # and on their size; uvloop where it exists (not on Windows)
            http=http_protocol(
                header_timeout_s=cfg.header_timeout_s, max_header_bytes=cfg.max_header_bytes
            ),
            loop="asyncio" if sys.platform == "win32" else "uvloop",
        )
    )


def _serve_worker(
    make: Callable[[], uvicorn.Server], replica: str | None, sock: socket.socket, slot: int
) -> int:
    """One worker of ``--workers`` (in the forked child): its replica name, then the server."""
    if replica:
        os.environ[ENV_REPLICA] = f"{replica}-w{slot}"
    server = make()
    server.run(sockets=[sock])
    logging.shutdown()
    return 0 if server.started else 1


def _leave(status: int) -> NoReturn:
    """Exit now. The audit log and the warn checks are flushed by now (the app's
    shutdown). A defense call abandoned past its timeout cannot be killed and would
    hold the interpreter's exit until it returns: leave without waiting for it."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def _check_store(store_type: type[AuditStore], db: str | None, workers: int) -> None:
    """Open the store once before serving: fail fast (exit 2) on one that cannot be
    opened, report a recovery and a quarantine, and refuse a second writer or
    ``--workers`` on SQLite (one server process per SQLite store)."""
    store = store_type(db)
    try:
        if store.recovery.moved:
            err_console.print(
                f"moved {store.recovery.moved} record(s) from the journal into the store",
                highlight=False,
            )
        _report_quarantine(store)  # the server starts all the same
        if store.backend == "sqlite" and workers > 1:
            raise ConfigError(
                f"--workers {workers}: a SQLite store takes one server process; to run"
                " several workers (or replicas on several hosts) use a PostgreSQL store"
                " (--db postgresql://...)"
            )
        if store.backend == "sqlite" and store.journal_held():
            raise StoreError(
                f"{store.url}: another running `shieldbench serve` writes this store's audit"
                f" log (its journal {store.journal_path} is locked); one server per store"
                " on SQLite: to run several (--workers N, or replicas on several hosts) use"
                " a PostgreSQL store (--db postgresql://...)"
            )
    finally:
        store.close()


@audit_app.command("verify")
def audit_verify(
    db: Annotated[str | None, typer.Option(help="Store URL (else SHIELDBENCH_DB).")] = None,
) -> None:
    """Recompute the hash chain and check every column; exit 1 naming each broken record,
    or while unreadable journal bytes sit in the quarantine file."""
    from shieldbench.service import AuditStore, verify_chain

    store = AuditStore(db)
    try:
        report = verify_chain(store)
        if store.recovery.moved:
            console.print(f"moved {store.recovery.moved} record(s) from the journal into the store")
        failed = _report_quarantine(store)
    finally:
        store.close()
    if report.ok:
        console.print(
            f"audit log OK: {report.records} record(s) in {report.chains} chain(s), every"
            " chain intact, every column checked"
        )
    else:
        for problem in report.problems:
            err_console.print(
                f"audit log BROKEN at record chain={problem.chain} seq={problem.seq}"
                f" id={problem.id}: {problem.problem}",
                highlight=False,
            )
        more = f", {report.unlisted} more broken record(s) not listed" if report.unlisted else ""
        err_console.print(f"({report.records} record(s) read{more})", highlight=False)
    if failed or not report.ok:
        raise typer.Exit(1)


def _report_quarantine(store: AuditStore) -> bool:
    """Name the store's journal quarantine file if it holds anything; whether it does."""
    kept = store.quarantined()
    if kept:
        err_console.print(
            f"audit journal: {kept} unreadable stretch(es) of the journal are quarantined in"
            f" {', '.join(map(str, store.quarantine_files()))}; records in them are not in the"
            " store. Inspect the file (one JSON line each: line, offset, reason, base64"
            " bytes), then move it away",
            highlight=False,
        )
    return bool(kept)


@audit_app.command("export")
def audit_export(
    out: Annotated[Path, typer.Option(help="JSONL file to write.")],
    labelled: Annotated[
        bool, typer.Option("--labelled", help="Decisions with reviewer feedback (required).")
    ] = False,
    db: Annotated[str | None, typer.Option(help="Store URL (else SHIELDBENCH_DB).")] = None,
) -> None:
    """Write labelled traffic as a dataset (`run --dataset jsonl:FILE` reads it)."""
    from shieldbench.service import AuditStore, export_labelled

    if not labelled:
        raise ConfigError("audit export: only --labelled export exists; pass --labelled")
    store = AuditStore(db)
    try:
        _report_quarantine(store)
        summary = export_labelled(store, out)
    finally:
        store.close()
    console.print(
        f"wrote {summary.written} labelled sample(s) to {summary.path}"
        + (f"; {summary.without_text} skipped (no stored text)" if summary.without_text else "")
    )


@audit_app.command("prune")
def audit_prune(
    older_than_days: Annotated[float, typer.Option(help="Delete records older than this.")],
    db: Annotated[str | None, typer.Option(help="Store URL (else SHIELDBENCH_DB).")] = None,
) -> None:
    """Retention: delete old records and chain a retention record (verify still passes)."""
    from shieldbench.service import AuditStore

    if not older_than_days > 0:
        raise ConfigError(f"--older-than-days must be > 0, got {older_than_days}")
    store = AuditStore(db)
    try:
        _report_quarantine(store)
        deleted = store.prune(older_than_days * 86400)
    finally:
        store.close()
    console.print(f"deleted {deleted} audit record(s) older than {older_than_days:g} day(s)")
