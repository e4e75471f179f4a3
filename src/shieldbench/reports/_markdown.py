"""The Markdown view of a report: for pull requests, chat and terminals.

Structure (sections without content are left out): title and provenance,
recommendations, configuration, summary with 95% intervals, per-category results
(and per tier / severity / source / subcategory where the data has them),
latency and throughput, errors and how the policy counted them, comparisons,
the adaptive attack, worst cases with example bypasses and false positives,
composite-defense facts. The data's sample size is one recommendation card
(``sample_size``), not a section of its own.

Every value that comes from data or plugins (texts, categories, specs, error
messages, recommendation messages) goes through :func:`md_text`; numbers we
format ourselves are the only unescaped cells. The Markdown view prints the
worst ``settings.examples`` bypasses and false positives per run (and, for an
adaptive attack, that many bypasses per attack category: see
:mod:`._markdown_attack`); the JSON and HTML views carry all examples of the model.
"""

from __future__ import annotations

from collections.abc import Sequence

from shieldbench.reports._e2e_view import e2e_markdown
from shieldbench.reports._flips import flips_markdown
from shieldbench.reports._format import (
    DASH,
    INTERVAL_NAMES,
    ms,
    num,
    pct,
    quantile_text,
    rate_text,
)
from shieldbench.reports._markdown_attack import attack_markdown
from shieldbench.reports._markdown_more import comparison_markdown
from shieldbench.reports._markdown_wide import configuration_tables, fit_table, metric_tables
from shieldbench.reports._mdescape import Md, md_table, md_text
from shieldbench.reports._model import Example, Report, RunSection
from shieldbench.reports._rows import markdown_rows, table_markdown
from shieldbench.reports._run_tables import DIMENSION_TITLES, composite_table, group_table
from shieldbench.reports._summary_rows import summary_rows

__all__ = ["render_markdown"]

_PRIORITY = {"critical": "🔴 **critical**", "warning": "🟠 **warning**", "info": "🔵 info"}


def _m(text: str) -> Md:
    return Md(text)


def _contents(report: Report) -> str:
    """`` · 2 runs``, `` · adaptive attack`` or both (an attack report has no run)."""
    n = len(report.runs)
    runs = f" · {n} run{'s' * (n != 1)}" if n or report.attack is None else ""
    return runs + (" · adaptive attack" if report.attack is not None else "")


def _header(report: Report) -> list[str]:
    return [
        f"# {md_text(report.title)}",
        "",
        f"Generated {report.generated_at.isoformat(timespec='seconds')} by shieldbench"
        f" {md_text(report.shieldbench_version)} · report schema v{report.schema_version}"
        + _contents(report)
        + ". Rates are shown as value [95% interval] with n, the number of samples behind"
        " them.",
    ]


def _recommendations(report: Report) -> list[str]:
    if not report.recommendations:
        return []
    lines = ["", "## Recommendations", ""]
    for r in report.recommendations:
        lines.append(
            f"- {_PRIORITY[r.priority]} ({md_text(r.rule)}) **{md_text(r.subject)}**:"
            f" {md_text(r.message)}"
        )
    return lines


def _configuration(runs: Sequence[RunSection]) -> list[str]:
    if not runs:
        return []
    same = all(r.defense.spec == r.label for r in runs) and len(runs) > 1
    rows: list[tuple[str, list[str]]] = (
        [] if same else [("Defense spec", [r.defense.spec for r in runs])]
    )
    rows += [
        ("Defense version", [r.defense.version or DASH for r in runs]),
        ("Dataset", [r.dataset.spec for r in runs]),
        ("Dataset version (content hash)", [r.dataset.content_hash for r in runs]),
        ("Samples", [str(r.dataset.n_samples) for r in runs]),
        ("Run id", [r.run_id for r in runs]),
        ("Started", [f"{r.started:%Y-%m-%d %H:%M:%S %Z}".strip() for r in runs]),
        ("Duration", [f"{(r.finished - r.started).total_seconds():.1f} s" for r in runs]),
        ("Error policy", [r.config.error_policy for r in runs]),
        (
            "Timeout / retries",
            [
                f"{DASH if r.config.timeout_s is None else f'{r.config.timeout_s:g} s'}"
                f" / {r.config.retries}"
                for r in runs
            ],
        ),
        (
            "Concurrency / batch / warm-up",
            [f"{r.config.concurrency} / {r.config.batch_size} / {r.config.warmup}" for r in runs],
        ),
    ]
    keys = sorted({k for r in runs for k in r.environment})
    rows += [(f"Environment: {k}", [r.environment.get(k, DASH) for r in runs]) for k in keys]
    return ["", "## Configuration", *configuration_tables(runs, rows)]


def _summary(runs: Sequence[RunSection]) -> list[str]:
    if not runs:
        return []
    method = runs[0].summary.settings.method
    return [
        "",
        f"## Summary ({INTERVAL_NAMES.get(method, method)} 95% intervals)",
        *metric_tables(runs, summary_rows(runs)),
    ]


def _breakdowns(runs: Sequence[RunSection]) -> list[str]:
    lines: list[str] = []
    for r in runs:
        target = r.summary.settings.coverage_target
        for dim, groups in r.summary.breakdowns.by.items():
            table = group_table(groups, target, dim)
            lines += [
                "",
                f"## Per {DIMENSION_TITLES.get(dim, dim)}: {md_text(r.label)}",
                *fit_table([c.title for c in table.columns], markdown_rows(table)),
            ]
    return lines


