"""griffe extension: docstring examples (``>>>`` lines and their output) as code blocks.

The docstrings write examples the doctest way, often under ``Example:`` (an admonition
for griffe, not an examples section), so Markdown would read an output line such as
``[0.0084, 0.9057]`` as a link. Each run of ``>>>``/``...`` lines and the output up to
the next blank line is fenced as a ``pycon`` block before the docstring is rendered.
"""

from __future__ import annotations

from typing import Any

import griffe


def fence_doctests(text: str) -> str:
    out: list[str] = []
    indent: str | None = None
    for line in text.splitlines():
        stripped = line.lstrip()
        if indent is None and stripped.startswith(">>>"):
            indent = line[: len(line) - len(stripped)]
            out.append(f"{indent}```pycon")
        elif indent is not None and not stripped:
            out.append(f"{indent}```")
            indent = None
        out.append(line)
    if indent is not None:
        out.append(f"{indent}```")
    return "\n".join(out)


class FenceDoctests(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **_: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = fence_doctests(obj.docstring.value)
