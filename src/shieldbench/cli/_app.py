"""The typer application objects; command modules attach their commands to these."""

from __future__ import annotations

import typer
from rich.console import Console

__all__ = ["app", "console", "datasets_app", "defenses_app", "err_console"]

app = typer.Typer(
    name="shieldbench",
    help="Measure whether an LLM defense actually works: attack success rate, false"
    " positives, latency, confidence intervals, paired comparisons, adaptive attacks.",
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

console = Console()
err_console = Console(stderr=True)
