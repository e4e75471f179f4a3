"""Turning raw records (JSON objects, CSV rows, table rows) into checked samples.

Every loader reads its format into plain ``dict`` records and hands them, one by
one with their line number, to a :class:`~shieldbench.datasets._builder.SampleBuilder`,
which maps fields onto
:class:`~shieldbench.types.Sample` with a :class:`RecordMapping` and stops at the
first bad record with a :class:`~shieldbench.errors.DatasetError` naming the file,
the line and the field.

Default field names: text in ``text`` (else ``prompt``), label in ``label``, and
``id``, ``category``, ``subcategory``, ``severity``, ``tier``, ``source``. Every
other field (``language``, ...) goes to ``Sample.metadata``.

Default label vocabulary (case-insensitive; booleans and integers as written):

- attack: ``1``, ``true``, ``attack``, ``injection``, ``jailbreak``, ``unsafe``, ``malicious``
- benign: ``0``, ``false``, ``benign``, ``safe``, ``legit``

Options ``attack=A|B`` and ``benign=C`` replace the vocabulary of their side; a
side left out keeps its defaults minus any value given to the other side. Any
other value stops loading with an error saying how to map it.

A ``category`` like ``"jailbreak/dan"`` is split at the first ``/`` into category
``jailbreak`` and subcategory ``dan`` when the record has no subcategory value
(turn this off with ``split_category=false``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shieldbench._textio import find_unencodable
from shieldbench.errors import SpecError
from shieldbench.spec import Spec
from shieldbench.types import LABELS, Label

__all__ = [
    "DEFAULT_ATTACK_LABELS",
    "DEFAULT_BENIGN_LABELS",
    "MAPPING_OPTIONS",
    "MAX_FIELD_DEPTH",
    "Columns",
    "LabelMap",
    "RecordMapping",
    "check_encodable",
    "jsonable",
    "nesting_depth",
    "type_name",
]

DEFAULT_ATTACK_LABELS = frozenset(
    {"1", "true", "attack", "injection", "jailbreak", "unsafe", "malicious"}
)
DEFAULT_BENIGN_LABELS = frozenset({"0", "false", "benign", "safe", "legit"})

_COLUMN_OPTIONS = ("text", "label", "category", "subcategory", "severity", "tier", "source", "id")
MAPPING_OPTIONS = frozenset((*_COLUMN_OPTIONS, "attack", "benign", "fixed_label", "split_category"))


@dataclass(frozen=True, slots=True)
class Columns:
    """Which record field holds each sample field. ``text=None``: ``text``, else ``prompt``."""

    text: str | None = None
    label: str = "label"
    category: str = "category"
    subcategory: str = "subcategory"
    severity: str = "severity"
    tier: str = "tier"
    source: str = "source"
    id: str = "id"


@dataclass(frozen=True, slots=True)
class LabelMap:
    """Raw label values (normalised: stripped, case-folded) meaning attack / benign.

    ``fixed`` gives every record that label and ignores the label field.
    """

    attack: frozenset[str] = DEFAULT_ATTACK_LABELS
    benign: frozenset[str] = DEFAULT_BENIGN_LABELS
    fixed: Label | None = None

    @classmethod
    def explicit(cls, *, attack: str | None = None, benign: str | None = None) -> LabelMap:
        """Vocabulary from ``attack="A|B"`` / ``benign="C"`` options (see module docs)."""
        att = _split_values(attack) if attack is not None else None
        ben = _split_values(benign) if benign is not None else None
        if att is not None and ben is not None and att & ben:
            both = ", ".join(sorted(att & ben))
            raise SpecError(f"label value(s) {both} given as both attack= and benign=")
        return cls(
            attack=att if att is not None else DEFAULT_ATTACK_LABELS - (ben or frozenset()),
            benign=ben if ben is not None else DEFAULT_BENIGN_LABELS - (att or frozenset()),
        )


def _split_values(raw: str) -> frozenset[str]:
    values = frozenset(v.strip().casefold() for v in raw.split("|") if v.strip())
    if not values:
        raise SpecError(f"empty label value list {raw!r}; write e.g. attack=1|true")
    return values


@dataclass(frozen=True, slots=True)
class RecordMapping:
    """How records become samples: columns, label vocabulary and two switches.

    ``strict`` (the built-in suites): labels must be exactly ``attack``/``benign``,
    ``id`` and ``category`` are required and unknown fields (other than
    ``language``) are errors, so a typo in a field name cannot pass silently.
    """

    columns: Columns = field(default_factory=Columns)
    labels: LabelMap = field(default_factory=LabelMap)
    split_category: bool = True
    strict: bool = False

    @classmethod
    def from_spec(cls, spec: Spec, *, strict: bool = False) -> RecordMapping:
        """Read the mapping options of a loader spec (``text=``, ``attack=``, ...)."""
        kw = spec.kwargs
        columns = Columns(**{k: kw[k] for k in _COLUMN_OPTIONS if k in kw})
        fixed = kw.get("fixed_label")
        if fixed is not None and fixed not in LABELS:
            raise SpecError(f"{spec.text!r}: fixed_label must be attack or benign, got {fixed!r}")
        labels = LabelMap.explicit(attack=kw.get("attack"), benign=kw.get("benign"))
        if fixed is not None:
            labels = LabelMap(labels.attack, labels.benign, fixed=fixed)  # type: ignore[arg-type]
        return cls(
            columns=columns,
            labels=labels,
            split_category=spec.bool_option("split_category", True),
            strict=strict,
        )


def type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


MAX_FIELD_DEPTH = 64
"""Lists and objects nest at most this deep inside one field of a data record."""


def nesting_depth(value: Any, *, limit: int = MAX_FIELD_DEPTH) -> int:
    """How deep lists and mappings nest in ``value`` (a scalar: 0), counted without
    recursion and up to ``limit + 1`` (enough to know the limit is passed)."""
    deepest = 0
    todo: list[tuple[Any, int]] = [(value, 0)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, depth + 1)
        if deepest > limit:
            return deepest
        todo.extend((child, depth + 1) for child in children)
    return deepest


def jsonable(value: Any) -> Any:
    """Metadata must stay JSON-serialisable: anything else becomes its string."""
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return str(value)


def _unencodable(value: Any, where: str) -> tuple[str, int] | None:
    """``(field path, position)`` of the first text UTF-8 cannot encode inside ``value``."""
    if isinstance(value, str):
        position = find_unencodable(value)
        return None if position is None else (where, position)
    if isinstance(value, Mapping):
        for key, item in value.items():
            found = _unencodable(str(key), where) or _unencodable(item, f"{where}.{key}")
            if found is not None:
                return found
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = _unencodable(item, f"{where}[{index}]")
            if found is not None:
                return found
    return None


def check_encodable(record: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(field, message)`` when a text in ``record`` holds a lone surrogate, else None.

    JSON allows ``"\\ud800"`` and Python decodes it into a string that UTF-8 cannot
    encode: no run file, report or HTTP request could carry it, so loaders refuse it.

    >>> check_encodable({"text": "ok", "meta": {"x": "\\ud800"}})[0]
    'meta.x'
    """
    for key, value in record.items():
        found = _unencodable(str(key), str(key)) or _unencodable(value, str(key))
        if found is not None:
            where, position = found
            text = value if isinstance(value, str) and where == str(key) else None
            code = f" (U+{ord(text[position - 1]):04X})" if text is not None else ""
            return where, (
                f"character {position} is a lone surrogate{code}, which UTF-8 cannot encode;"
                " fix the escape (e.g. a \\uD83D without its \\uDE00 pair) in the file"
            )
    return None
