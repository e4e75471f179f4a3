"""Stored records checked where the viewer loads them: a clear 422, never a 500.

A user may edit the history by hand (``sqlite3``, a script) or a disk may damage it:
a count becomes a string, a rate NaN or 7, an object a list, a key goes missing.
The store gives back what is stored; this module decides, at the viewer's edge,
whether it is a record the pages can show, and otherwise says which record and which
field is at fault, in words, as :class:`~shieldbench.view._pages.Unreadable` (a 422
page) or, on a list page, as a reason to skip that record and say so:

- a run's listed figures (:func:`info_problem`: counts, rates in [0, 1], latencies,
  specs, times, tags, its ``extra``), cheap enough for every row of a list;
- a rebuilt run (:func:`run_problem`: every outcome's status, verdict, score,
  latency, attempts, reasons, details; the environment), before a report reads it;
- one outcome of the sample table (:func:`outcome_problem`);
- a mutator search's document (:func:`check_mutator`), field by field against
  :class:`~shieldbench.attacks.AttackResult`'s types (see :mod:`._typed`).

When the store itself cannot rebuild a run (a config that is not one, an ``extra``
that is a list, a score that is a text in the sample table's columns),
:func:`reading` catches the failure and :func:`diagnose` reads the run's stored
columns as they are (plain SQL, read-only) to name the field at fault.
"""

from __future__ import annotations

import json
import math
import typing
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import text

from shieldbench.attacks import AttackResult
from shieldbench.errors import StoreError
from shieldbench.store import RunInfo, Store, StoredOutcome
from shieldbench.types import Outcome, Run, RunConfig, Sample
from shieldbench.view._pages import Unreadable
from shieldbench.view._typed import Malformed, check, check_number

__all__ = [
    "FAILURES",
    "StoredExtra",
    "check_mutator",
    "checked_info",
    "checked_run",
    "damaged_runs",
    "diagnose",
    "info_problem",
    "json_value",
    "outcome_problem",
    "reading",
    "run_problem",
]

# What a failing reader raises on a malformed record (a bug elsewhere raises others).
FAILURES = (ValueError, TypeError, KeyError, AttributeError, IndexError, ArithmeticError)
_STATUSES = ("ok", "error", "timeout")
_POLICY = typing.get_type_hints(RunConfig)["error_policy"]


@dataclass(frozen=True, slots=True)
class StoredExtra:
    """What a run row's ``extra`` JSON holds (``read_run`` rebuilds the run from it)."""

    started: datetime
    finished: datetime
    schema_version: int = 1
    dataset_sources: tuple[tuple[str, str], ...] = ()
    counts: Mapping[str, int] = field(default_factory=dict)
    end_to_end: Mapping[str, Any] | None = None


def _optional_text(value: Any, where: str) -> None:
    if value is not None and not isinstance(value, str):
        raise Malformed(where, f"is {value!r}, not a text")


def _info(info: RunInfo) -> None:
    for name in ("n_samples", "n_attack", "n_benign", "n_errors"):
        check(getattr(info, name), int, name)
    for name in ("source", "defense_spec", "defense_name", "dataset_spec", "dataset_hash"):
        check(getattr(info, name), str, name)
    check(info.error_policy, _POLICY, "error_policy")
    for name in ("defense_version", "git_commit", "git_branch"):
        _optional_text(getattr(info, name), name)
    for name in ("started", "finished", "recorded"):
        check(getattr(info, name), datetime, name)
    for triple, columns in (
        (info.block_rate, ("block_rate", "block_low", "block_high")),
        (info.fpr, ("fpr", "fpr_low", "fpr_high")),
    ):
        for value, column in zip(triple, columns, strict=True):
            if value is not None:
                check_number(value, column, low=0.0)
                if value > 1.0:
                    raise Malformed(column, f"is {value!r}, a rate above 1")
    for value, column in zip(
        (info.p50_ms, *info.p95_ms), ("p50_ms", "p95_ms", "p95_low", "p95_high"), strict=True
    ):
        if value is not None:
            check_number(value, column, low=0.0)
    check(info.tags, Mapping[str, str], "tags")
    check(info.extra, StoredExtra, "extra")


def info_problem(info: RunInfo) -> str | None:
    """What is wrong with a listed run's stored figures, naming the run and the field;
    ``None`` when it is a run the pages can show."""
    try:
        _info(info)
    except Malformed as error:
        return f"run {info.id!r}: stored {error}"
    return None


def _outcome(o: Outcome, where: str) -> None:
    """One rebuilt outcome (plain ``isinstance`` checks: a run has 100,000 of them)."""
    if o.status not in _STATUSES:
        raise Malformed(f"{where}.status", f"is {o.status!r}, not one of {', '.join(_STATUSES)}")
    if o.latency_ms is not None:
        check_number(o.latency_ms, f"{where}.latency_ms", low=0.0)
    if type(o.attempts) is not int or o.attempts < 0:
        check(o.attempts, int, f"{where}.attempts")
    _optional_text(o.error, f"{where}.error")
    stored: Any = o.end_to_end  # as stored: the types say what it should be
    if stored is not None and not isinstance(stored, Mapping):
        check(stored, Mapping[str, Any], f"{where}.end_to_end")
    v = o.verdict
    if v is not None:
        if v.score is not None:
            check_number(v.score, f"{where}.score")
        _optional_text(v.label, f"{where}.verdict_label")
        if not all(type(r) is str for r in v.reasons):
            check(v.reasons, tuple[str, ...], f"{where}.reasons")
        details: Any = v.details
        if not isinstance(details, Mapping):  # JSON: its keys are texts
            check(details, Mapping[str, Any], f"{where}.details")


