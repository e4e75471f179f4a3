"""Every pair of runs compared within every group, with one correction across all.

:func:`~shieldbench.metrics.compare_groups` compares two runs group by group; here
every pair of several runs is compared that way and *all* the resulting p-values
(groups x pairs x {block rate, FPR}) form one family, corrected together (Holm by
default), so a "significantly better" in one category holds family-wise however many
defenses and categories are looked at. A metric with no samples in a group (the FPR
of an attack-only category, say) has p = 1 and stays out of the family, as in
:func:`~shieldbench.metrics.compare_runs`. ``shieldbench compare --by`` prints it;
the reports show it as a pair x group matrix.

Example:
    >>> from shieldbench.metrics._testing import make_run
    >>> a = make_run([("jb", True, True)] * 30 + [("leak", True, True)] * 30, run_id="a")
    >>> b = make_run([("jb", True, False)] * 30 + [("leak", True, True)] * 30, run_id="b")
    >>> grouped = compare_pairs_by_group([a, b], ["a", "b"])
    >>> [(g.group, g.verdicts[0].verdict) for _, _, g in grouped.rows]
    [('jb', 'significantly better'), ('leak', 'no significant difference')]
    >>> grouped.tests, grouped.groups
    (2, ('jb', 'leak'))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from shieldbench.errors import StatisticsError
from shieldbench.metrics._breakdown import DIMENSIONS, Dimension
from shieldbench.metrics._intervals import IntervalMethod
from shieldbench.metrics._paired import Correction
from shieldbench.metrics._pairing import (
    GroupComparison,
    compare_groups,
    corrected,
    rate_verdicts,
    shared_policy,
)
from shieldbench.types import ErrorPolicy, Run

__all__ = ["GroupedComparisons", "compare_pairs_by_group"]


@dataclass(frozen=True, slots=True)
class GroupedComparisons:
    """Every pair ``(a, b)`` compared within every group of ``by``, corrected together.

    ``rows`` holds ``(a, b, comparison)`` in pair order, then group order; verdicts
    read "a is ... than b". ``tests`` counts the p-values in the correction family.
    """

    by: str
    alpha: float
    correction: str
    tests: int
    rows: tuple[tuple[str, str, GroupComparison], ...]

    @property
    def groups(self) -> tuple[str, ...]:
        """The groups compared, sorted."""
        return tuple(sorted({g.group for _, _, g in self.rows}))

    @property
    def pairs(self) -> tuple[tuple[str, str], ...]:
        """The pairs compared, in order."""
        return tuple(dict.fromkeys((a, b) for a, b, _ in self.rows))

    def get(self, a: str, b: str, group: str) -> GroupComparison | None:
        """The comparison of pair ``(a, b)`` in ``group`` (``None`` if not compared)."""
        for ra, rb, g in self.rows:
            if (ra, rb) == (a, b) and g.group == group:
                return g
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "by": self.by,
            "alpha": self.alpha,
            "correction": self.correction,
            "tests_in_family": self.tests,
            "comparisons": [{"a": a, "b": b, **g.to_dict()} for a, b, g in self.rows],
        }


def compare_pairs_by_group(
    runs: Sequence[Run],
    labels: Sequence[str],
    *,
    by: Dimension = "category",
    alpha: float = 0.05,
    correction: Correction = "holm",
    policy: ErrorPolicy | None = None,
    confidence: float = 0.95,
    method: IntervalMethod = "wilson",
) -> GroupedComparisons:
    """Per-group paired tests of every pair of ``runs`` (labelled ``labels``), with one
    ``correction`` across all of them (see the module doc)."""
    if by not in DIMENSIONS:
        raise StatisticsError(f"cannot group by {by!r}; choose one of {', '.join(DIMENSIONS)}")
    if len(labels) != len(runs):
        raise StatisticsError(f"{len(runs)} runs but {len(labels)} labels")
    chosen = shared_policy(runs, policy)
    raw: list[tuple[str, str, GroupComparison]] = []
    for i in range(len(runs)):
        for j in range(i + 1, len(runs)):
            for g in compare_groups(
                runs[i],
                runs[j],
                by=by,
                alpha=alpha,
                correction="none",
                policy=chosen,
                confidence=confidence,
                method=method,
            ):
                raw.append((labels[i], labels[j], g))
    family: list[float | None] = []
    for _, _, g in raw:
        family += [m.test.p_value if m.table.n else None for m in (g.attacks, g.benign)]
    adjusted = iter(corrected(family, method=correction))
    rows = tuple(
        (
            a,
            b,
            replace(g, verdicts=tuple(rate_verdicts(g.attacks, g.benign, adjusted, alpha=alpha))),
        )
        for a, b, g in raw
    )
    tests = sum(p is not None for p in family)
    return GroupedComparisons(by, alpha, correction, tests, rows)
