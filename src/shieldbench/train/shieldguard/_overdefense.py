"""Benign texts full of "attack words", so shieldguard stops treating the words as evidence.

What: a generator of benign English (text, category) pairs from a hand-written template
bank, ``train/data/shieldguard/overdefense_en.json`` (training data, not in the wheel).
The texts use the vocabulary of prompt-injection and jailbreak attacks in innocent
senses: what is *allowed* on a ferry, a lease that *forbids* subletting, a minister who
*admitted* costs rose, a gene that is *suppressed*, a service that *terminates*, a child
who *pretends* to be a dragon, how to *enable developer mode* on a phone, what a *system
prompt* is.

Why: a classifier fine-tuned on attacks learns shortcuts. Words such as "ignore",
"override", "restricted", "stated", "reveal" or "rules" are far more common in attacks
than in its benign data, so the words alone push harmless text over the threshold; this
is over-defense. InjecGuard / PIGuard answer it with MOF (mitigating over-defense for
free): add many natural benign texts that contain the trigger words, so the only way to
separate the classes is the intent, not the vocabulary. This module is that data for
shieldguard. Every text is benign: talking *about* jailbreaks or system prompts is in,
instructions to the assistant to drop its rules are not.

How the bank works: ``slots`` maps a slot name to values, and each template's ``{name}``
markers are filled with ``rng.choice`` independently (``{name#2}`` draws a second, different
value from the same slot). Loading validates the bank: an unknown slot name, a stray brace
or a category not listed raises ``ValueError`` naming the template.

How the split works: a template is ``"dev"`` when the first byte of
``sha256("overdefense:" + template_text)`` modulo 100 is below 15, otherwise ``"train"``.
The split depends only on the template's own text, so it is stable when templates are
added or reordered, roughly 15% of templates are held out, and no dev text can come from a
train template (slot values are shared; the sentence frames are not).

Sampling picks a category uniformly, then a template of that category in the split, so no
category dominates however many templates it has; a text already made in the same call is
redrawn (up to 20 times, within the category), so outputs repeat only once the category's
fillings run short. The same seed gives the same texts:

    >>> import random
    >>> pairs = overdefense(random.Random(7), 5)
    >>> pairs == overdefense(random.Random(7), 5)
    True
    >>> len(pairs), any("{" in text or "}" in text for text, _ in pairs)
    (5, False)
    >>> {c for _, c in overdefense(random.Random(0), 400, split="dev")} == set(categories())
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
    "SPLITS",
    "categories",
    "distinct_texts",
    "overdefense",
    "split_of",
    "templates",
]

DEV_PERCENT = 15
SPLITS = ("train", "dev")
_RESOURCE = "overdefense_en.json"
_REDRAWS = 20  # tries for a text not yet in this call's output before accepting a repeat
_MARKER = re.compile(r"\{([a-z_][a-z0-9_]*)(?:#(\d+))?\}")


@dataclass(frozen=True)
class _Template:
    category: str
    text: str
    split: str
    # Each distinct marker ("{city}", "{city#2}") with its slot name, in order of appearance.
    markers: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class _Bank:
    slots: Mapping[str, tuple[str, ...]]
    templates: tuple[_Template, ...]
    categories: tuple[str, ...]


def split_of(text: str) -> str:
    """``"dev"`` for about 15% of template texts (by hash), ``"train"`` for the rest."""
    digest = hashlib.sha256(("overdefense:" + text).encode()).digest()
    return "dev" if digest[0] % 100 < DEV_PERCENT else "train"


def _strings(value: object, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise ValueError(f"overdefense bank: {what} must be a non-empty list of strings")
    return tuple(value)


def _parse(data: object) -> _Bank:
    """Validate a decoded bank and index it; ``ValueError`` names what is wrong."""
    if not isinstance(data, dict):
        raise ValueError("overdefense bank: expected a JSON object")
    raw_slots, raw_templates, raw_categories = (
        data.get("slots"),
        data.get("templates"),
        data.get("categories"),
    )
    if not isinstance(raw_slots, dict) or not isinstance(raw_templates, list):
        raise ValueError("overdefense bank: needs 'slots' (object) and 'templates' (list)")
    slots = {str(name): _strings(values, f"slot {name!r}") for name, values in raw_slots.items()}
    for name, values in slots.items():
        if any("{" in v or "}" in v for v in values):
            raise ValueError(f"overdefense bank: a value of slot {name!r} contains a brace")
    known = set(raw_categories) if isinstance(raw_categories, dict) else None
    parsed: list[_Template] = []
    seen: set[str] = set()
    for entry in raw_templates:
        if not isinstance(entry, dict):
            raise ValueError(f"overdefense bank: template {entry!r} is not an object")
        text, category = entry.get("text"), entry.get("category")
        if not isinstance(text, str) or not isinstance(category, str):
            raise ValueError(f"overdefense bank: template {entry!r} needs 'text' and 'category'")
        if known is not None and category not in known:
            raise ValueError(f"overdefense bank: unknown category {category!r} in {text!r}")
        if text in seen:
            raise ValueError(f"overdefense bank: duplicate template {text!r}")
        seen.add(text)
        markers = {m.group(0): m.group(1) for m in _MARKER.finditer(text)}
        for name in markers.values():
            if name not in slots:
                raise ValueError(f"overdefense bank: unknown slot {name!r} in template {text!r}")
        for name in set(markers.values()):
            wanted = sum(1 for n in markers.values() if n == name)
            if wanted > len(slots[name]):
                raise ValueError(f"overdefense bank: slot {name!r} too small for {text!r}")
        rest = _MARKER.sub("", text)
        if "{" in rest or "}" in rest:
            raise ValueError(f"overdefense bank: stray brace in template {text!r}")
        parsed.append(_Template(category, text, split_of(text), tuple(markers.items())))
    cats = tuple(sorted({t.category for t in parsed}))
    return _Bank(slots, tuple(parsed), cats)


@cache
def _load(path: Path) -> _Bank:
    return _parse(json.loads(path.read_text(encoding="utf-8")))


def _bank() -> _Bank:
    """The parsed ``overdefense_en.json`` of the data folder (:func:`._paths.data_dir`)."""
    return _load(data_file(_RESOURCE))


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")


def templates(split: str = "train") -> tuple[tuple[str, str], ...]:
    """The (category, template text) pairs of one split, in bank order."""
    _check_split(split)
    return tuple((t.category, t.text) for t in _bank().templates if t.split == split)


def categories() -> tuple[str, ...]:
    """The bank's categories, sorted."""
    return _bank().categories


