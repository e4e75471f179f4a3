"""The mutator record, the registry, name resolution and composition."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shieldbench.attacks import (
    Mutator,
    MutatorRegistry,
    compose,
    get_mutator,
    mutators,
    resolve_mutators,
)
from shieldbench.errors import ConfigError, SpecError

names = sorted(m.name for m in mutators)


@settings(max_examples=60, deadline=None)
@given(
    chain=st.lists(st.sampled_from(names), min_size=2, max_size=4),
    text=st.text(max_size=120),
    seed=st.integers(0, 2**32),
)
def test_compose_is_a_mutator_with_anded_and_ored_flags(
    chain: list[str], text: str, seed: int
) -> None:
    parts = [get_mutator(n) for n in chain]
    composed = compose(*parts)
    assert composed.name == "+".join(chain)
    assert composed.chain == tuple(chain)
    assert composed.family == "composite"
    assert composed.preserves_payload == all(p.preserves_payload for p in parts)
    assert composed.reversible == all(p.reversible for p in parts)
    assert composed.needs_rng == any(p.needs_rng for p in parts)
    expected = text
    rng = random.Random(seed)
    for p in parts:  # the steps share one rng, in order
        expected = p(expected, rng)
    assert composed(text, seed) == expected
    if composed.reversible:
        assert composed.invert(composed(text, seed)) == text
    assert get_mutator("+".join(chain)).chain == composed.chain


def test_compose_edge_cases() -> None:
    rot13 = get_mutator("rot13")
    assert compose(rot13) is rot13
    with pytest.raises(ConfigError, match="at least one"):
        compose()
    nested = compose(compose(rot13, get_mutator("json")), get_mutator("base64"))
    assert nested.chain == ("rot13", "json", "base64")
    with pytest.raises(ConfigError, match="not reversible"):
        get_mutator("typos").invert("x")


def test_unknown_names_fail_with_suggestions() -> None:
    with pytest.raises(SpecError, match=r"no mutator named 'base46'.*did you mean base64"):
        get_mutator("base46")
    with pytest.raises(SpecError, match="'nope'"):
        resolve_mutators("rot13, nope")


def test_resolve_names_chains_and_families() -> None:
    assert len(resolve_mutators(None)) == len(mutators)
    assert len(resolve_mutators("all")) == len(mutators)
    assert len(resolve_mutators(" , ")) == len(mutators)
    framing = resolve_mutators("framing")
    assert {m.family for m in framing} == {"framing"}
    assert len(framing) == len(mutators.family("framing"))
    picked = resolve_mutators(["rot13", "base64+json", "rot13"])
    assert [m.name for m in picked] == ["rot13", "base64+json"]
    mixed = resolve_mutators("noise,typos")
    assert [m.name for m in mixed].count("typos") == 1


def test_record_validation_and_serialisation() -> None:
    def fn(text: str, rng: random.Random) -> str:
        return text

    with pytest.raises(ConfigError, match="family"):
        Mutator("x", "magic", "d", fn, preserves_payload=True, needs_rng=False)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="name"):
        Mutator("a b", "noise", "d", fn, preserves_payload=True, needs_rng=False)
    with pytest.raises(ConfigError, match="needs a str"):
        get_mutator("rot13")(b"bytes")  # type: ignore[arg-type]
    data = get_mutator("base64+tag_chars").to_dict()
    assert data["chain"] == ["base64", "tag_chars"]
    assert data["preserves_payload"] is False
    assert data["reversible"] is False


def test_a_registry_takes_a_name_once_and_refuses_plus() -> None:
    reg = MutatorRegistry("shieldbench.test-no-such-group", builtin_modules=())

    @reg.register("upper", family="character", description="d", preserves_payload=True,
                  needs_rng=False)  # fmt: skip
    def _upper(text: str, rng: random.Random) -> str:
        return text.upper()

    assert reg.get("upper")("ab") == "AB"
    assert reg.names() == ["upper"]
    assert "upper" in reg

    def other(text: str, rng: random.Random) -> str:
        return text

    with pytest.raises(ConfigError, match="already registered"):
        reg.add(Mutator("upper", "noise", "d", other, preserves_payload=True, needs_rng=False))
    with pytest.raises(ConfigError, match=r"'\+'"):
        reg.add(Mutator("a+b", "noise", "d", other, preserves_payload=True, needs_rng=False))
    reg.unregister("upper")
    assert len(reg) == 0
