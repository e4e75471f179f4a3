"""Attacks written for the user's application: ``shieldbench generate``.

The attacker model is told the application's purpose and asked, category by
category and in batches, for attack prompts (with a subcategory and severity)
and for benign requests of the same application (the false-positive side).
Every sample records where it came from in its metadata: the generator model
(``generator_model``), the exact prompt that asked for it (``generator_prompt``)
and the purpose. Exact and near duplicates (shingle Jaccard >= ``threshold``,
:func:`shieldbench.datasets.near_duplicates`) are removed, the first kept.
Failed calls and unparseable answers are counted, never filled in; items with
a severity outside low/medium/high/critical keep the text and no severity.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from shieldbench.attacks._attacker import (
    Attacker,
    AttackerUsage,
    Budget,
    Spend,
    parse_json_object,
)
from shieldbench.attacks._prompts import GENERATE_SYSTEM, generate_prompt
from shieldbench.datasets import Dataset, near_duplicates, normalize_text
from shieldbench.errors import ConfigError
from shieldbench.types import SEVERITIES, Sample

__all__ = ["Generated", "generate_dataset"]

_BATCH = 20
_TRIES = 3


@dataclass(frozen=True, slots=True)
class Generated:
    """The dataset written, and what it cost: ``duplicates`` removed, calls that failed."""

    dataset: Dataset
    usage: AttackerUsage
    duplicates: int
    failures: tuple[str, ...]
    short: dict[str, int]
    system_prompt: str = GENERATE_SYSTEM


def _items(
    attacker: Attacker, spend: Spend, prompt: str, failures: list[str]
) -> list[dict[str, Any]]:
    messages = [
        {"role": "system", "content": GENERATE_SYSTEM},
        {"role": "user", "content": prompt},
    ]
    reply = attacker.ask(messages, spend)
    if reply.text is None:
        failures.append(f"call failed: {reply.error}")
        return []
    parsed = parse_json_object(reply.text)
    items = None if parsed is None else parsed.get("items")
    if not isinstance(items, list):
        spend.mark_unparseable()
        failures.append(f"unparseable answer: {reply.text[:200]!r}")
        return []
    return [i for i in items if isinstance(i, dict) and isinstance(i.get("text"), str)]


def _sample(
    attacker: Attacker, item: dict[str, Any], *, index: int, category: str, label: str,
    purpose: str, prompt: str,
) -> Sample:  # fmt: skip
    severity = item.get("severity")
    sub = item.get("subcategory")
    return Sample(
        f"gen-{category}-{index}",
        item["text"].strip(),
        "attack" if label == "attack" else "benign",
        category=category,
        subcategory=sub if isinstance(sub, str) and sub else None,
        severity=severity if severity in SEVERITIES and label == "attack" else None,
        tier="novel" if label == "attack" else None,
        source=f"generate:{attacker.spec}",
        metadata={
            "generator_model": attacker.describe().get("model", attacker.spec),
            "generator_prompt": prompt,
            "purpose": purpose,
        },
    )


def _collect(
    attacker: Attacker,
    spend: Spend,
    *,
    purpose: str,
    category: str,
    label: str,
    n: int,
    failures: list[str],
    kept: list[str],
    threshold: float,
) -> tuple[list[Sample], int]:
    """Up to ``n`` samples, none an exact or near duplicate of ``kept`` (which grows).

    Returns the samples and how many duplicates were dropped. A batch that adds
    nothing new still counts as a try, so a model that repeats itself ends.
    """
    out: list[Sample] = []
    dups = 0
    for batch in range(1, _TRIES * math.ceil(n / _BATCH) + 1):
        if len(out) >= n:
            break
        prompt = generate_prompt(purpose, category, min(_BATCH, n - len(out)), label=label)
        if batch > 1:
            prompt += f" This is batch {batch}: write new ones, unlike earlier batches."
        items = _items(attacker, spend, prompt, failures)
        texts = [i["text"].strip() for i in items]
        pairs = near_duplicates([*kept, *texts], threshold=threshold) if texts else []
        exact = {normalize_text(t) for t in kept}
        drop = {j - len(kept) for i, j, _ in pairs if j >= len(kept)}
        for k, item in enumerate(items):
            key = normalize_text(texts[k])
            if k in drop or key in exact:
                dups += 1
                continue
            if len(out) >= n:
                break
            exact.add(key)
            kept.append(texts[k])
            out.append(_sample(attacker, item, index=len(out) + 1, category=category,
                               label=label, purpose=purpose, prompt=prompt))  # fmt: skip
    return out, dups


def generate_dataset(
    attacker: Attacker,
    *,
    purpose: str,
    categories: Sequence[str],
    n: int,
    benign: int | None = None,
    threshold: float = 0.8,
    name: str = "generated",
) -> Generated:
    """``n`` attacks spread over ``categories`` and ``benign`` (default ``n``) benign requests.

    See the module docstring. ``short`` says, per category, how many fewer
    samples than asked the model gave (after de-duplication).
    """
    if not purpose.strip():
        raise ConfigError("--purpose: describe the application, e.g. 'a support bot for a bank'")
    cats = [c.strip() for c in categories if c.strip()]
    if not cats:
        raise ConfigError("--categories: name at least one attack category")
    if n < 1:
        raise ConfigError(f"--n must be >= 1, got {n}")
    spend = Spend(Budget(0))
    failures: list[str] = []
    samples: list[Sample] = []
    kept: list[str] = []
    exact = 0
    wanted: dict[str, int] = {}
    per, extra = divmod(n, len(cats))
    for i, cat in enumerate(cats):
        wanted[cat] = per + (i < extra)
        got, dups = _collect(attacker, spend, purpose=purpose, category=cat, label="attack",
                             n=wanted[cat], failures=failures, kept=kept,
                             threshold=threshold)  # fmt: skip
        samples, exact = samples + got, exact + dups
    wanted["benign"] = n if benign is None else benign
    if wanted["benign"]:
        got, dups = _collect(attacker, spend, purpose=purpose, category="benign",
                             label="benign", n=wanted["benign"], failures=failures,
                             kept=kept, threshold=threshold)  # fmt: skip
        samples, exact = samples + got, exact + dups
    have = {c: sum(1 for s in samples if s.category == c) for c in wanted}
    return Generated(
        dataset=Dataset(name, tuple(samples)),
        usage=spend.usage,
        duplicates=exact,
        failures=tuple(failures),
        short={c: wanted[c] - have[c] for c in wanted if have[c] < wanted[c]},
    )
