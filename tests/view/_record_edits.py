"""What the record fuzz tests share: a served history to damage, and what to assert.

``served`` is a fresh SQLite history holding two good copies of ``conftest.py``'s
planted run (``good-a``, ``good-b``) and a good copy of its mutator search
(``good-attack``), served by the real viewer on 127.0.0.1. A test adds a record,
damages it (through the store's API, or in place with SQL as a user with ``sqlite3``
would), asks the routes, and removes it again (:func:`drop`).
"""

from __future__ import annotations

import copy
import dataclasses
import html
import itertools
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from shieldbench.errors import StoreError
from shieldbench.store import Store, open_store

from .conftest import History, Server

IDS = itertools.count()
HOSTILE = "<script>window.__pwned=1</script>"
FUZZ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


REMOVE = object()


def damage(
    doc: dict[str, Any], data: st.DataObject, values: st.SearchStrategy[Any]
) -> tuple[tuple[Any, ...], Any]:
    """Replace one drawn place of ``doc`` (never ``meta.id``) by a drawn value from
    ``values``, or remove it (``REMOVE``); the place's path and what it now holds."""
    places = [p for p in paths(doc) if p != ("meta", "id")]
    path = data.draw(st.sampled_from(places), label="path")
    value = data.draw(st.one_of(values, st.just(REMOVE)), label="value")
    parent: Any = doc
    for key in path[:-1]:
        parent = parent[key]
    if value is REMOVE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return path, value


def paths(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in ``value`` (a list's first two items only), leaves and branches."""
    if at:
        yield at
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*at, key))
    elif isinstance(value, list):
        for i, item in enumerate(value[:2]):
            yield from paths(item, (*at, i))


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


def no_raw_markup(response: httpx.Response) -> None:
    if response.headers.get("content-type", "").startswith("text/html"):
        assert HOSTILE not in response.text, response.url


def answered(response: httpx.Response, record: str, fields: tuple[str, ...]) -> None:
    """A page (200) or a 4xx naming ``record`` and one of ``fields``; never a 5xx."""
    assert response.status_code < 500, (response.url, response.text[-1500:])
    assert response.status_code == 200 or 400 <= response.status_code < 500
    no_raw_markup(response)
    if response.status_code in (400, 422):
        if response.url.path.startswith("/api/"):  # a JSON route answers JSON
            said = response.json()["message"]
        else:
            said = html.unescape(response.text)
        assert record in said, (response.url, said[-1500:])
        assert any(f in said for f in fields), (fields, response.url, said[-1500:])


def fresh_run(store: Store, run: Any) -> str:
    run_id = f"run-{next(IDS)}"
    store.add_run(dataclasses.replace(run, id=run_id), git=(None, None))
    return run_id


def drop(store: Store, run_id: str) -> None:
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


def edit(store: Store, sql: str, params: dict[str, Any]) -> bool:
    """Apply a hand edit; ``False`` when the database itself refuses it (NOT NULL)."""
    try:
        with store.connection(write=True) as conn:
            conn.execute(text(sql), params)
    except (IntegrityError, StoreError):
        return False
    return True


def pages_of(client: httpx.Client, run_id: str, dataset_hash: str, fields: tuple[str, ...]) -> None:
    record = f"'{run_id}'"  # "run 'ID'"; a comparison says "runs 'ID' and 'good-a'"
    for url in (
        f"/runs/{run_id}",
        f"/runs/{run_id}/samples",
        f"/runs/{run_id}/samples?kind=bypass&score_min=0.1",
        f"/api/runs/{run_id}/samples",
        f"/runs/{run_id}/samples/0",
        f"/compare?run={run_id}&run=good-a",
        f"/compare?run=good-a&run={run_id}",
    ):
        answered(client.get(url), record, fields)
    versions = client.get("/trend")  # the dataset versions: no run listed
    assert versions.status_code == 200, versions.text[-1500:]
    no_raw_markup(versions)
    for url in ("/runs", f"/trend?dataset={dataset_hash}"):
        listing = client.get(url)
        assert listing.status_code == 200, (url, listing.text[-1500:])
        no_raw_markup(listing)
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
