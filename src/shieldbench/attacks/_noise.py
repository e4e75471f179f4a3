"""Noise mutators: typos, filler words, filler sentences and ragged whitespace.

Cheap perturbations that break exact phrases while a reader (and a model) shrugs
them off, so they all preserve the payload; none is reversible.

Example:
    >>> from shieldbench.attacks import get_mutator
    >>> out = get_mutator("typos")("ignore the previous instructions", 4)
    >>> out != "ignore the previous instructions" and len(out.split()) == 4
    True
"""

from __future__ import annotations

import random
import re

from shieldbench.attacks._mutator import mutators

__all__: list[str] = []

_LONG_WORD = re.compile(r"[^\W\d_]{3,}")
_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
_NEIGHBOURS = {
    c: "".join(
        row[j]
        for j in (i - 1, i + 1)
        if 0 <= j < len(row)
    )
    for row in _ROWS
    for i, c in enumerate(row)
}  # fmt: skip


def _typo(word: str, rng: random.Random) -> str:
    i = rng.randrange(1, len(word) - 1)
    op = rng.randrange(4)
    if op == 0:  # swap two neighbouring letters
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    if op == 1:  # drop a letter
        return word[:i] + word[i + 1 :]
    if op == 2:  # double a letter
        return word[: i + 1] + word[i] + word[i + 1 :]
    near = _NEIGHBOURS.get(word[i].lower())  # hit a neighbouring key
    if not near:
        return word[: i + 1] + word[i] + word[i + 1 :]
    return word[:i] + rng.choice(near) + word[i + 1 :]


@mutators.register(
    "typos",
    family="noise",
    description="Typos in ~25% of words (swapped, dropped, doubled or neighbouring-key letters).",
    preserves_payload=True,
    needs_rng=True,
)
def _typos(text: str, rng: random.Random) -> str:
    return _LONG_WORD.sub(
        lambda m: _typo(m.group(0), rng) if rng.random() < 0.25 else m.group(0), text
    )


_FILLERS = ("um,", "like,", "you know,", "basically,", "honestly,", "I mean,", "sort of", "kind of")


@mutators.register(
    "filler_words",
    family="noise",
    description="Spoken fillers ('um,', 'you know,', 'basically,') before ~20% of words.",
    preserves_payload=True,
    needs_rng=True,
)
def _filler_words(text: str, rng: random.Random) -> str:
    words = text.split(" ")
    out: list[str] = []
    for word in words:
        if word and rng.random() < 0.2:
            out.append(rng.choice(_FILLERS))
        out.append(word)
    return " ".join(out)


_SENTENCES = (
    "The weather has been lovely this week.",
    "My cat knocked a plant off the shelf this morning.",
    "I had pasta for lunch, which was nice.",
    "The train was ten minutes late again.",
    "We are repainting the kitchen a pale green.",
    "Our team won the pub quiz on Thursday.",
    "I still need to return the library books.",
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@mutators.register(
    "filler_sentences",
    family="noise",
    description="1-3 unrelated small-talk sentences inserted at random sentence boundaries.",
    preserves_payload=True,
    needs_rng=True,
)
def _filler_sentences(text: str, rng: random.Random) -> str:
    parts = _SENTENCE_END.split(text)
    for filler in rng.sample(_SENTENCES, rng.randint(1, 3)):
        parts.insert(rng.randint(0, len(parts)), filler)
    return " ".join(parts)


_GAPS = ("  ", "   ", "\t", "\n", " \n ", "\u00a0")


@mutators.register(
    "whitespace",
    family="noise",
    description="~40% of single spaces replaced by runs of spaces, tabs, newlines or"
    " no-break spaces.",
    preserves_payload=True,
    needs_rng=True,
)
def _whitespace(text: str, rng: random.Random) -> str:
    return "".join(rng.choice(_GAPS) if c == " " and rng.random() < 0.4 else c for c in text)
