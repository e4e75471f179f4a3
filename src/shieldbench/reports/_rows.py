"""One row model for the tables that Markdown and HTML both show.

A section builds its table once, as a :class:`Table` of :class:`Cell` values, and
each renderer draws it: :func:`table_markdown` for the Markdown report, the
``row_table`` macro of ``templates/report.html`` for the HTML one. So the two
views cannot drift apart (a column added, a figure formatted differently).

A cell is one of three things: a **rate** (drawn with its Wilson interval, and in
Markdown its ``k/n``), a **number** (or a phrase of numbers) we formatted ourselves
(never escaped in Markdown; HTML autoescapes everything), or **text** from the
data (escaped by each renderer: ``md_text`` in Markdown, autoescaping in HTML).
:func:`number` only makes a number cell of a real number: anything else read from a
(possibly hand-edited) file becomes text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shieldbench.metrics import Rate
from shieldbench.reports._format import DASH, rate_text
from shieldbench.reports._mdescape import Md, md_table, md_text

__all__ = [
    "Cell",
    "Column",
    "Table",
    "markdown_rows",
    "number",
    "rate_cell",
    "table_markdown",
    "text",
]


@dataclass(frozen=True, slots=True)
class Cell:
    """One table cell: ``rate`` when it is a rate, else ``text``.

    ``ours``: text we formatted from numbers (Markdown writes it unescaped);
    ``numeric``: right-aligned; ``with_n``: an HTML rate cell shows its n too.
    """

    text: str
    numeric: bool = False
    rate: Rate | None = None
    with_n: bool = False
    ours: bool = False
    mark: str | None = None  # "good" / "bad": HTML colours it, Markdown bolds "bad"


@dataclass(frozen=True, slots=True)
class Column:
    title: str
    numeric: bool = False


@dataclass(frozen=True, slots=True)
class Table:
    """Columns and rows of cells (every row as long as ``columns``)."""

    columns: tuple[Column, ...]
    rows: tuple[tuple[Cell, ...], ...]
    counts: bool = True  # Markdown writes a rate's k/n beside its interval


def text(value: object) -> Cell:
    """Data shown as text (escaped by the renderer); ``None`` as a dash."""
    return Cell(DASH if value is None else str(value))


def number(value: object, fmt: str = "g") -> Cell:
    """A number we format (``fmt``); a value that is no number is shown as text."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return text(value)
    return Cell(format(value, fmt), numeric=True, ours=True)


def rate_cell(r: Rate, *, n: bool = False) -> Cell:
    """A rate with its interval (``n``: the HTML cell shows its n too)."""
    return Cell(rate_text(r, n=False), numeric=True, rate=r, with_n=n, ours=True)


def _md(cell: Cell, counts: bool) -> str | Md:
    if cell.rate is not None:
        kn = f" ({cell.rate.k}/{cell.rate.n})" if counts else ""
        return Md(f"{rate_text(cell.rate, n=False)}{kn}")
    if cell.mark == "bad":
        return Md(f"**{md_text(cell.text)}**")
    return Md(cell.text) if cell.ours else cell.text


def markdown_rows(table: Table) -> list[list[str | Md]]:
    """The rows as Markdown cells (text cells escaped by ``md_table``)."""
    return [[_md(c, table.counts) for c in row] for row in table.rows]


def table_markdown(table: Table) -> str:
    """The table as GitHub-flavoured Markdown (text cells escaped)."""
    rows: Sequence[Sequence[str | Md]] = markdown_rows(table)
    return md_table([c.title for c in table.columns], rows)
