"""Benign texts in 20 languages, many with "attack words", so language is not evidence either.

What: ``overdefense_i18n(rng, n)`` returns ``n`` benign ``(text, language)`` pairs drawn
from a hand-written template bank, ``train/data/shieldguard/overdefense_i18n.json``
(training data, not in the wheel). In every language about two thirds of the templates
use the vocabulary of prompt injection in innocent senses (how to *ignore* empty cells
in Excel, a mayor who *declared* a delay, pool rules that *forbid* swimming without a
cap, what a *system prompt* is, *developer mode* on a phone, an *injection* at the
doctor's) and one third are plain everyday requests and statements (recipes, travel,
homework, work e-mail, health, tech support, local news).

Why: shieldguard saw far more non-English attacks (machine-translated injections,
multilingual injection corpora) than non-English benign text, so the language itself
became a shortcut: a benign question in Polish or Japanese risked a flag for being in
Polish or Japanese. NotInject-style data (InjecGuard / PIGuard) in many languages takes
away both shortcuts, the trigger word and the language. Every text is benign: asking
*about* system prompts or jailbreaks is in, telling the assistant to drop its rules is not.

How the bank works: each language has ``slots`` (slot name -> values) and ``templates``
(``{"category": "trigger" | "everyday", "text": ...}``). A ``{slot}`` marker is filled
with ``rng.choice`` from that language's values; one value per slot name per text, so a
repeated marker repeats its value. Values carry their own grammar where the language
needs it (``w Krakowie``, ``в пятницу``, ``İzmir'de``, ``στη Θεσσαλονίκη``), so nothing is
inflected here. Loading validates the bank and raises ``ValueError`` naming the language
and the template for an unknown slot, a stray brace, an empty slot, a duplicate template,
an unknown category, or a language left without a train or a dev template.

How the split works: a template is ``"dev"`` when the first byte of
``sha256("overdefense-i18n:" + template_text)`` modulo 100 is below 15, otherwise
``"train"``. It depends only on the template's own text, so it survives reordering and
additions, and no dev text comes from a train template (slot values are shared; the
sentence frames are not).

Sampling picks a language first (the ten major languages weigh twice as much as the
other ten), then a template of that language in the split, uniformly. Same seed, same
texts:

    >>> import random
    >>> pairs = overdefense_i18n(random.Random(7), 6)
    >>> pairs == overdefense_i18n(random.Random(7), 6)
    True
    >>> len(pairs), all(language in LANGUAGES for _, language in pairs)
    (6, True)
    >>> any("{" in text or "}" in text for text, _ in pairs)
    False
    >>> {language for _, language in overdefense_i18n(random.Random(0), 2000, split="dev")} == set(
    ...     LANGUAGES
    ... )
    True
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from shieldbench.train.shieldguard._paths import data_file

__all__ = [
    "DEV_PERCENT",
    "LANGUAGES",
    "MAJOR_WEIGHT",
    "SPLITS",
    "distinct_texts",
    "overdefense_i18n",
    "split_of",
    "templates",
]

DEV_PERCENT = 15
SPLITS = ("train", "dev")
MAJOR_WEIGHT = 2.0  # sampling weight of a major language; the others weigh 1
_RESOURCE = "overdefense_i18n.json"
_SALT = "overdefense-i18n:"
_MARKER = re.compile(r"\{([a-z][a-z0-9_]*)\}")
_CODE = re.compile(r"[a-z]{2}")
_CATEGORIES = ("trigger", "everyday")


@dataclass(frozen=True)
class _Language:
    name: str
    major: bool
    slots: Mapping[str, tuple[str, ...]]
    by_split: Mapping[str, tuple[str, ...]]


def split_of(template: str) -> str:
    """``"dev"`` for about 15% of templates (by a hash of the text), else ``"train"``."""
    digest = hashlib.sha256((_SALT + template).encode()).digest()
    return "dev" if digest[0] % 100 < DEV_PERCENT else "train"


def _fail(where: str, problem: str) -> ValueError:
    return ValueError(f"overdefense_i18n bank: {where}: {problem}")


def _values(raw: object, where: str) -> tuple[str, ...]:
    if not isinstance(raw, list) or not raw or not all(isinstance(v, str) and v for v in raw):
        raise _fail(where, "slot values must be a non-empty list of non-empty strings")
    if any("{" in v or "}" in v for v in raw):
        raise _fail(where, "a slot value contains a brace")
    return tuple(raw)


def _language(code: str, raw: object) -> _Language:
    where = f"language {code!r}"
    if not _CODE.fullmatch(code):
        raise _fail(where, "the key must be a two-letter ISO 639-1 code")
    if not isinstance(raw, dict):
        raise _fail(where, "expected an object")
    name, major, slots_raw, entries = (raw.get(k) for k in ("name", "major", "slots", "templates"))
    if not isinstance(name, str) or not isinstance(major, bool):
        raise _fail(where, "needs 'name' (a string) and 'major' (true or false)")
    if not isinstance(slots_raw, dict) or not isinstance(entries, list) or not entries:
        raise _fail(where, "needs 'slots' (an object) and 'templates' (a non-empty list)")
    slots = {slot: _values(v, f"{where}, slot {slot!r}") for slot, v in slots_raw.items()}
    by_split: dict[str, list[str]] = {split: [] for split in SPLITS}
    seen: set[str] = set()
    for entry in entries:
        text = entry.get("text") if isinstance(entry, dict) else None
        if not isinstance(text, str) or not text.strip():
            raise _fail(where, f"template {entry!r} needs a non-empty 'text'")
        here = f"{where}, template {text!r}"
        if entry.get("category") not in _CATEGORIES:
            raise _fail(here, f"category must be one of {_CATEGORIES}")
        if text in seen:
            raise _fail(here, "duplicate template")
        seen.add(text)
        for slot in _MARKER.findall(text):
            if slot not in slots:
                raise _fail(here, f"unknown slot {slot!r} (slots: {sorted(slots)})")
        rest = _MARKER.sub("", text)
        if "{" in rest or "}" in rest:
            raise _fail(here, "stray brace outside a {slot} marker")
        by_split[split_of(text)].append(text)
    for split, texts in by_split.items():
        if not texts:
            raise _fail(where, f"no {split!r} template (add or reword templates)")
    return _Language(name, major, slots, {s: tuple(t) for s, t in by_split.items()})


def _parse(data: object) -> dict[str, _Language]:
    languages = data.get("languages") if isinstance(data, dict) else None
    if not isinstance(languages, dict) or not languages:
        raise _fail("top level", "expected {'languages': {code: {...}, ...}}")
    return {code: _language(code, raw) for code, raw in languages.items()}


@cache
def _load(path: Path) -> dict[str, _Language]:
    return _parse(json.loads(path.read_text(encoding="utf-8")))


def _bank() -> dict[str, _Language]:
    """The parsed ``overdefense_i18n.json`` of the data folder (:func:`._paths.data_dir`)."""
    return _load(data_file(_RESOURCE))


LANGUAGES: tuple[str, ...] = tuple(_bank())


def _check(language: str | None, split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    if language is not None and language not in LANGUAGES:
        raise ValueError(f"unknown language {language!r}; the bank has {LANGUAGES}")


def templates(language: str, split: str = "train") -> tuple[str, ...]:
    """The raw templates (with ``{slot}`` markers) of ``language`` in ``split``."""
    _check(language, split)
    return _bank()[language].by_split[split]


def distinct_texts(language: str, split: str = "train") -> int:
    """How many different texts ``language`` can yield in ``split`` (an upper bound)."""
    _check(language, split)
    lang = _bank()[language]
    total = 0
    for template in lang.by_split[split]:
        count = 1
        for slot in set(_MARKER.findall(template)):
            count *= len(lang.slots[slot])
        total += count
    return total


def _fill(rng: random.Random, template: str, slots: Mapping[str, tuple[str, ...]]) -> str:
    chosen: dict[str, str] = {}

    def replace(match: re.Match[str]) -> str:
        slot = match.group(1)
        if slot not in chosen:
            chosen[slot] = rng.choice(slots[slot])
        return chosen[slot]

    return _MARKER.sub(replace, template)


def overdefense_i18n(rng: random.Random, n: int, *, split: str = "train") -> list[tuple[str, str]]:
    """n benign (text, language) pairs; split "train" or "dev" draws from disjoint templates."""
    _check(None, split)
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    bank = _bank()
    weights = [MAJOR_WEIGHT if bank[code].major else 1.0 for code in LANGUAGES]
    pairs: list[tuple[str, str]] = []
    for code in rng.choices(LANGUAGES, weights=weights, k=n):
        lang = bank[code]
        pairs.append((_fill(rng, rng.choice(lang.by_split[split]), lang.slots), code))
    return pairs
