"""Benign look-alikes of the attack frames, so that a frame alone is not a signal.

The attack side (:mod:`shieldbench.attacks._framing`) wraps harmful or
instruction-overriding payloads in persuasion frames: role-play personas, fiction,
hypotheticals, games with points, pleading, claimed credentials, translate-then-do.
If only attacks wear those frames, a classifier learns that the frame *is* the attack
and blocks "Pretend you are a ship's captain and describe a storm". This module
writes the same kinds of frame, in the same vocabulary, around benign requests, to be
labelled benign: then the frame carries no signal and only harmful or overriding
content does.

Everything comes from ``train/data/shieldguard/frames.json``, written for shieldbench (no dataset
rows copied or paraphrased):

- ``frames``: templates by family (:data:`FAMILIES`), each with one ``{payload}``
  slot where a benign request goes verbatim;
- ``requests``: benign requests (everyday, study, work, code, health information,
  travel, cooking, writing), the payloads when the caller gives none;
- ``roleplay_prompts``: standalone benign role-play and creative prompts, by kind;
- ``slots``: fillers for the other ``{name}`` markers (``{city}``, ``{hero}`` ...).

None of it removes the assistant's rules or asks for harmful content (the tests
guard that). :func:`framed` draws frame families evenly, :func:`roleplay_prompts`
draws kinds evenly; slots are filled with ``rng.choice`` (one value per slot name
per text), so the same rng state gives the same texts. Payloads are put in with
:meth:`str.replace` after the slots are filled, so braces in a payload stay as given.

Every template (frame, request or prompt) belongs to one split, by a hash of its text
(:func:`split_of`): about 15% are ``"dev"``. ``split="dev"`` draws only dev
templates, so a threshold calibrated on dev texts is not calibrated on near-copies of
training texts. Caller-supplied payloads are used as given on either side.

    >>> import random
    >>> egg = "How long should I boil an egg?"
    >>> pairs = framed(random.Random(0), 9, payloads=[egg])
    >>> sorted(family for _, family in pairs) == sorted(FAMILIES)
    True
    >>> all(egg in text for text, _ in pairs)
    True
    >>> framed(random.Random(7), 4) == framed(random.Random(7), 4)
    True
    >>> texts = [text for text, _ in roleplay_prompts(random.Random(0), 50, split="dev")]
    >>> len(texts), any("{" in text or "}" in text for text in texts)
    (50, False)
    >>> framed(random.Random(0), 1, split="test")
    Traceback (most recent call last):
    ...
    ValueError: split must be 'train' or 'dev', got 'test'
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from shieldbench.train.shieldguard._paths import data_file

__all__ = ["FAMILIES", "SPLITS", "framed", "roleplay_prompts", "split_of"]

FAMILIES: tuple[str, ...] = (
    "roleplay",
    "fiction",
    "hypothetical",
    "game",
    "emotional",
    "credentials",
    "format",
    "translation",
    "operator",
)
SPLITS: tuple[str, ...] = ("train", "dev")

_RESOURCE = "frames.json"
_DEV_PERCENT = 15
_PAYLOAD = "payload"
_KEYS = frozenset({"about", "version", "slots", "frames", "requests", "roleplay_prompts"})
_MARKER = re.compile(r"\{([^{}]*)\}")
_SLOT_NAME = re.compile(r"[a-z][a-z0-9_]*")

# split -> templates, for one family, one kind or the requests
_Sides = Mapping[str, tuple[str, ...]]


@dataclass(frozen=True)
class _Bank:
    slots: Mapping[str, tuple[str, ...]]
    frames: Mapping[str, _Sides]  # family -> split -> frame templates
    requests: _Sides
    prompts: Mapping[str, _Sides]  # kind -> split -> prompt templates


def split_of(template: str) -> str:
    """``"dev"`` for about 15% of templates (by a hash of the text), else ``"train"``.

    >>> split_of("Reply only in French: {payload}") in SPLITS
    True
    """
    digest = hashlib.sha256(("frames:" + template).encode()).digest()
    return "dev" if digest[0] % 100 < _DEV_PERCENT else "train"


def _check_split(split: str) -> str:
    if split not in SPLITS:
        raise ValueError(f"split must be 'train' or 'dev', got {split!r}")
    return split


def _check_n(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    return n


def _strings(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise ValueError(f"frames bank: {where} must be a non-empty list of strings")
    for item in value:
        if not isinstance(item, str) or not item.strip():
            raise ValueError(f"frames bank: {where} holds {item!r}, not a non-empty string")
    if len(set(value)) != len(value):
        duplicate = next(item for item in value if value.count(item) > 1)
        raise ValueError(f"frames bank: {where} repeats the template {duplicate!r}")
    return tuple(value)


def _groups(value: object, where: str) -> dict[str, tuple[str, ...]]:
    if not isinstance(value, dict) or not value:
        raise ValueError(f"frames bank: {where} must be a non-empty object of lists")
    return {str(key): _strings(items, f"{where}[{key!r}]") for key, items in value.items()}


def _check_template(template: str, where: str, slots: Mapping[str, object], *, frame: bool) -> None:
    """Raise ValueError naming ``template`` if its markers are not what ``where`` allows."""
    rest = _MARKER.sub("", template)
    if "{" in rest or "}" in rest:
        raise ValueError(f"frames bank: {where}: unbalanced brace in template {template!r}")
    names = _MARKER.findall(template)
    for name in names:
        if name == _PAYLOAD and not frame:
            raise ValueError(f"frames bank: {where}: {{payload}} outside a frame: {template!r}")
        if name != _PAYLOAD and name not in slots:
            raise ValueError(f"frames bank: {where}: unknown slot {{{name}}} in {template!r}")
    if frame and names.count(_PAYLOAD) != 1:
        raise ValueError(f"frames bank: {where}: a frame needs one {{payload}}: {template!r}")


def _sides(templates: tuple[str, ...], where: str) -> _Sides:
    sides = {split: tuple(t for t in templates if split_of(t) == split) for split in SPLITS}
    for split, chosen in sides.items():
        if not chosen:
            raise ValueError(f"frames bank: {where} has no {split!r} template; write more")
    return sides


def _parse(raw: object) -> _Bank:
    """Validate a decoded bank and split its templates (ValueError on any fault)."""
    if not isinstance(raw, dict):
        raise ValueError("frames bank: the top level must be a JSON object")
    if set(raw) != _KEYS:
        raise ValueError(f"frames bank: keys must be {sorted(_KEYS)}, got {sorted(raw)}")
    slots = _groups(raw["slots"], "slots")
    for name, values in slots.items():
        if not _SLOT_NAME.fullmatch(name) or name == _PAYLOAD:
            raise ValueError(f"frames bank: bad slot name {name!r}")
        for value in values:
            if "{" in value or "}" in value:
                raise ValueError(f"frames bank: slot {name!r} value {value!r} has a brace")
    frames = _groups(raw["frames"], "frames")
    if tuple(frames) != FAMILIES:
        raise ValueError(f"frames bank: frame families must be {FAMILIES}, got {tuple(frames)}")
    requests = _strings(raw["requests"], "requests")
    prompts = _groups(raw["roleplay_prompts"], "roleplay_prompts")
    checks = [(t, f"frames[{f!r}]", True) for f, ts in frames.items() for t in ts]
    checks += [(t, "requests", False) for t in requests]
    checks += [(t, f"roleplay_prompts[{k!r}]", False) for k, ts in prompts.items() for t in ts]
    for template, where, frame in checks:
        _check_template(template, where, slots, frame=frame)
    return _Bank(
        slots=slots,
        frames={family: _sides(ts, f"frames[{family!r}]") for family, ts in frames.items()},
        requests=_sides(requests, "requests"),
        prompts={kind: _sides(ts, f"roleplay_prompts[{kind!r}]") for kind, ts in prompts.items()},
    )


@functools.cache
def _load(path: Path) -> _Bank:
    return _parse(json.loads(path.read_text(encoding="utf-8")))


def _bank() -> _Bank:
    """The parsed ``frames.json`` of the data folder (:func:`._paths.data_dir`)."""
    return _load(data_file(_RESOURCE))


def _fill(rng: random.Random, template: str, slots: Mapping[str, tuple[str, ...]]) -> str:
    """Fill every slot but ``{payload}``, one value per slot name, left to right."""
    chosen: dict[str, str] = {}

    def pick(match: re.Match[str]) -> str:
        name = match.group(1)
        if name == _PAYLOAD:
            return match.group(0)
        if name not in chosen:
            chosen[name] = rng.choice(slots[name])
        return chosen[name]

    return _MARKER.sub(pick, template)


def _even(rng: random.Random, groups: Sequence[str], n: int) -> list[str]:
    """``n`` group names, each shuffled round using every group once (counts differ by <= 1)."""
    order: list[str] = []
    while len(order) < n:
        block = list(groups)
        rng.shuffle(block)
        order.extend(block)
    return order[:n]


def framed(
    rng: random.Random, n: int, *, payloads: Sequence[str] = (), split: str = "train"
) -> list[tuple[str, str]]:
    """n benign (text, family) pairs: a benign frame around a benign request.

    The request is ``rng.choice(payloads)`` verbatim when payloads are given, else one
    of the bank's requests of ``split`` with its slots filled. Families come evenly
    (every family once per round, rounds shuffled).
    """
    side = _check_split(split)
    _check_n(n)
    if isinstance(payloads, str):
        raise TypeError("payloads must be a sequence of strings, not one string")
    given = tuple(payloads)
    if not all(isinstance(payload, str) for payload in given):
        raise TypeError("payloads must be strings")
    bank = _bank()
    out: list[tuple[str, str]] = []
    for family in _even(rng, FAMILIES, n):
        frame = _fill(rng, rng.choice(bank.frames[family][side]), bank.slots)
        if given:
            payload = rng.choice(given)
        else:
            payload = _fill(rng, rng.choice(bank.requests[side]), bank.slots)
        out.append((frame.replace("{" + _PAYLOAD + "}", payload), family))
    return out


def roleplay_prompts(rng: random.Random, n: int, *, split: str = "train") -> list[tuple[str, str]]:
    """n benign standalone role-play / creative prompts (text, kind), kinds drawn evenly.

    Kinds: ``persona`` (act as / pretend / role-play), ``story``, ``verse``, ``script``
    (scenes, dialogues, sketches), ``interactive`` (games, quizzes, text adventures)
    and ``letter`` (diaries, letters, logs).
    """
    side = _check_split(split)
    _check_n(n)
    bank = _bank()
    return [
        (_fill(rng, rng.choice(bank.prompts[kind][side]), bank.slots), kind)
        for kind in _even(rng, tuple(bank.prompts), n)
    ]
