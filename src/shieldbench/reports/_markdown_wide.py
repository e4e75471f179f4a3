"""Markdown tables that stay within a pull-request comment at any number of defenses.

A GitHub comment is about :data:`MD_WIDTH_PX` wide; a table cell wraps between words
but never inside one, so a table whose columns' longest words add up to more than
that scrolls sideways. These builders keep every table under it:

- :func:`configuration_tables`: settings every run shares are listed once (a
  two-column table); only the ones that differ get a column, one row per defense;
  run ids that share a benchmark prefix show the prefix once.
- :func:`metric_tables`: the metric x defense summary, defense columns split into
  as many tables as their headers need (:func:`~._layout.fit_columns`).
- :func:`pairs_matrix` / :func:`category_matrix`: every pair's difference with its
  95% interval and verdict (▲ a significantly better, ▼ worse, after the family's
  correction), pair x metric and pair x category, categories split the same way.
"""

from __future__ import annotations

from collections.abc import Sequence

from shieldbench.metrics import Comparison, GroupedComparisons, MetricVerdict, PairedMetric
from shieldbench.reports._format import DASH, p_text
from shieldbench.reports._layout import fit_columns, shared_prefix, word_px
from shieldbench.reports._mdescape import Md, md_table, md_text
from shieldbench.reports._model import RunSection

__all__ = [
    "MD_WIDTH_PX",
    "category_matrix",
    "configuration_tables",
    "fit_table",
    "metric_tables",
    "min_width_px",
    "pairs_matrix",
]

MD_WIDTH_PX = 860.0
_CHAR_PX = 7.5
_PAD_PX = 26.0
_GLYPH = {"significantly better": " ▲", "significantly worse": " ▼"}


def _px(text: str) -> float:
    return word_px(text, char_px=_CHAR_PX, padding=_PAD_PX)


def min_width_px(rows: Sequence[Sequence[str]]) -> float:
    """The narrowest a rendered table of these cell texts can be (words never break)."""
    if not rows:
        return 0.0
    return sum(max(_px(row[j]) for row in rows) for j in range(len(rows[0])))


def _text(cell: str | Md) -> str:
    return cell.text if isinstance(cell, Md) else md_text(cell)


def _split(first: Sequence[str], columns: Sequence[Sequence[str]]) -> list[range]:
    """Groups of ``columns`` (each a header and its cells) that fit beside ``first``."""
    budget = MD_WIDTH_PX - max(_px(x) for x in first)
    return fit_columns([max(_px(x) for x in col) for col in columns], budget=budget, most=8)


def fit_table(
    headers: Sequence[str | Md], rows: Sequence[Sequence[str | Md]], *, keep: int = 1
) -> list[str]:
    """``md_table(headers, rows)``, its columns after the first ``keep`` split into
    as many tables as it takes to fit (the first ``keep`` columns repeated in each).
    Returns the tables, each preceded by a blank line."""
    width = len(headers)
    lead = [[_text(headers[k]), *(_text(r[k]) for r in rows)] for k in range(keep)]
    first = [" ".join(x) for x in zip(*lead, strict=True)] if keep else [""]
    columns = [[_text(headers[j]), *(_text(r[j]) for r in rows)] for j in range(keep, width)]
    lines: list[str] = []
    for part in _split(first, columns):
        cols = [*range(keep), *(keep + j for j in part)]
        lines += ["", md_table([headers[j] for j in cols], [[r[j] for j in cols] for r in rows])]
    return lines


def configuration_tables(
    runs: Sequence[RunSection], rows: Sequence[tuple[str, list[str]]]
) -> list[str]:
    """``rows`` (setting, one value per run): shared ones in a two-column table, the
    others one row per defense, split into tables that fit."""
    shared = [(name, values[0]) for name, values in rows if len(set(values)) == 1]
    varying = [(name, values) for name, values in rows if len(set(values)) > 1]
    lines: list[str] = []
    ids = [r.run_id for r in runs]
    prefix = shared_prefix(ids)
    if prefix:
        shared.append(("Run id prefix", prefix + "…"))
        varying = [
            (name, [v[len(prefix) :] for v in values] if name == "Run id" else values)
            for name, values in varying
        ]
    head = runs[0].label if len(runs) == 1 else "every run"
    if shared:
        lines += ["", md_table(["", head], [[name, value] for name, value in shared])]
    if varying:
        body: list[list[str | Md]] = [
            [r.label, *(values[i] for _, values in varying)] for i, r in enumerate(runs)
        ]
        lines += fit_table(["Defense", *(name for name, _ in varying)], body)
    return lines


