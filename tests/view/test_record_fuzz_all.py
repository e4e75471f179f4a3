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
import dataclasses
import html
import itertools
import math
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError, StatementError

from shieldbench.errors import StoreError
from shieldbench.store import Store, open_store

from .conftest import History, Server

pytestmark = pytest.mark.slow

_ids = itertools.count()
HOSTILE = "<script>window.__pwned=1</script>"
FUZZ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _paths(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in ``value`` (a list's first two items only), leaves and branches."""
    if at:
        yield at
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*at, key))
    elif isinstance(value, list):
        for i, item in enumerate(value[:2]):
            yield from _paths(item, (*at, i))


@pytest.fixture(scope="module")
def served(
    sqlite_history: History, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Store, Server, dict[str, Any]]]:
    """A fresh history holding two good copies of the planted runs, served; and the
    mutator record of ``conftest.py`` to damage."""
    url = str(tmp_path_factory.mktemp("fuzz-all") / "history.db")
    with open_store(sqlite_history.url, read_only=True) as source:
        base = source.get_run(sqlite_history.base)
        mutator = source.get_attack(sqlite_history.attack)
    store = open_store(url)
    for good in ("good-a", "good-b"):
        store.add_run(dataclasses.replace(base, id=good), git=(None, None))
    good_attack = copy.deepcopy(mutator)
    good_attack["meta"]["id"] = "good-attack"
    store.add_attack(good_attack)
    server = Server(store)
    yield store, server, {"run": base, "mutator": mutator}
    server.stop()
    store.close()


def _no_raw_markup(response: httpx.Response) -> None:
    if response.headers.get("content-type", "").startswith("text/html"):
        assert HOSTILE not in response.text, response.url


def _answered(response: httpx.Response, record: str, fields: tuple[str, ...]) -> None:
    """A page (200) or a 4xx naming ``record`` and one of ``fields``; never a 5xx."""
    assert response.status_code < 500, (response.url, response.text[-1500:])
    assert response.status_code == 200 or 400 <= response.status_code < 500
    _no_raw_markup(response)
    if response.status_code in (400, 422):
        if response.url.path.startswith("/api/"):  # a JSON route answers JSON
            said = response.json()["message"]
        else:
            said = html.unescape(response.text)
        assert record in said, (response.url, said[-1500:])
        assert any(f in said for f in fields), (fields, response.url, said[-1500:])


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
REMOVE = object()


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
    attack_id = f"mutator-{next(_ids)}"
    doc["meta"]["id"] = attack_id
    places = [p for p in _paths(doc) if p != ("meta", "id")]
    path = data.draw(st.sampled_from(places), label="path")
    value = data.draw(st.one_of(VALUES, st.just(REMOVE)), label="value")
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if value is REMOVE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    try:
        store.add_attack(doc)
    except (StoreError, StatementError):
        # the store refuses it (no id, no start; a figure its columns cannot hold:
        # add_attack lets SQLAlchemy's error through then): it never reaches the viewer
        return
    fields = _field_names(path) or ("kind",)
    with server.client() as client:
        page = client.get(f"/attacks/{attack_id}")
        _answered(page, f"attack '{attack_id}'", fields)
        bypass = client.get(f"/attacks/{attack_id}/bypasses/0")
        _answered(bypass, f"attack '{attack_id}'", fields)
        listing = client.get("/attacks")
        assert listing.status_code == 200, listing.text[-1500:]
        _no_raw_markup(listing)
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


def _fresh_run(store: Store, run: Any) -> str:
    run_id = f"run-{next(_ids)}"
    store.add_run(dataclasses.replace(run, id=run_id), git=(None, None))
    return run_id


def _drop(store: Store, run_id: str) -> None:
    """Remove the damaged run again, so that each example sees the good runs beside one."""
    with store.connection(write=True) as conn:
        for table in ("outcomes", "run_tags"):
            conn.execute(
                text(
                    f"DELETE FROM {table} WHERE run_pk IN (SELECT pk FROM runs WHERE run_id = :id)"
                ),
                {"id": run_id},
            )
        conn.execute(text("DELETE FROM runs WHERE run_id = :id"), {"id": run_id})


