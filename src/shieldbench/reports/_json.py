"""The JSON view of a report: machine-first, versioned, described by a shipped schema.

``render_json(report)`` is ``report.to_dict()`` as strict JSON (no NaN or
infinity; undefined values are ``null``), UTF-8 text, keys in model order. The
document starts with ``schema_version`` and ``kind`` (``"shieldbench.report"``)
so a reader can check what it holds before reading on; :func:`report_schema`
returns the JSON Schema (draft 2020-12) that every report of this version
satisfies (the tests validate against it).

Example:
    >>> report_schema()["properties"]["kind"]
    {'const': 'shieldbench.report'}
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from shieldbench.reports._model import Report

__all__ = ["render_json", "report_schema"]


def render_json(report: Report) -> str:
    """The report as strict JSON text (indented, non-ASCII kept, trailing newline)."""
    return json.dumps(report.to_dict(), indent=1, ensure_ascii=False, allow_nan=False) + "\n"


@cache
def _schema_text() -> str:
    return resources.files("shieldbench.reports").joinpath("report.schema.json").read_text("utf-8")


def report_schema() -> dict[str, Any]:
    """The JSON Schema of ``report.json`` (a fresh copy on every call)."""
    data: dict[str, Any] = json.loads(_schema_text())
    return data
