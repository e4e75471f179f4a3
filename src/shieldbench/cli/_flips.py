"""The samples that changed between two runs, as terminal tables (``compare``).

:func:`print_flips` prints one :class:`~shieldbench.metrics.VerdictFlips`: the counts
of each kind of change, then the top ``top`` samples of each kind (largest score
change first) with a one-line text preview, label, category and both scores or
statuses. Sample texts are data: they go into :class:`rich.text.Text` cells (never
read as markup) and the console shows control characters as visible symbols.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from shieldbench.metrics import FlipKind, SampleFlip, VerdictFlips

__all__ = ["KIND_TITLES", "print_flips"]

KIND_TITLES: dict[str, str] = {
    "blocked_to_allowed": "blocked → allowed",
    "allowed_to_blocked": "allowed → blocked",
    "ok_to_failed": "answered → error/timeout",
    "failed_to_ok": "error/timeout → answered",
}
PREVIEW = 70


def _score(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def _side(status: str, blocked: bool | None, score: float | None) -> str:
    if blocked is None:
        return status
    return f"{'blocked' if blocked else 'allowed'} {_score(score)}"


def _table(kind: FlipKind, flips: tuple[SampleFlip, ...], a: str, b: str, top: int) -> Table:
    t = Table(
        title=Text(f"{KIND_TITLES[kind]} ({len(flips)}; top {min(top, len(flips))})"),
        title_justify="left",
    )
    for name in ("sample", "label / category", f"a: {a}", f"b: {b}", "for b", "text"):
        t.add_column(Text(name), overflow="fold")
    for f in flips[:top]:
        side_a = _side(f.status_a, f.blocked_a, f.score_a)
        side_b = _side(f.status_b, f.blocked_b, f.score_b)
        if f.error_a and f.blocked_a is None:
            side_a += f": {f.error_a}"
        if f.error_b and f.blocked_b is None:
            side_b += f": {f.error_b}"
        effect = {"worse": "[red]worse[/]", "better": "[green]better[/]"}.get(f.effect or "", "–")
        t.add_row(
            Text(f.sample_id),
            Text(f"{f.label} / {f.category or '–'}"),
            Text(side_a),
            Text(side_b),
            effect,
            Text(f.preview(PREVIEW)),
        )
    return t


def print_flips(flips: VerdictFlips, a: str, b: str, *, top: int, out: Console) -> None:
    """Counts of each kind of change between runs labelled ``a`` and ``b``, then the
    top ``top`` samples of each kind present (``top=0``: the counts only)."""
    from shieldbench.metrics import FLIP_KINDS

    counts = flips.counts()
    parts = ", ".join(f"{counts[k]} {KIND_TITLES[k]}" for k in FLIP_KINDS)
    skipped = flips.n_only_a + flips.n_only_b + flips.n_mismatched
    note = f"; {skipped} samples in one run only or changed, not compared" if skipped else ""
    out.print(
        f"Samples that changed, [bold]{escape(a)}[/] (a) → [bold]{escape(b)}[/] (b), over"
        f" {flips.n_common} shared samples: {parts}{note}.",
        highlight=False,
    )
    if top <= 0:
        return
    for kind in FLIP_KINDS:
        found = flips.of_kind(kind)
        if found:
            out.print(_table(kind, found, a, b, top))
