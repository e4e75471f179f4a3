"""``shieldbench plan`` and ``shieldbench compare``: sample sizes and paired comparisons.

Thin commands over :mod:`shieldbench.metrics`. :func:`print_comparison`
(:mod:`shieldbench.cli._compare_print`) renders a
:class:`~shieldbench.metrics.Comparison` as rich tables; ``run`` with several
defenses reuses it. The library is imported inside the commands, so that
``shieldbench --help`` does not pay for it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.markup import escape
from rich.table import Table

from shieldbench._textio import write_text_atomic
from shieldbench.cli._app import EXIT_CODES_HELP, EXIT_FINDING, app, console, err_console
from shieldbench.cli._compare_print import print_comparison
from shieldbench.cli._outpaths import check_out_dir, check_out_file
from shieldbench.cli._pairs import (
    format_estimate,
    format_rate,
)
from shieldbench.cli._report import check_max_fpr, output_id, print_report_paths
from shieldbench.cli._store import (
    DbOption,
    NoStoreOption,
    TagOption,
    open_cli_store,
    parse_tags,
    record,
)
from shieldbench.errors import ConfigError, StatisticsError

if TYPE_CHECKING:
    from shieldbench.metrics import Comparison
    from shieldbench.types import Run

__all__ = ["format_estimate", "format_rate", "print_comparison"]

_PLAN_RATES = (0.01, 0.05, 0.1, 0.2, 0.3, 0.5)
_PLAN_MARGINS = (0.01, 0.02, 0.05, 0.1)


@app.command("plan")
def plan(
    margin: Annotated[
        float, typer.Option(help="Wanted margin of error (CI half-width), e.g. 0.05 = ±5 points.")
    ],
    rate: Annotated[
        float, typer.Option(help="Expected rate (0.5 is the worst case and the safe guess).")
    ] = 0.5,
    confidence: Annotated[float, typer.Option(help="Confidence level.")] = 0.95,
    method: Annotated[
        str, typer.Option(help="wilson (the intervals we print) or wald (textbook formula).")
    ] = "wilson",
    categories: Annotated[
        int, typer.Option(min=1, help="Number of categories to plan for (prints the total).")
    ] = 1,
) -> None:
    """How many samples a rate needs for a margin of error: per category, and a table
    over other rates and margins."""
    from shieldbench.metrics import required_sample_size

    if method not in ("wilson", "wald"):
        raise ConfigError(f"--method must be 'wilson' or 'wald', got {method!r}")
    chosen: Literal["wilson", "wald"] = "wilson" if method == "wilson" else "wald"
    n = required_sample_size(margin=margin, rate=rate, confidence=confidence, method=chosen)
    console.print(
        f"To measure a rate near [bold]{rate:.1%}[/] within [bold]±{100 * margin:.1f} points[/] at"
        f" {confidence:.0%} confidence ({chosen}), each category needs [bold]{n}[/] samples."
    )
    if categories > 1:
        console.print(f"{categories} categories x {n} = [bold]{categories * n}[/] samples in all.")
    margins = sorted({*_PLAN_MARGINS, margin})
    rates = sorted({*_PLAN_RATES, rate})
    table = Table(title=f"Samples needed per category ({confidence:.0%} confidence, {chosen})")
    table.add_column("expected rate", justify="right")
    for m in margins:
        table.add_column(f"±{m:.0%}" if m * 100 == round(m * 100) else f"±{m:.1%}", justify="right")
    for r in rates:
        cells = []
        for m in margins:
            try:
                cells.append(
                    str(
                        required_sample_size(margin=m, rate=r, confidence=confidence, method=chosen)
                    )
                )
            except StatisticsError:
                cells.append("–")
        table.add_row(f"{r:.0%}" if r * 100 == round(r * 100) else f"{r:.1%}", *cells)
    console.print(table)
    console.print(
        "The margin is the half-width of the interval printed beside a rate. Rates near 0 or 1"
        " need fewer samples; 50% is the worst case."
    )


def _print_flips(runs: list[Run], labels: tuple[str, ...], *, top: int) -> list[dict[str, Any]]:
    """Print the samples that changed, each run against the first; their JSON form."""
    from shieldbench.cli._flips import print_flips
    from shieldbench.metrics import verdict_flips

    found = []
    for run, label in zip(runs[1:], labels[1:], strict=True):
        flips = verdict_flips(runs[0], run)
        print_flips(flips, labels[0], label, top=top, out=console)
        found.append({"a": labels[0], "b": label, **flips.to_dict()})
    return found


def _run_files(paths: list[Path]) -> list[Path]:
    """Each path as given, a folder replaced by its run files: ``runs/*.json`` inside a
    ``run --out`` folder, else the folder's own ``*.json`` (sorted)."""
    files: list[Path] = []
    for path in paths:
        if not path.is_dir():
            files.append(path)
            continue
        folder = path / "runs" if (path / "runs").is_dir() else path
        found = sorted([*folder.glob("*.json"), *folder.glob("*.parquet")])
        if not found:
            raise ConfigError(f"{path}: a folder without run files (*.json or runs/*.json)")
        files.extend(found)
    return files


_RunsArgument = Annotated[
    list[Path],
    typer.Argument(
        help="Run files (JSON) written by `run`, or folders of them"
        " (a `run --out` folder: its runs/*.json)."
    ),
]
_NiMarginOption = Annotated[
    float | None,
    typer.Option(help="Non-inferiority margin (e.g. 0.02); the first run is the baseline."),
]
_MethodOption = Annotated[
    str, typer.Option(help="Interval: wilson, clopper_pearson, jeffreys, agresti_coull.")
]
_PolicyOption = Annotated[
    str | None, typer.Option(help="Error policy override: fail_closed, fail_open or exclude.")
]
_RankByOption = Annotated[
    str, typer.Option(help="balanced_accuracy, block_rate, false_positive_rate or roc_auc.")
]
_ByOption = Annotated[
    str | None,
    typer.Option(
        help="Also test every pair within each category, subcategory, tier, severity or"
        " source (one correction across all groups and pairs; in --json as by_group)."
    ),
]
_FlipsOption = Annotated[
    int,
    typer.Option(
        min=0,
        help="Samples whose verdict changed, each run against the first: show the top N"
        " of each kind (0: counts only; --json and the reports list every one).",
    ),
]


@app.command("compare", epilog=EXIT_CODES_HELP)
def compare(
    runs: _RunsArgument,
    alpha: Annotated[float, typer.Option(help="Family-wise significance level.")] = 0.05,
    margin: _NiMarginOption = None,
    correction: Annotated[str, typer.Option(help="holm, bonferroni or none.")] = "holm",
    confidence: Annotated[float, typer.Option(help="Confidence level of intervals.")] = 0.95,
    method: _MethodOption = "wilson",
    policy: _PolicyOption = None,
    rank_by: _RankByOption = "balanced_accuracy",
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Also write the comparison as JSON here.")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(help="Report folder (report.json/.md/.html; default reports/compare-<id>/)."),
    ] = None,
    by: _ByOption = None,
    max_fpr: Annotated[
        float | None,
        typer.Option(help="Your policy, FPR at most this (e.g. 0.02), drawn in the reports."),
    ] = None,
    flips: _FlipsOption = 10,
    db: DbOption = None,
    no_store: NoStoreOption = False,
    tag: TagOption = None,
) -> None:
    """Leaderboard and paired significance tests of runs on the same dataset; writes the
    JSON, Markdown and HTML reports and prints their paths."""
    from shieldbench.metrics import compare_runs
    from shieldbench.runio import load_run

    _check_compare_outputs(by, max_fpr, json_out, out)
    files = _run_files(runs)
    if len(files) < 2:
        raise ConfigError("compare needs at least two run files")
    tags = parse_tags(tag)
    loaded = [load_run(p) for p in files]
    store = None if no_store else open_cli_store(db)
    tests: dict[str, Any] = {"alpha": alpha, "correction": correction, "confidence": confidence}
    tests["method"] = method
    cmp = compare_runs(loaded, policy=policy, margin=margin, rank_by=rank_by, **tests)  # type: ignore[arg-type]
    print_comparison(cmp)
    data = _print_details(loaded, cmp, top=flips, alpha=alpha)
    if by is not None:
        data["by_group"] = _print_by_group(loaded, cmp, by, tests)
    if json_out is not None:
        text = json.dumps(data, indent=1, allow_nan=False, ensure_ascii=False) + "\n"
        write_text_atomic(json_out, text)
        console.print(f"Comparison written to {escape(str(json_out))}", highlight=False)
    _write_comparison_reports(loaded, cmp, out, policy, max_fpr)
    record(store, loaded, source="compare", tags=tags)
    _gate(cmp, margin)


def _check_compare_outputs(
    by: str | None, max_fpr: float | None, json_out: Path | None, out: Path | None
) -> None:
    """Options checked before any run is loaded or tested."""
    from shieldbench.cli._groups import check_dimension

    if by is not None:
        check_dimension(by)
    check_max_fpr(max_fpr)
    if json_out is not None:
        check_out_file(json_out, option="--json")
    if out is not None:
        check_out_dir(out, option="--out")


def _print_details(loaded: list[Run], cmp: Comparison, *, top: int, alpha: float) -> dict[str, Any]:
    """Verdict flips, the end-to-end table and profile drift, printed; the JSON data."""
    from shieldbench.cli._e2e import print_end_to_end, print_profile_drift

    data = cmp.to_dict()
    data["flips"] = _print_flips(loaded, cmp.runs, top=top)
    print_end_to_end(loaded, None)  # runs with a target: end-to-end table and McNemar
    drift = print_profile_drift(loaded, alpha=alpha)
    if drift:
        data["profile_drift"] = drift
    return data


def _print_by_group(
    loaded: list[Run], cmp: Comparison, by: str, tests: dict[str, Any]
) -> dict[str, Any]:
    """``--by``: every pair tested within each group (one correction), printed."""
    from shieldbench.cli._groups import compare_all_groups, print_grouped

    grouped = compare_all_groups(loaded, cmp.runs, by=by, policy=cmp.settings.policy, **tests)  # type: ignore[arg-type]
    print_grouped(grouped)
    return grouped.to_dict()


def _write_comparison_reports(
    loaded: list[Run], cmp: Comparison, out: Path | None, policy: str | None, max_fpr: float | None
) -> None:
    from shieldbench.reports import build_report, write_reports

    folder = out or Path("reports") / f"compare-{output_id([r.id for r in loaded])}"
    report = build_report(
        loaded,
        title=f"shieldbench comparison on {cmp.dataset_spec}",
        comparison=cmp,
        policy=policy,  # type: ignore[arg-type]
        max_fpr=max_fpr,
    )
    print_report_paths(write_reports(report, folder))


def _gate(cmp: Comparison, margin: float | None) -> None:
    """Exit 1 when a non-inferiority test (``--margin``) did not pass."""
    failed = [row for row in cmp.non_inferiority if not row.non_inferior]
    if failed:
        err_console.print(
            f"[bold red]gate failed:[/] {len(failed)} of {len(cmp.non_inferiority)}"
            f" non-inferiority tests at margin {margin:g} did not show the candidate"
            " non-inferior to the baseline (exit 1)",
            highlight=False,
        )
        raise typer.Exit(EXIT_FINDING)
