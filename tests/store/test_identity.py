"""A defense is its canonical spec and version, never its display name (issue 30, 3).

``pattern`` and ``pattern(threshold=0.2)`` are both named "pattern": a reference to
one never finds the other; a reference that matches runs of several identities is
refused with their list; a ``tag:`` reference given the candidate's identity picks
a run of that defense on that data, or says why there is none. On SQLite and on a
real PostgreSQL.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shieldbench.errors import StoreError
from shieldbench.identity import DefenseIdentity, identity_labels
from shieldbench.metrics._testing import make_run
from shieldbench.spec import canonical_spec, parse_spec
from shieldbench.store import Store, open_store
from shieldbench.types import DatasetInfo, DefenseInfo, Run

ROWS = [("jb", True, True, 0.9), ("jb", True, False, 0.1), ("chat", False, False, 0.2)]


def _run(run_id: str, spec: str, *, day: int, version: str | None = "1", data: str = "h1") -> Run:
    """A run of ``spec`` (display name "pattern" for every pattern variant) on ``data``."""
    base = make_run(ROWS, run_id=run_id, dataset_hash=f"sha256:{data}")
    name = parse_spec(spec).name
    start = base.started + timedelta(days=day)
    return replace(
        base,
        defense=DefenseInfo(spec, name, version),
        dataset=DatasetInfo(f"jsonl:{data}.jsonl", f"sha256:{data}", len(base.samples)),
        started=start,
        finished=start + timedelta(seconds=1),
    )


@pytest.fixture
def store(store_url: str) -> Store:
    s = open_store(store_url)
    yield s  # type: ignore[misc]
    s.close()


def test_latest_by_spec_never_finds_a_threshold_variant_named_alike(store: Store) -> None:
    # The issue: latest:pattern@... matched the newest run named "pattern", which was
    # the threshold-0.2 run (the candidate itself).
    store.add_run(_run("plain", "pattern", day=0), git=(None, None))
    store.add_run(_run("t02", "pattern(threshold=0.2)", day=1), git=(None, None))
    assert store.resolve("latest:pattern@jsonl:h1.jsonl") == "plain"
    assert store.resolve("latest:pattern( threshold = 0.2 )@sha256:h1") == "t02"
    assert [r.id for r in store.runs(defense="pattern")] == ["plain"]
    assert [r.id for r in store.runs(defense="pattern(threshold=0.20)")] == []


def test_a_reference_matching_several_identities_is_refused_with_their_list(
    store: Store,
) -> None:
    store.add_run(_run("v1", "pattern", day=0, version="1"), git=(None, None))
    store.add_run(_run("v2", "pattern", day=1, version="2"), git=(None, None))
    with pytest.raises(StoreError) as refused:
        store.resolve("latest:pattern@jsonl:h1.jsonl")
    message = str(refused.value)
    assert "matches runs of 2 defenses" in message
    assert "pattern version 2 on jsonl:h1.jsonl (1 run, newest v2)" in message
    assert "pattern version 1 on jsonl:h1.jsonl (1 run, newest v1)" in message
    assert "==VERSION" in message
    assert store.resolve("latest:pattern==1@jsonl:h1.jsonl") == "v1"
    assert store.resolve("latest:pattern==2@jsonl:h1.jsonl") == "v2"
    with pytest.raises(StoreError, match="no stored run matches"):
        store.resolve("latest:pattern==3@jsonl:h1.jsonl")
    # the caller's identity picks one (the gate passes the candidate's)
    mine = DefenseIdentity("pattern", "1")
    assert store.resolve("latest:pattern@jsonl:h1.jsonl", identity=mine) == "v1"


def test_a_display_name_is_read_only_when_no_run_has_that_spec(store: Store) -> None:
    store.add_run(_run("a", "pattern(threshold=0.2)", day=0), git=(None, None))
    assert store.resolve("latest:pattern@jsonl:h1.jsonl") == "a"  # no spec "pattern"
    store.add_run(_run("b", "pattern(threshold=0.3)", day=1), git=(None, None))
    with pytest.raises(StoreError, match=r"pattern\(threshold=0.2\) version 1"):
        store.resolve("latest:pattern@jsonl:h1.jsonl")


def test_a_tag_reference_without_an_identity_refuses_several_defenses(store: Store) -> None:
    store.add_run(_run("p", "pattern", day=0), tags={"branch": "main"}, git=(None, None))
    store.add_run(_run("r", "recommended", day=1), tags={"branch": "main"}, git=(None, None))
    with pytest.raises(StoreError, match="matches runs of 2 defenses"):
        store.resolve("tag:branch=main")
    assert store.resolve("tag:branch=main", identity=DefenseIdentity("pattern", "1")) == "p"


def test_a_tag_reference_for_the_candidate_picks_its_defense_and_data(store: Store) -> None:
    # The issue: gate --baseline tag:branch=main took the newest tagged run, another
    # defense. Now: the candidate's spec, on the candidate's data, its version first.
    main = {"branch": "main"}
    store.add_run(_run("old-v0", "pattern", day=0, version="0"), tags=main, git=(None, None))
    store.add_run(_run("p-v1", "pattern", day=1, version="1"), tags=main, git=(None, None))
    store.add_run(_run("p-v2", "pattern", day=2, version="2"), tags=main, git=(None, None))
    store.add_run(_run("t02", "pattern(threshold=0.2)", day=3), tags=main, git=(None, None))
    store.add_run(_run("rec", "recommended", day=4), tags=main, git=(None, None))
    store.add_run(_run("other", "pattern", day=5, data="h2"), tags=main, git=(None, None))

    def pick(data: str, spec: str, version: str) -> str:
        identity = DefenseIdentity(spec, version)
        return store.resolve("tag:branch=main", dataset_hash=f"sha256:{data}", identity=identity)

    assert pick("h1", "pattern", "1") == "p-v1"
    # a new version (what a gate tests) compares with the newest run of its spec
    assert pick("h1", "pattern", "9") == "p-v2"
    assert pick("h2", "pattern", "1") == "other"
    with pytest.raises(StoreError, match=r"no run of the candidate's defense semantic.*recomm"):
        pick("h1", "semantic", "1")
    with pytest.raises(StoreError, match=r"on other data \(jsonl:h1.jsonl \(sha256:h1\)\)"):
        pick("h9", "recommended", "1")


def test_history_labels_show_the_version_only_where_a_spec_repeats() -> None:
    ids = [
        DefenseIdentity.of("pattern", "1"),
        DefenseIdentity.of("pattern", "2"),
        DefenseIdentity.of("pattern(threshold=0.2)", "1"),
    ]
    assert identity_labels(ids) == [
        "pattern version 1",
        "pattern version 2",
        "pattern(threshold=0.2)",
    ]


# -- canonical specs: every spelling of one spec has one canonical form -----------------

_NAMES = st.sampled_from(["pattern", "semantic", "any", "fail_closed", "vote", "x.y-z"])
_VALUES = st.sampled_from(["0.2", "2", "true", "data/x.jsonl", "a b", "a,b", "(", "k=v", "it's"])
_KEYS = st.sampled_from(["threshold", "timeout", "k", "mode", "header.X-Key"])
_WS = st.sampled_from(["", " ", "  ", "\t"])


@st.composite
def _spec(draw: st.DrawFn, depth: int = 0) -> tuple[str, str]:
    """Two spellings of one spec: different whitespace, option order and quoting."""
    name = draw(_NAMES)
    n_args = draw(st.integers(0, 2 if depth < 2 else 0))
    args = [draw(_spec(depth + 1)) if draw(st.booleans()) else None for _ in range(n_args)]
    kwargs = draw(st.dictionaries(_KEYS, _VALUES, max_size=2))
    if not args and not kwargs:
        return name, name + draw(st.sampled_from(["", "()"]))

    def quote(v: str) -> str:
        return f'"{v}"' if "'" in v else f"'{v}'"

    def spell(which: int) -> str:
        parts = []
        for a in args:
            value = "literal" if a is None else a[which]
            parts.append(value if which == 0 or a is None else f"{draw(_WS)}{value}{draw(_WS)}")
        items = list(kwargs.items())
        if which == 1:
            items.reverse()
        for k, v in items:
            gap = (draw(_WS), draw(_WS)) if which else ("", "")
            parts.append(f"{k}{gap[0]}={gap[1]}{quote(v)}")
        if which == 0:
            return f"{name}({', '.join(parts)})"
        return f"{name}({','.join(parts)}){draw(_WS)}"

    return spell(0), spell(1)


@given(_spec())
def test_every_spelling_of_a_spec_has_one_canonical_form(pair: tuple[str, str]) -> None:
    a, b = pair
    canonical = canonical_spec(a)
    assert canonical_spec(b) == canonical
    assert canonical_spec(canonical) == canonical  # idempotent
    assert parse_spec(canonical).name == parse_spec(a).name
    assert DefenseIdentity.of(a, "1") == DefenseIdentity.of(b, "1")
    assert DefenseIdentity.of(a, "1") != DefenseIdentity.of(a, "2")


def test_canonical_spec_keeps_what_it_cannot_respell() -> None:
    assert canonical_spec("pattern(threshold=0.2)") != canonical_spec("pattern")
    assert canonical_spec("http:https://guard.local/check") == "http:https://guard.local/check"
    assert canonical_spec("jsonl( 'a, b.jsonl' )") == "jsonl('a, b.jsonl')"
    assert canonical_spec("""x('it"s', "it's")""") == """x('it"s', "it's")"""
