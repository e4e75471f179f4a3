"""Every run format gives back every field of every record (issue 30, defect 5).

``Run.__eq__`` cannot see the ``compare=False`` fields (metadata, details,
end-to-end records, environment), so equality is checked on :func:`deep`: every
dataclass field, recursively, read with :func:`dataclasses.fields` and not through
the codec under test, so a field the codec forgets shows up as a difference. The
records' ``to_dict()`` forms are compared too.
"""

from __future__ import annotations

import dataclasses
import itertools
import tempfile
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shieldbench.engine._checkpoint import CheckpointHeader, CheckpointWriter, read_checkpoint
from shieldbench.runfiles import ColumnBuilder, outcome_columns, outcomes_from, plain
from shieldbench.runio import load_run, run_from_dict, run_to_dict, save_run
from shieldbench.store import Store, open_store
from shieldbench.types import (
    DatasetInfo,
    DefenseInfo,
    Outcome,
    Run,
    RunConfig,
    Sample,
    Verdict,
)


def deep(value: Any) -> Any:
    """Every field of a record, recursively, as plain values (independent of any codec)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: deep(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {k: deep(v) for k, v in value.items()}
    if isinstance(value, str | bytes):
        return value
    if isinstance(value, datetime):
        return ("datetime", value.isoformat())
    if hasattr(value, "__iter__"):
        return [deep(v) for v in value]
    return value


# Text as a user's data has it: any code point but lone surrogates (Arrow stores UTF-8).
text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
name = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=8)
finite = st.floats(allow_nan=False, allow_infinity=False)
scalar = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | finite | text
json_value = st.recursive(
    scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
json_object = st.dictionaries(text, json_value, max_size=4)
moment = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.sampled_from(
        [UTC, timezone(timedelta(hours=5, minutes=30))]
    )
)  # fmt: skip
messages = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["system", "user", "assistant", "tool"]), "content": text}
    ),
    min_size=1,
    max_size=3,
)


@st.composite
def samples(draw: st.DrawFn, sample_id: str) -> Sample:
    return Sample(
        id=sample_id,
        text=draw(text),
        label=draw(st.sampled_from(["attack", "benign"])),
        category=draw(name),
        subcategory=draw(st.none() | text),
        severity=draw(st.none() | st.sampled_from(["low", "medium", "high", "critical"])),
        tier=draw(st.none() | st.sampled_from(["known", "paraphrased", "novel"])),
        source=draw(st.none() | text),
        metadata=draw(json_object),
        messages=draw(st.none() | messages),
    )


@st.composite
def outcomes(draw: st.DrawFn, sample_id: str) -> Outcome:
    status = draw(st.sampled_from(["ok", "ok", "error", "timeout"]))
    verdict = None
    if status == "ok":
        verdict = Verdict(
            blocked=draw(st.booleans()),
            score=draw(st.none() | finite),
            label=draw(st.none() | text),
            reasons=tuple(draw(st.lists(text, max_size=3))),
            details=draw(json_object),
        )
    return Outcome(
        sample_id=sample_id,
        verdict=verdict,
        status=status,
        error=None if status == "ok" else draw(text),
        latency_ms=draw(st.none() | st.floats(0, 1e6)),
        attempts=draw(st.integers(1, 2**40)),
        end_to_end=draw(st.none() | json_object),
    )


@st.composite
def runs(draw: st.DrawFn) -> Run:
    ids = draw(st.lists(name, unique=True, max_size=6))
    config = RunConfig(
        error_policy=draw(st.sampled_from(["fail_closed", "fail_open", "exclude"])),
        timeout_s=draw(st.none() | st.floats(0.001, 1e4)),
        batch_size=draw(st.integers(1, 512)),
    )
    end_to_end = draw(st.just({}) | json_object)
    return Run(
        id=draw(name),
        defense=DefenseInfo(draw(name), draw(name), draw(st.none() | text)),
        dataset=DatasetInfo(
            draw(name),
            draw(name),
            len(ids),
            tuple(draw(st.lists(st.tuples(text, text), max_size=2))),
        ),
        config=config,
        samples=tuple(draw(samples(i)) for i in ids),
        outcomes=tuple(draw(outcomes(i)) for i in ids),
        started=draw(moment),
        finished=draw(moment),
        environment=draw(st.dictionaries(text, text, max_size=3)),
        end_to_end=end_to_end,
    )


def _same(back: Run, run: Run) -> None:
    assert deep(back) == deep(run)
    assert [plain(s.to_dict()) for s in back.samples] == [plain(s.to_dict()) for s in run.samples]
    assert [plain(o.to_dict()) for o in back.outcomes] == [plain(o.to_dict()) for o in run.outcomes]
    assert plain(run_to_dict(back)) == plain(run_to_dict(run))


_TMP = Path(tempfile.mkdtemp(prefix="shieldbench-roundtrip-"))
_names = itertools.count()
_FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_FAST
@given(runs())
def test_json_run_files_keep_every_field(run: Run) -> None:
    path = save_run(run, _TMP / f"{next(_names)}.json")
    _same(load_run(path), run)
    _same(run_from_dict(run_to_dict(run)), run)


@_FAST
@given(runs())
def test_parquet_run_files_keep_every_field(run: Run) -> None:
    path = save_run(run, _TMP / f"{next(_names)}.parquet")
    back = load_run(path)
    _same(back, run)
    # a columnar run written again (Arrow slices, not records) loses nothing either
    again = load_run(save_run(back, _TMP / f"{next(_names)}.parquet"))
    _same(again, run)


@_FAST
@given(runs())
def test_the_checkpoint_keeps_every_field(run: Run) -> None:
    path = _TMP / f"{next(_names)}.jsonl"
    header = CheckpointHeader(run.id, run.defense, run.dataset, run.config, run.started)
    writer = CheckpointWriter.create(path, header)
    for outcome in reversed(run.outcomes):  # completion order, not dataset order
        writer.add(outcome)
    writer.close()
    restored = read_checkpoint(path, sample_ids={s.id for s in run.samples})
    assert deep(restored.header) == deep(header)
    assert deep([restored.outcomes[o.sample_id] for o in run.outcomes]) == deep(run.outcomes)


@_FAST
@given(runs(), st.integers(1, 4))
def test_columnar_outcomes_keep_every_field(run: Run, chunk: int) -> None:
    builder = ColumnBuilder(outcome_columns, outcomes_from, chunk=chunk)
    builder.extend(run.outcomes)
    assert deep(builder.finish()) == deep(run.outcomes)


@pytest.fixture(scope="module")
def history() -> Iterator[Store]:
    store = open_store(str(_TMP / "history.db"))
    yield store
    store.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(run=runs())
def test_the_history_store_keeps_every_field(history: Store, run: Run) -> None:
    stored = dataclasses.replace(run, id=f"r{next(_names)}")
    history.add_run(stored, source="test", git=(None, None))
    _same(history.get_run(stored.id), stored)
