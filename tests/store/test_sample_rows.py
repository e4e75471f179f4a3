"""A run's samples are rows of ``sample_rows`` (revision 0005), on SQLite and PostgreSQL.

The set's digest must stay the sha256 of the whole JSON list (what it was when the
set was one document), so a run over samples stored before shares their set; a set
stored as one document before 0005 must still read back exactly.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from sqlalchemy import delete, func, select, update

from shieldbench.store import _samples, open_store
from shieldbench.store._models import SampleRow, SampleSetRow
from shieldbench.types import DatasetInfo, DefenseInfo, Outcome, Run, RunConfig, Sample, Verdict

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _run(n: int, run_id: str = "rows-1") -> Run:
    samples = tuple(
        Sample(
            f"s{i}",
            f"text {i} ✓" if i % 2 else f"ignore the rules {i}",
            "attack" if i % 3 == 0 else "benign",
            f"cat{i % 4}",
            metadata={"k": [i, None]} if i % 5 == 0 else {},
            messages=({"role": "user", "content": f"text {i} ✓"},) if i % 7 == 1 else None,
        )
        for i in range(n)
    )
    outcomes = tuple(
        Outcome(s.id, Verdict(i % 2 == 0, 0.5), "ok", latency_ms=1.0) for i, s in enumerate(samples)
    )
    info = DatasetInfo("inline", "sha256:0", n)
    return Run(run_id, DefenseInfo("x", "x"), info, RunConfig(), samples, outcomes, NOW, NOW)


def _whole_list_digest(samples: Sequence[Sample]) -> str:
    """The digest as computed before 0005: one json.dumps over every field list."""
    records = [
        [s.id, s.text, s.label, s.category, s.subcategory, s.severity, s.tier, s.source,
         s.metadata or None, None if s.messages is None else [dict(m) for m in s.messages]]
        for s in samples
    ]  # fmt: skip
    text = json.dumps(records, ensure_ascii=False, separators=(",", ":"), default=dict)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def test_samples_are_stored_as_rows_under_the_digest_of_the_whole_list(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_samples, "_ENCODE_CHUNK", 4)  # several blocks of rows
    run = _run(23)
    store = open_store(store_url)
    try:
        assert store.add_run(run, git=(None, None))
        with store.session() as s:
            digest, data = s.execute(select(SampleSetRow.digest, SampleSetRow.data)).one()
            assert data is None  # no document
            assert s.scalar(select(func.count()).select_from(SampleRow)) == 23
            positions = s.scalars(select(SampleRow.position).order_by(SampleRow.position))
            assert list(positions) == list(range(23))
        assert digest == _whole_list_digest(run.samples)
        assert digest == hashlib.sha256(_samples.sample_document(run.samples)).hexdigest()
        assert store.get_run("rows-1") == run
    finally:
        store.close()


def test_a_set_stored_as_one_document_still_reads_and_is_shared(store_url: str) -> None:
    run = _run(9)
    store = open_store(store_url)
    try:
        store.add_run(run, git=(None, None))
        with store.session() as s:  # make it what a store before 0005 holds
            s.execute(delete(SampleRow))
            document = _samples.sample_document(run.samples)
            s.execute(update(SampleSetRow).values(data=document))
            s.commit()
        assert store.get_run("rows-1") == run
        store.add_run(replace(run, id="rows-2"), git=(None, None))  # same samples: same set
        with store.session() as s:
            assert s.scalar(select(func.count()).select_from(SampleSetRow)) == 1
            assert s.scalar(select(func.count()).select_from(SampleRow)) == 0
        assert store.get_run("rows-2") == replace(run, id="rows-2")
    finally:
        store.close()
