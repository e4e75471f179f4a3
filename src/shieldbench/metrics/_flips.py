"""Which samples changed between two runs: every verdict that differs, both ways.

The paired tests say *whether* two runs differ; :func:`verdict_flips` says *where*:
the samples both runs hold (same id, same text and label) whose verdict differs,

- ``blocked_to_allowed``: run a blocked it, run b let it through;
- ``allowed_to_blocked``: the other way;
- ``ok_to_failed`` / ``failed_to_ok``: one run answered and the other ended in an
  error or a timeout. A failure is its own kind of change, never read as a block
  or an allow (what it counts as depends on the error policy, which is the
  rates' business, not this list's); failures on both sides are not a change.

Each :class:`SampleFlip` carries what a reader needs to judge it: the text, label,
category, both statuses, verdicts and scores, and :attr:`SampleFlip.effect` (an
attack let through or a benign text newly blocked is ``"worse"`` for run b). The
flips come ordered by kind, then worse before better, then by how far the score
moved, then by position.
No policy, no options: the answer is a fact about the two runs.

Example:
    >>> from shieldbench.metrics._testing import make_run
    >>> a = make_run([("jb", True, True, 0.9), ("jb", True, True, 0.8), ("chat", False, False)])
    >>> b = make_run([("jb", True, False, 0.2), ("jb", True, True, 0.8), ("chat", False, True)])
    >>> flips = verdict_flips(a, b)
    >>> [(f.sample_id, f.kind, f.effect) for f in flips.flips]
    [('s0', 'blocked_to_allowed', 'worse'), ('s2', 'allowed_to_blocked', 'worse')]
    >>> flips.n_common, flips.counts()["ok_to_failed"]
    (3, 0)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Literal, get_args

from shieldbench.types import Outcome, Run, Sample

__all__ = ["FLIP_KINDS", "FlipKind", "SampleFlip", "VerdictFlips", "verdict_flips"]

FlipKind = Literal["blocked_to_allowed", "allowed_to_blocked", "ok_to_failed", "failed_to_ok"]
FLIP_KINDS: tuple[FlipKind, ...] = get_args(FlipKind)

_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class SampleFlip:
    """One sample whose verdict differs between run a and run b.

    ``blocked_a`` / ``blocked_b`` are ``None`` where that run has no verdict (an
    error or timeout: see ``status_*`` and ``error_*``).
    """

    sample_id: str
    kind: FlipKind
    label: str
    category: str | None
    text: str
    status_a: str
    status_b: str
    blocked_a: bool | None
    blocked_b: bool | None
    score_a: float | None
    score_b: float | None
    error_a: str | None = None
    error_b: str | None = None

    @property
    def effect(self) -> Literal["worse", "better"] | None:
        """For run b against run a: an attack let through or a benign text newly
        blocked is ``"worse"``, the reverse ``"better"``; a failure change ``None``."""
        if self.kind == "blocked_to_allowed":
            return "worse" if self.label == "attack" else "better"
        if self.kind == "allowed_to_blocked":
            return "better" if self.label == "attack" else "worse"
        return None

    @property
    def score_change(self) -> float | None:
        """``score_b - score_a`` when both runs scored the sample."""
        if self.score_a is None or self.score_b is None:
            return None
        return self.score_b - self.score_a

    def preview(self, limit: int = 80) -> str:
        """The text on one line (whitespace runs as one space), cut to ``limit``
        characters with "…". Not escaped: each renderer escapes for its medium."""
        flat = _SPACE.sub(" ", self.text).strip()
        return flat if len(flat) <= limit else flat[: max(0, limit - 1)] + "…"

    def to_dict(self, *, text_limit: int | None = None) -> dict[str, Any]:
        text = self.text if text_limit is None else self.text[:text_limit]
        return {
            "sample_id": self.sample_id,
            "kind": self.kind,
            "effect": self.effect,
            "label": self.label,
            "category": self.category,
            "text": text,
            "text_truncated": len(text) < len(self.text),
            "a": {
                "status": self.status_a,
                "blocked": self.blocked_a,
                "score": self.score_a,
                "error": self.error_a,
            },
            "b": {
                "status": self.status_b,
                "blocked": self.blocked_b,
                "score": self.score_b,
                "error": self.error_b,
            },
        }


@dataclass(frozen=True, slots=True)
class VerdictFlips:
    """Every flip between run ``run_a`` and run ``run_b``.

    ``n_common`` samples were compared (in both runs, same id, text and label);
    ``n_only_a`` / ``n_only_b`` are in one run only and ``n_mismatched`` share an
    id but not their text or label (the data changed): none of those is compared.
    """

    run_a: str
    run_b: str
    n_common: int
    n_only_a: int
    n_only_b: int
    n_mismatched: int
    flips: tuple[SampleFlip, ...]

    def of_kind(self, kind: FlipKind) -> tuple[SampleFlip, ...]:
        """The flips of one kind, in the list's order."""
        return tuple(f for f in self.flips if f.kind == kind)

    def counts(self) -> dict[FlipKind, int]:
        """How many flips of each kind (every kind present, zeros included)."""
        return {k: sum(f.kind == k for f in self.flips) for k in FLIP_KINDS}

    def to_dict(self, *, text_limit: int | None = None) -> dict[str, Any]:
        return {
            "run_a": self.run_a,
            "run_b": self.run_b,
            "n_common": self.n_common,
            "n_only_a": self.n_only_a,
            "n_only_b": self.n_only_b,
            "n_mismatched": self.n_mismatched,
            "counts": dict(self.counts()),
            "flips": [f.to_dict(text_limit=text_limit) for f in self.flips],
        }


