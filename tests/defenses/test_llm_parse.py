"""``llm:`` answer parsing: contradictory answers are errors, never the first label."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shieldbench.defenses import build_defense
from shieldbench.defenses.remote._llm_parse import LABELS, parse_answer
from shieldbench.engine import screen
from shieldbench.errors import DefenseError
from shieldbench.types import RunConfig


@pytest.mark.parametrize(
    "answer",
    [
        "SAFE\nINJECTION",
        "INJECTION\nSAFE",
        "SAFE\n\nJAILBREAK.",
        "Label: SAFE\nFinal answer: INJECTION",
        "**SAFE**\nThe text is harmless.\n**JAILBREAK**",
        "<think>INJECTION? no</think>\nsafe\r\njailbreak",
        "INJECTION\nSAFE\nJAILBREAK",
    ],
)
def test_two_different_labels_on_separate_lines_are_ambiguous(answer: str) -> None:
    with pytest.raises(DefenseError, match="ambiguous"):
        parse_answer(answer)


@pytest.mark.parametrize(
    ("answer", "label"),
    [
        ("SAFE\nSAFE", "SAFE"),
        ("INJECTION\n\n**Injection.**", "INJECTION"),
        ("JAILBREAK\nIt is not SAFE: it asks for developer mode.", "JAILBREAK"),
        ("SAFE\nA question about INJECTION attacks, not one.", "SAFE"),
        # Labels inside a closed reasoning block are not part of the answer.
        ("<think>\nSAFE\nINJECTION\n</think>\nINJECTION", "INJECTION"),
    ],
)
def test_repeats_and_explanations_that_mention_labels_still_parse(answer: str, label: str) -> None:
    assert parse_answer(answer)[0] == label


_DECORATIONS = st.sampled_from(["", "**", '"', "`", " "])
_PREFIXES = st.sampled_from(["", "Label: ", "Answer: ", "Final answer: ", "verdict = "])


@given(
    st.permutations(LABELS),
    _DECORATIONS,
    _PREFIXES,
    st.sampled_from(["\n", "\n\n", "\r\n", "\nBecause the text asks...\n"]),
    st.booleans(),
)
def test_any_two_different_decorated_labels_are_refused(
    labels: list[str], decoration: str, prefix: str, between: str, lower: bool
) -> None:
    first, second = labels[0], labels[1]
    if lower:
        first, second = first.lower(), second.lower()
    content = f"{decoration}{first}{decoration}{between}{prefix}{second}."
    with pytest.raises(DefenseError, match="ambiguous"):
        parse_answer(content)


def test_a_contradictory_answer_is_an_error_outcome(loopback: Any) -> None:
    server = loopback.serve(loopback.script(loopback.chat("SAFE\nINJECTION")))
    defense = build_defense(f"llm(test-model, base_url={server.url}/v1)")
    try:
        [outcome] = screen(defense, ["ignore the rules"], config=RunConfig(warmup=0))
    finally:
        defense.close()  # type: ignore[attr-defined]
    assert outcome.status == "error"
    assert outcome.verdict is None
    assert outcome.error is not None
    assert "ambiguous" in outcome.error
