"""Records as columns: the layout of Parquet run files and of columnar (Arrow) memory.

The columns are derived from the records, not listed by hand: one column per field
of :class:`~shieldbench.types.Sample` and of :class:`~shieldbench.types.Outcome`,
its type read from the field's annotation, its cells from the record's ``to_dict()``
form and read back through ``from_dict()`` (the same codec as the JSON run file):

- ``str`` and ``Literal`` fields are text columns; ``float``, ``int``, ``bool`` are
  numeric columns; ``tuple[str, ...]`` a list of text; anything else (metadata,
  messages, details, end-to-end records) JSON text. A null cell is a field that was
  ``None`` (or left out), or an empty value of a field that cannot be ``None``
  (empty metadata); an optional field's ``{}`` is written as ``"{}"``, so
  ``None`` and ``{}`` stay apart;
- a field holding another record (``Outcome.verdict``) contributes that record's
  columns; they are all null when the field is ``None``;
- two names are kept from the first layout so that every file stays readable:
  ``Outcome.sample_id`` is the row's ``id`` column and ``Verdict.label`` is
  ``verdict_label``.

A new field therefore gets its column without any change here, and a file written
before the field existed reads it as absent (its default).
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass
from typing import Any, Literal, TypeVar, get_args, get_origin, get_type_hints

from shieldbench.runfiles._header import decode_record, plain
from shieldbench.types import Outcome, Sample, Verdict

__all__ = [
    "OUTCOME_COLUMNS",
    "SAMPLE_COLUMNS",
    "Column",
    "Columns",
    "arrow_type",
    "decode_columns",
    "encode_columns",
]

Kind = Literal["text", "float", "int", "bool", "strings", "json"]
Columns = dict[str, list[Any]]
R = TypeVar("R", Sample, Outcome)

_RENAMED = {(Outcome, "sample_id"): "id", (Verdict, "label"): "verdict_label"}


@dataclass(frozen=True, slots=True)
class Column:
    """One column: its ``name``, the ``key`` of the field in the record's dict form,
    the ``parent`` key when the field belongs to a nested record, its ``kind``, and
    whether the field may be ``None`` (``nullable``)."""

    name: str
    key: str
    kind: Kind
    parent: str | None = None
    nullable: bool = True


_SCALARS: dict[Any, Kind] = {str: "text", bool: "bool", int: "int", float: "float"}


def _kind(hint: Any) -> Kind | type:
    """A field's column kind from its annotation (a dataclass type: a nested record)."""
    inner = [a for a in _union(hint) if a is not type(None)]
    if len(inner) == 1:
        t = inner[0]
        if t in _SCALARS:
            return _SCALARS[t]
        if get_origin(t) is Literal:
            return "text"
        if get_origin(t) is tuple and get_args(t) == (str, ...):
            return "strings"
        if isinstance(t, type) and is_dataclass(t):
            return t
    return "json"


def _union(hint: Any) -> tuple[Any, ...]:
    return get_args(hint) if get_origin(hint) in (typing.Union, types.UnionType) else (hint,)


def _columns(cls: type, parent: str | None = None) -> tuple[Column, ...]:
    hints = get_type_hints(cls)
    out: list[Column] = []
    for f in fields(cls):
        kind = _kind(hints[f.name])
        if isinstance(kind, type):
            out.extend(_columns(kind, parent=f.name))
        else:
            name = _RENAMED.get((cls, f.name), f.name)
            nullable = type(None) in _union(hints[f.name])
            out.append(Column(name, f.name, kind, parent, nullable))
    return tuple(out)


SAMPLE_COLUMNS: tuple[Column, ...] = _columns(Sample)
"""A sample's columns, one per field of :class:`~shieldbench.types.Sample`."""
OUTCOME_COLUMNS: tuple[Column, ...] = _columns(Outcome)
"""An outcome's columns: its fields, its verdict's fields in the verdict's place."""


def arrow_type(column: Column) -> Any:
    """The Arrow type of a column."""
    import pyarrow as pa

    return {
        "float": pa.float64(),
        "int": pa.int64(),
        "bool": pa.bool_(),
        "strings": pa.list_(pa.string()),
    }.get(column.kind, pa.string())


def _cell(column: Column, value: Any) -> Any:
    if value is None:
        return None
    if column.kind == "json":
        if not value and not column.nullable:
            return None  # an empty mapping that cannot be None: null reads back as empty
        return json.dumps(plain(value), ensure_ascii=False)
    if column.kind == "strings":
        return list(value)
    return value


def encode_columns(records: Sequence[Any], columns: Sequence[Column]) -> Columns:
    """The records (their ``to_dict()`` forms) as one list of cells per column."""
    dicts = [r.to_dict() for r in records]
    out: Columns = {}
    for c in columns:
        if c.parent is None:
            out[c.name] = [_cell(c, d.get(c.key)) for d in dicts]
        else:
            parents = [d.get(c.parent) for d in dicts]
            out[c.name] = [None if p is None else _cell(c, p.get(c.key)) for p in parents]
    return out


def _read(column: Column, cells: list[Any]) -> list[Any]:
    if column.kind == "json":
        return [None if x is None else json.loads(x) for x in cells]
    return cells


def decode_columns(
    cls: type[R], columns: Sequence[Column], data: Mapping[str, list[Any]], *, where: str
) -> list[R]:
    """Records from column lists (a column absent from ``data`` reads as all null).

    ``where`` names the file in the :class:`~shieldbench.errors.RunError` a bad
    row raises (with the row's id and the field).
    """
    n = len(data["id"])
    cells = [_read(c, data[c.name]) if c.name in data else [None] * n for c in columns]
    parents = sorted({c.parent for c in columns if c.parent is not None})
    out: list[R] = []
    for row in zip(*cells, strict=True):
        record: dict[str, Any] = dict.fromkeys(parents)
        nested: dict[str, dict[str, Any]] = {p: {} for p in parents}
        for c, value in zip(columns, row, strict=True):
            if c.parent is None:
                record[c.key] = value
            else:
                nested[c.parent][c.key] = value
        for p, sub in nested.items():
            if any(v is not None for v in sub.values()):
                record[p] = sub
        try:
            out.append(cls.from_dict(record))
        except (KeyError, TypeError, ValueError, AttributeError):
            what = f"{where}: {cls.__name__.lower()} {record.get('id', record.get('sample_id'))!r}"
            out.append(decode_record(cls, record, where=what))  # raises, naming the field
    return out
