"""Damaged records of two more kinds, and rows the store itself cannot read.

- A run's SAMPLES (stored once per distinct list, one JSON field list per sample):
  one field of one sample replaced, the record cut short or not JSON.
- A run row whose JSON is not JSON or whose start is not a time fails the store's
  query for the whole list: the lists read around it and name it.
- A NaN in an attack's document (JSON has none) makes the database's JSON functions
  refuse it, and with it the query that lists every attack.

The contract is ``test_record_fuzz_all.py``'s: a page or a 4xx naming the record and
the field, never a 500; the lists show every good record.
"""

from __future__ import annotations

import copy
import dataclasses
import html
import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import text

from shieldbench.alerts import Alert
from shieldbench.store import Store, open_store

from ._record_edits import FUZZ, HOSTILE, IDS, drop, edit, fresh_run, pages_of, served
from .conftest import History, Server

__all__ = ["served"]  # the fixture, imported for pytest to find

pytestmark = pytest.mark.slow


SAMPLE_VALUES = st.sampled_from(
    [None, 5, -1, 2.5, "", "maybe", HOSTILE, [1], {"a": 1}, True, "attack", "benign"]
)


@FUZZ
@given(data=st.data())
def test_a_hand_edited_sample_record_gets_an_answer_naming_it_never_a_500(
    data: st.DataObject, served: tuple[Store, Server, dict[str, Any]]
) -> None:
    """A run's samples are stored once per distinct list (``sample_rows``, one JSON
    field list per sample): one field of one sample replaced, or the record made a
    short list or not JSON. The run gets its own samples (their texts marked), so the
    edit touches no other run."""
    store, server, records = served
    run = records["run"]
    n = next(IDS)
    own = [dataclasses.replace(x, text=f"{x.text} #{n}") for x in run.samples]
    run_id = f"run-{n}"
    store.add_run(dataclasses.replace(run, id=run_id, samples=own), git=(None, None))
    position = data.draw(st.integers(0, len(own) - 1), label="position")
    with store.connection() as conn:
        stored = conn.execute(
            text(
                "SELECT record FROM sample_rows WHERE position = :p AND digest ="
                " (SELECT sample_set FROM runs WHERE run_id = :id)"
            ),
            {"p": position, "id": run_id},
        ).scalar_one()
    fields = json.loads(stored)
    index = data.draw(st.integers(0, len(fields) - 1), label="index")
    how = data.draw(st.sampled_from(["replace", "truncate", "not json"]), label="how")
    if how == "replace":
        fields[index] = data.draw(SAMPLE_VALUES, label="value")
        record = json.dumps(fields)
    else:
        record = json.dumps(fields[:index]) if how == "truncate" else "[not json"
    sql = (
        "UPDATE sample_rows SET record = :v WHERE position = :p"
        " AND digest = (SELECT sample_set FROM runs WHERE run_id = :id)"
    )
    try:
        if edit(store, sql, {"v": record, "p": position, "id": run_id}):
            with server.client() as client:
                fields = ("samples[", "sample ids", "sample '")  # or as the comparison says
                pages_of(client, run_id, run.dataset.content_hash, fields)
    finally:
        drop(store, run_id)


# -- rows the store itself cannot read --------------------------------------------------


@pytest.mark.parametrize(
    ("column", "value"),
    [("extra", "not json"), ("started", "yesterday"), ("config", "{"), ("environment", "[1]")],
)
def test_a_row_the_store_cannot_read_is_named_and_read_around(
    served: tuple[Store, Server, dict[str, Any]], column: str, value: str
) -> None:
    """JSON that is not JSON or a time that is not one fails the store's query for the
    whole list: the lists are read around that row, name it, and show the rest."""
    store, server, records = served
    run_id = fresh_run(store, records["run"])
    sql = f"UPDATE runs SET {column} = :v WHERE run_id = :id"
    try:
        assert edit(store, sql, {"v": value, "id": run_id})
        with server.client() as client:
            page = client.get(f"/runs/{run_id}")
            assert page.status_code == 422
            assert f"run &#39;{run_id}&#39;: stored field {column}" in page.text
            unreadable = column != "environment"  # JSON, but not the object it should be
            api = client.get(f"/api/runs/{run_id}/samples")  # reads no environment
            assert api.status_code == (422 if unreadable else 200)
            if unreadable:
                message = api.json()["message"]
                assert message.startswith(f"run '{run_id}': stored field {column}")
            listing = client.get("/runs")
            assert listing.status_code == 200
            assert 'href="/runs/good-a"' in listing.text
            assert 'href="/runs/good-b"' in listing.text
            named = f"run &#39;{run_id}&#39;: stored field {column}" in listing.text
            assert named == unreadable
            skipped = {s["id"] for s in client.get("/api/runs").json()["skipped"]}
            assert (run_id in skipped) == unreadable
            versions = client.get("/trend")
            assert versions.status_code == 200
            assert records["run"].dataset.content_hash in versions.text
    finally:
        drop(store, run_id)