def _sample(sample: Sample, where: str) -> None:
    """One rebuilt sample (plain ``isinstance`` checks, as :func:`_outcome`)."""
    for name, hint in _SAMPLE_FIELDS:
        value: Any = getattr(sample, name)
        if not (hint is str and type(value) is str):  # the common case, quickly
            check(value, hint, f"{where}.{name}")


def run_problem(run: Run) -> str | None:
    """What is wrong with a rebuilt run (its environment, every outcome), naming the
    run and the field; ``None`` when a report can read it."""
    try:
        check(run.environment, Mapping[str, str], "environment")
        check(run.config, RunConfig, "config")
        for i, o in enumerate(run.outcomes):
            _outcome(o, f"outcomes[{i}]")
        for i, sample in enumerate(run.samples):
            _sample(sample, f"samples[{i}]")
    except Malformed as error:
        return f"run {run.id!r}: stored {error}"
    return None


def checked_run(store: Store, run_id: str) -> Run:
    """The stored run ``run_id`` rebuilt and checked (:func:`run_problem`);
    :class:`Unreadable` naming the run and the field when it is not one."""
    with reading(store, run_id):
        run = store.get_run(run_id)
    problem = run_problem(run)
    if problem is not None:
        raise Unreadable(problem)
    return run


def checked_info(store: Store, ref: str) -> RunInfo:
    """The listed record of the run ``ref`` names, checked (:func:`info_problem`)."""
    with reading(store, ref):
        info = store.info(ref)
    problem = info_problem(info)
    if problem is not None:
        raise Unreadable(problem)
    return info


def outcome_problem(run_id: str, o: StoredOutcome) -> str | None:
    """What is wrong with one outcome of the sample table, naming the run, the sample's
    position and the field; ``None`` when the table can show it."""
    where = f"outcomes[{o.position}]"
    try:
        if o.label not in ("attack", "benign"):
            raise Malformed(f"samples[{o.position}].label", f"is {o.label!r}")
        check(o.metadata, Mapping[str, Any], f"samples[{o.position}].metadata")
        if o.blocked is not None and not isinstance(o.blocked, bool):
            raise Malformed(f"{where}.blocked", f"is {o.blocked!r}, not true or false")
        if o.status not in _STATUSES:
            raise Malformed(f"{where}.status", f"is {o.status!r}, not one of {_STATUSES}")
        for name in ("score", "latency_ms"):
            value = getattr(o, name)
            if value is not None:
                check_number(value, f"{where}.{name}", low=0.0 if name == "latency_ms" else None)
        check(o.attempts, int, f"{where}.attempts")
        for name in ("verdict_label", "error"):
            _optional_text(getattr(o, name), f"{where}.{name}")
        for name in ("subcategory", "severity", "tier", "source"):
            _optional_text(getattr(o, name), f"samples[{o.position}].{name}")
        check(o.reasons, tuple[str, ...], f"{where}.reasons")
        check(o.details, Mapping[str, Any], f"{where}.details")
        if o.end_to_end is not None:
            check(o.end_to_end, Mapping[str, Any], f"{where}.end_to_end")
    except Malformed as error:
        return f"run {run_id!r}: stored {error}"
    return None


def check_mutator(document: Mapping[str, Any], attack_id: str) -> None:
    """:class:`Unreadable` naming the attack and the field when ``document`` is not a
    mutator search's record (every field, against the types it rebuilds)."""
    try:
        check(document, AttackResult, "")
    except Malformed as error:
        raise Unreadable(f"attack {attack_id!r}: malformed record: {error}") from None


# -- a record the store cannot rebuild -----------------------------------------------

_RUN_COLUMNS = "pk, run_id, sample_set, config, environment, extra, started, finished, recorded"
_RUN_SQL = text(
    f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = :id ORDER BY started DESC, pk DESC LIMIT 1"
)
_ALL_RUNS_SQL = text(f"SELECT {_RUN_COLUMNS} FROM runs ORDER BY pk")
_OUTCOME_SQL = text(
    "SELECT position, status, blocked, score, latency_ms, attempts, verdict_label,"
    " reasons, details, error, end_to_end FROM outcomes WHERE run_pk = :pk ORDER BY position"
)
_SAMPLE_SQL = text(
    "SELECT position, record FROM sample_rows WHERE digest = :digest ORDER BY position"
)
# A stored sample is the JSON list of these fields, in this order (``messages`` may
# be absent; ``metadata`` null for none): checked against ``Sample``'s own types.
_SAMPLE_HINTS = typing.get_type_hints(Sample)
_SAMPLE_FIELDS = tuple(
    (name, _SAMPLE_HINTS[name] | None if name == "metadata" else _SAMPLE_HINTS[name])
    for name in (
        "id", "text", "label", "category", "subcategory", "severity", "tier", "source",
        "metadata", "messages",
    )
)  # fmt: skip
_SAMPLE_REQUIRED = 9  # every field but ``messages``
_JSON_COLUMNS = frozenset({"config", "environment", "extra", "reasons", "details", "end_to_end"})


