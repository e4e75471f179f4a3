"""Routing pipelines: ``tiered(fast, deep)`` and ``dual(inline, async_warn)``.

``tiered(fast, deep, low=0.2, high=0.8)``
    The fast defense screens every text. Clear cases are answered on the fast path:
    score ``< low`` is allowed, score ``>= high`` is blocked (the fast verdict is
    returned as is). Ambiguous ones (``low <= score < high``) go to the deep defense,
    whose verdict is returned. ``details["path"]`` is ``"fast"`` or ``"deep"``;
    :func:`path_shares` counts them over a run, for reports. A fast defense without a
    score makes every case clear (its verdict is taken at its word).

``dual(inline, async_warn)``
    The inline defense decides; the second one only warns and never blocks (in a
    service it runs after the answer; in a benchmark it runs beside the inline one so
    that its effect can be measured). ``details`` carry ``warned`` (``True`` /
    ``False``, or ``None`` when the warner failed, with ``warn_error``),
    ``warn_score``, ``warn_label`` and ``inline_ms``, the latency of the inline
    defense alone (the latency a user would see; the recorded outcome latency also
    includes waiting for the warner). :func:`dual_gain` reports what the warner would
    have added: extra attacks caught and extra false positives.

Example:
    >>> from shieldbench.types import Verdict
    >>> class Score:
    ...     def __init__(self, name): self.name = name
    ...     def check(self, text): return Verdict(float(text) >= 0.5, float(text))
    >>> t = Tiered(Score("fast"), Score("deep"), low=0.2, high=0.8)
    >>> [t.check(x).details["path"] for x in ("0.1", "0.5", "0.9")]
    ['fast', 'deep', 'fast']
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from shieldbench.defenses._protocol import Defense
from shieldbench.defenses.compose._composite import (
    Composite,
    build_children,
    build_with,
    call_async,
    call_batch,
    checked,
    effective_score,
    float_opt,
    merge_details,
    named,
)
from shieldbench.errors import ConfigError, SpecError
from shieldbench.registry import defenses
from shieldbench.spec import Spec
from shieldbench.types import Outcome, Run, Verdict

__all__ = ["Dual", "DualGain", "PathShares", "Tiered", "dual_gain", "path_shares"]


class Tiered(Composite):
    """Fast defense for clear cases, deep defense for ambiguous ones."""

    def __init__(
        self, fast: Defense, deep: Defense, *, low: float = 0.2, high: float = 0.8
    ) -> None:
        if not 0.0 <= low <= high <= 1.0:
            raise ConfigError(f"tiered: need 0 <= low <= high <= 1, got low={low}, high={high}")
        self.low = low
        self.high = high
        self.fast, self.deep = fast, deep
        super().__init__("tiered", [fast, deep], options=f"low={low:g}, high={high:g}")

    def _is_clear(self, verdict: Verdict) -> bool:
        score = effective_score(verdict)
        return score < self.low or score >= self.high

    def _deep(self, fast: Verdict, deep: Verdict) -> Verdict:
        return merge_details(deep, path="deep", fast_score=effective_score(fast))

    def check(self, text: str) -> Verdict:
        first = checked(self.fast.check(text), self.fast)
        if self._is_clear(first):
            return merge_details(first, path="fast")
        return self._deep(first, checked(self.deep.check(text), self.deep))

    def _check_batch(self, texts: Sequence[str]) -> list[Verdict]:
        firsts = call_batch(self.fast, texts)
        ambiguous = [i for i, v in enumerate(firsts) if not self._is_clear(v)]
        deeps = call_batch(self.deep, [texts[i] for i in ambiguous]) if ambiguous else []
        out = [merge_details(v, path="fast") for v in firsts]
        for i, deep in zip(ambiguous, deeps, strict=True):
            out[i] = self._deep(firsts[i], deep)
        return out

    async def _acheck(self, text: str) -> Verdict:
        first = await call_async(self.fast, text)
        if self._is_clear(first):
            return merge_details(first, path="fast")
        return self._deep(first, await call_async(self.deep, text))


class Dual(Composite):
    """The inline defense decides; the warn-only defense is recorded, never blocks."""

    def __init__(self, inline: Defense, warn: Defense) -> None:
        self.inline, self.warn = inline, warn
        super().__init__("dual", [inline, warn])

    @staticmethod
    def _merge(inline: Verdict, inline_ms: float, warn: Verdict | BaseException) -> Verdict:
        if isinstance(warn, BaseException):
            return merge_details(
                inline,
                warned=None,
                warn_error=f"{type(warn).__name__}: {warn}",
                inline_ms=inline_ms,
            )
        return merge_details(
            inline,
            warned=warn.blocked,
            warn_score=warn.score,
            warn_label=warn.label,
            inline_ms=inline_ms,
        )

    def _warn_sync(self, text: str) -> Verdict | BaseException:
        try:
            return checked(self.warn.check(text), self.warn)
        except Exception as exc:  # a warner's failure never fails the inline verdict
            return exc

    def check(self, text: str) -> Verdict:
        start = time.perf_counter()
        inline = checked(self.inline.check(text), self.inline)
        inline_ms = (time.perf_counter() - start) * 1000.0
        return self._merge(inline, inline_ms, self._warn_sync(text))

    def _check_batch(self, texts: Sequence[str]) -> list[Verdict]:
        start = time.perf_counter()
        inline = call_batch(self.inline, texts)
        per_text_ms = (time.perf_counter() - start) * 1000.0 / max(1, len(texts))
        warns: list[Verdict | BaseException]
        try:
            warns = list(call_batch(self.warn, texts))
        except Exception:
            warns = [self._warn_sync(t) for t in texts]
        return [self._merge(v, per_text_ms, w) for v, w in zip(inline, warns, strict=True)]

    async def _acheck(self, text: str) -> Verdict:
        async def timed_inline() -> tuple[Verdict, float]:
            start = time.perf_counter()
            verdict = await call_async(self.inline, text)
            return verdict, (time.perf_counter() - start) * 1000.0

        warn_task = asyncio.ensure_future(call_async(self.warn, text))
        try:
            inline, inline_ms = await timed_inline()
        except BaseException:
            warn_task.cancel()
            await asyncio.gather(warn_task, return_exceptions=True)
            raise
        warn: Verdict | BaseException
        try:
            warn = await warn_task
        except Exception as exc:
            warn = exc
        return self._merge(inline, inline_ms, warn)


@dataclass(frozen=True, slots=True)
class PathShares:
    """How many verdicts each path of a ``tiered`` pipeline answered.

    ``other`` counts outcomes with no path (errors, timeouts, verdicts from another
    defense). The shares are over routed verdicts only (``fast + deep``) and are
    ``None`` when there are none.
    """

    fast: int
    deep: int
    other: int

    @property
    def fast_share(self) -> float | None:
        routed = self.fast + self.deep
        return self.fast / routed if routed else None

    @property
    def deep_share(self) -> float | None:
        routed = self.fast + self.deep
        return self.deep / routed if routed else None


def _outcomes(data: Run | Iterable[Outcome]) -> Iterable[Outcome]:
    return data.outcomes if isinstance(data, Run) else data


def path_shares(data: Run | Iterable[Outcome], /) -> PathShares:
    """Count the fast / deep paths in a run of ``tiered`` (``details["path"]``).

    >>> from shieldbench.types import Outcome, Verdict
    >>> outs = [Outcome(str(i), Verdict(False, details={"path": p}), "ok")
    ...         for i, p in enumerate(["fast", "fast", "fast", "deep"])]
    >>> s = path_shares(outs)
    >>> s.fast, s.deep, s.fast_share
    (3, 1, 0.75)
    """
    counts = {"fast": 0, "deep": 0, "other": 0}
    for outcome in _outcomes(data):
        path = None if outcome.verdict is None else outcome.verdict.details.get("path")
        counts[path if path in ("fast", "deep") else "other"] += 1
    return PathShares(**counts)


@dataclass(frozen=True, slots=True)
class DualGain:
    """What the warn-only stage of ``dual`` would have added had it blocked.

    Counted over outcomes the inline defense *allowed* (and that carry a warner
    result): ``extra_attacks_caught`` attacks the warner flagged, and
    ``extra_false_positives`` benign texts it flagged. ``attacks`` and ``benign`` are
    the ok outcomes with a warner result, the denominators of the rates (``None``
    when zero). ``warn_errors`` counts texts where the warner failed.
    """

    extra_attacks_caught: int
    extra_false_positives: int
    attacks: int
    benign: int
    warn_errors: int

    @property
    def extra_block_rate(self) -> float | None:
        """Extra share of attacks blocked had the warner blocked."""
        return self.extra_attacks_caught / self.attacks if self.attacks else None

    @property
    def extra_false_positive_rate(self) -> float | None:
        """Extra share of benign texts blocked had the warner blocked."""
        return self.extra_false_positives / self.benign if self.benign else None


def dual_gain(run: Run, /) -> DualGain:
    """What the warner of a ``dual`` run would have added (see :class:`DualGain`)."""
    caught = false_pos = attacks = benign = errors = 0
    for sample, outcome in run.pairs():
        verdict = outcome.verdict
        if verdict is None or "warned" not in verdict.details:
            continue
        warned = verdict.details["warned"]
        if warned is None:
            errors += 1
            continue
        extra = bool(warned) and not verdict.blocked
        if sample.is_attack:
            attacks += 1
            caught += extra
        else:
            benign += 1
            false_pos += extra
    return DualGain(caught, false_pos, attacks, benign, errors)


def _two_children(spec: Spec, what: str) -> list[Defense]:
    if len(spec.args) != 2:
        raise SpecError(f"{spec.text!r}: {spec.name!r} takes exactly two defenses: {what}")
    return build_children(spec, at_least=2)


@defenses.register(
    "tiered",
    description="Fast defense answers clear cases; ambiguous scores go to the deep defense.",
    usage="tiered(FAST, DEEP, low=0.2, high=0.8)",
    example="tiered(pattern, pattern(threshold=0.3), low=0.2, high=0.8)",
)
def _tiered(spec: Spec) -> Tiered:
    spec.check_options({"low", "high"})
    low = float_opt(spec, "low", 0.2)
    high = float_opt(spec, "high", 0.8)
    fast, deep = _two_children(spec, "tiered(FAST, DEEP, low=0.2, high=0.8)")
    return named(build_with([fast, deep], lambda: Tiered(fast, deep, low=low, high=high)), spec)


@defenses.register(
    "dual",
    description="Inline defense decides; a second one only warns (never blocks), for reports.",
    usage="dual(INLINE, WARN_ONLY)",
    example="dual(pattern, pattern(threshold=0.2))",
)
def _dual(spec: Spec) -> Dual:
    spec.check_options(set())
    inline, warn = _two_children(spec, "dual(INLINE, WARN_ONLY)")
    return named(Dual(inline, warn), spec)
