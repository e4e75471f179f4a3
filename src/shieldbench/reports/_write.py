"""Write a report's files: ``report.json``, ``report.md``, ``report.html``.

Each file is written atomically (temporary file in the same folder, then rename),
so a reader never sees half a report. Texts from data may hold a lone surrogate
(JSON allows ``"\\ud800"``), which UTF-8 cannot encode: it is written as the escape
``\\ud800``, which keeps ``report.json`` valid JSON that reads back to the same text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from shieldbench._textio import write_text_atomic
from shieldbench.errors import ConfigError
from shieldbench.reports._html import render_html
from shieldbench.reports._json import render_json
from shieldbench.reports._markdown import render_markdown
from shieldbench.reports._model import Report

__all__ = ["FORMATS", "write_reports"]

_RENDERERS: dict[str, tuple[str, Callable[[Report], str]]] = {
    "json": ("json", render_json),
    "md": ("md", render_markdown),
    "html": ("html", render_html),
}
FORMATS: tuple[str, ...] = tuple(_RENDERERS)


def _write_atomic(path: Path, text: str) -> None:
    write_text_atomic(path, text)


def write_reports(
    report: Report,
    out_dir: str | Path,
    *,
    formats: Iterable[str] = FORMATS,
    stem: str = "report",
) -> dict[str, Path]:
    """Render ``report`` in each of ``formats`` into ``out_dir``; ``{format: path}``.

    Formats are ``json``, ``md`` and ``html``; files are ``<stem>.json`` /
    ``<stem>.md`` / ``<stem>.html`` (``stem`` defaults to ``report``). The folder
    is created when missing.

    Example:
        >>> import tempfile
        >>> from shieldbench.metrics._testing import make_run
        >>> from shieldbench.reports import build_report
        >>> report = build_report([make_run([("x", True, True), ("y", False, False)])])
        >>> paths = write_reports(report, tempfile.mkdtemp(), formats=("json", "md"))
        >>> sorted(p.name for p in paths.values())
        ['report.json', 'report.md']
    """
    chosen = list(dict.fromkeys(formats))
    unknown = [f for f in chosen if f not in _RENDERERS]
    if unknown or not chosen:
        raise ConfigError(
            f"report format(s) {unknown or chosen!r} unknown; choose from {', '.join(FORMATS)}"
        )
    if not stem or "/" in stem or "\\" in stem or stem.startswith("."):
        raise ConfigError(f"report file stem {stem!r} must be a plain file name")
    folder = Path(out_dir)
    written: dict[str, Path] = {}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for fmt in chosen:
            suffix, render = _RENDERERS[fmt]
            path = folder / f"{stem}.{suffix}"
            _write_atomic(path, render(report))
            written[fmt] = path
    except OSError as exc:
        raise ConfigError(
            f"cannot write the reports to {folder}: {exc.strerror or exc}; choose another folder"
        ) from exc
    return written