def json_value(value: Any, where: str) -> Any:
    """A JSON column's value as stored: SQLite gives the text back (decoded here;
    :class:`Malformed` when it is not JSON), PostgreSQL the value."""
    if not isinstance(value, str | bytes):
        return value  # PostgreSQL gives JSON back decoded
    try:
        return json.loads(value)
    except ValueError:
        raise Malformed(where, "is not JSON") from None


def _raw_run(row: Mapping[Any, Any]) -> None:
    for name in ("started", "finished", "recorded"):
        check(row[name], datetime, name)
    config = json_value(row["config"], "config")
    check(config, RunConfig, "config")
    try:
        RunConfig(**config)
    except (TypeError, ValueError) as error:
        raise Malformed("config", f"is not a run configuration ({error})") from None
    check(json_value(row["environment"], "environment"), Mapping[str, str], "environment")
    check(json_value(row["extra"], "extra"), StoredExtra, "extra")


def _raw_outcome(row: Mapping[Any, Any]) -> None:
    where = f"outcomes[{row['position']}]"
    values = {k: json_value(v, f"{where}.{k}") if k in _JSON_COLUMNS else v for k, v in row.items()}
    if values["status"] not in _STATUSES:
        raise Malformed(f"{where}.status", f"is {values['status']!r}, not one of {_STATUSES}")
    if values["blocked"] not in (None, True, False, 0, 1):
        raise Malformed(f"{where}.blocked", f"is {values['blocked']!r}, not true or false")
    for name, low in (("score", None), ("latency_ms", 0.0)):
        if values[name] is not None:
            check_number(values[name], f"{where}.{name}", low=low)
        if isinstance(values[name], float) and math.isnan(values[name]):
            raise Malformed(f"{where}.{name}", "is NaN")
    check(values["attempts"], int, f"{where}.attempts")
    for name in ("verdict_label", "error"):
        _optional_text(values[name], f"{where}.{name}")
    if values["reasons"] is not None:
        check(values["reasons"], tuple[str, ...], f"{where}.reasons")
    for name in ("details", "end_to_end"):
        if values[name] is not None:
            check(values[name], Mapping[str, Any], f"{where}.{name}")


def _raw_sample(position: int, record: Any) -> None:
    """One stored sample: its JSON field list (see ``shieldbench.store``'s sample sets)."""
    where = f"samples[{position}]"
    fields = json_value(record, where)
    if not isinstance(fields, list) or len(fields) < _SAMPLE_REQUIRED:
        raise Malformed(where, f"is {str(fields)[:60]!r}, not a list of a sample's fields")
    for (name, hint), value in zip(_SAMPLE_FIELDS, fields, strict=False):
        check(value, hint, f"{where}.{name}")


def diagnose(store: Store, run_id: str) -> str | None:
    """Read the run's stored columns as they are and name the first field that is not
    what the store rebuilds a run from; ``None`` when none is found."""
    try:
        with store.connection() as conn:
            run = conn.execute(_RUN_SQL, {"id": run_id}).mappings().first()
            if run is None:
                return None
            _raw_run(run)
            for row in conn.execute(_OUTCOME_SQL, {"pk": run["pk"]}).mappings():
                _raw_outcome(row)
            for position, record in conn.execute(_SAMPLE_SQL, {"digest": run["sample_set"]}):
                _raw_sample(position, record)
    except Malformed as error:
        return f"run {run_id!r}: stored {error}"
    return None


def damaged_runs(store: Store) -> list[dict[str, str]]:
    """Every run row whose stored columns the store cannot rebuild a listed run from
    (JSON that is not JSON or not the object it should be, a time that is not one), as
    ``{"id", "reason"}``: what a list page names when it had to read around them."""
    found = []
    with store.connection() as conn:
        for row in conn.execute(_ALL_RUNS_SQL).mappings():
            try:
                _raw_run(row)
            except Malformed as error:
                reason = f"run {row['run_id']!r}: stored {error}"
                found.append({"id": str(row["run_id"]), "reason": reason})
    return found


@contextmanager
def reading(store: Store, run_id: str) -> Iterator[None]:
    """Run the block that reads run ``run_id``; when a reader fails on its record,
    :class:`Unreadable` naming the run and (from :func:`diagnose`) the field."""
    try:
        yield
    except (Unreadable, StoreError):
        raise
    except FAILURES as error:
        found = diagnose(store, run_id)
        if found is None:
            found = (
                f"run {run_id!r}: the stored record cannot be read"
                f" ({type(error).__name__}: {error})"
            )
        raise Unreadable(found) from None