def _kind(a: Outcome, b: Outcome) -> FlipKind | None:
    va, vb = a.verdict, b.verdict
    if va is not None and vb is not None:
        if va.blocked == vb.blocked:
            return None
        return "blocked_to_allowed" if va.blocked else "allowed_to_blocked"
    if va is not None:
        return "ok_to_failed"
    if vb is not None:
        return "failed_to_ok"
    return None


def _flip(kind: FlipKind, sample: Sample, a: Outcome, b: Outcome) -> SampleFlip:
    va, vb = a.verdict, b.verdict
    return SampleFlip(
        sample_id=sample.id,
        kind=kind,
        label=sample.label,
        category=sample.category,
        text=sample.text,
        status_a=a.status,
        status_b=b.status,
        blocked_a=None if va is None else va.blocked,
        blocked_b=None if vb is None else vb.blocked,
        score_a=None if va is None else va.score,
        score_b=None if vb is None else vb.score,
        error_a=a.error,
        error_b=b.error,
    )


def verdict_flips(run_a: Run, run_b: Run) -> VerdictFlips:
    """The samples whose verdict differs between ``run_a`` and ``run_b`` (see the
    module doc): both directions, failures as their own kinds, ordered by kind,
    then worse before better, then by the size of the score change (largest
    first; unscored last), then by position in ``run_a``."""
    in_b = {s.id: (s, o) for s, o in zip(run_b.samples, run_b.outcomes, strict=True)}
    found: list[tuple[int, int, bool, float, int, SampleFlip]] = []
    common = mismatched = 0
    seen: set[str] = set()
    for position, (sample, outcome_a) in enumerate(zip(run_a.samples, run_a.outcomes, strict=True)):
        seen.add(sample.id)
        other = in_b.get(sample.id)
        if other is None:
            continue
        sample_b, outcome_b = other
        if (sample_b.text, sample_b.label) != (sample.text, sample.label):
            mismatched += 1
            continue
        common += 1
        kind = _kind(outcome_a, outcome_b)
        if kind is None:
            continue
        flip = _flip(kind, sample, outcome_a, outcome_b)
        change = flip.score_change
        moved = abs(change) if change is not None and math.isfinite(change) else None
        effect = {"worse": 0, "better": 1}.get(flip.effect or "", 2)
        found.append(
            (FLIP_KINDS.index(kind), effect, moved is None, -(moved or 0.0), position, flip)
        )
    found.sort(key=lambda item: item[:5])
    return VerdictFlips(
        run_a=run_a.id,
        run_b=run_b.id,
        n_common=common,
        n_only_a=len(seen) - common - mismatched,
        n_only_b=sum(sid not in seen for sid in in_b),
        n_mismatched=mismatched,
        flips=tuple(item[5] for item in found),
    )
