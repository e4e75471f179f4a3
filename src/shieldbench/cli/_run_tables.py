"""``run``'s terminal output: sample-size warnings and the per-dataset summary table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.table import Table

from shieldbench.cli._app import err_console
from shieldbench.cli._stats import format_rate
from shieldbench.datasets import SampleSizeWarning

if TYPE_CHECKING:
    from shieldbench.metrics import RunSummary

__all__ = ["print_size_warnings", "summary_table"]


def print_size_warnings(warnings: Sequence[SampleSizeWarning], margin: float) -> None:
    """One line per label: the categories too small for a ``±margin`` interval."""
    for warning in (w for w in warnings if w.scope == "label"):
        err_console.print(f"  [yellow]sample size:[/] {warning.message}", highlight=False)
    for label in ("attack", "benign"):
        small = [w for w in warnings if w.scope == "category" and w.label == label]
        if small:
            names = ", ".join(f"{w.name} ({w.n})" for w in small)
            err_console.print(
                f"  [yellow]sample size:[/] {len(small)} {label} categories have fewer than the"
                f" {small[0].required} samples a ±{margin:.0%} margin needs: {names}",
                highlight=False,
            )


def summary_table(dataset: str, summaries: Sequence[RunSummary]) -> Table:
    table = Table(title=f"{dataset} (95% Wilson intervals)", title_justify="left", highlight=False)
    table.add_column("defense", overflow="fold")
    table.add_column("block rate (TPR)")
    table.add_column("ASR")
    table.add_column("FPR")
    for column in ("per-call p50 ms", "batch ms/text", "/s", "errors"):
        table.add_column(column, justify="right")
    for s in summaries:
        ops = s.operations
        p50 = ops.latency.p50.value
        batch = ops.throughput.batch_ms_per_text
        rate_s = ops.throughput.samples_per_s
        table.add_row(
            s.defense.spec,
            format_rate(s.rates.block_rate),
            format_rate(s.rates.attack_success_rate, n=False),
            format_rate(s.rates.false_positive_rate),
            "–" if p50 is None else f"{p50:.2f} n={ops.latency.n}",
            "–" if batch is None else f"{batch:.2f}",
            "–" if rate_s is None else f"{rate_s:,.0f}",
            str(ops.errors.total),
        )
    return table
