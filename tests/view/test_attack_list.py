"""The rows of ``/attacks`` from whatever the store read out of a record.

The list reads a few parts of each stored document in SQL (``AttackInfo``); a
record of another version or a damaged one may hold anything there. A rate is shown
only when it is one (whole ``k`` and ``n``, numeric interval), the budget only when
it is a number, a kind this viewer does not know always gets its note; nothing
raises.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from shieldbench.store import AttackInfo
from shieldbench.view._attack_list import listed

ANY = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 5),
    st.floats(allow_nan=False),
    st.text(max_size=3),
    st.lists(st.integers(), max_size=2),
)
RATE = st.dictionaries(st.sampled_from(["k", "n", "value", "ci_low", "ci_high"]), ANY)
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _info(kind: str, strategy: Any, budget: Any, figures: dict[str, Any]) -> AttackInfo:
    return AttackInfo(
        "a1", "pattern", "pattern", "inline", "h", NOW, NOW, None, None, None, None, {},
        kind, strategy, budget, figures,
    )  # fmt: skip


def _is_rate(d: dict[str, Any]) -> bool:
    def number(x: Any) -> bool:
        return isinstance(x, int | float) and not isinstance(x, bool)

    whole = all(isinstance(d.get(k), int) and not isinstance(d.get(k), bool) for k in "kn")
    numbers = number(d.get("ci_low")) and number(d.get("ci_high"))
    return whole and numbers and (d.get("value") is None or number(d.get("value")))


@given(
    kind=st.sampled_from(["shieldbench.attack", "shieldbench.llm_attack", "other.kind"]),
    strategy=st.one_of(st.none(), st.sampled_from(["beam", "pair", "tap", "crescendo", "x"])),
    budget=st.one_of(ANY, st.dictionaries(st.just("queries"), ANY)),
    rate=RATE,
)
def test_a_row_shows_what_the_record_holds_and_says_n_a_otherwise(
    kind: str, strategy: str | None, budget: Any, rate: dict[str, Any]
) -> None:
    row = listed(_info(kind, strategy, budget, {"preserving_asr": rate}))
    assert (row.preserving is not None) == _is_rate(rate)
    if row.preserving is not None:
        assert (row.preserving.k, row.preserving.n) == (rate["k"], rate["n"])
    assert row.static is None
    queries = budget.get("queries") if isinstance(budget, dict) else budget
    expected = queries if isinstance(queries, int) and not isinstance(queries, bool) else None
    assert row.budget == expected
    assert row.known == (kind != "other.kind")
    assert (row.note is not None) == (not row.known)
    if not row.known:
        assert row.kind == kind
        assert "other.kind" in (row.note or "")


def test_each_kind_is_named_in_words() -> None:
    names = {
        (kind, strategy): listed(_info(kind, strategy, None, {})).kind
        for kind, strategy in [
            ("shieldbench.attack", "beam"),
            ("shieldbench.attack", None),
            ("shieldbench.llm_attack", "pair"),
            ("shieldbench.llm_attack", "tap"),
            ("shieldbench.llm_attack", "crescendo"),
            ("shieldbench.llm_attack", None),
        ]
    }
    assert list(names.values()) == [
        "mutator search (beam)",
        "mutator search",
        "PAIR",
        "TAP",
        "Crescendo",
        "LLM-driven (unknown)",
    ]
