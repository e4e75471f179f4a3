"""Check a stored value against the type hints of the record it should be, field by field.

A record in the history is JSON (an attack's document, a run's config, extra and
environment) or columns that SQLite will hold whatever was written into them (a
string in a number's column). The library's readers rebuild what they are given and
fail, if they fail, deep inside with an error that rarely says which field was wrong.
:func:`check` walks the stored value beside the frozen dataclass it should rebuild
(its resolved type hints) and raises :class:`Malformed` naming the first field that
does not fit, as a dotted path (``figures.rounds[0].asr.k``), and what is wrong with it:

- an object (a dataclass) must be a mapping holding every field without a default
  (extra keys are ignored, as the readers ignore them);
- a count (``int``) a whole number (not a boolean), not negative (but ``seed``);
- a number (``float``) a finite int or float: NaN and infinity are refused;
- a :class:`~shieldbench.metrics.Rate` also ``0 <= k <= n`` and its value and
  interval within [0, 1];
- a ``Literal`` one of its values, a ``datetime`` an ISO 8601 text, a tuple a list of
  its items, a mapping a mapping with text keys.

Example:
    >>> from shieldbench.types import DefenseInfo
    >>> check({"spec": "pattern", "name": "pattern"}, DefenseInfo, "defense")
    >>> try:
    ...     check({"spec": 5, "name": "x"}, DefenseInfo, "defense")
    ... except Malformed as error:
    ...     print(error)
    field defense.spec is 5 (int), not a text
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from shieldbench.metrics import Rate

__all__ = ["SIGNED", "Malformed", "check", "check_number"]

SIGNED = frozenset({"seed"})  # whole numbers that may be negative


class Malformed(ValueError):
    """A stored value that is not the record it should be: ``where`` (a dotted path)
    and ``problem`` (what is wrong with it)."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"field {where} {problem}")
        self.where = where
        self.problem = problem


def _shown(value: Any) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, localns={"Rate": Rate, "datetime": datetime})


def _name(where: str) -> str:
    return where.rsplit(".", 1)[-1].split("[", 1)[0]


def check_number(value: Any, where: str, *, low: float | None = None) -> None:
    """A finite number (not a boolean), at least ``low`` when given."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Malformed(where, f"is {_shown(value)}, not a number")
    if not math.isfinite(value):
        raise Malformed(where, f"is {value!r}, not a finite number")
    if low is not None and value < low:
        raise Malformed(where, f"is {value!r}, below {low:g}")


def _count(value: Any, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise Malformed(where, f"is {_shown(value)}, not a whole number")
    if value < 0 and _name(where) not in SIGNED:
        raise Malformed(where, f"is {value!r}, a negative count")


def _record(value: Any, cls: type, where: str) -> None:
    """``value`` as the dataclass ``cls``: a built one (its attributes) or a mapping."""
    inside = f"{where}." if where else ""
    if isinstance(value, cls):
        for f in dataclasses.fields(cls):
            check(getattr(value, f.name), _hints(cls)[f.name], inside + f.name)
    elif not isinstance(value, Mapping):
        raise Malformed(where or "(the record)", f"is {_shown(value)}, not an object")
    else:
        for f in dataclasses.fields(cls):
            if f.name in value:
                check(value[f.name], _hints(cls)[f.name], inside + f.name)
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise Malformed(inside + f.name, "is missing")
    if cls is Rate:
        _rate(value, where)


def _rate(value: Any, where: str) -> None:
    get: Callable[[str], Any] = (
        value.get if isinstance(value, Mapping) else lambda k: getattr(value, k)
    )
    if get("k") > get("n"):
        raise Malformed(f"{where}.k", f"is {get('k')!r}, more than n={get('n')!r}")
    for name in ("value", "ci_low", "ci_high"):
        x = get(name)
        if x is not None and not 0.0 <= x <= 1.0:
            raise Malformed(f"{where}.{name}", f"is {x!r}, outside [0, 1]")


def _sequence(value: Any, args: tuple[Any, ...], where: str) -> None:
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise Malformed(where, f"is {_shown(value)}, not a list")
    if len(args) == 2 and args[1] is Ellipsis:
        for i, item in enumerate(value):
            check(item, args[0], f"{where}[{i}]")
    elif args:
        if len(value) != len(args):
            raise Malformed(where, f"holds {len(value)} items, not {len(args)}")
        for i, (item, hint) in enumerate(zip(value, args, strict=True)):
            check(item, hint, f"{where}[{i}]")


def _mapping(value: Any, args: tuple[Any, ...], where: str) -> None:
    if not isinstance(value, Mapping):
        raise Malformed(where, f"is {_shown(value)}, not an object")
    for key, item in value.items():
        if not isinstance(key, str):
            raise Malformed(where, f"has the key {key!r}, not a text")
        if args:
            check(item, args[1], f"{where}.{key}")


def _scalar(value: Any, hint: type, where: str) -> None:
    if hint is bool:
        if not isinstance(value, bool):
            raise Malformed(where, f"is {_shown(value)}, not true or false")
    elif hint is int:
        _count(value, where)
    elif hint is float:
        check_number(value, where)
    elif hint is str:
        if not isinstance(value, str):
            raise Malformed(where, f"is {_shown(value)}, not a text")
    elif hint is datetime:
        if isinstance(value, datetime):
            return
        try:
            datetime.fromisoformat(value)
        except (TypeError, ValueError):
            raise Malformed(where, f"is {_shown(value)}, not an ISO 8601 time") from None
    elif dataclasses.is_dataclass(hint):
        _record(value, hint, where)
    elif not isinstance(value, hint):
        raise Malformed(where, f"is {_shown(value)}, not a {hint.__name__}")


def check(value: Any, hint: Any, where: str) -> None:
    """:class:`Malformed` naming ``where`` (and the field under it) when ``value`` does
    not fit ``hint`` (see the module docstring); nothing when it does."""
    if where == "" and dataclasses.is_dataclass(hint):  # a whole record: no prefix
        _record(value, typing.cast(type, hint), where)
        return
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint is Any or hint is object:
        return
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return
        arms = [a for a in args if a is not type(None)]
        if value is None:
            raise Malformed(where, "is missing (null)")
        errors = []
        for arm in arms:
            try:
                check(value, arm, where)
                return
            except Malformed as error:
                errors.append(error)
        raise errors[0]
    if origin is Literal:
        if value not in args:
            raise Malformed(where, f"is {_shown(value)}, not one of {', '.join(map(repr, args))}")
        return
    if origin in (tuple, list) or origin is Sequence:
        _sequence(value, args, where)
    elif origin in (dict, Mapping) or hint in (dict, Mapping):
        _mapping(value, args, where)
    elif value is None:
        raise Malformed(where, "is missing (null)")
    elif isinstance(hint, type):
        _scalar(value, hint, where)
