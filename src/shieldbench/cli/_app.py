"""The typer application objects; command modules attach their commands to these."""

from __future__ import annotations

from typing import Annotated

import typer

from shieldbench.cli._console import SafeConsole
from shieldbench.cli._help import ConventionalGroup

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_FINDING",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "app",
    "console",
    "datasets_app",
    "defenses_app",
    "err_console",
]

EXIT_OK = 0
EXIT_FINDING = 1  # the command worked and found a failure: a gate, an error rate, a defense error
EXIT_BAD_INPUT = 2  # bad option, spec, config, data or output path (no work was done)
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT), after printing how to resume
EXIT_CODES_HELP = (
    "Exit codes: 0 success; 1 a finding (compare --margin: not shown non-inferior; run:"
    " error rate above --max-error-rate; check: a defense failed); 2 bad input (option,"
    " spec, config, data or output path); 130 run interrupted (Ctrl-C; it prints how to"
    " resume)."
)

app = typer.Typer(
    name="shieldbench",
    cls=ConventionalGroup,  # commands in workflow order, click-style types (cli/_help.py)
    help="Measure whether an LLM defense actually works: attack success rate, false"
    " positives, latency, confidence intervals, paired comparisons, adaptive attacks.\n\n"
    + EXIT_CODES_HELP,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
defenses_app = typer.Typer(help="List and inspect defenses.", no_args_is_help=True)
datasets_app = typer.Typer(
    help="List, inspect, validate and transform datasets.", no_args_is_help=True
)
app.add_typer(defenses_app, name="defenses")
app.add_typer(datasets_app, name="datasets")

# Every command prints through these: data is sanitized, secrets masked, wide when piped.
console = SafeConsole()
err_console = SafeConsole(stderr=True)


def _version(value: bool) -> None:
    if value:
        from importlib import metadata

        try:
            version = metadata.version("shieldbench")
        except metadata.PackageNotFoundError:
            version = "unknown (not installed)"
        typer.echo(f"shieldbench {version}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Measure whether an LLM defense actually works."""
