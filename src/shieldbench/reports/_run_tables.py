"""Run tables that the Markdown and HTML reports both show, built once (see :mod:`._rows`).

:func:`composite_table`: the facts a composite defense adds (the share of each
path of a tiered defense, what the warn-only stage of a dual defense would add).
"""

from __future__ import annotations

from collections.abc import Sequence

from shieldbench.reports._format import pct
from shieldbench.reports._model import RunSection
from shieldbench.reports._rows import Cell, Column, Table, text

__all__ = ["composite_table"]


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
