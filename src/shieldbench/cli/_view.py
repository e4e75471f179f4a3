"""``shieldbench view``: serve the read-only web viewer over the run history.

A thin wrapper: it checks the bind (a non-loopback ``--host`` needs a token), opens
the store read-only (nothing created or migrated; a missing or foreign database is
one line and exit 2, before any port is opened), and runs the app on uvicorn.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import webbrowser
from typing import Annotated

import typer

from shieldbench.cli._app import app, err_console

__all__ = ["view"]


@app.command()
def view(
    db: Annotated[str | None, typer.Option(help="Store URL (else SHIELDBENCH_DB).")] = None,
    host: Annotated[str, typer.Option(help="Interface to bind (loopback by default).")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(help="Port (0: any free port).")] = 8765,
    open_browser: Annotated[
        bool, typer.Option("--open", help="Open the viewer in the default browser.")
    ] = False,
    token: Annotated[
        str | None,
        typer.Option(
            help="Require this token on every request (needed off loopback; else"
            " SHIELDBENCH_VIEW_TOKEN; `--token auto` makes one and prints the URL)."
        ),
    ] = None,
) -> None:
    """Browse runs, samples, comparisons, trends and attacks in a local web app (read-only)."""
    import uvicorn

    from shieldbench.service import http_protocol
    from shieldbench.store import open_store
    from shieldbench.view import TOKEN_ENV, check_bind, create_app

    secret = token or os.environ.get(TOKEN_ENV) or None
    if secret == "auto":
        secret = secrets.token_urlsafe(24)
    check_bind(host, secret)
    store = open_store(db, read_only=True)
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/runs" + (f"?token={secret}" if secret else "")
    err_console.print(f"shieldbench view: history {store.url} (read-only)", highlight=False)
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(store, token=secret),
            host=host,
            port=port,
            log_level="warning",
            access_log=False,
            http=http_protocol(),  # the guard service's bounds on a request's headers
        )
    )
    if port:
        err_console.print(f"open {url}  (Ctrl-C stops)", highlight=False, soft_wrap=True)
        if open_browser:
            webbrowser.open(url)
    try:
        # uvicorn re-raises Ctrl-C after its graceful shutdown: stopping is the normal end
        with contextlib.suppress(KeyboardInterrupt):
            server.run()
    finally:
        store.close()
    if not server.started:
        raise typer.Exit(2)