def test_a_nan_in_an_attack_record_does_not_hide_the_attack_list(
    served: tuple[Store, Server, dict[str, Any]],
) -> None:
    """JSON has no NaN: a database's JSON functions refuse the document, and with it the
    query that lists every attack. The list reads each record on its own instead. (The
    store refuses a NaN; this one is written by hand, as ``sqlite3`` would.)"""
    store, server, records = served
    doc = copy.deepcopy(records["mutator"])
    doc["meta"]["id"] = "nan-attack"
    store.add_attack(doc)
    doc["figures"]["adaptive_asr"]["ci_high"] = math.nan
    with store.connection(write=True) as conn:
        conn.execute(
            text("UPDATE attacks SET document = :doc WHERE attack_id = 'nan-attack'"),
            {"doc": json.dumps(doc)},  # the json module writes NaN unless told not to
        )
    try:
        with server.client() as client:
            listing = client.get("/attacks")
            assert listing.status_code == 200
            assert 'href="/attacks/good-attack"' in listing.text
            assert 'href="/attacks/nan-attack"' in listing.text
            page = client.get("/attacks/nan-attack")
            assert page.status_code == 422
            said = html.unescape(page.text)
            assert "attack 'nan-attack': malformed record: field figures.adaptive_asr" in said
    finally:
        with store.connection(write=True) as conn:
            conn.execute(text("DELETE FROM attacks WHERE attack_id = 'nan-attack'"))


ALERT_COLUMNS: dict[str, st.SearchStrategy[Any]] = {
    "severity": st.sampled_from(["", "apocalyptic", HOSTILE, 5, "critical"]),
    "key": st.sampled_from(["", HOSTILE, 7]),
    "created": st.sampled_from(["yesterday", "", 5, "2026-01-01 00:00:00"]),
    "details": st.sampled_from(["[]", "not json", "5", '{"a": [1]}', "null"]),
    "title": st.sampled_from([HOSTILE, 5, ""]),
    "source": st.sampled_from([HOSTILE, 5, ""]),
}


@FUZZ
@given(data=st.data())
def test_a_hand_edited_alert_row_hides_no_other_alert_and_no_run(
    data: st.DataObject, served: tuple[Store, Server, dict[str, Any]]
) -> None:
    """The trend page shows the alerts about its runs: one alert row edited in place
    leaves the page up, the good alert and the runs listed, the bad alert shown (its
    texts escaped) or named as left out with the field at fault."""
    store, server, records = served
    column = data.draw(st.sampled_from(sorted(ALERT_COLUMNS)), label="column")
    value = data.draw(ALERT_COLUMNS[column], label="value")
    n = next(IDS)
    good = store.add_alert(Alert(f"good-{n}", f"good alert {n}", "fine", run_id="good-a"))
    bad = store.add_alert(Alert(f"bad-{n}", f"bad alert {n}", "edited", run_id="good-b"))
    try:
        assert edit(
            store, f"UPDATE alerts SET {column} = :v WHERE pk = :pk", {"v": value, "pk": bad}
        )
        with server.client() as client:
            trend = client.get(f"/trend?dataset={records['run'].dataset.content_hash}")
            assert trend.status_code == 200, trend.text[-1500:]
            assert HOSTILE not in trend.text
            assert f"good alert {n}" in trend.text
            assert 'href="/runs/good-a"' in trend.text
            said = html.unescape(trend.text)
            shown = f"bad alert {n}" in said or str(value) in said
            named = f"alert #{bad}: stored field {column}" in said
            assert shown or named, (column, value)
    finally:
        with store.connection(write=True) as conn:
            conn.execute(text("DELETE FROM alerts WHERE pk IN (:a, :b)"), {"a": good, "b": bad})


ATTACK_COLUMNS: dict[str, st.SearchStrategy[Any]] = {
    "static_asr": st.sampled_from(["abc", 7, -1, HOSTILE]),
    "adaptive_asr": st.sampled_from(["abc", 7, math.inf]),
    "queries": st.sampled_from(["x", -3, HOSTILE]),
    "defense_spec": st.sampled_from([5, HOSTILE, ""]),
    "kind": st.sampled_from([5, HOSTILE, "shieldbench.llm_attack"]),
    "started": st.sampled_from(["yesterday", 5, "2026-01-01 00:00:00"]),
    "tags": st.sampled_from(["[1]", "not json", '{"a": 1}']),
    "document": st.sampled_from(["[]", "not json", '{"meta": 5}', "5", '{"x": NaN}']),
}


