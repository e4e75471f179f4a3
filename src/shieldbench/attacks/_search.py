"""The adaptive loop: a budgeted black-box search for mutations the defense lets through.

1. **Static pass.** The chosen attack samples (all, or a seeded subset of
   ``max_attacks``) are screened once. Those let through are static bypasses;
   those blocked *with a verdict* become the search's targets. An errored static
   query is never searched (the error policy decides how it counts in the ASR).
2. **Rounds.** Each round spreads what is left of the budget evenly over the
   rounds left and the targets still standing, builds that many candidates, and
   screens them all in one engine call (so concurrency, batching, timeouts,
   retries and error handling are those of ``run``). A candidate is a parent
   text plus one more mutator; chains grow by one step per round up to
   ``max_depth``, never repeat a mutator, and never repeat a text already tried
   on that target.

   - ``beam`` (``greedy`` is beam width 1): the parents are the target's beam,
     its ``beam_width`` lowest-scoring blocked candidates so far; children that
     do not raise the score over their parent's compete for the beam with the
     old members (which win ties), so the search follows the defense's score
     down and, with width > 1, also explores plateaus.
   - ``random``: each candidate is a random chain of 1..min(round, max_depth)
     mutators applied to the original text; scores are ignored.
3. **Stopping.** A target is finished at its first payload-preserving bypass. A
   bypass whose chain may hide the payload from the model is recorded, and the
   search on that target goes on with payload-preserving mutators only. The
   search stops when the budget is spent, the rounds are done, or no target can
   produce a new candidate.

The budget counts search queries only: the static pass and transfer replays are
reported separately. An errored query counts against the budget and is never a
bypass. Engine retries of one candidate are one query. Every random choice comes
from a ``random.Random`` seeded by (seed, sample id, round), so a result depends
only on the seed and the defense's answers, not on concurrency or on the other
attacks. Candidates of one round are screened together, so an attack may spend
the rest of its round's share after its first bypass (they are counted).
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from shieldbench.attacks._figures import Tally
from shieldbench.attacks._mutator import Mutator
from shieldbench.attacks._records import AttackSettings, Bypass, RoundSummary
from shieldbench.defenses import Defense
from shieldbench.engine import Executor, screen
from shieldbench.metrics import rate
from shieldbench.types import Outcome, RunConfig, Sample

__all__ = ["MAX_CANDIDATE_CHARS", "Clock", "Search", "Target"]

MAX_CANDIDATE_CHARS = 50_000
"""Candidates longer than this (chained expansions: binary of base64 of ...) are not queried."""

_TRIES = 4


class Clock:
    """Calls :func:`~shieldbench.engine.screen` and adds up the wall time spent in it."""

    def __init__(
        self, defense: Defense, config: RunConfig, executor: Executor | None = None
    ) -> None:
        self.defense = defense
        self.config = config
        self.executor = executor
        self.seconds = 0.0

    def screen(self, texts: Sequence[str], ids: Sequence[str]) -> list[Outcome]:
        start = time.perf_counter()
        try:
            return screen(self.defense, texts, config=self.config, ids=ids, executor=self.executor)
        finally:
            self.seconds += time.perf_counter() - start


@dataclass(slots=True)
class _Candidate:
    text: str
    chain: tuple[str, ...]
    depth: int
    score: float | None
    preserves: bool
    tried: set[str] = field(default_factory=set)


@dataclass(slots=True)
class Target:
    """One blocked attack under search, and what the search found on it."""

    sample: Sample
    score: float | None
    beam: list[_Candidate] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    queries: int = 0
    bypass: Bypass | None = None
    preserving: Bypass | None = None
    exhausted: bool = False

    def __post_init__(self) -> None:
        self.beam = [self.root()]
        self.seen = {self.sample.text}

    def root(self) -> _Candidate:
        return _Candidate(self.sample.text, (), 0, self.score, True)

    @property
    def done(self) -> bool:
        return self.preserving is not None or self.exhausted


@dataclass(slots=True)
class _Query:
    target: Target
    candidate: _Candidate
    parent_score: float | None
    step: tuple[str, ...]


class Search:
    """The rounds of one attack (see the module docstring for the algorithm)."""

    def __init__(
        self,
        clock: Clock,
        targets: Sequence[Target],
        pool: Sequence[Mutator],
        settings: AttackSettings,
        strategy: str,
        baseline: tuple[int, int],
    ) -> None:
        self.clock = clock
        self.targets = list(targets)
        self.pool = list(pool)
        self.preserving_pool = [m for m in self.pool if m.preserves_payload]
        self.settings = settings
        self.guided = strategy != "random"
        self.width = 1 if strategy == "greedy" else settings.beam_width
        self.population, self.static_bypassed = baseline
        self.used = 0
        self.errors = 0
        self.tally = Tally()
        self.rounds: list[RoundSummary] = []
        self.events: list[tuple[int, bool]] = []

    def run(self, on_round: Callable[[RoundSummary], None] | None = None) -> None:
        s = self.settings
        for r in range(1, s.rounds + 1):
            left = s.budget - self.used
            active = [t for t in self.targets if not t.done]
            if left <= 0 or not active:
                break
            quotas = self._quotas(len(active), math.ceil(left / (s.rounds - r + 1)), r)
            queries: list[_Query] = []
            for t, quota in zip(active, quotas, strict=True):
                batch = self._generate(t, quota, r)
                if quota and not batch:
                    t.exhausted = True
                queries.extend(batch)
            if not queries:
                if all(t.done for t in self.targets):
                    break
                continue
            ids = [f"{q.target.sample.id}~r{r}q{i}" for i, q in enumerate(queries)]
            outcomes = self.clock.screen([q.candidate.text for q in queries], ids)
            errors = self._absorb(queries, outcomes, r)
            summary = RoundSummary(
                round=r,
                queries=self.used,
                candidates=len(queries),
                errors=errors,
                active=len(active),
                asr=rate(self.static_bypassed + self.n_bypassed, self.population),
                preserving_asr=rate(self.static_bypassed + self.n_preserving, self.population),
            )
            self.rounds.append(summary)
            if on_round is not None:
                on_round(summary)

    @property
    def n_bypassed(self) -> int:
        return sum(1 for t in self.targets if t.bypass is not None)

    @property
    def n_preserving(self) -> int:
        return sum(1 for t in self.targets if t.preserving is not None)

    def _quotas(self, n: int, budget: int, r: int) -> list[int]:
        """``budget`` queries over ``n`` targets; the remainder to a seeded few."""
        per, extra = divmod(budget, n)
        order = list(range(n))
        random.Random(f"{self.settings.seed}/quota/{r}").shuffle(order)
        lucky = set(order[:extra])
        return [per + (i in lucky) for i in range(n)]

    def _eligible(self, t: Target, parent: _Candidate) -> list[Mutator]:
        pool = self.preserving_pool if t.bypass is not None else self.pool
        if not parent.chain:
            return list(pool)
        used = frozenset(parent.chain)
        return [m for m in pool if used.isdisjoint(m.chain)]

    def _accept(self, t: Target, text: str, parent_text: str) -> bool:
        if text == parent_text or text in t.seen or len(text) > MAX_CANDIDATE_CHARS:
            return False
        t.seen.add(text)
        return True

    def _generate(self, t: Target, quota: int, r: int) -> list[_Query]:
        out: list[_Query] = []
        rng = random.Random(f"{self.settings.seed}/{t.sample.id}/{r}")
        for j in range(quota):
            query = self._child(t, rng, j) if self.guided else self._random_chain(t, rng, r)
            if query is not None:
                out.append(query)
        return out

    def _child(self, t: Target, rng: random.Random, j: int) -> _Query | None:
        """One more step on beam member ``j`` (round-robin, best first; the next if stuck)."""
        expandable = [c for c in t.beam if c.depth < self.settings.max_depth]
        for k in range(len(expandable)):
            parent = expandable[(j + k) % len(expandable)]
            eligible = self._eligible(t, parent)
            untried = [m for m in eligible if m.name not in parent.tried]
            choices = untried or [m for m in eligible if m.needs_rng]
            for _ in range(_TRIES):
                if not choices:
                    break
                m = rng.choice(choices)
                parent.tried.add(m.name)
                text = m(parent.text, rng)
                if self._accept(t, text, parent.text):
                    child = _Candidate(
                        text,
                        parent.chain + m.chain,
                        parent.depth + 1,
                        None,
                        parent.preserves and m.preserves_payload,
                    )
                    return _Query(t, child, parent.score, m.chain)
                if not m.needs_rng:
                    choices.remove(m)
        return None

    def _random_chain(self, t: Target, rng: random.Random, r: int) -> _Query | None:
        """A random chain of 1..min(round, max_depth) distinct mutators on the original."""
        root = t.root()
        eligible = self._eligible(t, root)
        for _ in range(_TRIES):
            if not eligible:
                return None
            length = rng.randint(1, min(r, self.settings.max_depth, len(eligible)))
            picks = rng.sample(eligible, length)
            names = [n for m in picks for n in m.chain]
            if len(set(names)) < len(names):
                continue
            text = root.text
            for m in picks:
                text = m(text, rng)
            if self._accept(t, text, root.text):
                preserves = all(m.preserves_payload for m in picks)
                child = _Candidate(text, tuple(names), length, None, preserves)
                return _Query(t, child, t.score, tuple(names))
        return None

    def _absorb(self, queries: Sequence[_Query], outcomes: Sequence[Outcome], r: int) -> int:
        """Count the queries, record bypasses, update the beams; returns the errors."""
        errors = 0
        kids: dict[int, list[_Candidate]] = {}
        for i, (q, outcome) in enumerate(zip(queries, outcomes, strict=True)):
            t, cand = q.target, q.candidate
            t.queries += 1
            verdict = outcome.verdict
            bypassed = verdict is not None and not verdict.blocked
            score = None if verdict is None else verdict.score
            drop = None
            if self.guided and q.parent_score is not None and score is not None:
                drop = q.parent_score - score
            self.tally.record(cand.chain, q.step, bypassed=bypassed, score_drop=drop)
            if verdict is None:
                errors += 1
                continue
            cand.score = score
            if bypassed:
                self._record_bypass(t, cand, r, self.used + i + 1)
            elif score is not None and (q.parent_score is None or score <= q.parent_score):
                kids.setdefault(id(t), []).append(cand)
        self.used += len(queries)
        self.errors += errors
        if self.guided:
            for t in self.targets:
                if not t.done:
                    self._update_beam(t, kids.get(id(t), []))
        return errors

    def _record_bypass(self, t: Target, cand: _Candidate, r: int, index: int) -> None:
        if t.preserving is not None or (t.bypass is not None and not cand.preserves):
            return
        found = Bypass(
            sample_id=t.sample.id,
            category=t.sample.category,
            original_text=t.sample.text,
            text=cand.text,
            chain=cand.chain,
            preserves_payload=cand.preserves,
            score_before=t.score,
            score_after=cand.score,
            round=r,
            queries=t.queries,
            query_index=index,
        )
        if t.bypass is None:
            t.bypass = found
            self.events.append((index, False))
        if cand.preserves:
            t.preserving = found
            self.events.append((index, True))

    def _update_beam(self, t: Target, kids: list[_Candidate]) -> None:
        """Keep the ``width`` lowest-scoring candidates; old members win ties."""
        pool = [*t.beam, *(k for k in kids if k.depth < self.settings.max_depth)]
        if t.bypass is not None:
            pool = [c for c in pool if c.preserves]
        pool.sort(key=lambda c: math.inf if c.score is None else c.score)
        t.beam = pool[: self.width] or [t.root()]


def choose_attacks(samples: Sequence[Sample], settings: AttackSettings) -> list[Sample]:
    """The attack samples to consider: all, or a seeded subset in dataset order."""
    attacks = [s for s in samples if s.is_attack]
    m = settings.max_attacks
    if m is None or m >= len(attacks):
        return attacks
    keep = sorted(random.Random(f"{settings.seed}/choose").sample(range(len(attacks)), m))
    return [attacks[i] for i in keep]


def search_config(config: RunConfig) -> RunConfig:
    """The engine config for search rounds: the same, without warm-up calls."""
    return dataclasses.replace(config, warmup=0)