def distinct_texts(split: str = "train") -> int:
    """How many different texts the split's templates can yield (product of slot sizes)."""
    _check_split(split)
    bank, total = _bank(), 0
    used: dict[str, int]
    for t in bank.templates:
        if t.split != split:
            continue
        count, used = 1, {}
        for _, name in t.markers:
            count *= len(bank.slots[name]) - used.get(name, 0)
            used[name] = used.get(name, 0) + 1
        total += count
    return total


def _capitalise(value: str) -> str:
    # "the city council" -> "The city council"; leave "iPhone" or "eBay" alone.
    if value[:1].islower() and not value[1:2].isupper():
        return value[0].upper() + value[1:]
    return value


def _sentence_start(before: str) -> bool:
    # Start of the text, after ". ", "? " or "! ", or right after an opening quote.
    stripped = before.rstrip()
    if not stripped or stripped[-1] in ".?!":
        return True
    return before.endswith("'") and (len(before) == 1 or before[-2] in " :(")


def _fill(rng: random.Random, template: _Template, slots: Mapping[str, tuple[str, ...]]) -> str:
    names = [name for _, name in template.markers]
    draws: dict[str, list[str]] = {}
    for name in dict.fromkeys(names):
        k = names.count(name)  # {city} and {city#2} get two different cities
        draws[name] = [rng.choice(slots[name])] if k == 1 else rng.sample(slots[name], k)
    values = {marker: draws[name].pop(0) for marker, name in template.markers}
    text = template.text

    def replace(match: re.Match[str]) -> str:
        value = values[match.group(0)]
        return _capitalise(value) if _sentence_start(text[: match.start()]) else value

    return _MARKER.sub(replace, text)


def overdefense(rng: random.Random, n: int, *, split: str = "train") -> list[tuple[str, str]]:
    """n benign (text, category) pairs; split "train" or "dev" draws from disjoint templates."""
    _check_split(split)
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    bank = _bank()
    by_category: dict[str, list[_Template]] = {}
    for t in bank.templates:
        if t.split == split:
            by_category.setdefault(t.category, []).append(t)
    names = sorted(by_category)
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for _ in range(n):
        category = rng.choice(names)
        # Redraw (template and slots, same category) while the text repeats one already made:
        # a template with few fillings then yields to richer ones instead of repeating.
        for _ in range(_REDRAWS):
            text = _fill(rng, rng.choice(by_category[category]), bank.slots)
            if text not in seen:
                break
        seen.add(text)
        out.append((text, category))
    return out
