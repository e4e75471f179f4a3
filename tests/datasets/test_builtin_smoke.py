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
from pathlib import Path
from typing import Any

import pytest

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
BUILTIN = Path(str(files("shieldbench.datasets") / "builtin"))
SMOKE_FILE = BUILTIN / "smoke.jsonl"
CORE_DIR = BUILTIN / "core"


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    records = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        assert line.strip(), f"{path.name}:{lineno}: blank line"
        record = json.loads(line)
        assert isinstance(record, dict), f"{path.name}:{lineno}: not a JSON object"
        records.append(record)
    return records


@pytest.fixture(scope="module")
def smoke() -> list[dict[str, Any]]:
    return _read_jsonl(SMOKE_FILE)


@pytest.fixture(scope="module")
def core_texts() -> list[str]:
    paths = sorted(CORE_DIR.glob("*.jsonl"))
    assert paths, f"no builtin:core files under {CORE_DIR}"
    return [str(r["text"]) for p in paths for r in _read_jsonl(p)]


def _strict_normal_form(text: str) -> str:
    """Case, spacing and punctuation never make two texts different."""
    stripped = normalize_text(text).translate(str.maketrans("", "", string.punctuation))
    return " ".join(stripped.split())


def test_exactly_38_cases(smoke: list[dict[str, Any]]) -> None:
    assert len(smoke) == 38


def test_every_category_present_two_or_three_times(smoke: list[dict[str, Any]]) -> None:
    counts = Counter(r["category"] for r in smoke)
    assert set(counts) == BENIGN_CATEGORIES | ATTACK_CATEGORIES
    assert all(2 <= n <= 3 for n in counts.values()), counts


def test_label_follows_category(smoke: list[dict[str, Any]]) -> None:
    for r in smoke:
        expected = "benign" if r["category"] in BENIGN_CATEGORIES else "attack"
        assert r["label"] == expected, r["id"]


def test_ids_are_unique_and_numbered(smoke: list[dict[str, Any]]) -> None:
    ids = [r["id"] for r in smoke]
    assert ids == [f"smoke-{n:02d}" for n in range(1, len(smoke) + 1)]


def test_record_schema(smoke: list[dict[str, Any]]) -> None:
    for r in smoke:
        assert set(r) == FIELDS, r.get("id")
        assert isinstance(r["text"], str), r["id"]
        assert r["text"], r["id"]
        assert r["text"] == r["text"].strip(), r["id"]
        assert r["subcategory"] is None, r["id"]
        assert re.fullmatch(r"[a-z]{2}", r["language"]), r["id"]
        if r["label"] == "attack":
            assert r["severity"] in SEVERITIES, r["id"]
            assert r["tier"] in TIERS, r["id"]
            assert r["tier"] != "adaptive", r["id"]  # adaptive samples come from the attack loop
        else:
            assert r["severity"] is None, r["id"]
            assert r["tier"] is None, r["id"]
        # The core record accepts it: label, severity and tier are validated there too.
        Sample(**{k: v for k, v in r.items() if k != "language"})


def test_no_exact_duplicates_within_smoke_or_against_core(
    smoke: list[dict[str, Any]], core_texts: list[str]
) -> None:
    smoke_forms = Counter(_strict_normal_form(r["text"]) for r in smoke)
    assert [f for f, n in smoke_forms.items() if n > 1] == []
    core_forms = {_strict_normal_form(t) for t in core_texts}
    assert [f for f in smoke_forms if f in core_forms] == []


def test_no_near_duplicates_within_smoke(smoke: list[dict[str, Any]]) -> None:
    texts = [r["text"] for r in smoke]
    pairs = near_duplicates(texts, threshold=0.8)
    assert [(smoke[i]["id"], smoke[j]["id"], s) for i, j, s in pairs] == []


def test_no_near_duplicates_against_core(
    smoke: list[dict[str, Any]], core_texts: list[str]
) -> None:
    texts = [r["text"] for r in smoke]
    pairs = near_duplicates(texts, core_texts, threshold=0.8)
    assert [(smoke[i]["id"], core_texts[j][:60], s) for i, j, s in pairs] == []


def test_near_duplicate_check_would_catch_a_lightly_edited_copy(
    smoke: list[dict[str, Any]],
) -> None:
    """Guards the two tests above against a check that can never fire."""
    original = next(r["text"] for r in smoke if len(r["text"]) > 120)
    edited = original.replace("the", "that", 1) + "!"
    assert near_duplicates([original], [edited], threshold=0.8) != []
