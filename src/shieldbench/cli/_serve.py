"""``shieldbench serve`` (the guard service) and ``shieldbench audit verify|export|prune``.

``serve`` builds the defenses first (a bad spec is one line and exit 2, before any
port is opened), then runs the app on uvicorn; SIGINT/SIGTERM stop accepting, finish
in-flight requests, flush the warn checks and the audit log. The store is
``--db URL`` or ``SHIELDBENCH_DB``, else ``.shieldbench/history.db`` under the
working directory.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from shieldbench.cli._app import app, console, err_console
from shieldbench.errors import ConfigError, StoreError

if TYPE_CHECKING:
    from shieldbench.service import AuditStore

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
    config: Annotated[Path | None, typer.Option(help="serve.yaml (see the README).")] = None,
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
) -> None:
    """Serve a defense: check API, LiteLLM guardrail API and an OpenAI screening proxy."""
    import uvicorn

    from shieldbench.service import (
        AuditStore,
        ServeConfig,
        build_defenses,
        create_app,
        load_config,
        protocol_with_header_timeout,
    )
    from shieldbench.service import load_api_keys as keys_of
    from shieldbench.store import display_url, resolve_url

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
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    if cfg.fail_open:
        logging.getLogger("shieldbench.service").error(
            "--fail-open: requests are ALLOWED when the inline defense fails or times out;"
            " every bypass is logged at ERROR and counted in shieldbench_guard_fail_open_total"
        )
    api_keys = keys_of(cfg)
    defenses = build_defenses(cfg)
    store = AuditStore(cfg.db)  # fail fast (exit 2) on a store that cannot be opened
    try:
        if store.recovery.moved:
            err_console.print(
                f"moved {store.recovery.moved} record(s) from the journal into the store",
                highlight=False,
            )
        _report_quarantine(store)  # the server starts all the same
        if store.journal_held():
            raise StoreError(
                f"{store.url}: another running `shieldbench serve` writes this store's audit"
                f" log (its journal {store.journal_path} is locked); one server per store"
            )
    finally:
        store.close()
    where = display_url(resolve_url(cfg.db)[0])
    err_console.print(
        f"serving {cfg.defense!r} (mode {cfg.mode}, store {where}, "
        f"{'API keys required' if api_keys else 'no API keys'})",
        highlight=False,
    )
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(cfg, defenses, api_keys=api_keys),
            host=host,
            port=port,
            log_level="info",
            access_log=False,
            timeout_graceful_shutdown=30,
            timeout_keep_alive=75,  # longer than the usual 60 s of load balancers in front
            # h11 with a bound on the time to send a request's headers (slowloris)
            http=protocol_with_header_timeout(cfg.header_timeout_s),
        )
    )
    server.run()
    # The audit log and the warn checks are flushed by now (the app's shutdown). A
    # defense call abandoned past its timeout cannot be killed and would hold the
    # interpreter's exit until it returns: leave without waiting for it.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0 if server.started else 1)


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
            f"audit log OK: {report.records} record(s), chain intact, every column checked"
        )
    else:
        for problem in report.problems:
            err_console.print(
                f"audit log BROKEN at record seq={problem.seq} id={problem.id}: {problem.problem}",
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
            f" {store.quarantine_path}; records in them are not in the store. Inspect the"
            " file (one JSON line each: line, offset, reason, base64 bytes), then move it away",
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
