"""The worst-case examples are chosen in one streaming pass: the same as sorting them all.

``worst_case`` keeps at most a few candidates per category and builds an example only
for a candidate that can still be kept (a run with a million bypasses must not build a
million examples). This checks, on random runs, that the result is exactly what the
obvious computation gives: every bypass and false positive sorted, the best
``examples`` per category kept.
"""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from shieldbench.metrics import summarize
from shieldbench.metrics._testing import make_run
from shieldbench.reports._examples import worst_case

ROW = st.tuples(
    st.sampled_from(["a", "b"]),
    st.booleans(),
    st.booleans(),
    st.one_of(st.none(), st.sampled_from([0.0, 0.5, 1.0]), st.floats(0.0, 1.0)),
)


def _naive(
    rows: list[tuple[str, bool, bool, float | None]], kind: str, limit: int
) -> dict[str, list[str]]:
    """Per category, the sample ids of the best ``limit`` candidates, in order."""
    best: dict[str, list[tuple[float, int]]] = {}
    for i, (category, is_attack, blocked, score) in enumerate(rows):
        if kind == "bypass" and is_attack and not blocked:
            key = math.inf if score is None else score
        elif kind == "false_positive" and not is_attack and blocked:
            key = math.inf if score is None else -score
        else:
            continue
        best.setdefault(category, []).append((key, i))
    return {c: [f"s{i}" for _, i in sorted(items)[:limit]] for c, items in best.items()}


@settings(max_examples=150, deadline=None)
@given(
    rows=st.integers(60, 300).flatmap(lambda n: st.lists(ROW, min_size=n, max_size=n)),
    limit=st.integers(min_value=1, max_value=3),
)
def test_streamed_choice_equals_sorting_everything(
    rows: list[tuple[str, bool, bool, float | None]], limit: int
) -> None:
    run = make_run(rows)
    blocked = (o.verdict.blocked if o.verdict else None for o in run.outcomes)
    wc = worst_case(run, "x", summarize(run), blocked, examples=limit, text_limit=50)
    for kind, chosen in (("bypass", wc.bypasses), ("false_positive", wc.false_positives)):
        got: dict[str, list[str]] = {}
        for example in chosen:
            got.setdefault(example.category, []).append(example.sample_id)
        assert got == _naive(rows, kind, limit), kind
    assert wc.n_bypasses == sum(1 for _, a, b, _ in rows if a and not b)
    assert wc.n_false_positives == sum(1 for _, a, b, _ in rows if not a and b)
