"""Turning the search's raw events into figures: mutator tallies, curve, query stats.

Pure functions and one accumulator (:class:`Tally`); no engine, no I/O.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from shieldbench.attacks._mutator import Mutator, mutators
from shieldbench.attacks._records import ChainStats, CurvePoint, MutatorStats, QueryStats
from shieldbench.metrics import rate

__all__ = ["Tally", "asr_curve", "query_stats"]


@dataclass(slots=True)
class Tally:
    """Counts per single mutator and per full chain, fed one query at a time.

    A query *uses* every mutator of its chain: ``attempts[m]`` counts queries whose
    chain contains ``m`` and ``bypasses[m]`` those of them the defense let
    through. Score drops are attributed to the step just applied.
    """

    attempts: Counter[str] = field(default_factory=Counter)
    bypasses: Counter[str] = field(default_factory=Counter)
    drops: defaultdict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    chain_attempts: Counter[tuple[str, ...]] = field(default_factory=Counter)
    chain_bypasses: Counter[tuple[str, ...]] = field(default_factory=Counter)

    def record(
        self,
        chain: tuple[str, ...],
        step: tuple[str, ...],
        *,
        bypassed: bool,
        score_drop: float | None,
    ) -> None:
        for name in set(chain):
            self.attempts[name] += 1
            if bypassed:
                self.bypasses[name] += 1
        self.chain_attempts[chain] += 1
        if bypassed:
            self.chain_bypasses[chain] += 1
        if score_drop is not None:
            for name in step:
                self.drops[name].append(score_drop)

    def mutator_stats(self, pool: Iterable[Mutator]) -> tuple[MutatorStats, ...]:
        """One row per single mutator of the pool, best success rate first."""
        names = sorted({name for m in pool for name in m.chain})
        rows = []
        for name in names:
            m = mutators.get(name)
            drops = self.drops.get(name)
            rows.append(
                MutatorStats(
                    name=name,
                    family=m.family,
                    preserves_payload=m.preserves_payload,
                    attempts=self.attempts[name],
                    bypasses=self.bypasses[name],
                    success_rate=rate(self.bypasses[name], self.attempts[name]),
                    mean_score_drop=statistics.fmean(drops) if drops else None,
                )
            )
        rows.sort(key=lambda s: (-(s.success_rate.value or -1.0), -s.bypasses, s.name))
        return tuple(rows)

    def chain_stats(self) -> tuple[ChainStats, ...]:
        """Every chain that bypassed at least once, most bypasses first."""
        rows = [
            ChainStats(
                chain=chain,
                preserves_payload=all(mutators.get(n).preserves_payload for n in chain),
                attempts=self.chain_attempts[chain],
                bypasses=count,
            )
            for chain, count in self.chain_bypasses.items()
        ]
        rows.sort(key=lambda c: (-c.bypasses, c.attempts, c.chain))
        return tuple(rows)


def query_stats(values: Sequence[int], n_searched: int) -> QueryStats:
    """Median and quartiles of queries-to-bypass over the bypassed attacks.

    >>> query_stats([3, 1, 10], 5)
    QueryStats(n_bypassed=3, n_never=2, median=3, q1=2.0, q3=6.5, max=10)
    >>> query_stats([], 4).median is None
    True
    """
    if not values:
        return QueryStats(0, n_searched, None, None, None, None)
    ordered = sorted(values)
    if len(ordered) == 1:
        q1 = q3 = float(ordered[0])
    else:
        q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
    return QueryStats(
        n_bypassed=len(ordered),
        n_never=n_searched - len(ordered),
        median=statistics.median(ordered),
        q1=q1,
        q3=q3,
        max=ordered[-1],
    )


def asr_curve(
    events: Sequence[tuple[int, bool]],
    *,
    population: int,
    static_bypassed: int,
    queries: int,
) -> tuple[CurvePoint, ...]:
    """Cumulative ASR against search queries spent.

    ``events`` are ``(query_index, preserving)``: an attack's first bypass
    (``preserving=False``) and its first payload-preserving bypass
    (``preserving=True``; an attack whose first bypass preserves the payload has
    both events at one index). The curve starts at ``(0, static ASR)``, has a point
    at each query that raised the ASR, and ends at ``queries``.

    >>> [(p.queries, p.bypassed, p.preserving_bypassed)
    ...  for p in asr_curve([(4, False), (9, False), (9, True)], population=10,
    ...                     static_bypassed=1, queries=12)]
    [(0, 1, 1), (4, 2, 1), (9, 3, 2), (12, 3, 2)]
    """

    def share(k: int) -> float | None:
        return k / population if population else None

    any_count = keep_count = static_bypassed
    points = [CurvePoint(0, any_count, share(any_count), keep_count, share(keep_count))]
    firsts = Counter(i for i, preserving in events if not preserving)
    keeps = Counter(i for i, preserving in events if preserving)
    for index in sorted(firsts.keys() | keeps.keys()):
        any_count += firsts[index]
        keep_count += keeps[index]
        points.append(CurvePoint(index, any_count, share(any_count), keep_count, share(keep_count)))
    if points[-1].queries < queries:
        points.append(
            CurvePoint(queries, any_count, share(any_count), keep_count, share(keep_count))
        )
    return tuple(points)
