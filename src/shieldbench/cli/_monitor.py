"""``shieldbench monitor``: re-run suites, compare with the history, alert on drops.

``--once`` runs one cycle and exits 0 (healthy), 1 (an alert condition, sent or
cooling down) or 2 (bad config, unreachable database, ...). ``--every 24h`` runs in
the foreground until stopped: Ctrl-C (SIGINT) or SIGTERM lets the current cycle
finish, then exits; a second Ctrl-C stops at once.
"""

from __future__ import annotations

import functools
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from shieldbench.cli._app import app, console, err_console
from shieldbench.cli._store import DbOption, open_cli_store
from shieldbench.errors import ConfigError

if TYPE_CHECKING:
    from shieldbench.engine import EndToEnd
    from shieldbench.monitor import CycleReport, Finding

__all__ = ["monitor"]


def _verdict(f: Finding) -> str:
    if f.alert:
        return "[red]ALERT[/]"
    if not f.significant:
        return "n.s."
    if f.metric.startswith("profile."):
        return "below min."  # a drift either way: significant but smaller than the minimum
    better = f.effect is not None and (f.effect < 1 if f.metric == "p95_latency" else f.effect < 0)
    return "[green]better[/]" if better else "below min."


def _print(report: CycleReport) -> None:
    if not report.findings:
        console.print(
            f"cycle {report.started:%Y-%m-%d %H:%M:%S}Z: {len(report.runs)} runs stored;"
            " nothing earlier to compare with yet",
            highlight=False,
        )
        return
    table = Table(title="monitor findings", title_justify="left", highlight=False)
    for name in ("defense", "suite", "metric", "vs", "reference", "now", "effect", "test", "p"):
        table.add_column(name, overflow="fold")
    table.add_column("alert")
    for spec, suite, f in report.findings:
        pct = f.metric not in ("p95_latency", "profile.answer_length")

        def v(x: float | None, *, pct: bool = pct) -> str:
            if x is None:
                return "–"
            return f"{100 * x:.1f}%" if pct else f"{x:.2f}"

        effect = (
            "–"
            if f.effect is None
            else (f"{100 * f.effect:+.1f} pt" if pct else f"{f.effect:.2f}x")
        )
        if f.metric.startswith("profile."):  # a drift either way: the signed difference
            diff = f.extra.get("difference")
            effect = "–" if diff is None else (f"{100 * diff:+.1f} pt" if pct else f"{diff:+.1f}")
        table.add_row(
            escape(spec),
            escape(suite),
            f.metric,
            escape(f.comparison),
            v(f.reference),
            v(f.current),
            effect,
            f.test,
            "–" if f.p_value is None else f"{f.p_value:.3g}",
            _verdict(f),
        )
    console.print(table)
    for alert in report.suppressed:
        console.print(f"cooling down, not sent again: {escape(alert.text)}", highlight=False)
    state = "healthy" if report.healthy else f"{len(report.fired) + len(report.suppressed)} alerts"
    console.print(
        f"cycle {report.started:%Y-%m-%d %H:%M:%S}Z: {len(report.runs)} runs stored, {state}"
        f" ({len(report.fired)} sent)",
        highlight=False,
    )


@app.command("monitor")
def monitor(
    ctx: typer.Context,
    config: Annotated[Path, typer.Option("--config", "-c", help="Monitor YAML config.")],
    once: Annotated[bool, typer.Option("--once", help="One cycle; exit 0/1/2.")] = False,
    every: Annotated[
        str | None, typer.Option(help="Run a cycle every DURATION (e.g. 24h) until stopped.")
    ] = None,
    db: DbOption = None,
) -> None:
    """Re-run suites against defenses, store each run, compare with the history, and
    alert (webhook, log, terminal) when block rate, FPR, latency or errors get worse,
    or (with an end_to_end: section) the model's behavioural profile drifts."""
    from shieldbench.monitor import Monitor, build_sinks, load_monitor_config, parse_duration

    if once == (every is not None):
        raise ConfigError("choose one of --once or --every DURATION")
    cfg = load_monitor_config(config)
    period = None if every is None else parse_duration(every, where="--every")
    from shieldbench.benchmark import EndToEndOptions, build_end_to_end, close_end_to_end

    factory: Callable[[], EndToEnd | None] | None = None
    if cfg.end_to_end is not None:
        options = EndToEndOptions.from_config(cfg.end_to_end)
        close_end_to_end(build_end_to_end(options))  # a bad target or judge: exit 2 now
        factory = functools.partial(build_end_to_end, options)
    store = open_cli_store(db or cfg.db, ctx)
    runner = Monitor(
        cfg,
        store,
        sinks=build_sinks(cfg),
        end_to_end=factory,
        close_end_to_end=None if factory is None else close_end_to_end,
    )
    if period is None:
        report = runner.cycle()
        _print(report)
        if not report.healthy:
            raise typer.Exit(1)
        return
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        err_console.print("stopping after the current cycle (Ctrl-C again to stop now)")

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while not stop.is_set():
            _print(runner.cycle())
            if stop.wait(period.total_seconds()):
                break
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    console.print("monitor stopped")
