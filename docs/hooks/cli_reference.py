"""mkdocs hook: fills the command-line reference from the command tree at build time.

A page containing the marker ``<!-- shieldbench:cli-reference -->`` gets, in its
place, the Markdown of :func:`shieldbench.cli._reference.cli_reference_markdown`:
every command and option, written from the same objects ``shieldbench --help``
reads, so the reference cannot drift from the code.
"""

from __future__ import annotations

from typing import Any

MARKER = "<!-- shieldbench:cli-reference -->"


def on_page_markdown(markdown: str, **_: Any) -> str:
    if MARKER not in markdown:
        return markdown
    from shieldbench.cli._reference import cli_reference_markdown

    return markdown.replace(MARKER, cli_reference_markdown())
