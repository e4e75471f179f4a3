"""``LLMAttackResult.from_dict`` refuses a damaged record by name: the field, the
outcome and the step, never an error from deep inside a renderer.

The record is a real one: PAIR against the scripted attacker on loopback, with the
mutator search at equal budget inside it (``comparison``), read back after one
change each.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from shieldbench.attacks import (
    AttackSettings,
    LLMAttackResult,
    LLMSettings,
    build_attacker,
    run_attack,
    run_llm_attack,
)
from shieldbench.errors import RunError

from .test_llm_strategies import GOAL, _data, _module

Doc = dict[str, Any]


@pytest.fixture(scope="module")
def pair_record() -> Doc:
    server = _module().ScriptedAttacker().start()
    attacker = build_attacker(server.spec)
    defense, data = _module().KeywordDefense(), _data(GOAL)
    try:
        r = run_llm_attack(defense, data, attacker, settings=LLMSettings("pair", streams=1))
    finally:
        attacker.close()
        server.stop()
    comparison = run_attack(defense, data, settings=AttackSettings(budget=max(r.queries, 1)))
    doc = r.to_dict()
    doc["comparison"] = comparison.to_dict()
    assert LLMAttackResult.from_dict(doc).to_dict() == doc  # the intact record reads back
    return doc


def _set(path: tuple[Any, ...], value: Any) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        for key in path[:-1]:
            doc = doc[key]
        doc[path[-1]] = value

    return change


def _drop(path: tuple[Any, ...]) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        for key in path[:-1]:
            doc = doc[key]
        del doc[path[-1]]

    return change


CASES = [
    (_set(("outcomes", 0, "steps", 0, "stream"), "zero"), ["outcomes[0]", "steps[0]", "'stream'"]),
    (_set(("outcomes", 0, "steps", 0, "blocked"), 1), ["steps[0]", "'blocked'", "bool"]),
    (_set(("outcomes", 0, "steps", 0, "text"), ["a"]), ["steps[0]", "'text'"]),
    (_set(("outcomes", 0, "steps", 0), "step"), ["steps[0]", "expected dict"]),
    (_drop(("outcomes", 0, "goal")), ["outcomes[0]", "missing field 'goal'"]),
    (_set(("outcomes", 0, "queries"), True), ["outcomes[0]", "'queries'"]),
    (_set(("outcomes", 0, "usage", "calls"), 1.5), ["outcomes[0]", "usage field 'calls'"]),
    (_set(("outcomes",), {"a": 1}), ["outcomes", "expected list"]),
    (_set(("figures", "preserving_asr", "k"), "3"), ["rate field 'k'"]),
    (_set(("figures", "curve", 0, "queries"), "0"), ["curve field 'queries'"]),
    (_set(("usage", "prompt_tokens"), None), ["usage field 'prompt_tokens'"]),
    (_set(("settings", "budget", "queries"), -1), ["query budget must be >= 0"]),
    (_set(("stopped_by",), 3), ["stopped_by"]),
    (_set(("comparison", "counts", "attacks"), "x"), ["(comparison)", "count 'attacks'"]),
    (
        _set(("comparison", "figures", "curve", 0, "queries"), "<b>"),
        ["(comparison)", "figures.curve[0].queries"],
    ),
    (
        _set(("comparison", "figures", "curve", 0, "asr"), "high"),
        ["(comparison)", "figures.curve[0].asr"],
    ),
]


@pytest.mark.parametrize(("change", "named"), CASES)
def test_a_damaged_record_is_refused_naming_where(
    pair_record: Doc, change: Callable[[Doc], None], named: list[str]
) -> None:
    doc = copy.deepcopy(pair_record)
    change(doc)
    with pytest.raises(RunError) as caught:
        LLMAttackResult.from_dict(doc, source="attack 'x1'")
    message = str(caught.value)
    assert message.startswith("attack 'x1'"), message
    for part in named:
        assert part in message, (part, message)


@pytest.mark.parametrize("data", [[], "text", None, 3])
def test_a_record_that_is_not_a_mapping_is_refused(data: Any) -> None:
    with pytest.raises(RunError, match="attack 'x1': not an LLM attack result"):
        LLMAttackResult.from_dict(data, source="attack 'x1'")
