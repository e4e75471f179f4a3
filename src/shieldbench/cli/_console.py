"""The consoles the commands print through: safe for any data, readable anywhere.

:class:`SafeConsole` is a :class:`rich.console.Console` that, at the last step
before text reaches the stream (after layout, so it covers tables, messages,
warnings and errors alike):

- **sanitizes data**: C0/C1 control characters (``ESC``, so ``\\x1b[2J`` or OSC-8
  links; ``\\r``, ``\\b``, BEL...) and bidirectional overrides in anything printed
  are shown as visible symbols (``␛[2J``) instead of being obeyed by the terminal;
  text UTF-8 cannot encode (a lone surrogate) becomes ``U+FFFD``. rich's own
  styling and cursor control (progress bars) pass untouched;
- **masks credentials** (:func:`shieldbench._redact.mask_secrets`);
- **reads well when piped**: when the stream is not a terminal (a CI log, ``| tee``)
  it lays out as if :data:`PIPE_WIDTH` columns were available, so each table takes
  its natural width (every name and interval whole, nothing cut with "…" at 80
  columns) and messages are not wrapped; CI logs scroll sideways instead;
- **keeps tables whole on a narrow terminal**: a :class:`rich.table.Table` wider than
  the terminal is printed stacked (:func:`stacked`): one block per row, the row's
  first cell as its heading and each other cell on its own ``column: value`` line,
  instead of squeezing every column until names and figures read "pat… gua… 50.…".

:func:`sanitize` is the same cleaning for strings printed another way (JSON is
already escaped by ``json.dumps``). :func:`progress` is the progress display:
a bar whose label is cut so the bar and ETA fit on a terminal, or a plain line
every :data:`PROGRESS_INTERVAL_S` seconds when stderr is not a terminal.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rich.console import Console, ConsoleDimensions, Group, RenderableType
from rich.measure import Measurement
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from shieldbench._redact import mask_secrets

if TYPE_CHECKING:
    from shieldbench.engine import ProgressHook

__all__ = [
    "PIPE_WIDTH",
    "PROGRESS_INTERVAL_S",
    "SafeConsole",
    "echo_json",
    "progress",
    "sanitize",
    "stacked",
]

PIPE_WIDTH = 1000
PROGRESS_INTERVAL_S = 10.0

# C0 controls except \t and \n, DEL, C1 controls, bidi embeddings/overrides/isolates.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # the Unicode "control picture": ␛ for ESC, ␍ for CR
    if code == 0x7F:
        return "\u2421"  # ␡
    return "\ufffd"


def sanitize(text: str) -> str:
    """``text`` safe to print on a terminal: controls visible, secrets masked.

    >>> sanitize("a\\x1b[2Jb\\rc\\ud800")
    'a␛[2Jb␍c�'
    """
    return mask_secrets(_UNSAFE.sub(_visible, text))


class SafeConsole(Console):
    """A rich console that sanitizes and redacts what it writes (see the module docstring)."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        cleaned = (
            segment if segment.control else Segment(sanitize(segment.text), segment.style)
            for segment in buffer
        )
        return super()._render_buffer(cleaned)

    def print(self, *objects: object, **kwargs: object) -> None:
        """:meth:`rich.console.Console.print`, with tables too wide for the console stacked."""
        fitted = [self._fit(obj) for obj in objects]
        super().print(*fitted, **kwargs)  # type: ignore[arg-type]

    def _fit(self, obj: object) -> object:
        # Only tables with column headers: a header-less grid (a layout) is left alone.
        if isinstance(obj, Table) and obj.show_header and natural_width(self, obj) > self.width:
            return stacked(obj)
        return obj

    @property
    def size(self) -> ConsoleDimensions:
        dims = super().size
        if self._width is None and not self.is_terminal:
            return ConsoleDimensions(max(dims.width, PIPE_WIDTH), dims.height)
        return dims

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size


def natural_width(console: Console, table: Table) -> int:
    """Columns ``table`` takes when no cell is wrapped or cut."""
    wide = console.options.update_width(PIPE_WIDTH)
    return Measurement.get(console, wide, table).maximum


