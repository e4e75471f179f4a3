"""The :class:`SampleBuilder`: checked records in, a :class:`Dataset` out, hashed on the way.

Loaders hand it one record at a time (see :mod:`shieldbench.datasets._records` for
the mapping rules); it checks each, hashes it into the dataset's content hash as it
comes, and keeps the samples as objects up to one chunk, beyond that in a Parquet
spill file on disk (:class:`~shieldbench.runfiles.ColumnBuilder`), so a large file
never sits in memory, as objects or as columns.

Example:
    >>> b = SampleBuilder("data.jsonl", RecordMapping())
    >>> b.add({"text": "Ignore all rules", "label": 1, "category": "jailbreak/dan"}, line=1)
    >>> s = b.build("inline").samples[0]
    >>> s.id, s.label, s.category, s.subcategory
    ('line:1', 'attack', 'jailbreak', 'dan')
    >>> try:
    ...     b.add({"text": "hi", "label": "maybe"}, line=2)
    ... except DatasetError as exc:
    ...     print(exc.line, exc.field, exc.reason)
    2 label unknown label value 'maybe'; map it with attack=maybe or benign=maybe
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Mapping
from typing import Any

from shieldbench.datasets._dataset import Dataset, hash_line
from shieldbench.datasets._records import (
    MAX_FIELD_DEPTH,
    RecordMapping,
    check_encodable,
    jsonable,
    nesting_depth,
    type_name,
)
from shieldbench.errors import DatasetError
from shieldbench.runfiles import (
    CHUNK,
    ColumnarRows,
    ColumnBuilder,
    sample_columns,
    samples_from,
)
from shieldbench.types import LABELS, SEVERITIES, TIERS, Label, Sample, _check_messages

__all__ = ["SampleBuilder"]


class SampleBuilder:
    """Collects samples from records, checking each field and id uniqueness.

    ``path`` names the file in errors (a loader reading several files sets it
    before each one; ids must be unique across all); ids default to
    ``line:<line>`` (not the file name: a renamed copy of the same data keeps its
    ids and so its content hash).
    """

    def __init__(
        self,
        path: str,
        mapping: RecordMapping,
        *,
        id_prefix: str | None = None,
        chunk: int = CHUNK,
    ) -> None:
        self.path = path
        self.mapping = mapping
        self.id_prefix = id_prefix if id_prefix is not None else "line"
        self._store = ColumnBuilder(sample_columns, samples_from, chunk=chunk)
        self._digest = hashlib.sha256()  # the content hash, computed as records stream in
        self._first: dict[str, tuple[str, int]] = {}  # ids of the chunk still held as objects
        # For errors about ids repeated across chunks, in memory that does not grow
        # with the file: where the line number stops being row + offset (a blank line,
        # a record over several lines), where the file changed, and a 64-bit hash of
        # each id (8 bytes a sample; sorted in place once, at the end).
        self._offsets: list[tuple[int, int]] = []
        self._paths: list[tuple[int, str]] = []
        self._hashes = array("q")

    def _error(self, message: str, line: int | None, field_name: str | None) -> DatasetError:
        return DatasetError(message, path=self.path, line=line, field=field_name)

    def _text(self, record: Mapping[str, Any], line: int) -> tuple[str, str]:
        col = self.mapping.columns.text
        if col is None:
            col = "text" if "text" in record or "prompt" not in record else "prompt"
        if col not in record and isinstance(record.get("messages"), list):
            turns = [m for m in record["messages"] if isinstance(m, Mapping)]
            users = [m.get("content") for m in turns if m.get("role") == "user"]
            if not users or not isinstance(users[-1], str) or not users[-1].strip():
                raise self._error("a conversation needs a non-empty user turn", line, "messages")
            return "messages", users[-1]
        if col not in record:
            hint = "map yours with text=FIELD" if self.mapping.columns.text is None else ""
            raise self._error(f"missing field {col!r}{'; ' + hint if hint else ''}", line, col)
        value = record[col]
        if not isinstance(value, str):
            raise self._error(f"wrong type: expected a string, got {type_name(value)}", line, col)
        if not value.strip():
            raise self._error("empty text (only whitespace)", line, col)
        return col, value

    def _label(self, record: Mapping[str, Any], line: int) -> Label:
        labels = self.mapping.labels
        if labels.fixed is not None:
            return labels.fixed
        col = self.mapping.columns.label
        if col not in record:
            raise self._error(
                f"missing field {col!r}; map yours with label=FIELD, or give every record"
                " one label with fixed_label=attack|benign",
                line,
                col,
            )
        value = record[col]
        if isinstance(value, bool):
            key = "true" if value else "false"
        elif isinstance(value, int):
            key = str(value)
        elif isinstance(value, float) and value.is_integer():
            key = str(int(value))
        elif isinstance(value, str):
            key = value.strip().casefold()
        else:
            raise self._error(
                f"wrong type: expected a string, boolean or integer label, got {type_name(value)}",
                line,
                col,
            )
        if self.mapping.strict:
            if value not in LABELS:
                raise self._error(f"label must be 'attack' or 'benign', got {value!r}", line, col)
            return value  # type: ignore[no-any-return]
        if key in labels.attack:
            return "attack"
        if key in labels.benign:
            return "benign"
        raw = str(value).strip()
        raise self._error(
            f"unknown label value {value!r}; map it with attack={raw} or benign={raw}", line, col
        )

    def _optional_str(self, record: Mapping[str, Any], col: str, line: int) -> str | None:
        value = record.get(col)
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            raise self._error(f"wrong type: expected a string, got {type_name(value)}", line, col)
        return value.strip() or None

    def _choice(
        self, record: Mapping[str, Any], col: str, allowed: tuple[str, ...], line: int
    ) -> Any:
        value = self._optional_str(record, col, line)
        if value is None:
            return None
        lowered = value.casefold()
        if lowered not in allowed:
            raise self._error(
                f"invalid value {value!r}; expected one of {', '.join(allowed)} (or empty)",
                line,
                col,
            )
        return lowered

    def _id(self, record: Mapping[str, Any], line: int) -> str:
        col = self.mapping.columns.id
        value = record.get(col)
        if value is None:
            if self.mapping.strict:
                raise self._error("missing field 'id' (required in built-in suites)", line, col)
            return f"{self.id_prefix}:{line}"
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise self._error(
                f"wrong type: expected a string or integer id, got {type_name(value)}", line, col
            )
        text = str(value).strip()
        if not text:
            raise self._error("empty id", line, col)
        return text

    def _messages(self, record: Mapping[str, Any], line: int) -> Any:
        """The ``messages`` field (a conversation of ``{role, content}``), checked."""
        value = record.get("messages")
        if value is None:
            return None
        if not isinstance(value, list):
            raise self._error(
                f"wrong type: expected a list of {{role, content}}, got {type_name(value)}",
                line,
                "messages",
            )
        try:
            return _check_messages("", value)
        except ValueError as exc:
            raise self._error(str(exc).removeprefix("Sample '': "), line, "messages") from None

    def add(self, record: Mapping[str, Any], *, line: int) -> None:
        """Check one record and append its sample; ``line`` is 1-based."""
        if not isinstance(record, Mapping):
            raise self._error(
                f"expected an object with named fields, got {type_name(record)}", line, None
            )
        for key, value in record.items():  # first: the checks below recurse into values
            if nesting_depth(value) > MAX_FIELD_DEPTH:
                raise self._error(
                    f"lists/objects nest more than {MAX_FIELD_DEPTH} levels deep in this"
                    f" field; the limit is {MAX_FIELD_DEPTH}: flatten it",
                    line,
                    str(key),
                )
        bad = check_encodable(record)
        if bad is not None:
            raise self._error(bad[1], line, bad[0])
        cols = self.mapping.columns
        text_col, text = self._text(record, line)
        label = self._label(record, line)
        sample_id = self._id(record, line)
        category = self._optional_str(record, cols.category, line)
        if category is None and self.mapping.strict:
            raise self._error("missing field 'category' (required in built-in suites)", line, None)
        subcategory = self._optional_str(record, cols.subcategory, line)
        if category and subcategory is None and self.mapping.split_category and "/" in category:
            category, _, rest = category.partition("/")
            subcategory = rest.strip() or None
            category = category.strip()
        used = {text_col, cols.category, cols.subcategory, cols.severity, cols.tier, cols.source}
        used.update((cols.id, "messages"))
        if self.mapping.labels.fixed is None:
            used.add(cols.label)
        extra = {k: v for k, v in record.items() if k not in used}
        if self.mapping.strict:
            unknown = sorted(str(k) for k in extra if k != "language")
            if unknown:
                raise self._error(
                    f"unknown field(s) {', '.join(unknown)}; built-in records have id, text,"
                    " label, category, subcategory, severity, tier, language",
                    line,
                    unknown[0],
                )
        sample = Sample(
            id=sample_id,
            text=text,
            label=label,
            category=category or "uncategorized",
            subcategory=subcategory,
            severity=self._choice(record, cols.severity, SEVERITIES, line),
            tier=self._choice(record, cols.tier, TIERS, line),
            source=self._optional_str(record, cols.source, line),
            metadata={str(k): jsonable(v) for k, v in extra.items()},
            messages=self._messages(record, line),
        )
        first = self._first.get(sample_id)
        if first is not None:
            self._duplicate(sample_id, first, (self.path, line))
        if self._store.pending == 0:  # the previous chunk went to columns: forget its ids
            self._first.clear()
        self._first[sample_id] = (self.path, line)
        if not self._paths or self._paths[-1][1] != self.path:
            self._paths.append((self._store.rows, self.path))
        row = self._store.rows
        if not self._offsets or self._offsets[-1][1] != line - row:
            self._offsets.append((row, line - row))
        self._hashes.append(hash(sample_id))
        self._digest.update(hash_line(sample))
        self._store.add(sample)

    def _duplicate(self, sample_id: str, first: tuple[str, int], again: tuple[str, int]) -> None:
        where = f"line {first[1]}" if first[0] == again[0] else f"{first[0]}:{first[1]}"
        raise DatasetError(
            f"duplicate id {sample_id!r} (first used on {where}); ids must be unique",
            path=again[0],
            line=again[1],
            field=self.mapping.columns.id,
        )

    def _where(self, row: int) -> tuple[str, int]:
        path = next(p for start, p in reversed(self._paths) if start <= row)
        offset = next(o for start, o in reversed(self._offsets) if start <= row)
        return path, row + offset

    def _check_ids(self, rows: ColumnarRows[Sample]) -> None:
        """Ids repeated across chunks (within a chunk :meth:`add` caught them).

        The ids' hashes are sorted in place; only ids whose hash repeats (a repeated
        id, or a rare collision) are then looked for, a block of rows at a time.
        """
        import numpy as np

        hashes = np.frombuffer(self._hashes, dtype=np.int64)
        hashes.sort()
        repeated = set(hashes[1:][hashes[1:] == hashes[:-1]].tolist())
        self._hashes = array("q")
        if not repeated:
            return
        seen: dict[str, int] = {}
        start = 0
        for block in rows.batches(["id"]):
            ids = block.column("id").to_pylist()
            for i, sample_id in enumerate(ids):
                if hash(sample_id) not in repeated:
                    continue
                if sample_id in seen:
                    self._duplicate(sample_id, self._where(seen[sample_id]), self._where(start + i))
                seen[sample_id] = start + i
            start += len(ids)

    def build(self, name: str, *, description: str = "") -> Dataset:
        """The dataset; an error when no record was added (an empty benchmark measures nothing).

        Up to one chunk of samples the dataset holds a tuple of samples; beyond, the
        samples stay on disk in columns (:class:`~shieldbench.runfiles.ParquetRows`),
        hashed as they were added.
        """
        if not self._store.rows:
            raise self._error("no records: the file holds no samples", None, None)
        content_hash = "sha256:" + self._digest.hexdigest()
        if self._store.stored == 0:
            samples = self._store.take_pending()
            return Dataset(name, tuple(samples), content_hash, description=description)
        rows = self._store.finish()
        self._check_ids(rows)
        return Dataset(name, rows, content_hash, description=description)
