"""Any stored attack record, however damaged, gets a page: never a 500.

Hypothesis takes the real PAIR record of ``conftest.py`` (run by the CLI against the
loopback scripted attacker), replaces or removes one field anywhere in it (figures,
settings, usage, the comparison's counts and curve, a transcript step...), stores
it, and asks the real viewer on 127.0.0.1 for its page, its first goal and the
list. A record the library reads renders (200); one it refuses answers a 422 page
naming the attack; the list always shows it.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shieldbench.errors import StoreError
from shieldbench.store import Store, open_store

from ._record_edits import damage
from .conftest import History, Server

pytestmark = pytest.mark.slow

_ids = itertools.count()


@pytest.fixture(scope="module")
def pair_record(sqlite_history: History) -> dict[str, Any]:
    with open_store(sqlite_history.url, read_only=True) as store:
        return store.get_attack(sqlite_history.llm.pair)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, Server]]:
    url = str(tmp_path_factory.mktemp("fuzz") / "history.db")
    store = open_store(url)
    server = Server(store)
    yield store, server
    server.stop()
    store.close()


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=4),
    st.lists(st.integers(0, 2), max_size=2),
    st.dictionaries(st.sampled_from(["k", "n", "value"]), st.integers(0, 2), max_size=2),
    st.just("<script>x</script>"),
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_a_damaged_record_gets_a_page_naming_it_never_a_500(
    data: st.DataObject, pair_record: dict[str, Any], served: tuple[Store, Server]
) -> None:
    store, server = served
    doc = copy.deepcopy(pair_record)
    attack_id = f"fuzz-{next(_ids)}"
    doc["meta"]["id"] = attack_id
    path, value = damage(doc, data, VALUES)
    try:
        store.add_attack(doc)
    except StoreError:
        return  # the store refuses it (no id, no start): it never reaches the viewer
    with server.client() as client:
        page = client.get(f"/attacks/{attack_id}")
        assert page.status_code in (200, 422), (path, value, page.text[-800:])
        if page.status_code == 422:
            assert f"attack &#39;{attack_id}&#39;" in page.text
        else:
            goal = client.get(f"/attacks/{attack_id}/goals/0")
            assert goal.status_code in (200, 404), (path, value, goal.text[-800:])
        listing = client.get("/attacks")
        assert listing.status_code == 200
        assert f'href="/attacks/{attack_id}"' in listing.text
