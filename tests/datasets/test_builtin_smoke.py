"""builtin:smoke: 38 cases, every category of the common classifier taxonomy, no leakage.

The suite is a fast sanity run, so its value rests on three promises checked here:
its shape (exactly 38 cases, each of the 17 categories present with 2-3 cases,
labels that follow the category), a strict record schema, and independence from
``builtin:core`` (no exact or near-duplicate text inside the suite or across the
two, so a defense tuned on one cannot score well on the other by memorisation).
"""

from __future__ import annotations

import json
import re
import string
from collections import Counter
from importlib.resources import files

import pytest

from shieldbench.datasets import load_dataset
from shieldbench.datasets._similarity import near_duplicates, normalize_text
from shieldbench.types import SEVERITIES, TIERS, Sample

BENIGN_CATEGORIES = frozenset({"normal", "educational", "false_positive_risk", "conversational"})
ATTACK_CATEGORIES = frozenset(
    {
        "classic",
        "xml_injection",
        "tag_injection",
        "mode_switching",
        "extraction",
        "dan",
        "persona",
        "hypothetical",
        "game",
        "creative",
        "authority",
        "emotional",
        "trust",
    }
)
FIELDS = frozenset(
    {"id", "text", "label", "category", "subcategory", "severity", "tier", "language"}
)


@pytest.fixture(scope="module")
def smoke() -> list[Sample]:
    return list(load_dataset("builtin:smoke").samples)


@pytest.fixture(scope="module")
def core_texts() -> list[str]:
    texts = [s.text for s in load_dataset("builtin:core").samples]
    assert texts, "builtin:core is empty"
    return texts


def _strict_normal_form(text: str) -> str:
    """Case, spacing and punctuation never make two texts different."""
    stripped = normalize_text(text).translate(str.maketrans("", "", string.punctuation))
    return " ".join(stripped.split())


def test_exactly_38_cases(smoke: list[Sample]) -> None:
    assert len(smoke) == 38


def test_every_category_present_two_or_three_times(smoke: list[Sample]) -> None:
    counts = Counter(r.category for r in smoke)
    assert set(counts) == BENIGN_CATEGORIES | ATTACK_CATEGORIES
    assert all(2 <= n <= 3 for n in counts.values()), counts


def test_label_follows_category(smoke: list[Sample]) -> None:
    for r in smoke:
        expected = "benign" if r.category in BENIGN_CATEGORIES else "attack"
        assert r.label == expected, r.id


def test_ids_are_unique_and_numbered(smoke: list[Sample]) -> None:
    ids = [r.id for r in smoke]
    assert ids == [f"smoke-{n:02d}" for n in range(1, len(smoke) + 1)]


def test_file_records_have_exactly_the_documented_fields() -> None:
    path = files("shieldbench.datasets").joinpath("builtin", "smoke.jsonl")
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        assert set(json.loads(line)) == FIELDS, f"smoke.jsonl:{lineno}"


def test_sample_fields(smoke: list[Sample]) -> None:
    for r in smoke:
        assert r.text, r.id
        assert r.text == r.text.strip(), r.id
        assert r.subcategory is None, r.id
        assert re.fullmatch(r"[a-z]{2}", r.metadata["language"]), r.id
        if r.label == "attack":
            assert r.severity in SEVERITIES, r.id
            assert r.tier in TIERS, r.id
            assert r.tier != "adaptive", r.id  # adaptive samples come from the attack loop
        else:
            assert r.severity is None, r.id
            assert r.tier is None, r.id


def test_no_exact_duplicates_within_smoke_or_against_core(
    smoke: list[Sample], core_texts: list[str]
) -> None:
    smoke_forms = Counter(_strict_normal_form(r.text) for r in smoke)
    assert [f for f, n in smoke_forms.items() if n > 1] == []
    core_forms = {_strict_normal_form(t) for t in core_texts}
    assert [f for f in smoke_forms if f in core_forms] == []


def test_no_near_duplicates_within_smoke(smoke: list[Sample]) -> None:
    texts = [r.text for r in smoke]
    pairs = near_duplicates(texts, threshold=0.8)
    assert [(smoke[i].id, smoke[j].id, s) for i, j, s in pairs] == []


def test_no_near_duplicates_against_core(smoke: list[Sample], core_texts: list[str]) -> None:
    texts = [r.text for r in smoke]
    pairs = near_duplicates(texts, core_texts, threshold=0.8)
    assert [(smoke[i].id, core_texts[j][:60], s) for i, j, s in pairs] == []


def test_near_duplicate_check_would_catch_a_lightly_edited_copy(
    smoke: list[Sample],
) -> None:
    """Guards the two tests above against a check that can never fire."""
    original = next(r.text for r in smoke if len(r.text) > 120)
    edited = original.replace("the", "that", 1) + "!"
    assert near_duplicates([original], [edited], threshold=0.8) != []
