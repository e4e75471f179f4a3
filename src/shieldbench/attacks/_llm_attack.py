"""``run_llm_attack``: PAIR, TAP or Crescendo over a dataset's attacks, into an LLMAttackResult.

As for the mutator search (:func:`run_attack`): the chosen attacks are screened
once (the static pass, not counted in the budget); those blocked with a verdict
are attacked one after the other by the strategy, sharing one :class:`Budget`.
Within one attack, PAIR's streams and TAP's branches ask the attacker
concurrently on a thread pool of ``settings.concurrency`` workers (see
:meth:`Session.gather`: the transcript keeps stream / branch order).

Each finished attack's :class:`TargetOutcome` (its whole transcript) is appended
to ``transcripts`` (a JSONL file) as soon as it ends; given the same file again,
the attacks already in it are read back instead of re-run (resumption), their
queries and tokens counted against the budget. With a deterministic attacker,
evaluator and defense, the same seed gives the same attack, resumed or not.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from shieldbench.attacks._attack import attack_meta, dataset_info, defense_info
from shieldbench.attacks._attacker import Attacker, Spend
from shieldbench.attacks._crescendo import crescendo
from shieldbench.attacks._llm_context import Session
from shieldbench.attacks._llm_records import LLMCurvePoint, LLMSettings, TargetOutcome
from shieldbench.attacks._llm_result import LLMAttackResult
from shieldbench.attacks._pair import pair
from shieldbench.attacks._records import AttackSettings
from shieldbench.attacks._search import Clock, choose_attacks, search_config
from shieldbench.attacks._tap import tap
from shieldbench.datasets import Dataset
from shieldbench.defenses import Defense
from shieldbench.engine import EndToEnd
from shieldbench.errors import ConfigError, RunError
from shieldbench.metrics import effective_blocked, rate
from shieldbench.targets import Target
from shieldbench.types import RunConfig, Sample

__all__ = ["load_llm_attack", "read_transcripts", "run_llm_attack"]


def load_llm_attack(path: str | Path) -> LLMAttackResult:
    """Read a saved ``llm_attack.json`` back."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunError(f"{p}: cannot read an LLM attack result: {exc}") from exc
    return LLMAttackResult.from_dict(data, source=str(p))


def read_transcripts(path: Path | None) -> dict[str, TargetOutcome]:
    """The finished attacks of a ``transcripts.jsonl`` by sample id (none: ``{}``)."""
    if path is None or not path.exists():
        return {}
    done: dict[str, TargetOutcome] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            outcome = TargetOutcome.from_dict(json.loads(line))
        except (KeyError, TypeError, ValueError) as exc:
            raise RunError(
                f"{path}:{n}: not a transcript line ({exc!r}); remove the file to start over"
            ) from exc
        done[outcome.sample_id] = outcome
    return done


@dataclass(frozen=True, slots=True)
class _Static:
    """The static pass: chosen attacks, how many count, how many got through, the blocked."""

    attacks: list[Sample]
    population: int
    bypassed: int
    blocked: list[Sample]


def _static_pass(clock: Clock, attacks: list[Sample], config: RunConfig) -> _Static:
    screened = clock.screen([s.text for s in attacks], [s.id for s in attacks])
    population = bypassed = 0
    blocked: list[Sample] = []
    for sample, outcome in zip(attacks, screened, strict=True):
        verdict = effective_blocked(outcome, config.error_policy)
        if verdict is None:
            continue
        population += 1
        if not verdict:
            bypassed += 1
        elif outcome.verdict is not None:
            blocked.append(sample)
    return _Static(attacks, population, bypassed, blocked)


@dataclass(frozen=True, slots=True)
class _Models:
    attacker: Attacker
    evaluator: Attacker
    target: Target | None
    end_to_end: EndToEnd | None


def _attack_each(
    blocked: list[Sample],
    settings: LLMSettings,
    models: _Models,
    clock: Clock,
    spend: Spend,
    transcripts: Path | None,
    on_target: Callable[[TargetOutcome], None] | None,
) -> list[TargetOutcome]:
    """Attack the blocked samples in order (resumed ones read back), within ``spend``."""
    previous = read_transcripts(transcripts)
    outcomes: list[TargetOutcome] = []
    turns = models.target or (None if models.end_to_end is None else models.end_to_end.target)
    with ThreadPoolExecutor(settings.concurrency, thread_name_prefix="llm-attack") as pool:
        for sample in blocked:
            if sample.id in previous:
                old = previous[sample.id]
                spend.queries += old.queries
                spend.add_usage(old.usage)
                outcomes.append(old)
                continue
            if spend.queries_left() <= 0 or not spend.can_call():
                spend.stopped_by = spend.stopped_by or "queries"
                break
            outcome = _one(sample, settings, models, clock, spend, pool, turns)
            outcomes.append(outcome)
            if transcripts is not None:
                with transcripts.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(outcome.to_dict(), ensure_ascii=False) + "\n")
            if on_target is not None:
                on_target(outcome)
    return outcomes


