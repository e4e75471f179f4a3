"""``run``'s terminal output: sample-size warnings, the per-dataset tables, the reports."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

from shieldbench.cli._app import console, err_console
from shieldbench.cli._stats import format_rate
from shieldbench.datasets import SampleSizeWarning, sample_size_note

if TYPE_CHECKING:
    from shieldbench.benchmark import Benchmark
    from shieldbench.metrics import Rate, RunSummary

__all__ = ["print_results", "print_size_warnings", "summary_table"]


def print_size_warnings(warnings: Sequence[SampleSizeWarning]) -> None:
    """The dataset's one sample-size note (:func:`~shieldbench.datasets.sample_size_note`)."""
    note = sample_size_note(warnings)
    if note is not None:
        err_console.print(f"  [yellow]sample size:[/] {escape(note)}", highlight=False)


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


def print_results(result: Benchmark, accuracy: tuple[Rate, Rate] | None) -> None:
    """Per dataset: the summary table, the paired comparison and the end-to-end table;
    then the report files."""
    from shieldbench.cli._compare_print import print_comparison
    from shieldbench.cli._e2e import print_end_to_end
    from shieldbench.metrics import compare_runs, summarize

    for spec in result.config.datasets:
        group = result.runs_on(spec)
        console.print(summary_table(spec, [summarize(r) for r in group]))
        if len(group) >= 2:
            print_comparison(compare_runs(group))
        print_end_to_end(group, accuracy)
    paths = result.reports
    for fmt, path in sorted(paths.items()):
        console.print(f"{fmt:>4} report: {path}", highlight=False)
    if "html" in paths:
        console.print(f"open the HTML report: [bold]{escape(str(paths['html']))}[/]")
