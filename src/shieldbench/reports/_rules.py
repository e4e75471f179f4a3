"""Recommendation rules over dataset groups (comparisons, missing labels) and the
helpers every rule shares; see :mod:`shieldbench.reports._recommend` for the list."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from shieldbench.metrics import Rate, required_sample_size
from shieldbench.reports._model import (
    AttackSection,
    DatasetGroup,
    Recommendation,
    ReportSettings,
    RunSection,
)
from shieldbench.reports._records import Priority

__all__ = [
    "Context",
    "comparison",
    "listing",
    "merge_alike",
    "missing_label",
    "rate_evidence",
    "rec",
    "sample_size",
    "supported",
]

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


def supported(r: Rate, *, above: float) -> bool:
    """Whether the whole interval of ``r`` lies above ``above`` (not just its value).

    A priority that says "this figure is past the line" needs the data to say so:
    with 14 benign samples an FPR of 7.1% has the interval [1.3%, 31.5%], which
    includes 5%, so it cannot be called "above 5%" however large the point value.
    """
    return r.ci_low is not None and r.ci_low > above


def sample_size(ctx: Context) -> Iterator[Recommendation]:
    """One card per dataset: where its size limits what the report can say.

    The headline intervals wider than the margin (the largest over the group's runs,
    with the samples needed at the observed rate) and the categories smaller than a
    ±margin interval needs; no card when the data supports the margin everywhere.
    """
    margin = ctx.settings.margin
    by_label = {r.label: r for r in ctx.runs}
    for group in ctx.groups:
        runs = [by_label[label] for label in group.runs if label in by_label]
        wide: dict[str, dict[str, Any]] = {}
        for name, what in (("ASR", "attack"), ("FPR", "benign")):
            rates = [
                r.summary.rates.attack_success_rate
                if name == "ASR"
                else r.summary.rates.false_positive_rate
                for r in runs
            ]
            rates = [r for r in rates if r.value is not None and r.half_width > margin]
            if rates:
                worst = max(rates, key=lambda r: r.half_width)
                need = max(required_sample_size(margin=margin, rate=r.value or 0.0) for r in rates)
                wide[name] = {"what": what, "n": worst.n, "half_width": worst.half_width,
                              "needed": need}  # fmt: skip
        small = [w for w in group.sample_size_warnings if w.scope == "category"]
        if not wide and not small:
            continue
        parts = [
            f"the {name} interval is up to ±{100 * e['half_width']:.1f} points (n={e['n']});"
            f" about {e['needed']} {e['what']} samples are needed for ±{100 * margin:g} points"
            f" ({max(0, e['needed'] - e['n'])} more)"
            for name, e in wide.items()
        ]
        if small:
            parts.append(
                f"{len(small)} categories have fewer than the {small[0].required} samples a"
                f" ±{100 * margin:g}-point interval needs: "
                + listing([f"{w.name} ({w.n})" for w in small])
                + "; their figures are indicative only"
            )
        message = "; ".join(parts)
        yield rec(
            "warning" if wide else "info",
            "sample_size",
            group.dataset.spec,
            message[0].upper() + message[1:] + ".",
            margin=margin,
            headline=wide,
            categories=[
                {"category": w.name, "label": w.label, "n": w.n, "needed": w.required}
                for w in small
            ],
        )


def merge_alike(recs: Sequence[Recommendation]) -> list[Recommendation]:
    """One card for the same finding about several runs (same rule, priority and text).

    Two defenses with the same gap on the same data get one card naming both, so
    the number of cards follows the number of distinct findings, not of runs.
    """
    merged: dict[tuple[Priority, str, str], list[Recommendation]] = {}
    for r in recs:
        merged.setdefault((r.priority, r.rule, r.message), []).append(r)
    out = []
    for (priority, rule, message), same in merged.items():
        if len(same) == 1:
            out.append(same[0])
            continue
        subjects = [r.subject for r in same]
        evidence = dict(same[0].evidence) | {"subjects": subjects}
        out.append(Recommendation(priority, rule, ", ".join(subjects), message, evidence))
    return out


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