def _one(
    sample: Sample,
    settings: LLMSettings,
    models: _Models,
    clock: Clock,
    spend: Spend,
    pool: Executor,
    turns: Target | None,
) -> TargetOutcome:
    session = Session(
        sample, settings, models.attacker, models.evaluator, clock, spend,
        models.end_to_end, pool=pool,
    )  # fmt: skip
    if settings.strategy == "pair":
        pair(session)
    elif settings.strategy == "tap":
        tap(session)
    else:
        crescendo(session, turns)
    return session.outcome()


def run_llm_attack(
    defense: Defense,
    dataset: Dataset,
    attacker: Attacker,
    *,
    settings: LLMSettings,
    evaluator: Attacker | None = None,
    target: Target | None = None,
    end_to_end: EndToEnd | None = None,
    config: RunConfig = RunConfig(warmup=0),  # noqa: B008 (frozen)
    defense_spec: str | None = None,
    transcripts: str | Path | None = None,
    on_target: Callable[[TargetOutcome], None] | None = None,
) -> LLMAttackResult:
    """Attack ``defense`` with ``settings.strategy`` driven by ``attacker``.

    ``evaluator`` judges whether candidates keep the goal (default: the attacker
    model). ``target`` answers Crescendo's turns (optional). ``end_to_end`` (PAIR,
    TAP; Crescendo's target when ``target`` is not given): candidates the defense
    lets through are sent to its target under its system prompt, judged by its
    judges, and the answer and verdict told to the attacker. ``transcripts``:
    the JSONL file to append finished attacks to and resume from. The caller
    owns (and closes) every model and the defense. The result carries no
    transfer or comparison (see :func:`llm_transfer` and ``shieldbench attack``).
    """
    if not isinstance(dataset, Dataset):
        raise ConfigError(f"dataset must be a Dataset, got {type(dataset).__name__}")
    if not isinstance(settings, LLMSettings):
        raise ConfigError(f"settings must be an LLMSettings, got {type(settings).__name__}")
    attacks = choose_attacks(
        dataset.samples, AttackSettings(seed=settings.seed, max_attacks=settings.max_attacks)
    )
    if not attacks:
        raise ConfigError(f"dataset {dataset.name!r} has no attack samples to attack")
    started, t0 = datetime.now(UTC), time.perf_counter()
    clock = Clock(defense, config)
    static = _static_pass(clock, attacks, config)
    clock.config = search_config(config)
    spend = Spend(settings.budget)
    models = _Models(attacker, evaluator or attacker, target, end_to_end)
    path = None if transcripts is None else Path(transcripts)
    outcomes = _attack_each(static.blocked, settings, models, clock, spend, path, on_target)
    elapsed = time.perf_counter() - t0
    any_bypass = sum(o.bypassed for o in outcomes)
    kept = sum(o.preserved for o in outcomes)
    return LLMAttackResult(
        defense=defense_info(defense, defense_spec),
        dataset=dataset_info(dataset),
        settings=settings,
        attacker=attacker.describe(),
        evaluator=models.evaluator.describe(),
        attacks=len(attacks),
        static_bypassed=static.bypassed,
        targets=len(static.blocked),
        queries=spend.queries,
        static_asr=rate(static.bypassed, static.population),
        asr=rate(static.bypassed + any_bypass, static.population),
        preserving_asr=rate(static.bypassed + kept, static.population),
        curve=_curve(outcomes, static.population, static.bypassed, spend.queries),
        usage=spend.usage,
        cost=spend.usage.cost(settings.price_per_mtok),
        stopped_by=spend.stopped_by,
        outcomes=tuple(outcomes),
        meta=attack_meta(
            defense,
            settings.strategy,
            started,
            clock.seconds,
            elapsed - clock.seconds - spend.usage.seconds,
        ),
    )


def _curve(
    outcomes: list[TargetOutcome], population: int, static: int, queries: int
) -> tuple[LLMCurvePoint, ...]:
    """ASR and goal-preserving ASR at 0 queries, at each first bypass, and at the end."""
    events = sorted(
        {0, queries}
        | {o.bypass_index for o in outcomes if o.bypass_index is not None}
        | {o.preserving_index for o in outcomes if o.preserving_index is not None}
    )
    points = []
    for q in events:
        hit = sum(1 for o in outcomes if o.bypass_index is not None and o.bypass_index <= q)
        kept = sum(
            1 for o in outcomes if o.preserving_index is not None and o.preserving_index <= q
        )
        points.append(
            LLMCurvePoint(q, rate(static + hit, population), rate(static + kept, population))
        )
    return tuple(points)
