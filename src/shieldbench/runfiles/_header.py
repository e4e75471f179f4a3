"""The codec of a run's header and of each record, shared by every run-file format.

A run file (JSON), a Parquet run file and the engine's checkpoint all store the same
records; this module is the one place that says how each is written and read:

- a :class:`~shieldbench.types.Sample`, :class:`~shieldbench.types.Outcome` (with its
  :class:`~shieldbench.types.Verdict`) is its own ``to_dict()`` form and is read back
  by :func:`decode_record`, which turns a bad field into a :class:`RunError` naming
  the file, the record and the field;
- a :class:`~shieldbench.types.Run`'s other fields (its *header*) are listed in
  :data:`RUN_FIELDS`, one :class:`FieldCodec` per field: :func:`run_header` writes
  them, :func:`run_from_header` reads them and builds the Run. The checkpoint's header
  is a subset of the same fields (:func:`encode_fields` / :func:`decode_fields`).

Adding a field to a record is therefore a change in one place: the record's
``to_dict`` / ``from_dict`` (every format and the columnar layout of
:mod:`shieldbench.runfiles._table` follow), or for a Run field one entry in
:data:`RUN_FIELDS`. ``tests/test_runfiles.py`` fails when a field is not covered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar

from shieldbench.errors import RunError
from shieldbench.types import DatasetInfo, DefenseInfo, Outcome, Run, RunConfig, Sample

__all__ = [
    "RECORD_FIELDS",
    "RUN_FIELDS",
    "RUN_KIND",
    "RUN_SCHEMA_VERSION",
    "FieldCodec",
    "check_kind",
    "decode_fields",
    "decode_record",
    "decode_records",
    "encode_fields",
    "plain",
    "run_from_header",
    "run_header",
]

RUN_KIND = "shieldbench.run"
RUN_SCHEMA_VERSION = 1
"""The run-file schema this shieldbench writes and reads (JSON and Parquet alike)."""


def plain(value: Any) -> Any:
    """Read-only mappings and tuples as JSON-ready dicts and lists, at any depth."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


@dataclass(frozen=True, slots=True)
class FieldCodec:
    """How one header field is written (``encode``) and read (``decode``).

    ``required`` fields must be present; an optional field that is absent (or null)
    takes ``default``. ``omit`` says when the field is left out of what is written
    (an empty ``end_to_end`` is not written, so ordinary runs read as before).
    """

    encode: Callable[[Any], Any]
    decode: Callable[[Any], Any]
    required: bool = True
    default: Any = None
    omit: Callable[[Any], bool] | None = None


def _mapping(value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"expected an object, got {type(value).__name__}")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _moment(value: Any) -> datetime:
    return datetime.fromisoformat(_text(value))


RUN_FIELDS: Mapping[str, FieldCodec] = {
    "schema_version": FieldCodec(int, int),
    "id": FieldCodec(str, _text),
    "defense": FieldCodec(DefenseInfo.to_dict, lambda v: DefenseInfo.from_dict(_mapping(v))),
    "dataset": FieldCodec(DatasetInfo.to_dict, lambda v: DatasetInfo.from_dict(_mapping(v))),
    "config": FieldCodec(RunConfig.to_dict, lambda v: RunConfig.from_dict(_mapping(v))),
    "environment": FieldCodec(plain, _mapping, required=False, default={}),
    "started": FieldCodec(datetime.isoformat, _moment),
    "finished": FieldCodec(datetime.isoformat, _moment),
    "end_to_end": FieldCodec(plain, _mapping, required=False, default={}, omit=lambda v: not v),
}
"""Every field of a Run but its samples and outcomes, in the order they are written."""

RECORD_FIELDS = ("samples", "outcomes")


_SAME: Mapping[str, str] = {}


