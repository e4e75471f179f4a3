"""Voting and score fusion: ``any(...)``, ``all(...)``, ``vote(..., k=2)``, ``fuse(...)``.

Every child screens every text; the verdicts are combined.

- ``vote(a, b, c, k=2)`` blocks when at least ``k`` children block. ``any`` is
  ``k=1`` (maximum recall: block if anyone objects) and ``all`` is ``k=n`` (maximum
  precision: block only if everyone objects).
  Its score is the ``k``-th highest child score, so that ``any`` reports the maximum
  and ``all`` the minimum: a threshold on it behaves like the vote. Label comes from
  the same deciding child; reasons are the blocking children's reasons, prefixed
  with the child's name; ``details`` hold ``{"votes": blocked, "k": k, "n": n}``.
- ``fuse(a, b, weights=0.7|0.3, threshold=0.5)`` is weighted score fusion: the score
  is the weighted mean of the child scores and blocks when it reaches ``threshold``.
  Weights default to equal; they must be >= 0 and not all zero.

A child without a score counts as ``1.0`` when it blocked and ``0.0`` when not
(:func:`effective_score`).

Example:
    >>> from shieldbench.types import Verdict
    >>> class Fixed:
    ...     def __init__(self, name, score): self.name, self.score = name, score
    ...     def check(self, text): return Verdict(self.score >= 0.5, self.score)
    >>> a, b, c = Fixed("a", 0.9), Fixed("b", 0.2), Fixed("c", 0.6)
    >>> v = Vote([a, b, c], k=2).check("x")
    >>> v.blocked, v.score, dict(v.details)
    (True, 0.6, {'votes': 2, 'k': 2, 'n': 3})
    >>> Vote([a, b, c], k=3).check("x").blocked
    False
    >>> round(Fuse([a, b], weights=[3, 1], threshold=0.5).check("x").score, 3)
    0.725
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from shieldbench.defenses._protocol import Defense
from shieldbench.defenses.compose._composite import (
    Composite,
    build_children,
    build_with,
    call_batch,
    checked,
    effective_score,
    float_opt,
    gather_children,
    int_opt,
    named,
)
from shieldbench.errors import ConfigError, SpecError
from shieldbench.registry import defenses
from shieldbench.spec import Spec
from shieldbench.types import Verdict

__all__ = ["Fuse", "Vote"]


def _blocking_reasons(children: Sequence[Defense], verdicts: Sequence[Verdict]) -> tuple[str, ...]:
    reasons: list[str] = []
    for child, verdict in zip(children, verdicts, strict=True):
        if verdict.blocked:
            reasons.extend(f"{child.name}:{r}" for r in verdict.reasons)
            if not verdict.reasons:
                reasons.append(child.name)
    return tuple(reasons)


class Vote(Composite):
    """Blocks when at least ``k`` of the children block (``any``: k=1, ``all``: k=n)."""

    def __init__(self, children: Sequence[Defense], *, k: int = 1, kind: str = "vote") -> None:
        if not 1 <= k <= len(children):
            raise ConfigError(
                f"{kind}: k={k} must be between 1 and the number of defenses ({len(children)})"
            )
        self.k = k
        super().__init__(kind, children, options=f"k={k}" if kind == "vote" else "")

    def _combine(self, verdicts: Sequence[Verdict]) -> Verdict:
        votes = sum(v.blocked for v in verdicts)
        scores = [effective_score(v) for v in verdicts]
        order = sorted(range(len(scores)), key=scores.__getitem__, reverse=True)
        deciding = order[self.k - 1]
        return Verdict(
            blocked=votes >= self.k,
            score=scores[deciding],
            label=verdicts[deciding].label,
            reasons=_blocking_reasons(self._children, verdicts),
            details={"votes": votes, "k": self.k, "n": len(verdicts)},
        )

    def check(self, text: str) -> Verdict:
        return self._combine([checked(c.check(text), c) for c in self._children])

    def _check_batch(self, texts: Sequence[str]) -> list[Verdict]:
        columns = [call_batch(c, texts) for c in self._children]
        return [self._combine(row) for row in zip(*columns, strict=True)]

    async def _acheck(self, text: str) -> Verdict:
        return self._combine(await gather_children(self._children, text))


class Fuse(Composite):
    """Weighted mean of the child scores, blocking at ``threshold``."""

    def __init__(
        self,
        children: Sequence[Defense],
        *,
        weights: Sequence[float] | None = None,
        threshold: float = 0.5,
    ) -> None:
        w = [1.0] * len(children) if weights is None else [float(x) for x in weights]
        if len(w) != len(children):
            raise ConfigError(
                f"fuse: {len(w)} weights for {len(children)} defenses; give one weight per"
                " defense, e.g. weights=0.7|0.3"
            )
        if any(not math.isfinite(x) or x < 0 for x in w) or sum(w) <= 0:
            raise ConfigError(f"fuse: weights must be finite, >= 0 and not all 0, got {w}")
        if not 0.0 <= threshold <= 1.0:
            raise ConfigError(f"fuse: threshold must be in [0, 1], got {threshold}")
        total = sum(w)
        self.weights = tuple(x / total for x in w)
        self.threshold = threshold
        options = f"weights={'|'.join(f'{x:g}' for x in w)}, threshold={threshold:g}"
        super().__init__("fuse", children, options=options)

    def _combine(self, verdicts: Sequence[Verdict]) -> Verdict:
        scores = [effective_score(v) for v in verdicts]
        # Clamped: children promise [0, 1], rounding must not push the mean outside it.
        score = min(1.0, max(0.0, sum(w * s for w, s in zip(self.weights, scores, strict=True))))
        return Verdict(
            blocked=score >= self.threshold,
            score=score,
            reasons=_blocking_reasons(self._children, verdicts),
            details={"scores": scores},
        )

    def check(self, text: str) -> Verdict:
        return self._combine([checked(c.check(text), c) for c in self._children])

    def _check_batch(self, texts: Sequence[str]) -> list[Verdict]:
        columns = [call_batch(c, texts) for c in self._children]
        return [self._combine(row) for row in zip(*columns, strict=True)]

    async def _acheck(self, text: str) -> Verdict:
        return self._combine(await gather_children(self._children, text))


def _parse_weights(spec: Spec) -> list[float] | None:
    raw = spec.str_option("weights")
    if raw is None:
        return None
    try:
        return [float(part) for part in raw.split("|")]
    except ValueError:
        raise SpecError(
            f"{spec.text!r}: weights={raw!r} must be numbers separated by '|', e.g. 0.7|0.3"
        ) from None


@defenses.register(
    "any",
    description="Blocks when any child defense blocks (maximum recall); score = max.",
    usage="any(DEFENSE, DEFENSE, ...)",
    example="any(pattern, pattern(threshold=0.9))",
)
def _any(spec: Spec) -> Vote:
    spec.check_options(set())
    return named(Vote(build_children(spec), k=1, kind="any"), spec)


@defenses.register(
    "all",
    description="Blocks only when every child defense blocks (maximum precision); score = min.",
    usage="all(DEFENSE, DEFENSE, ...)",
    example="all(pattern, pattern(threshold=0.9))",
)
def _all(spec: Spec) -> Vote:
    spec.check_options(set())
    children = build_children(spec)
    return named(build_with(children, lambda: Vote(children, k=len(children), kind="all")), spec)


@defenses.register(
    "vote",
    description="Blocks when at least k child defenses block; score = k-th highest.",
    usage="vote(DEFENSE, DEFENSE, ..., k=2)",
    example="vote(pattern, pattern(threshold=0.9), pattern(threshold=0.2), k=2)",
)
def _vote(spec: Spec) -> Vote:
    spec.check_options({"k"})
    k = int_opt(spec, "k", 2 if len(spec.args) > 1 else 1)
    children = build_children(spec)
    return named(build_with(children, lambda: Vote(children, k=k)), spec)


@defenses.register(
    "fuse",
    description="Weighted score fusion: weighted mean of child scores, blocks at a threshold.",
    usage="fuse(DEFENSE, DEFENSE, ..., weights=0.7|0.3, threshold=0.5)",
    example="fuse(pattern, pattern(threshold=0.9), weights=0.7|0.3, threshold=0.5)",
)
def _fuse(spec: Spec) -> Fuse:
    spec.check_options({"weights", "threshold"})
    threshold = float_opt(spec, "threshold", 0.5)
    weights = _parse_weights(spec)
    children = build_children(spec)
    fuse = build_with(children, lambda: Fuse(children, weights=weights, threshold=threshold))
    return named(fuse, spec)
