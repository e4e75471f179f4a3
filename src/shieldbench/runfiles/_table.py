"""Records as columns: the layout of Parquet run files and of columnar (Arrow) memory.

The columns are derived from the records, not listed by hand: one column per field
of :class:`~shieldbench.types.Sample` and of :class:`~shieldbench.types.Outcome`,
its type read from the field's annotation, its cells the field's values (nested
values as plain JSON), read back through the record's constructor in field order
(its checks apply; a null cell of a field that cannot be ``None`` takes the field's
default; a bad row is read again through ``from_dict`` so the error names the
file, the record and the field, as for a JSON run file):

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
from dataclasses import MISSING, dataclass, fields, is_dataclass
from typing import Any, Literal, TypeVar, get_args, get_origin, get_type_hints

from shieldbench.errors import RunError
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


def _cells(column: Column, values: list[Any]) -> list[Any]:
    """One column's cells from the field's values (``None`` for a missing field)."""
    if column.kind == "json":
        keep_empty = column.nullable  # an empty value of a field that cannot be None: null
        return [
            json.dumps(plain(v), ensure_ascii=False) if v or (keep_empty and v is not None)
            else None
            for v in values
        ]  # fmt: skip
    if column.kind == "strings":
        return [None if v is None else list(v) for v in values]
    return values


def encode_columns(records: Sequence[Any], columns: Sequence[Column]) -> Columns:
    """The records' fields as one list of cells per column (read back by :func:`decode_columns`)."""
    parents = {c.parent: [getattr(r, c.parent) for r in records] for c in columns if c.parent}
    out: Columns = {}
    for c in columns:
        if c.parent is None:
            values = [getattr(r, c.key) for r in records]
        else:
            values = [None if p is None else getattr(p, c.key) for p in parents[c.parent]]
        out[c.name] = _cells(c, values)
    return out


def _read(column: Column, cells: list[Any]) -> list[Any]:
    if column.kind == "json":
        return [None if x is None else json.loads(x) for x in cells]
    return cells


def _defaults(kind: Any, group: Sequence[Column]) -> list[tuple[int, Any]]:
    """``(position, make default)`` for the group's fields that cannot be ``None``."""
    by_name = {f.name: f for f in fields(kind)}
    out: list[tuple[int, Any]] = []
    for i, c in enumerate(group):
        f = by_name[c.key]
        if not c.nullable and f.default is not MISSING:
            out.append((i, lambda d=f.default: d))
        elif not c.nullable and f.default_factory is not MISSING:
            out.append((i, f.default_factory))
    return out


def _nested(kind: Any, row: tuple[Any, ...], lo: int, hi: int, fill: Any) -> Any:
    """The nested record from its cells, in field order (a null required field: default)."""
    values = list(row[lo:hi])
    for i, make in fill:
        if values[i] is None:
            values[i] = make()
    return kind(*values)


def _named_error(
    cls: type[R],
    row: tuple[Any, ...],
    ordered: Sequence[Column],
    where: str,
    exc: Exception,
) -> R:
    """Read a bad row through ``from_dict`` so the error names the record and field."""
    record: dict[str, Any] = {}
    for c, value in zip(ordered, row, strict=True):
        if c.parent is None:
            record[c.key] = value
        elif value is not None:
            record.setdefault(c.parent, {})[c.key] = value
    what = f"{where}: {cls.__name__.lower()} {record.get('id', record.get('sample_id'))!r}"
    decode_record(cls, record, where=what)  # raises, naming the field
    raise RunError(f"{what}: {type(exc).__name__}: {exc}")


@dataclass(frozen=True, slots=True)
class _Plan:
    """How a row of cells becomes a record's constructor arguments, in field order."""

    ordered: tuple[Column, ...]  # the top-level columns, then each nested record's
    n_top: int
    fill: tuple[tuple[int, Any], ...]  # top-level fields that cannot be None: defaults
    required: tuple[tuple[int, str], ...]  # top-level fields with neither None nor a default
    # (field position, nested type, first cell, end cell, a cell always set, defaults)
    nested: tuple[tuple[int, Any, int, int, int | None, tuple[tuple[int, Any], ...]], ...]


_PLANS: dict[tuple[Any, tuple[Column, ...]], _Plan] = {}


def _plan(cls: type, columns: tuple[Column, ...]) -> _Plan:
    """The :class:`_Plan` of ``cls`` over ``columns`` (made once, then reused)."""
    found = _PLANS.get((cls, columns))
    if found is None:
        found = _PLANS[(cls, columns)] = _make_plan(cls, columns)
    return found


def _make_plan(cls: type, columns: tuple[Column, ...]) -> _Plan:
    top = [c for c in columns if c.parent is None]
    position = {f.name: i for i, f in enumerate(fields(cls))}
    hints = get_type_hints(cls)
    ordered, nested, start = list(top), [], len(top)
    for p in sorted({c.parent for c in columns if c.parent}, key=position.__getitem__):
        group = [c for c in columns if c.parent == p]
        kind = _kind(hints[p])
        # present when a field the nested record always has is set (a verdict's blocked)
        always = [start + i for i, c in enumerate(group) if not c.nullable and c.kind != "json"]
        stop = start + len(group)
        nested.append((position[p], kind, start, stop, always[0] if always else None,
                       tuple(_defaults(kind, group))))  # fmt: skip
        ordered += group
        start = stop
    fill = tuple(_defaults(cls, top))
    filled = {i for i, _ in fill}
    required = tuple((i, c.name) for i, c in enumerate(top) if not c.nullable and i not in filled)
    return _Plan(tuple(ordered), len(top), fill, required, tuple(nested))


def decode_columns(
    cls: type[R], columns: Sequence[Column], data: Mapping[str, list[Any]], *, where: str
) -> list[R]:
    """Records from column lists (a column absent from ``data`` reads as all null).

    Each row calls the record's constructor (its checks apply); a bad row is read
    again through ``from_dict`` so that the :class:`~shieldbench.errors.RunError`
    names ``where`` (the file), the record's id and the field.
    """
    n = len(data["id"])
    plan = _plan(cls, tuple(columns))
    cells = [_read(c, data[c.name]) if c.name in data else [None] * n for c in plan.ordered]
    out: list[R] = []
    for row in zip(*cells, strict=True):
        try:
            values = list(row[: plan.n_top])
            for i, name in plan.required:
                if values[i] is None:
                    raise ValueError(f"column {name!r} is null")
            for i, make in plan.fill:
                if values[i] is None:
                    values[i] = make()
            for pos, kind, lo, hi, always, fill in plan.nested:
                present = row[always] is not None if always is not None else any(row[lo:hi])
                values.insert(pos, _nested(kind, row, lo, hi, fill) if present else None)
            out.append(cls(*values))
        except (TypeError, ValueError) as exc:
            out.append(_named_error(cls, row, plan.ordered, where, exc))
    return out