@FUZZ
@given(data=st.data())
def test_a_hand_edited_attack_row_gets_an_answer_naming_it_never_a_500(
    data: st.DataObject, served: tuple[Store, Server, dict[str, Any]]
) -> None:
    """The attacks table's own columns (the list reads them, and the document's few
    fields, in one query) edited in place: the list still lists every attack (or names
    the damaged one), the attack's pages answer or name it."""
    store, server, records = served
    column = data.draw(st.sampled_from(sorted(ATTACK_COLUMNS)), label="column")
    value = data.draw(ATTACK_COLUMNS[column], label="value")
    attack_id = f"row-{next(IDS)}"
    doc = copy.deepcopy(records["mutator"])
    doc["meta"]["id"] = attack_id
    store.add_attack(doc)
    sql = f"UPDATE attacks SET {column} = :v WHERE attack_id = :id"
    try:
        assert edit(store, sql, {"v": value, "id": attack_id})
        with server.client() as client:
            listing = client.get("/attacks")
            assert listing.status_code == 200, listing.text[-1500:]
            assert HOSTILE not in listing.text
            assert 'href="/attacks/good-attack"' in listing.text
            named = f"attack &#39;{attack_id}&#39;" in listing.text
            assert f'href="/attacks/{attack_id}"' in listing.text or named
            for url in (f"/attacks/{attack_id}", f"/attacks/{attack_id}/bypasses/0"):
                page = client.get(url)
                assert page.status_code in (200, 404, 422), (url, page.text[-1500:])
                assert HOSTILE not in page.text
                if page.status_code == 422:
                    said = html.unescape(page.text)
                    assert f"attack '{attack_id}'" in said, said[-1500:]
    finally:
        with store.connection(write=True) as conn:
            conn.execute(text("DELETE FROM attacks WHERE attack_id = :id"), {"id": attack_id})


PG_EDITS = [
    ("runs", "n_errors", "-1", "n_errors"),
    ("runs", "block_rate", "7", "block_rate"),
    ("runs", "extra", "CAST('[]' AS json)", "extra"),
    ("runs", "config", 'CAST(\'{"concurrency": "many"}\' AS json)', "config.concurrency"),
    ("outcomes", "details", "CAST('[1]' AS json)", "outcomes[2].details"),
    ("outcomes", "status", "'weird'", "outcomes[2].status"),
]


def test_damaged_records_on_postgresql_get_an_answer_naming_them(
    sqlite_history: History, postgres_server: Any
) -> None:
    """PostgreSQL keeps a column's type (no text in a number's column, JSON always
    JSON), but a hand edit still leaves a negative count, a rate of 7, JSON of the
    wrong shape, a status nobody writes: the same answers as on SQLite, through the
    same raw reads (which PostgreSQL answers decoded)."""
    with open_store(sqlite_history.url, read_only=True) as source:
        run = source.get_run(sqlite_history.base)
    store = open_store(postgres_server.create_database())
    try:
        for good in ("good-a", "good-b"):
            store.add_run(dataclasses.replace(run, id=good), git=(None, None))
        for i, (table, column, sql_value, _) in enumerate(PG_EDITS):
            run_id = f"pg-{i}"
            store.add_run(dataclasses.replace(run, id=run_id), git=(None, None))
            where = (
                "run_id = :id"
                if table == "runs"
                else "position = 2 AND run_pk = (SELECT pk FROM runs WHERE run_id = :id)"
            )
            assert edit(
                store, f"UPDATE {table} SET {column} = {sql_value} WHERE {where}", {"id": run_id}
            )
        server = Server(store)
        try:
            with server.client() as client:
                listing = client.get("/runs").text
                assert 'href="/runs/good-a"' in listing
                assert 'href="/runs/good-b"' in listing
                for i, (_, _, _, field) in enumerate(PG_EDITS):
                    page = client.get(f"/runs/pg-{i}")
                    assert page.status_code == 422, (field, page.text[-1500:])
                    said = html.unescape(page.text)
                    assert f"run 'pg-{i}': stored field {field}" in said, said[-1500:]
                    if i < 3:  # the list's own figures: skipped and named
                        assert f"run &#39;pg-{i}&#39;: stored field {field}" in listing
        finally:
            server.stop()
    finally:
        store.close()
