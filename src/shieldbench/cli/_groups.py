"""``shieldbench compare --by category``: paired tests of every pair within every group.

:func:`~shieldbench.metrics.compare_groups` compares two runs group by group; here
every pair of the compared runs is compared that way and *all* the resulting
p-values (groups x pairs x {block rate, FPR}) form one family, corrected together
(Holm by default), so a "significantly better" in one category holds family-wise
however many defenses and categories are looked at. A metric with no samples in a
group (the FPR of an attack-only category, say) has p = 1 and stays out of the
family, as in :func:`~shieldbench.metrics.compare_runs`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from shieldbench.cli._app import console
from shieldbench.cli._pairs import metric_row, pairs_table
from shieldbench.errors import ConfigError

if TYPE_CHECKING:
    from shieldbench.metrics import Correction, GroupedComparisons, IntervalMethod
    from shieldbench.types import ErrorPolicy, Run

__all__ = ["check_dimension", "compare_all_groups", "print_grouped"]


def check_dimension(by: str) -> str:
    """``--by`` validated against the breakdown dimensions."""
    from shieldbench.metrics import DIMENSIONS

    if by not in DIMENSIONS:
        raise ConfigError(f"--by {by!r}: choose one of {', '.join(DIMENSIONS)}")
    return by


def compare_all_groups(
    runs: Sequence[Run],
    labels: Sequence[str],
    *,
    by: str,
    alpha: float,
    correction: Correction,
    policy: ErrorPolicy,
    confidence: float,
    method: IntervalMethod,
) -> GroupedComparisons:
    """Per-group paired tests of every pair of ``runs``, with one correction across all
    (:func:`~shieldbench.metrics.compare_pairs_by_group`, ``--by`` validated)."""
    from shieldbench.metrics import compare_pairs_by_group

    dimension = check_dimension(by)
    return compare_pairs_by_group(
        runs,
        labels,
        by=dimension,  # type: ignore[arg-type]
        alpha=alpha,
        correction=correction,
        policy=policy,
        confidence=confidence,
        method=method,
    )


def print_grouped(grouped: GroupedComparisons, *, out: Console | None = None) -> None:
    """One table: group, a, b, metric, rates, difference, discordant pairs, p, p adj., verdict."""
    target = console if out is None else out
    t = pairs_table(
        f"Pairwise by {grouped.by} (a vs b; alpha {grouped.alpha:g}, {grouped.correction}"
        f" correction across all {grouped.tests} tests)",
        first=grouped.by,
    )
    skipped = 0
    for a, b, g in sorted(grouped.rows, key=lambda r: (r[2].group, r[0], r[1])):
        verdicts = {v.metric: v for v in g.verdicts}
        for m in (g.attacks, g.benign):
            if not m.table.n:
                skipped += 1
                continue
            v = verdicts[m.metric]
            t.add_row(Text(g.group), *metric_row(a, b, m, v.verdict, v.p_adjusted))
    target.print(t)
    target.print(
        f"One family: every group x pair x metric with data ({grouped.tests} tests) is"
        f" corrected together ({grouped.correction}), so a per-{grouped.by} verdict holds"
        f" family-wise. {skipped} rows without samples (e.g. the FPR of an attack-only"
        f" {grouped.by}) are left out: p = 1, outside the family.",
        highlight=False,
    )