def encode_fields(
    values: Mapping[str, Any], names: Sequence[str], *, keys: Mapping[str, str] = _SAME
) -> dict[str, Any]:
    """``values[name]`` encoded by :data:`RUN_FIELDS` for each name (omitted ones left out).

    ``keys`` renames fields in the output (the checkpoint writes ``id`` as ``run_id``).
    """
    out: dict[str, Any] = {}
    for name in names:
        codec, value = RUN_FIELDS[name], values[name]
        if codec.omit is None or not codec.omit(value):
            out[keys.get(name, name)] = codec.encode(value)
    return out


def decode_fields(
    data: Mapping[str, Any],
    names: Sequence[str],
    *,
    where: str,
    keys: Mapping[str, str] = _SAME,
) -> dict[str, Any]:
    """The named fields read from ``data`` (keys renamed as in :func:`encode_fields`).

    :class:`RunError` naming ``where`` and the field when one is missing or bad.
    """
    out: dict[str, Any] = {}
    for name in names:
        codec, key = RUN_FIELDS[name], keys.get(name, name)
        value = data.get(key)
        if value is None:
            if codec.required:
                raise RunError(f"{where}: field {key!r} is missing")
            out[name] = codec.default
            continue
        try:
            out[name] = codec.decode(value)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise RunError(f"{where}: field {key!r}: {_reason(exc)}") from None
    return out


def _reason(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"missing key {exc.args[0]!r}"
    return f"{type(exc).__name__}: {exc}"


def run_header(run: Run) -> dict[str, Any]:
    """A run's fields but its samples and outcomes (``schema_version`` and ``kind`` first)."""
    values = {name: getattr(run, name) for name in RUN_FIELDS}
    head = encode_fields(values, ["schema_version"]) | {"kind": RUN_KIND}
    return head | encode_fields(values, [n for n in RUN_FIELDS if n != "schema_version"])


def check_kind(data: Mapping[str, Any], *, where: str) -> None:
    """Refuse a file that is not a run file of the schema this shieldbench reads."""
    kind = data.get("kind", RUN_KIND)
    if kind != RUN_KIND:
        hint = " (render it with `shieldbench report`)" if kind == "shieldbench.attack" else ""
        raise RunError(f"{where}: a {kind!r} file, not a run file (runs/*.json){hint}")
    version = data.get("schema_version")
    if version != RUN_SCHEMA_VERSION:
        raise RunError(
            f"{where}: run schema_version {version!r} is not supported"
            f" (this shieldbench reads version {RUN_SCHEMA_VERSION})"
        )


def run_from_header(
    head: Mapping[str, Any],
    *,
    samples: Sequence[Sample],
    outcomes: Sequence[Outcome],
    where: str,
) -> Run:
    """The Run that ``head`` (from :func:`run_header`) describes, over these records."""
    check_kind(head, where=where)
    values = decode_fields(head, list(RUN_FIELDS), where=where)
    try:
        return Run(samples=samples, outcomes=outcomes, **values)
    except (TypeError, ValueError) as exc:
        raise RunError(f"{where}: not a valid run ({exc})") from None


class _Decodable(Protocol):
    @classmethod
    def from_dict(cls: type[T], data: Mapping[str, Any]) -> T: ...


T = TypeVar("T", bound=_Decodable)


def decode_record(cls: type[T], data: Any, *, where: str) -> T:
    """``cls.from_dict(data)``, a bad field a :class:`RunError` naming ``where`` and it."""
    if not isinstance(data, Mapping):
        raise RunError(f"{where}: expected an object, got {type(data).__name__}")
    try:
        return cls.from_dict(data)
    except KeyError as exc:
        raise RunError(f"{where}: field {exc.args[0]!r} is missing") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise RunError(f"{where}: {type(exc).__name__}: {exc}") from None


def decode_records(cls: type[T], items: Any, *, where: str) -> tuple[T, ...]:
    """Each item of a list through :func:`decode_record` (``where[i]`` in errors)."""
    if not isinstance(items, list | tuple):
        raise RunError(f"{where}: expected a list, got {type(items).__name__}")
    return tuple(decode_record(cls, item, where=f"{where}[{i}]") for i, item in enumerate(items))
