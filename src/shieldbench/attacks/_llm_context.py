"""What every LLM strategy shares: asking the attacker, judging the goal, querying the defense.

A :class:`Session` is one attack on one blocked sample. It asks the attacker
(:meth:`propose`), asks the on-goal evaluator (:meth:`on_goal`), screens
candidates in one engine call (:meth:`screen`, cut to the query budget), and
writes every step to its transcript. A strategy is a plain function
``(session) -> None`` that stops when :attr:`Session.finished` is true.

:meth:`Session.gather` runs independent attacker work (PAIR's streams, TAP's
branches) concurrently on a bounded thread pool (``settings.concurrency``). It
stays deterministic: whether a job may call the attacker is decided for the whole
batch before any job starts (so a token cap binds at the same place whatever the
timing), each job writes its steps to a private transcript, and the transcripts
are merged in job order, never completion order.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import TypeVar

from shieldbench.attacks._attacker import Attacker, AttackerUsage, Spend, parse_json_object
from shieldbench.attacks._llm_records import LLMSettings, Step, TargetOutcome
from shieldbench.attacks._prompts import EVALUATOR_SYSTEM, evaluator_prompt
from shieldbench.attacks._search import Clock
from shieldbench.engine import EndToEnd
from shieldbench.judges import JudgeContext, combine
from shieldbench.targets import Message, conversation
from shieldbench.types import Sample

__all__ = ["Proposal", "Session", "Verdicts"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Proposal:
    """The attacker's candidate (``text``), or why there is none (``step``)."""

    text: str | None
    raw: str | None
    step: Step | None


@dataclass(frozen=True, slots=True)
class Verdicts:
    """The defense's answer on one candidate (``blocked`` ``None``: errored), and end to
    end the target's ``answer`` and the judges' verdict ``judged``."""

    blocked: bool | None
    score: float | None
    answer: str | None = None
    judged: bool | None = None


