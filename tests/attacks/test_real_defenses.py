"""The attack against the shipped defenses: reproducible, and every bypass is real."""

from __future__ import annotations

import pytest

from shieldbench.attacks import AttackResult, AttackSettings, run_attack
from shieldbench.datasets import load_dataset
from shieldbench.defenses import build_defense, registry


def _without_meta(result: AttackResult) -> dict[str, object]:
    data = result.to_dict()
    del data["meta"]
    return data


def test_pattern_falls_reproducibly_to_real_bypasses() -> None:
    core = load_dataset("builtin:core")
    settings = AttackSettings(budget=150, rounds=3, seed=9, max_attacks=150)
    first = run_attack(build_defense("pattern"), core, settings=settings, defense_spec="pattern")
    again = run_attack(build_defense("pattern"), core, settings=settings, defense_spec="pattern")
    assert _without_meta(first) == _without_meta(again)
    assert first.counts.targets > 0
    assert first.bypasses
    assert first.figures.adaptive_asr.k > first.figures.static_asr.k
    assert first.meta.strategy == "beam"  # pattern has a score
    fresh = build_defense("pattern")
    for b in first.bypasses:
        assert not fresh.check(b.text).blocked
        assert fresh.check(b.original_text).blocked


@pytest.mark.slow
@pytest.mark.skipif(
    not registry.get("semantic").available,  # registered always; importable with the extra
    reason="semantic needs the embeddings extra: pip install 'shieldbench[embeddings]'",
)
def test_a_composed_pipeline_with_semantic() -> None:
    pipeline = build_defense("any(pattern, semantic)")
    data = load_dataset("builtin:smoke")
    settings = AttackSettings(budget=40, rounds=2, seed=1, mutators=("encoding", "framing"))
    result = run_attack(pipeline, data, settings=settings, defense_spec="any(pattern, semantic)")
    assert result.counts.search_queries <= 40
    for b in result.bypasses:
        assert not pipeline.check(b.text).blocked
