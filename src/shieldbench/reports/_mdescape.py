"""Markdown escaping: hostile text rendered as text, tables that cannot be broken.

Attack texts, categories, defense specs and error messages come from datasets and
plugins, so any of them may hold Markdown or HTML meant to break a report. Every
such value goes through :func:`md_text` (or :func:`md_table`, which applies it to
every cell that is not a :class:`Md` fragment we wrote ourselves):

- Every ASCII character that can open or close inline Markdown (CommonMark, GitHub
  tables, strikethrough and math) is backslash-escaped: ``\\ ` * _ [ ] < > | ~ $ &``.
  CommonMark allows a backslash before any ASCII punctuation and renders that
  character as text, so ``<script>`` shows as text, no link, image, emphasis,
  code span, autolink, raw HTML, math or entity can start, and a ``|`` never ends
  a table cell. Characters that matter only at the start of a line (``#``, ``-``,
  ``>``, ``1.``) are left alone: escaped text is only ever placed after a prefix
  we wrote (``| ``, ``- ``, ``## ``), and it cannot contain a line break.
- Line breaks (``\\r``, ``\\n``, and the Unicode separators U+2028 / U+2029 / U+0085)
  become `` ↵ ``, so a cell stays on its row; other control characters become
  U+FFFD.

Example:
    >>> print(md_text("<img src=x onerror=alert(1)> | *bold*\\nnext"))
    \\<img src=x onerror=alert(1)\\> \\| \\*bold\\* ↵ next
    >>> print(md_table(["a", "b"], [["x|y", Md("**ok**")]]))
    | a | b |
    | --- | --- |
    | x\\|y | **ok** |
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Md", "md_table", "md_text"]

_PUNCT = "\\`*_[]<>|~$&"
_ESCAPE = {ord(c): "\\" + c for c in _PUNCT}
_LINE_BREAK = re.compile(r"\r\n|[\r\n\u2028\u2029\u0085]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class Md:
    """A Markdown fragment we wrote ourselves: passed through unescaped."""

    text: str


def md_text(value: object) -> str:
    """``value`` as inline Markdown that renders exactly as its text (see module doc)."""
    text = _LINE_BREAK.sub(" ↵ ", str(value))
    text = _CONTROL.sub("\ufffd", text).replace("\t", " ")
    return text.translate(_ESCAPE)


def _cell(value: str | Md) -> str:
    return value.text if isinstance(value, Md) else md_text(value)


def md_table(headers: Sequence[str | Md], rows: Sequence[Sequence[str | Md]]) -> str:
    """A GitHub-flavoured Markdown table; every plain-string cell is escaped."""
    width = len(headers)
    lines = [
        "| " + " | ".join(_cell(h) for h in headers) + " |",
        "| " + " | ".join("---" for _ in headers) + " |",
    ]
    for row in rows:
        if len(row) != width:
            raise ValueError(f"table row has {len(row)} cells, the header {width}")
        lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    return "\n".join(lines)