def metric_tables(runs: Sequence[RunSection], rows: Sequence[tuple[str, list[str]]]) -> list[str]:
    """The metric x defense table, defense columns split into tables that fit."""
    labels = [r.label for r in runs]
    columns = [[lab, *(cells[i] for _, cells in rows)] for i, lab in enumerate(labels)]
    lines: list[str] = []
    for part in _split(["Metric", *(name for name, _ in rows)], columns):
        body: list[list[str | Md]] = [[name, *(Md(cells[i]) for i in part)] for name, cells in rows]
        lines += ["", md_table(["Metric", *(labels[i] for i in part)], body)]
    return lines


def _diff(m: PairedMetric, v: MetricVerdict) -> str:
    d = m.difference
    if not m.table.n or d.estimate is None:
        return DASH
    text = f"{100 * d.estimate:+.1f} [{100 * d.ci_low:+.1f}, {100 * d.ci_high:+.1f}]"
    glyph = _GLYPH.get(v.verdict, "")
    return f"**{text}{glyph}**" if glyph else text


def _pair(a: str, b: str) -> str:
    return f"{md_text(a)} vs {md_text(b)}"


def pairs_matrix(cmp: Comparison) -> list[str]:
    """Pair x metric: a − b with its interval and verdict; then the tests behind it."""
    rows: list[list[str | Md]] = []
    tests: list[list[str | Md]] = []
    for p in cmp.pairs:
        verdicts = {v.metric: v for v in p.verdicts}
        row: list[str | Md] = [Md(_pair(p.a, p.b))]
        for m in (p.attacks, p.benign):
            v = verdicts[m.metric]
            row.append(Md(_diff(m, v)))
            if m.table.n:
                tests.append(
                    [
                        Md(_pair(p.a, p.b)),
                        m.metric.replace("_", " "),
                        Md(f"{m.table.only_a} / {m.table.only_b}"),
                        m.test.method,
                        Md(p_text(v.p_value)),
                        Md(p_text(v.p_adjusted)),
                        v.verdict,
                    ]
                )
        auc, v_auc = p.auc, verdicts.get("roc_auc")
        if auc is not None and auc.difference is not None and v_auc is not None:
            text = f"{auc.difference:+.3f} [{auc.ci_low:+.3f}, {auc.ci_high:+.3f}]"
            glyph = _GLYPH.get(v_auc.verdict, "")
            row.append(Md(f"**{text}{glyph}**" if glyph else text))
            tests.append(
                [
                    Md(_pair(p.a, p.b)),
                    "ROC-AUC",
                    Md(DASH),
                    "DeLong (paired)",
                    Md(p_text(v_auc.p_value)),
                    Md(p_text(v_auc.p_adjusted)),
                    v_auc.verdict,
                ]
            )
        else:
            row.append(Md(DASH))
        rows.append(row)
    heads = ["a vs b", "Block rate, a − b (points)", "FPR, a − b (points)", "ROC-AUC, a − b"]
    return [
        "",
        md_table(heads, rows),
        "",
        "The tests behind each verdict (discordant pairs: only a blocked / only b blocked):",
        *fit_table(["a vs b", "Metric", "Discordant", "Test", "p", "p adj.", "Verdict"], tests),
    ]


def category_matrix(grouped: GroupedComparisons) -> list[str]:
    """Pair x category: a − b in points with its interval, ▲ / ▼ where significant
    (one correction over every pair, category and metric); category columns split
    into tables that fit. A category with benign samples only shows the FPR."""
    columns: list[tuple[str, str]] = []
    for group in grouped.groups:
        metrics = {
            m.metric
            for _, _, g in grouped.rows
            if g.group == group
            for m in (g.attacks, g.benign)
            if m.table.n
        }
        columns += [
            (group, metric) for metric in ("block_rate", "false_positive_rate") if metric in metrics
        ]
    pairs = grouped.pairs
    cells: list[list[str]] = []
    for group, metric in columns:
        col = []
        for a, b in pairs:
            g = grouped.get(a, b, group)
            if g is None:
                col.append(DASH)
                continue
            m = g.attacks if metric == "block_rate" else g.benign
            v = next(v for v in g.verdicts if v.metric == metric)
            col.append(_diff(m, v))
        cells.append(col)
    names = [
        f"{md_text(group)} ({'block rate' if metric == 'block_rate' else 'FPR'})"
        for group, metric in columns
    ]
    firsts = [_pair(a, b) for a, b in pairs]
    lines = [
        "",
        f"Per {md_text(grouped.by)}, every pair (a − b in points [95% interval]; ▲ / ▼ and bold:"
        f" a significantly better / worse after {md_text(grouped.correction)} correction over all"
        f" {grouped.tests} tests, alpha {grouped.alpha:g}):",
    ]
    for part in _split(["a vs b", *firsts], [[names[j], *cells[j]] for j in range(len(columns))]):
        body: list[list[str | Md]] = [
            [Md(first), *(Md(cells[j][i]) for j in part)] for i, first in enumerate(firsts)
        ]
        lines += ["", md_table([Md("a vs b"), *(Md(names[j]) for j in part)], body)]
    return lines
