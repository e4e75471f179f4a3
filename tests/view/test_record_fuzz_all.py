"""Every stored record the viewer reads, however damaged, gets an answer: never a 500.

``test_attack_records_fuzz.py`` damages LLM-attack records; this file damages the
other kinds, the way a user editing the history by hand would:

- a MUTATOR attack record (the real one ``conftest.py`` stores with the CLI): one
  field anywhere replaced (a string for a count, a negative count, NaN, infinity, a
  list for an object, markup) or removed, stored through :meth:`Store.add_attack`;
- a RUN's row (its headline figures, counts, specs, times, its config / environment /
  extra JSON) and one of its OUTCOME rows, edited in place with SQL, as a user with
  ``sqlite3`` would.

Each damaged record is asked for on every route that renders it, on the real viewer
on 127.0.0.1. The contract: a record the viewer can show renders (200); one it
cannot answers a 4xx page naming the record (run id / attack id) and the field at
fault; no text of the record ever reaches the page unescaped; and the list pages
(``/runs``, ``/api/runs``, ``/attacks``, ``/trend``) still answer 200 and list every
good record beside it, the bad one listed or named as skipped with its reason.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shieldbench.errors import StoreError
from shieldbench.store import Store

from ._record_edits import (
    FUZZ,
    HOSTILE,
    IDS,
    answered,
    damage,
    drop,
    edit,
    fresh_run,
    no_raw_markup,
    pages_of,
    served,
)
from .conftest import Server

__all__ = ["served"]  # the fixture, imported for pytest to find

pytestmark = pytest.mark.slow


# -- mutator attack records -----------------------------------------------------------

VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([-1, -(2**40), 2**62, math.nan, math.inf, -math.inf, 1e308]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=4),
    st.lists(st.integers(0, 2), max_size=2),
    st.dictionaries(st.sampled_from(["k", "n", "value"]), st.integers(0, 2), max_size=2),
    st.just(HOSTILE),
    st.just("2026-13-45T99:00:00"),
)


def _field_names(path: tuple[Any, ...]) -> tuple[str, ...]:
    """What an error about ``path`` may call it: its string keys, nearest first."""
    return tuple(str(p) for p in reversed(path) if isinstance(p, str))


@FUZZ
@given(data=st.data())
def test_a_damaged_mutator_record_gets_a_page_naming_it_never_a_500(
    data: st.DataObject, served: tuple[Store, Server, dict[str, Any]]
) -> None:
    store, server, records = served
    doc = copy.deepcopy(records["mutator"])
    attack_id = f"mutator-{next(IDS)}"
    doc["meta"]["id"] = attack_id
    path, _ = damage(doc, data, VALUES)
    try:
        store.add_attack(doc)
    except StoreError:
        # the store refuses it (no id, no start, a figure its columns cannot hold, a
        # NaN): it never reaches the viewer
        return
    fields = _field_names(path) or ("kind",)
    with server.client() as client:
        page = client.get(f"/attacks/{attack_id}")
        answered(page, f"attack '{attack_id}'", fields)
        bypass = client.get(f"/attacks/{attack_id}/bypasses/0")
        answered(bypass, f"attack '{attack_id}'", fields)
        listing = client.get("/attacks")
        assert listing.status_code == 200, listing.text[-1500:]
        no_raw_markup(listing)
        assert 'href="/attacks/good-attack"' in listing.text
        assert f'href="/attacks/{attack_id}"' in listing.text


# -- run rows and outcome rows --------------------------------------------------------

NUMBERS = st.sampled_from([-1, -7, 2.5, 1e308, math.inf, -math.inf, "abc", HOSTILE, "", "12"])
JSON_TEXTS = st.sampled_from(
    [
        "[]",
        "[1, 2]",
        '"text"',
        "5",
        "null",
        "{}",
        '{"a": "' + HOSTILE.replace('"', '\\"') + '"}',
        '{"started": 5, "finished": "x"}',
        '{"error_policy": "sometimes", "concurrency": "many"}',
        '{"timeout_s": -3}',
        '{"judges": [1, 2], "answer": 5}',
        '{"started": "2026-01-01T00:00:00", "finished": "soon", "counts": {"tp": -1}}',
        '{"x": NaN}',
        "not json",
        "{",
    ]
)
TEXTS = st.sampled_from([HOSTILE, "", "x" * 300, 5, -1, "ok", "weird"])
TIMES = st.sampled_from(
    ["2026-01-01 00:00:00", "1970-01-01 00:00:00.000000", "3000-01-01", "yesterday", 5, ""]
)
RUN_COLUMNS: dict[str, st.SearchStrategy[Any]] = {
    **dict.fromkeys(
        (
            "n_samples",
            "n_attack",
            "n_benign",
            "n_errors",
            "block_rate",
            "block_low",
            "block_high",
            "fpr",
            "fpr_low",
            "fpr_high",
            "p50_ms",
            "p95_ms",
            "p95_low",
            "p95_high",
        ),
        NUMBERS,
    ),
    **dict.fromkeys(("config", "environment", "extra"), JSON_TEXTS),
    **dict.fromkeys(
        (
            "source",
            "defense_spec",
            "defense_name",
            "defense_version",
            "dataset_spec",
            "error_policy",
            "git_commit",
            "git_branch",
        ),
        TEXTS,
    ),
    **dict.fromkeys(("started", "finished", "recorded"), TIMES),
}
OUTCOME_COLUMNS: dict[str, st.SearchStrategy[Any]] = {
    **dict.fromkeys(("score", "latency_ms", "attempts", "blocked"), NUMBERS),
    **dict.fromkeys(("reasons", "details", "end_to_end"), JSON_TEXTS),
    **dict.fromkeys(("status", "verdict_label", "error"), TEXTS),
}


@FUZZ
@given(data=st.data())
def test_a_hand_edited_run_row_gets_an_answer_naming_it_never_a_500(
    data: st.DataObject, served: tuple[Store, Server, dict[str, Any]]
) -> None:
    store, server, records = served
    run_id = fresh_run(store, records["run"])
    column = data.draw(st.sampled_from(sorted(RUN_COLUMNS)), label="column")
    value = data.draw(RUN_COLUMNS[column], label="value")
    sql = f"UPDATE runs SET {column} = :v WHERE run_id = :id"
    try:
        if edit(store, sql, {"v": value, "id": run_id}):
            with server.client() as client:
                pages_of(client, run_id, records["run"].dataset.content_hash, (column,))
    finally:
        drop(store, run_id)


@FUZZ
@given(data=st.data())
def test_a_hand_edited_outcome_row_gets_an_answer_naming_it_never_a_500(
    data: st.DataObject, served: tuple[Store, Server, dict[str, Any]]
) -> None:
    store, server, records = served
    run_id = fresh_run(store, records["run"])
    column = data.draw(st.sampled_from(sorted(OUTCOME_COLUMNS)), label="column")
    value = data.draw(OUTCOME_COLUMNS[column], label="value")
    position = data.draw(st.integers(0, len(records["run"].samples) - 1), label="position")
    sql = (
        f"UPDATE outcomes SET {column} = :v WHERE position = :p"
        " AND run_pk = (SELECT pk FROM runs WHERE run_id = :id)"
    )
    try:
        if edit(store, sql, {"v": value, "p": position, "id": run_id}):
            with server.client() as client:
                pages_of(client, run_id, records["run"].dataset.content_hash, (column,))
    finally:
        drop(store, run_id)
