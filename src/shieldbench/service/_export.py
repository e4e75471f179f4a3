"""``audit export --labelled``: reviewed traffic as a JSONL dataset ``run`` can read.

Each decision with feedback becomes one line ``{"id", "text", "label", "category",
"source", "metadata"}`` (the latest label wins; ``category`` is ``guard_attack`` or
``guard_benign``). The text is only in the audit log when the service ran with
``store_text: true``; decisions without it are counted and skipped, never exported
as their redacted preview.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from shieldbench.errors import ConfigError
from shieldbench.service._audit import AuditStore

__all__ = ["ExportSummary", "export_labelled"]


@dataclass(frozen=True, slots=True)
class ExportSummary:
    """How many labelled decisions were written and how many lacked their text."""

    written: int
    without_text: int
    path: Path


def export_labelled(store: AuditStore, out: str | Path) -> ExportSummary:
    """Write the labelled decisions to ``out`` (atomically: a temp file, then renamed)."""
    path = Path(out)
    labelled = store.labelled()
    if not labelled:
        raise ConfigError(f"{store.url}: no decision has feedback yet; nothing to export")
    lines, missing = [], 0
    with contextlib.closing(store.rows(kind="decision")) as rows:
        found = list(rows)
    for row in found:
        entry = labelled.get(str(row.id))
        if entry is None:
            continue
        body = json.loads(row.body)
        text = body.get("text")
        if not isinstance(text, str):
            missing += 1
            continue
        label = entry[1]
        record = {
            "id": f"guard:{row.id}",
            "text": text,
            "label": label,
            "category": f"guard_{label}",
            "source": "shieldbench-guard",
            "metadata": {"decision": body.get("decision"), "score": body.get("score")},
        }
        lines.append(json.dumps(record, ensure_ascii=False))
    if not lines:
        raise ConfigError(
            f"{store.url}: {missing} labelled decision(s), none with its text"
            " (run the service with store_text: true to export traffic as a dataset)"
        )
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None
    return ExportSummary(len(lines), missing, path)