def _edit(store: Store, sql: str, params: dict[str, Any]) -> bool:
    """Apply a hand edit; ``False`` when the database itself refuses it (NOT NULL)."""
    try:
        with store.connection(write=True) as conn:
            conn.execute(text(sql), params)
    except (IntegrityError, StoreError):
        return False
    return True


def _pages_of(
    client: httpx.Client, run_id: str, dataset_hash: str, fields: tuple[str, ...]
) -> None:
    record = f"run '{run_id}'"
    for url in (
        f"/runs/{run_id}",
        f"/runs/{run_id}/samples",
        f"/runs/{run_id}/samples?kind=bypass&score_min=0.1",
        f"/api/runs/{run_id}/samples",
        f"/runs/{run_id}/samples/0",
        f"/compare?run={run_id}&run=good-a",
        f"/compare?run=good-a&run={run_id}",
    ):
        _answered(client.get(url), record, fields)
    versions = client.get("/trend")  # the dataset versions: no run listed
    assert versions.status_code == 200, versions.text[-1500:]
    _no_raw_markup(versions)
    for url in ("/runs", f"/trend?dataset={dataset_hash}"):
        listing = client.get(url)
        assert listing.status_code == 200, (url, listing.text[-1500:])
        _no_raw_markup(listing)
        assert "good-a" in listing.text, url
        assert "good-b" in listing.text, url
        assert run_id in listing.text, url  # listed, or named as skipped
    api = client.get("/api/runs")
    assert api.status_code == 200, api.text[-1500:]
    body = api.json()
    listed = {r["id"] for r in body["runs"]}
    skipped = {s["id"]: s["reason"] for s in body.get("skipped", [])}
    assert {"good-a", "good-b"} <= listed
    assert run_id in listed or any(f in skipped.get(run_id, "") for f in fields), body


@FUZZ
@given(data=st.data())
def test_a_hand_edited_run_row_gets_an_answer_naming_it_never_a_500(
    data: st.DataObject, served: tuple[Store, Server, dict[str, Any]]
) -> None:
    store, server, records = served
    run_id = _fresh_run(store, records["run"])
    column = data.draw(st.sampled_from(sorted(RUN_COLUMNS)), label="column")
    value = data.draw(RUN_COLUMNS[column], label="value")
    sql = f"UPDATE runs SET {column} = :v WHERE run_id = :id"
    try:
        if _edit(store, sql, {"v": value, "id": run_id}):
            with server.client() as client:
                _pages_of(client, run_id, records["run"].dataset.content_hash, (column,))
    finally:
        _drop(store, run_id)


@FUZZ
@given(data=st.data())
def test_a_hand_edited_outcome_row_gets_an_answer_naming_it_never_a_500(
    data: st.DataObject, served: tuple[Store, Server, dict[str, Any]]
) -> None:
    store, server, records = served
    run_id = _fresh_run(store, records["run"])
    column = data.draw(st.sampled_from(sorted(OUTCOME_COLUMNS)), label="column")
    value = data.draw(OUTCOME_COLUMNS[column], label="value")
    position = data.draw(st.integers(0, len(records["run"].samples) - 1), label="position")
    sql = (
        f"UPDATE outcomes SET {column} = :v WHERE position = :p"
        " AND run_pk = (SELECT pk FROM runs WHERE run_id = :id)"
    )
    try:
        if _edit(store, sql, {"v": value, "p": position, "id": run_id}):
            with server.client() as client:
                _pages_of(client, run_id, records["run"].dataset.content_hash, (column,))
    finally:
        _drop(store, run_id)


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
    run_id = _fresh_run(store, records["run"])
    sql = f"UPDATE runs SET {column} = :v WHERE run_id = :id"
    try:
        assert _edit(store, sql, {"v": value, "id": run_id})
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
        _drop(store, run_id)


def test_a_nan_in_an_attack_record_does_not_hide_the_attack_list(
    served: tuple[Store, Server, dict[str, Any]],
) -> None:
    """JSON has no NaN: a database's JSON functions refuse the document, and with it the
    query that lists every attack. The list reads each record on its own instead."""
    store, server, records = served
    doc = copy.deepcopy(records["mutator"])
    doc["meta"]["id"] = "nan-attack"
    doc["figures"]["adaptive_asr"]["ci_high"] = math.nan
    store.add_attack(doc)
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