def stacked(table: Table) -> RenderableType:
    """``table`` as one block per row, every cell whole (for a narrow terminal).

    The first column's cell heads the block; each other column follows as an
    indented ``header: value`` line (a value of several lines keeps its lines).
    """
    columns = list(table.columns)
    cells = [list(column.cells) for column in columns]
    headers = [_plain(column.header) for column in columns]
    parts: list[RenderableType] = []
    if table.title is not None:
        title = table.title
        parts.append(Text.from_markup(title, style="italic") if isinstance(title, str) else title)
    for row in range(table.row_count):
        if parts:
            parts.append(Text(""))
        head, *rest = (column[row] for column in cells)
        names = headers[1:]
        if headers[0].plain in _RANK_HEADERS and rest:  # "#2 pattern", not "2"
            head, names = (
                Text(f"#{_plain(head).plain} ").append_text(_plain(rest.pop(0))),
                names[1:],
            )
        parts.append(Text.from_markup(head, style="bold") if isinstance(head, str) else head)
        for header, value in zip(names, rest, strict=True):
            label = Text("  ").append_text(header).append(": " if header.plain else "")
            if isinstance(value, str):
                parts.append(label.append_text(Text.from_markup(value)))
            elif isinstance(value, Text):
                parts.append(label.append_text(value))
            else:  # a nested renderable: its own lines, under the label
                parts.extend([label, value])
    if table.caption is not None:
        parts.extend([Text(""), table.caption])
    return Group(*parts)


_RANK_HEADERS = ("#", "rank")


def _plain(cell: RenderableType) -> Text:
    if isinstance(cell, Text):
        return cell.copy()
    if isinstance(cell, str):
        return Text.from_markup(cell)
    return Text(str(cell))


def _eta(seconds: float) -> str:
    seconds = max(0, round(seconds))
    minutes, secs = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


@contextmanager
def progress(
    console: Console, label: str, total: int, *, interval_s: float = PROGRESS_INTERVAL_S
) -> Iterator[ProgressHook]:
    """A ``hook(done, total)`` that shows progress on ``console`` while the block runs.

    On a terminal: a transient bar; the label takes at most a third of the line, so the
    bar, the count, the throughput and the ETA fit even at 80 columns. Elsewhere (CI logs): one line
    ``label: done/total (pct), rate/s, ETA m:ss`` at most every ``interval_s`` seconds,
    and one when it finishes.
    """
    if console.is_terminal:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            ProgressColumn,
            Task,
            TextColumn,
            TimeRemainingColumn,
        )
        from rich.table import Column
        from rich.text import Text

        class RateColumn(ProgressColumn):
            """Throughput: ``1,234/s`` (blank until rich has measured a speed)."""

            def render(self, task: Task) -> Text:
                speed = task.speed
                return Text("" if speed is None else f"{speed:,.0f}/s", style="progress.data.speed")

        width = max(12, console.width // 3)
        column = Column(max_width=width, no_wrap=True, overflow="ellipsis")
        with Progress(
            TextColumn("{task.description}", table_column=column),
            BarColumn(bar_width=None if console.width > 100 else 20),
            MofNCompleteColumn(),
            RateColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
        ) as bar:
            task = bar.add_task(sanitize(label), total=total)

            def update(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            yield update
        return
    start = last = time.monotonic()
    state = {"done": 0, "total": total}

    def line(done: int, total: int, now: float) -> None:
        elapsed = now - start
        rate = done / elapsed if elapsed > 0 else 0.0
        pct = f"{done / total:.0%}" if total else "–"
        eta = f", ETA {_eta((total - done) / rate)}" if rate > 0 and done < total else ""
        console.print(
            f"{label}: {done}/{total} ({pct}), {rate:,.1f}/s{eta}", highlight=False, markup=False
        )

    def hook(done: int, total: int) -> None:
        nonlocal last
        state.update(done=done, total=total)
        now = time.monotonic()
        if now - last >= interval_s and 0 < done < total:
            last = now
            line(done, total, now)

    yield hook
    if state["done"]:
        line(state["done"], state["total"], time.monotonic())


def echo_json(data: object, *, indent: int | None = 2) -> None:
    """Print ``data`` as JSON on stdout: secrets masked, always encodable.

    Readable UTF-8 (``ensure_ascii=False``); text UTF-8 cannot encode is written as a
    ``\\udXXX`` escape, like the files (:mod:`shieldbench._textio`). Control
    characters are already escaped by JSON (``\\u001b``).
    """
    import typer

    text = mask_secrets(json.dumps(data, indent=indent, ensure_ascii=False, default=str))
    typer.echo(text.encode("utf-8", "backslashreplace").decode("utf-8"))
