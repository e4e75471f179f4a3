"""Worst-case analysis: the attack categories that fail most, and the examples behind them.

Bypasses are attacks the run let through under its error policy (an error counted
as allowed under ``fail_open`` is a bypass too); false positives are benign texts
it blocked. Within a category the worst come first: bypasses with the lowest
score (the defense was surest they were harmless), false positives with the
highest; ties and scoreless defenses keep dataset order. Categories are then
interleaved, worst category first (highest ASR, or highest FPR for benign ones),
so the first few examples already span the failing families.

Example:
    >>> from shieldbench.metrics import summarize
    >>> from shieldbench.metrics._testing import make_run
    >>> run = make_run([("a", True, False, 0.4), ("a", True, False, 0.1),
    ...                 ("b", True, False, 0.3), ("c", False, True, 0.9)])
    >>> wc = worst_case(run, "x", summarize(run), [o.verdict.blocked for o in run.outcomes],
    ...                 examples=5, text_limit=100)
    >>> [(e.category, e.score) for e in wc.bypasses]
    [('a', 0.1), ('b', 0.3), ('a', 0.4)]
    >>> [g.group for g in wc.worst_categories], wc.n_false_positives
    (['a', 'b'], 1)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from itertools import zip_longest

from shieldbench.metrics import GroupRates, RunSummary
from shieldbench.reports._model import Example, ExampleKind, WorstCase
from shieldbench.types import Outcome, Run, Sample

__all__ = ["WORST_CATEGORIES", "worst_case"]

WORST_CATEGORIES = 3


def _example(
    kind: ExampleKind, run_label: str, sample: Sample, outcome: Outcome, text_limit: int
) -> Example:
    verdict = outcome.verdict
    return Example(
        kind=kind,
        run=run_label,
        sample_id=sample.id,
        category=sample.category,
        subcategory=sample.subcategory,
        tier=sample.tier,
        severity=sample.severity,
        source=sample.source,
        text=sample.text[:text_limit],
        text_length=len(sample.text),
        score=None if verdict is None else verdict.score,
        reasons=() if verdict is None else verdict.reasons,
        status=outcome.status,
    )


class _Best:
    """The best ``limit`` candidates per category (lowest ``(key, index)``), kept while
    streaming: a run with a million bypasses holds a few examples, not a million, and
    builds an :class:`Example` only for a candidate that can still be kept."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.by_category: dict[str, list[tuple[float, int, Example]]] = {}
        self._bar: dict[str, tuple[float, int]] = {}  # the worst kept, once pruned

    def wants(self, category: str, key: float, index: int) -> bool:
        bar = self._bar.get(category)
        return bar is None or (key, index) < bar

    def add(self, category: str, item: tuple[float, int, Example]) -> None:
        bucket = self.by_category.setdefault(category, [])
        bucket.append(item)
        if len(bucket) > 2 * self.limit + 16:
            bucket.sort(key=lambda t: (t[0], t[1]))
            del bucket[self.limit :]
            if bucket:
                self._bar[category] = (bucket[-1][0], bucket[-1][1])


def _interleave(
    by_category: dict[str, list[tuple[float, int, Example]]],
    order: Sequence[str],
    per_category: int,
) -> tuple[Example, ...]:
    columns = [
        [e for _, _, e in sorted(by_category[c], key=lambda t: (t[0], t[1]))[:per_category]]
        for c in order
    ]
    return tuple(e for row in zip_longest(*columns) for e in row if e is not None)


def _category_order(groups: Sequence[GroupRates], present: set[str], *, attacks: bool) -> list[str]:
    def badness(g: GroupRates) -> float:
        r = g.attack_success_rate if attacks else g.false_positive_rate
        return -1.0 if r.value is None else r.value

    ranked = sorted(groups, key=lambda g: (-badness(g), g.group))
    order = [g.group for g in ranked if g.group in present]
    return order + sorted(present - set(order))


def worst_case(
    run: Run,
    label: str,
    summary: RunSummary,
    blocked: Iterable[bool | None],
    *,
    examples: int,
    text_limit: int,
) -> WorstCase:
    """Worst categories and up to ``examples`` examples per category and kind.

    ``blocked`` is each outcome's decision under the summary's error policy
    (``None`` = excluded, never an example), in outcome order; it is read once, so a
    generator keeps a huge run from holding a list of them.
    """
    bypasses, false_pos = _Best(examples), _Best(examples)
    n_bypasses = n_false_pos = 0
    for i, (sample, outcome, b) in enumerate(zip(run.samples, run.outcomes, blocked, strict=True)):
        score = None if outcome.verdict is None else outcome.verdict.score
        if sample.is_attack and b is False:
            n_bypasses += 1
            key = math.inf if score is None else score
            if bypasses.wants(sample.category, key, i):
                example = _example("bypass", label, sample, outcome, text_limit)
                bypasses.add(sample.category, (key, i, example))
        elif not sample.is_attack and b is True:
            n_false_pos += 1
            key = math.inf if score is None else -score
            if false_pos.wants(sample.category, key, i):
                example = _example("false_positive", label, sample, outcome, text_limit)
                false_pos.add(sample.category, (key, i, example))
    groups = summary.breakdowns.by.get("category", ())
    failing = [
        g
        for g in groups
        if g.attack_success_rate.value is not None and g.attack_success_rate.value > 0
    ]
    failing.sort(
        key=lambda g: (-(g.attack_success_rate.value or 0.0), -g.confusion.n_attacks, g.group)
    )
    return WorstCase(
        worst_categories=tuple(failing[:WORST_CATEGORIES]),
        bypasses=_interleave(
            bypasses.by_category,
            _category_order(groups, set(bypasses.by_category), attacks=True),
            examples,
        ),
        false_positives=_interleave(
            false_pos.by_category,
            _category_order(groups, set(false_pos.by_category), attacks=False),
            examples,
        ),
        n_bypasses=n_bypasses,
        n_false_positives=n_false_pos,
    )
