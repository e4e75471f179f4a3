"""Written and augmented training data (seeded): see :mod:`._written` and ``DATACARD.md``.

Mutated attacks come from short attack texts of the training mix, passed through
the project's attack mutators (:mod:`shieldbench.attacks`): PAIR-like paraphrase,
role-play and persuasion framings, obfuscations, document wrappers (indirect
injection), and a GCG-like gibberish suffix. Benign texts go through the
content-neutral mutators (politeness, verbosity, typos, document wrappers) so
that the wrapper itself is never what the model learns.
"""

from __future__ import annotations

import random

from shieldbench.attacks import get_mutator
from shieldbench.train.shieldguard._example import Example
from shieldbench.train.shieldguard._written import (
    documents,
    gibberish_suffix,
    indirect,
    notinject,
)

__all__ = ["ATTACK_MUTATORS", "BENIGN_MUTATORS", "COUNTS", "augmented"]

ATTACK_MUTATORS = (
    "roleplay",
    "fiction",
    "hypothetical",
    "authority",
    "emotional",
    "trust",
    "game",
    "politeness",
    "verbose",
    "synonyms",
    "translation",
    "typos",
    "homoglyphs",
    "leetspeak",
    "zero_width",
    "base64",
    "document",
    "html_hidden",
    "tool_result",
    "markdown",
    "json",
    "xml",
    "split_payload",
)
BENIGN_MUTATORS = ("politeness", "verbose", "typos", "document", "markdown", "filler_sentences")
COUNTS = {
    "notinject": (1500, 200),
    "documents": (1500, 200),
    "indirect": (1500, 0),
    "mutated_attack": (2000, 0),
    "gcg_suffix": (500, 0),
    "mutated_benign": (1000, 0),
}


def augmented(train: list[Example], *, seed: int) -> tuple[list[Example], list[Example]]:
    """``(train, dev)`` written and mutated examples (dev: benign only)."""
    rng = random.Random(seed + 1)
    out: list[Example] = []
    dev: list[Example] = []
    for fn, name, label in ((notinject, "notinject", 0), (documents, "documents", 0)):
        n_train, n_dev = COUNTS[name]
        rows = fn(rng, n_train + n_dev)
        out.extend(Example(text, label, f"written:{name}") for text, _ in rows[:n_train])
        dev.extend(Example(text, label, f"written:{name}") for text, _ in rows[n_train:])
    out.extend(Example(t, 1, "written:indirect") for t, _ in indirect(rng, COUNTS["indirect"][0]))
    short = [e for e in train if len(e.text) < 400]
    attacks = [e.text for e in short if e.label == 1]
    benign = [e.text for e in short if e.label == 0]
    if attacks:
        for _ in range(COUNTS["mutated_attack"][0]):
            mutator = get_mutator(rng.choice(ATTACK_MUTATORS))
            out.append(Example(mutator(rng.choice(attacks), rng), 1, "mutated:attack"))
        for _ in range(COUNTS["gcg_suffix"][0]):
            text = f"{rng.choice(attacks)} {gibberish_suffix(rng)}"
            out.append(Example(text, 1, "mutated:gcg"))
    if benign:
        for _ in range(COUNTS["mutated_benign"][0]):
            mutator = get_mutator(rng.choice(BENIGN_MUTATORS))
            out.append(Example(mutator(rng.choice(benign), rng), 0, "mutated:benign"))
    return out, dev
