"""Run tables that the Markdown and HTML reports both show, built once (see :mod:`._rows`).

:func:`group_table`: the rates of one breakdown (per category, tier, ...) and
whether each group reaches the coverage target; :func:`composite_table`: the facts
a composite defense adds (the share of each path of a tiered defense, what the
warn-only stage of a dual defense would add).
"""

from __future__ import annotations

from collections.abc import Sequence

from shieldbench.metrics import GroupRates
from shieldbench.reports._format import DASH, pct
from shieldbench.reports._model import RunSection
from shieldbench.reports._rows import Cell, Column, Table, number, rate_cell, text

__all__ = ["DIMENSION_TITLES", "composite_table", "group_table"]

DIMENSION_TITLES = {
    "category": "category",
    "subcategory": "subcategory",
    "tier": "difficulty tier",
    "severity": "severity",
    "source": "source",
}


def _covered(g: GroupRates, target: float) -> Cell:
    value = g.block_rate.value
    if value is None:
        return Cell(DASH)
    return Cell("yes", mark="good") if value >= target else Cell("no", mark="bad")


def group_table(groups: Sequence[GroupRates], target: float, dimension: str) -> Table:
    """One row per group of a breakdown by ``dimension``; ``target``: the coverage target."""
    title = DIMENSION_TITLES.get(dimension, dimension).capitalize()
    columns = (
        Column(title), Column("Attacks", True), Column("Block rate [95% CI]", True),
        Column("ASR", True), Column(f"≥ {pct(target, digits=0)}"), Column("Benign", True),
        Column("FPR [95% CI]", True), Column("Errors", True),
    )  # fmt: skip
    return Table(columns, tuple(_group_row(g, target) for g in groups), counts=False)


def _group_row(g: GroupRates, target: float) -> tuple[Cell, ...]:
    c = g.confusion
    return (
        text(g.group), number(c.n_attacks), rate_cell(g.block_rate),
        rate_cell(g.attack_success_rate), _covered(g, target), number(c.n_benign),
        rate_cell(g.false_positive_rate), number(c.errors + c.timeouts),
    )  # fmt: skip


def _ours(value: str) -> Cell:
    """A value we formatted from counts and shares (numbers only): never escaped."""
    return Cell(value, ours=True)


def composite_table(runs: Sequence[RunSection]) -> Table | None:
    """One row per composite fact of each run; ``None`` when no run is composite."""
    rows: list[tuple[Cell, ...]] = []
    for r in runs:
        c = r.composite
        if c is None:
            continue
        if c.path_shares is not None:
            ps = c.path_shares
            rows.append((text(r.label), text("tiered paths"), _ours(
                f"fast {ps.fast} ({pct(ps.fast_share)}), deep {ps.deep}"
                f" ({pct(ps.deep_share)}), other {ps.other}"
            )))  # fmt: skip
        if c.dual_gain is not None:
            dg = c.dual_gain
            rows.append((text(r.label), text("dual: warner would add"), _ours(
                f"+{dg.extra_attacks_caught} attacks caught"
                f" (+{pct(dg.extra_block_rate)} of {dg.attacks}),"
                f" +{dg.extra_false_positives} false positives"
                f" (+{pct(dg.extra_false_positive_rate)} of {dg.benign}),"
                f" {dg.warn_errors} warner errors"
            )))  # fmt: skip
    if not rows:
        return None
    return Table((Column("Defense"), Column("Fact"), Column("Value")), tuple(rows))
