"""The stream hold-back rule, attacked directly: whatever the events, fields, check
intervals and hold-back, no character of a match is released before the match was
screened whole (``HoldBack`` in the proxy, ``StreamScreen`` for library users)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shieldbench.errors import ConfigError
from shieldbench.judges import StreamScreen
from shieldbench.judges._defenses import SecretsDefense
from shieldbench.service._outstream import HoldBack
from shieldbench.types import Verdict

SECRET = "AKIA4NQ7ZR2PLWX8TBKD"


class _Word:
    """Blocks a text holding ``word``: it needs exactly ``len(word)`` characters."""

    name = "word"

    def __init__(self, word: str) -> None:
        self.word = word
        self.max_match_chars = len(word)

    def check(self, text: str) -> Verdict:
        return Verdict(blocked=self.word in text, score=None)


@st.composite
def _streams(draw: Any) -> tuple[list[list[tuple[int, str]]], str, int, int]:
    word = draw(st.text("XYZ", min_size=2, max_size=12))
    fields = draw(st.integers(1, 3))
    texts = [draw(st.text("abc ", max_size=300)) for _ in range(fields)]
    target = draw(st.integers(0, fields - 1))
    if draw(st.booleans()):
        at = draw(st.integers(0, len(texts[target])))
        texts[target] = texts[target][:at] + word + texts[target][at:]
    events: list[list[tuple[int, str]]] = []
    offsets = [0] * fields
    while any(offsets[f] < len(texts[f]) for f in range(fields)):
        event = []
        for f in range(fields):
            if offsets[f] < len(texts[f]) and draw(st.booleans()):
                n = draw(st.integers(1, 40))
                event.append((f, texts[f][offsets[f] : offsets[f] + n]))
                offsets[f] += n
        events.append(event)
    holdback = draw(st.integers(len(word), len(word) + 30))
    return events, word, holdback, draw(st.integers(1, 80))


@given(stream=_streams())
@settings(max_examples=400, deadline=None)
def test_no_part_of_a_match_is_released_before_it_is_screened(
    stream: tuple[list[list[tuple[int, str]]], str, int, int],
) -> None:
    events, word, holdback, every = stream
    defense = _Word(word)
    hold = HoldBack(holdback=holdback, check_every=every)
    released: list[list[tuple[int, str]]] = []
    blocked = False
    for event in events:
        pieces = [((f, "content"), text) for f, text in event]
        if hold.add(event, pieces, []):
            if defense.check("\n\n".join(hold.windows(final=False))).blocked:
                blocked = True
                break
            released.extend(hold.clean(final=False))
    if not blocked:
        blocked = defense.check("\n\n".join(hold.windows(final=True))).blocked
        if not blocked:
            released.extend(hold.clean(final=True))
    whole = ["".join(t for e in events for f2, t in e if f2 == f) for f in range(3)]
    shown = ["".join(t for e in released for f2, t in e if f2 == f) for f in range(3)]
    for text, seen in zip(whole, shown, strict=True):
        assert text.startswith(seen)
        start = text.find(word)
        if start >= 0:
            assert blocked
            assert len(seen) <= start  # nothing from the start of the match on
    if not any(word in text for text in whole):
        assert not blocked
        assert shown == whole


def test_whole_answer_mode_releases_nothing_before_the_end() -> None:
    hold = HoldBack(holdback=None, check_every=1)
    assert hold.add("e1", [((0, "content"), "abc")], ["model-x"])
    assert hold.windows(final=False) == ["abc", "model-x"]
    assert hold.clean(final=False) == []  # screened clean, still held: no bound to release by
    assert hold.add("e2", [((0, "content"), "def")], [])
    assert hold.windows(final=True) == ["abcdef"]  # the whole field again
    assert hold.clean(final=True) == ["e1", "e2"]


@given(
    chunks=st.lists(st.text("ab ", max_size=60), max_size=8),
    at=st.integers(0, 8),
    extra=st.integers(0, 40),
)
def test_stream_screen_never_makes_part_of_a_secret_releasable(
    chunks: list[str], at: int, extra: int
) -> None:
    at = min(at, len(chunks))
    chunks = [*chunks[:at], f" {SECRET[:7]}", f"{SECRET[7:]} ", *chunks[at:]]
    screen = StreamScreen(SecretsDefense(), holdback=256 + extra)
    for chunk in chunks:
        screen.feed(chunk)
        start = screen.text.find(SECRET[:4])
        if start >= 0:
            assert screen.releasable <= start
    assert screen.blocked is not None


def test_stream_screen_refuses_a_holdback_shorter_than_the_defense() -> None:
    with pytest.raises(ConfigError, match="shorter"):
        StreamScreen(SecretsDefense(), holdback=10)
    with pytest.raises(ConfigError, match="holdback"):
        StreamScreen(_NoBound())


class _NoBound:
    name = "nobound"

    def check(self, text: str) -> Verdict:
        return Verdict(blocked=False, score=None)