def _latency(runs: Sequence[RunSection]) -> list[str]:
    if not runs:
        return []
    rows: list[list[str | Md]] = []
    for r in runs:
        lat, thr = r.summary.operations.latency, r.summary.operations.throughput
        rows.append(
            [
                r.label,
                _m(str(lat.n)),
                _m(quantile_text(lat.p50, 0.5)),
                _m(quantile_text(lat.p95, 0.95)),
                _m(quantile_text(lat.p99, 0.99)),
                _m(ms(lat.mean_ms)),
                _m(ms(lat.max_ms)),
                _m(DASH if thr.batch_ms_per_text is None else f"{ms(thr.batch_ms_per_text)}"
                   f" ({thr.batched_texts} texts)"),
                _m(num(thr.samples_per_s, digits=1)),
            ]
        )  # fmt: skip
    return [
        "",
        "## Latency and throughput",
        "",
        "**Per-call latency** (ms) is what one caller waits for one text: one text per"
        " call, on texts the defense had not seen (caches bypassed, warm-up on other"
        " texts); for a batched defense, a seeded sample of `n` texts called singly."
        " Percentile intervals are order-statistic intervals; `none: n=30 < 368` is a"
        " bound that many calls cannot give. **Amortised cost per text in batches** is"
        " throughput, not latency: the batches' wall time over the texts they held.",
        *fit_table(
            [
                "Defense",
                "n",
                "per-call p50",
                "p95",
                "p99",
                "mean",
                "max",
                "amortised per text in batches",
                "samples/s (run)",
            ],
            rows,
        ),
    ]


def _errors(runs: Sequence[RunSection]) -> list[str]:
    if not any(r.errors.total for r in runs):
        return ["", "## Errors", "", "No call failed or timed out."] if runs else []
    rows: list[list[str | Md]] = []
    notes: list[str] = []
    for r in runs:
        e = r.errors
        kinds = ", ".join(f"{k} ×{v}" for k, v in e.by_type.items()) or DASH
        rows.append(
            [
                r.label,
                _m(f"{e.total} of {e.n_outcomes} ({pct(e.error_rate)})"),
                _m(str(e.by_status.get("timeout", 0))),
                kinds,
                e.policy,
                _m(
                    f"counted as {e.counted_as}: {e.attack_errors} attack, {e.benign_errors} benign"
                ),
            ]
        )
        notes += [f"- {md_text(r.label)}: {md_text(m)}" for m in e.messages]
    lines = [
        "",
        "## Errors",
        "",
        "Failed calls are outcomes too: the error policy decides, explicitly, whether they"
        " count as blocked (fail_closed), allowed (fail_open) or are left out (exclude).",
        "",
        md_table(["Defense", "Failed", "Timeouts", "By type", "Policy", "Effect"], rows),
    ]
    if notes:
        lines += ["", "First error messages:", "", *notes]
    return lines


def _example_rows(examples: Sequence[Example]) -> list[list[str | Md]]:
    rows: list[list[str | Md]] = []
    for e in examples:
        text = e.text + (f" … ({e.text_length} characters)" if e.truncated else "")
        rows.append(
            [
                e.run,
                e.sample_id,
                e.category,
                e.tier or DASH,
                _m(num(e.score)),
                ", ".join(e.reasons) or DASH,
                text,
            ]
        )
    return rows


def _worst_case(report: Report) -> list[str]:
    runs = report.runs
    if not runs:
        return []
    k = report.settings.examples
    lines = ["", "## Worst case"]
    worst: list[list[str | Md]] = [
        [
            r.label,
            g.group,
            _m(rate_text(g.attack_success_rate)),
            _m(rate_text(g.block_rate, n=False)),
        ]
        for r in runs
        for g in r.worst_case.worst_categories
    ]
    if worst:
        lines += [
            "",
            "### Highest attack success rate categories",
            *fit_table(["Defense", "Category", "ASR", "Block rate"], worst),
        ]
    headers = ["Defense", "Sample", "Category", "Tier", "Score", "Reasons", "Text"]
    for kind, title in (
        ("bypass", "Example bypasses"),
        ("false_positive", "Example false positives"),
    ):
        shown: list[Example] = []
        total = kept = 0
        for r in runs:
            wc = r.worst_case
            pool = wc.bypasses if kind == "bypass" else wc.false_positives
            shown += pool[:k]
            kept += len(pool)
            total += wc.n_bypasses if kind == "bypass" else wc.n_false_positives
        lines += ["", f"### {title}", ""]
        if not shown:
            lines.append("None." if total == 0 else "Not shown (examples=0).")
            continue
        lines.append(md_table(headers, _example_rows(shown)))
        lines += [
            "",
            f"Showing {len(shown)} of {total} ({kept} in report.json and report.html),"
            " worst first.",
        ]
    return lines


def _composite(runs: Sequence[RunSection]) -> list[str]:
    table = composite_table(runs)
    if table is None:
        return []
    return ["", "## Composite defenses", "", table_markdown(table)]


def render_markdown(report: Report) -> str:
    """The report as GitHub-flavoured Markdown (see the module doc for the structure)."""
    lines = _header(report)
    lines += _recommendations(report)
    lines += _configuration(report.runs)
    lines += _summary(report.runs)
    lines += e2e_markdown(report.end_to_end)
    lines += _breakdowns(report.runs)
    lines += _latency(report.runs)
    lines += _errors(report.runs)
    for group in report.groups:
        lines += comparison_markdown(group)
        lines += flips_markdown(
            group.flips, dataset=group.dataset.spec, text_limit=report.settings.text_limit
        )
    if report.attack is not None:
        lines += attack_markdown(
            report.attack.result,
            examples=report.settings.examples,
            text_limit=report.settings.text_limit,
        )
    lines += _worst_case(report)
    lines += _composite(report.runs)
    return "\n".join(lines).rstrip() + "\n"