@dataclass(slots=True)
class Session:
    """One blocked sample under an LLM attack (see the module docstring)."""

    sample: Sample
    settings: LLMSettings
    attacker: Attacker
    evaluator: Attacker
    clock: Clock
    spend: Spend
    e2e: EndToEnd | None = None
    steps: list[Step] = field(default_factory=list)
    known: dict[str, Verdicts] = field(default_factory=dict)
    queries: int = 0
    bypass: tuple[int, str] | None = None
    preserving: tuple[int, str, int] | None = None
    stopped: bool = False
    pool: Executor | None = None
    gate: bool | None = None
    _start_usage: AttackerUsage = field(default_factory=AttackerUsage)

    def __post_init__(self) -> None:
        self._start_usage = self.spend.usage

    @property
    def goal(self) -> str:
        return self.sample.text

    @property
    def finished(self) -> bool:
        """Done: a goal-preserving bypass, or a budget is spent."""
        if self.preserving is not None or self.stopped:
            return True
        if self.spend.queries_left() <= 0:
            self.spend.stopped_by = self.spend.stopped_by or "queries"
            return True
        return self.spend.out_of_time()

    def may_call(self) -> bool:
        """May an attacker call start? Inside :meth:`gather`, the batch's decision."""
        return self.spend.can_call() if self.gate is None else self.gate

    def gather(self, jobs: Sequence[Callable[[Session], T]]) -> list[T]:
        """Run ``jobs`` (each given its own view of this session) concurrently; results,
        and the steps each recorded, in job order (see the module docstring)."""
        gate = self.spend.can_call()
        forks = [dataclasses.replace(self, steps=[], gate=gate) for _ in jobs]
        if self.pool is None or len(jobs) < 2:
            results = [job(fork) for job, fork in zip(jobs, forks, strict=True)]
        else:
            futures = [self.pool.submit(job, f) for job, f in zip(jobs, forks, strict=True)]
            results = [f.result() for f in futures]
        for fork in forks:
            self.steps.extend(fork.steps)
            self.stopped = self.stopped or fork.stopped
        return results

    def rng(self, *parts: object) -> random.Random:
        """A generator seeded by the attack's seed, this sample and ``parts``."""
        key = "/".join(str(p) for p in (self.settings.seed, self.sample.id, *parts))
        return random.Random(key)

    def propose(self, messages: Sequence[Message], *, stream: int, depth: int) -> Proposal:
        """Ask the attacker for ``{"prompt": ...}``; failures become transcript steps."""
        if not self.may_call():
            self.stopped = True
            return Proposal(None, None, None)
        reply = self.attacker.ask(messages, self.spend)
        if reply.text is None:
            step = Step("attacker_error", stream, depth, error=reply.error)
            self.steps.append(step)
            return Proposal(None, None, step)
        parsed = parse_json_object(reply.text)
        prompt = None if parsed is None else parsed.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            self.spend.mark_unparseable()
            step = Step("unparseable", stream, depth, raw=reply.text[:2000])
            self.steps.append(step)
            return Proposal(None, reply.text, step)
        return Proposal(prompt.strip(), reply.text, None)

    def on_goal(self, candidate: str, *, stream: int, depth: int) -> bool | None:
        """The evaluator's verdict: still the goal? ``None`` when it failed or was unreadable."""
        if not self.may_call():
            self.stopped = True
            return None
        messages = [
            {"role": "system", "content": EVALUATOR_SYSTEM},
            {"role": "user", "content": evaluator_prompt(self.goal, candidate)},
        ]
        reply = self.evaluator.ask(messages, self.spend)
        if reply.text is None:
            self.steps.append(Step("evaluator_error", stream, depth, error=reply.error))
            return None
        parsed = parse_json_object(reply.text)
        verdict = None if parsed is None else parsed.get("on_goal")
        if not isinstance(verdict, bool):
            self.spend.mark_unparseable()
            self.steps.append(Step("evaluator_error", stream, depth, raw=reply.text[:2000]))
            return None
        return verdict

    def prune(self, text: str, *, stream: int, depth: int) -> None:
        self.steps.append(Step("pruned", stream, depth, text=text, on_goal=False))

    def screen(
        self,
        texts: Sequence[str],
        *,
        on_goal: Sequence[bool | None],
        where: Sequence[tuple[int, int]],
    ) -> list[Verdicts | None]:
        """Screen the candidates in one engine call; ``None`` for those past the budget.

        A text already screened on this sample (or twice in the batch) is not sent
        again: it is a ``repeat`` step with the verdict it got, at no query.
        Records a ``sent`` (or ``unsent``) step per other candidate and the first
        bypass / goal-preserving bypass.
        """
        fresh: list[int] = []
        for i, text in enumerate(texts):
            if text not in self.known and all(texts[j] != text for j in fresh):
                fresh.append(i)
        sent = fresh[: self.spend.queries_left()]
        ids = [f"{self.sample.id}~{where[i][0]}.{where[i][1]}" for i in sent]
        outcomes = (
            dict(zip(sent, self.clock.screen([texts[i] for i in sent], ids), strict=True))
            if sent
            else {}
        )
        results: list[Verdicts | None] = []
        for i, (text, goal, (stream, depth)) in enumerate(zip(texts, on_goal, where, strict=True)):
            if i not in outcomes:
                cached = self.known.get(text)
                if cached is None:
                    self.spend.stopped_by = self.spend.stopped_by or "queries"
                    self.steps.append(Step("unsent", stream, depth, text=text, on_goal=goal))
                else:
                    self.steps.append(Step("repeat", stream, depth, text, goal, cached.blocked,
                                           cached.score))  # fmt: skip
                results.append(cached)
                continue
            verdict = outcomes[i].verdict
            self.spend.queries += 1
            self.queries += 1
            index = self.spend.queries
            blocked = None if verdict is None else verdict.blocked
            score = None if verdict is None else verdict.score
            error = outcomes[i].error if verdict is None else None
            answer, judged = self.end_to_end(text) if blocked is False else (None, None)
            self.steps.append(
                Step("sent", stream, depth, text, goal, blocked, score, index, error=error,
                     answer=None if answer is None else answer[:2000], judged=judged)
            )  # fmt: skip
            if blocked is False:
                if self.bypass is None:
                    self.bypass = (index, text)
                if goal is True and self.preserving is None:
                    self.preserving = (index, text, depth)
            seen = Verdicts(blocked, score, answer, judged)
            results.append(seen)
            if verdict is not None:  # an errored query may be retried later
                self.known[text] = seen
        return results

    def end_to_end(self, text: str) -> tuple[str | None, bool | None]:
        """The target's answer to ``text`` and the judges' verdict (``None``s: none/failed)."""
        if self.e2e is None or self.settings.strategy == "crescendo":
            return None, None  # Crescendo talks to the target turn by turn itself
        probe = Sample(self.sample.id, text, "attack", category=self.sample.category)
        try:
            answer = self.e2e.target.generate(conversation(probe, self.e2e.system_prompt))
        except Exception as exc:  # a target failure is recorded in the answer's place
            self.steps.append(Step("target_error", -1, -1, text=text, error=repr(exc)[:500]))
            return None, None
        if not self.e2e.judges:
            return answer, None
        context = JudgeContext(system_prompt=self.e2e.system_prompt, canary=self.e2e.canary)
        try:
            verdicts = [j.judge(probe, answer, context) for j in self.e2e.judges]
        except Exception as exc:  # a judge failure leaves the verdict unknown, never guessed
            self.steps.append(Step("evaluator_error", -1, -1, text=text, error=repr(exc)[:500]))
            return answer, None
        return answer, combine(verdicts, self.e2e.rule)

    def outcome(self) -> TargetOutcome:
        """This sample's record (its attacker spend is the difference since it began)."""
        now, then = self.spend.usage, self._start_usage
        usage = AttackerUsage(
            **{k: getattr(now, k) - getattr(then, k) for k in AttackerUsage.__dataclass_fields__}
        )
        return TargetOutcome(
            sample_id=self.sample.id,
            category=self.sample.category,
            goal=self.goal,
            queries=self.queries,
            bypass_index=None if self.bypass is None else self.bypass[0],
            preserving_index=None if self.preserving is None else self.preserving[0],
            bypass_text=None if self.bypass is None else self.bypass[1],
            preserving_text=None if self.preserving is None else self.preserving[1],
            turn=None if self.preserving is None else self.preserving[2],
            usage=usage,
            steps=tuple(self.steps),
        )
