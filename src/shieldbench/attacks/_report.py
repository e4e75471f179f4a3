"""An :class:`AttackResult` on disk (``attack.json``) and as a terminal figure.

:func:`save_attack` writes the result's ``to_dict()`` form, :func:`load_attack` reads
it back (``shieldbench report attack.json`` renders it again). The Markdown, HTML and
JSON reports of an attack are rendered by :mod:`shieldbench.reports`, the one
renderer of results, from the same ``to_dict()`` form.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shieldbench._textio import read_text_input, write_text_atomic
from shieldbench.attacks._result import AttackResult
from shieldbench.errors import RunError

if TYPE_CHECKING:
    from shieldbench.metrics import Rate

__all__ = ["format_asr", "load_attack", "save_attack"]


def format_asr(r: Rate) -> str:
    """``80.0% [77.0–82.6] (614/768)``; ``– (0/0)`` when undefined."""
    if r.value is None:
        return f"– ({r.k}/{r.n})"
    return f"{100 * r.value:.1f}% [{100 * r.ci_low:.1f}–{100 * r.ci_high:.1f}] ({r.k}/{r.n})"


def _atomic_write(path: Path, text: str) -> None:
    write_text_atomic(path, text)


def save_attack(result: AttackResult, path: str | Path) -> Path:
    """Write ``result.to_dict()`` as JSON (atomically); returns the path."""
    target = Path(path)
    data = result.to_dict()
    text = json.dumps(data, indent=2, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate in a text: escape everything instead
        text = json.dumps(data, indent=2)
    _atomic_write(target, text + "\n")
    return target


def load_attack(path: str | Path) -> AttackResult:
    """Read an ``attack.json``; :class:`RunError` naming the file when it is not one."""
    source = Path(path)
    try:
        data: Any = json.loads(read_text_input(source, error=RunError, what="attack result"))
    except json.JSONDecodeError as exc:
        raise RunError(f"{source}:{exc.lineno}: not valid JSON: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise RunError(f"{source}: expected a JSON object, got {type(data).__name__}")
    return AttackResult.from_dict(data, source=str(source))
