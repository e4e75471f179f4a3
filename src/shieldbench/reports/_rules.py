"""Recommendation rules over dataset groups (comparisons, missing labels) and the
helpers every rule shares; see :mod:`shieldbench.reports._recommend` for the list."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from shieldbench.metrics import Rate
from shieldbench.reports._model import (
    AttackSection,
    DatasetGroup,
    Recommendation,
    ReportSettings,
    RunSection,
)
from shieldbench.reports._records import Priority

__all__ = ["Context", "comparison", "listing", "missing_label", "rate_evidence", "rec"]

_LIST_LIMIT = 5


@dataclass(frozen=True, slots=True)
class Context:
    """What a rule may read."""

    runs: Sequence[RunSection]
    groups: Sequence[DatasetGroup]
    attack: AttackSection | None
    settings: ReportSettings


def _finite(value: Any) -> Any:
    """Evidence as strict JSON: infinities and NaN become ``None``."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def rec(
    priority: Priority, rule: str, subject: str, message: str, **evidence: Any
) -> Recommendation:
    return Recommendation(priority, rule, subject, message, _finite(evidence))


def listing(items: Sequence[str]) -> str:
    shown = ", ".join(items[:_LIST_LIMIT])
    more = len(items) - _LIST_LIMIT
    return shown + (f" and {more} more" if more > 0 else "")


def rate_evidence(r: Rate) -> dict[str, Any]:
    return {"value": r.value, "ci_low": r.ci_low, "ci_high": r.ci_high, "k": r.k, "n": r.n}


def missing_label(ctx: Context) -> Iterator[Recommendation]:
    for group in ctx.groups:
        for w in group.sample_size_warnings:
            if w.scope == "label" and w.n == 0:
                yield rec(
                    "critical",
                    "missing_label",
                    group.dataset.spec,
                    f"{w.message}; add {w.label} samples to the dataset.",
                    label=w.label,
                )


_FLIP = {
    "significantly better": "significantly worse",
    "significantly worse": "significantly better",
}


def comparison(ctx: Context) -> Iterator[Recommendation]:
    for group in ctx.groups:
        if group.comparison_note is not None:
            yield rec("warning", "comparison", group.dataset.spec, group.comparison_note)
        cmp = group.comparison
        if cmp is None or len(cmp.leaderboard) < 2:
            continue
        first, second = cmp.leaderboard[0].label, cmp.leaderboard[1].label
        pair = cmp.pair(first, second)
        verdicts = [
            (v.metric, v.verdict if pair.a == first else _FLIP.get(v.verdict, v.verdict), v)
            for v in pair.verdicts
        ]
        significant = [
            f"{m.replace('_', ' ')} {word}" for m, word, _ in verdicts if word.startswith("signif")
        ]
        evidence = {m: {"verdict": word, "p_adjusted": v.p_adjusted} for m, word, v in verdicts}
        rank_by = cmp.settings.rank_by.replace("_", " ")
        if significant:
            yield rec(
                "info",
                "comparison",
                group.dataset.spec,
                f"{first} ranks first by {rank_by}; against {second} it is "
                + "; ".join(significant)
                + f" (alpha {cmp.settings.alpha:g}, {cmp.settings.correction} correction).",
                leader=first,
                runner_up=second,
                verdicts=evidence,
            )
        else:
            yield rec(
                "warning",
                "comparison",
                group.dataset.spec,
                f"{first} ranks first by {rank_by}, but no paired test tells it apart from"
                f" {second} at alpha {cmp.settings.alpha:g} after {cmp.settings.correction}"
                " correction: the ranking may be noise. More samples (more discordant pairs)"
                " are needed to separate them.",
                leader=first,
                runner_up=second,
                verdicts=evidence,
            )
