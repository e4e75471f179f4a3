"""``run_llm_attack``: PAIR, TAP or Crescendo over a dataset's attacks, into an LLMAttackResult.

As for the mutator search (:func:`run_attack`): the chosen attacks are screened
once (the static pass, not counted in the budget); those blocked with a verdict
are attacked one after the other by the strategy, sharing one :class:`Budget`.
Each finished attack's :class:`TargetOutcome` (its whole transcript) is appended
to ``transcripts`` (a JSONL file) as soon as it ends; given the same file again,
the attacks already in it are read back instead of re-run (resumption), their
queries and tokens counted against the budget. With a deterministic attacker,
evaluator and defense, the same seed gives the same attack.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from shieldbench.attacks._attacker import Attacker, AttackerUsage, Spend
from shieldbench.attacks._crescendo import crescendo
from shieldbench.attacks._llm_context import Session
from shieldbench.attacks._llm_records import LLMCurvePoint, LLMSettings, TargetOutcome
from shieldbench.attacks._pair import pair
from shieldbench.attacks._records import AttackSettings, rate_from_dict
from shieldbench.attacks._search import Clock, choose_attacks, search_config
from shieldbench.attacks._tap import tap
from shieldbench.datasets import Dataset
from shieldbench.defenses import Defense
from shieldbench.engine import EndToEnd, new_run_id
from shieldbench.errors import ConfigError, RunError
from shieldbench.metrics import Rate, effective_blocked, rate
from shieldbench.targets import Target
from shieldbench.types import DatasetInfo, DefenseInfo, RunConfig, Sample

__all__ = ["LLM_ATTACK_KIND", "LLMAttackResult", "load_llm_attack", "run_llm_attack"]

LLM_ATTACK_KIND = "shieldbench.llm_attack"


@dataclass(frozen=True, slots=True)
class LLMAttackResult:
    """Everything an LLM-driven attack measured (``to_dict`` for files and reports).

    ``asr`` counts static bypasses plus attacks with any bypass; ``preserving_asr``
    only those whose bypass the evaluator judged on goal (the figure to quote).
    ``curve`` traces both against queries spent. ``stopped_by`` names the budget
    that ended the attack (``None``: every attack ran its course).
    """

    strategy: str
    defense: DefenseInfo
    dataset: DatasetInfo
    settings: LLMSettings
    attacker: Mapping[str, Any]
    evaluator: Mapping[str, Any]
    attacks: int
    static_bypassed: int
    targets: int
    queries: int
    static_asr: Rate
    asr: Rate
    preserving_asr: Rate
    curve: tuple[LLMCurvePoint, ...]
    usage: AttackerUsage
    cost: float
    stopped_by: str | None
    outcomes: tuple[TargetOutcome, ...]
    id: str
    started: datetime
    seconds: float
    defense_s: float

    @property
    def loop_s(self) -> float:
        """Wall time that was neither the defense's nor the attacker's (the strategy's own)."""
        return max(self.seconds - self.defense_s - self.usage.seconds, 0.0)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": LLM_ATTACK_KIND, "schema_version": 1}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if hasattr(value, "to_dict"):
                value = value.to_dict()
            elif isinstance(value, tuple):
                value = [v.to_dict() for v in value]
            elif isinstance(value, datetime):
                value = value.isoformat()
            elif isinstance(value, Mapping):
                value = dict(value)
            out[name] = value
        out["loop_s"] = self.loop_s
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "<dict>") -> LLMAttackResult:
        if data.get("kind") != LLM_ATTACK_KIND:
            raise RunError(f"{source}: not an LLM attack result (kind={data.get('kind')!r})")
        try:
            return cls(
                strategy=data["strategy"],
                defense=DefenseInfo.from_dict(data["defense"]),
                dataset=DatasetInfo.from_dict(data["dataset"]),
                settings=LLMSettings.from_dict(data["settings"]),
                attacker=data["attacker"],
                evaluator=data["evaluator"],
                attacks=data["attacks"],
                static_bypassed=data["static_bypassed"],
                targets=data["targets"],
                queries=data["queries"],
                static_asr=rate_from_dict(data["static_asr"]),
                asr=rate_from_dict(data["asr"]),
                preserving_asr=rate_from_dict(data["preserving_asr"]),
                curve=tuple(LLMCurvePoint.from_dict(p) for p in data["curve"]),
                usage=AttackerUsage.from_dict(data["usage"]),
                cost=data["cost"],
                stopped_by=data["stopped_by"],
                outcomes=tuple(TargetOutcome.from_dict(o) for o in data["outcomes"]),
                id=data["id"],
                started=datetime.fromisoformat(data["started"]),
                seconds=data["seconds"],
                defense_s=data["defense_s"],
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise RunError(f"{source}: malformed LLM attack result: {exc!r}") from exc


def load_llm_attack(path: str | Path) -> LLMAttackResult:
    """Read a saved ``llm_attack.json`` back."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunError(f"{p}: cannot read an LLM attack result: {exc}") from exc
    return LLMAttackResult.from_dict(data, source=str(p))


def _resumed(path: Path | None) -> dict[str, TargetOutcome]:
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
    owns (and closes) every model and the defense.
    """
    if not isinstance(dataset, Dataset):
        raise ConfigError(f"dataset must be a Dataset, got {type(dataset).__name__}")
    chosen = AttackSettings(seed=settings.seed, max_attacks=settings.max_attacks)
    attacks = choose_attacks(dataset.samples, chosen)
    if not attacks:
        raise ConfigError(f"dataset {dataset.name!r} has no attack samples to attack")
    started, t0 = datetime.now(UTC), time.perf_counter()
    clock = Clock(defense, config)
    static = clock.screen([s.text for s in attacks], [s.id for s in attacks])
    clock.config = search_config(config)
    population = static_bypassed = 0
    blocked: list[Sample] = []
    for sample, screened in zip(attacks, static, strict=True):
        verdict = effective_blocked(screened, config.error_policy)
        if verdict is None:
            continue
        population += 1
        if not verdict:
            static_bypassed += 1
        elif screened.verdict is not None:
            blocked.append(sample)
    path = None if transcripts is None else Path(transcripts)
    previous = _resumed(path)
    spend = Spend(settings.budget)
    outcomes: list[TargetOutcome] = []
    for sample in blocked:
        if sample.id in previous:
            old = previous[sample.id]
            spend.queries += old.queries
            _add_usage(spend, old.usage)
            outcomes.append(old)
            continue
        if spend.queries_left() <= 0 or not spend.can_call():
            spend.stopped_by = spend.stopped_by or "queries"
            break
        session = Session(
            sample, settings, attacker, evaluator or attacker, clock, spend, end_to_end
        )
        turns = target or (None if end_to_end is None else end_to_end.target)
        _run(session, turns)
        outcome = session.outcome()
        outcomes.append(outcome)
        if path is not None:
            with path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(outcome.to_dict(), ensure_ascii=False) + "\n")
        if on_target is not None:
            on_target(outcome)
    any_bypass = sum(o.bypassed for o in outcomes)
    kept = sum(o.preserved for o in outcomes)
    return LLMAttackResult(
        strategy=settings.strategy,
        defense=DefenseInfo(defense_spec or defense.name, defense.name),
        dataset=DatasetInfo(
            spec=dataset.name,
            content_hash=dataset.content_hash,
            n_samples=len(dataset),
            sources=dataset.sources,
        ),
        settings=settings,
        attacker=attacker.describe(),
        evaluator=(evaluator or attacker).describe(),
        attacks=len(attacks),
        static_bypassed=static_bypassed,
        targets=len(blocked),
        queries=spend.queries,
        static_asr=rate(static_bypassed, population),
        asr=rate(static_bypassed + any_bypass, population),
        preserving_asr=rate(static_bypassed + kept, population),
        curve=_curve(outcomes, population, static_bypassed, spend.queries),
        usage=spend.usage,
        cost=spend.usage.cost(settings.price_per_mtok),
        stopped_by=spend.stopped_by,
        outcomes=tuple(outcomes),
        id=new_run_id(),
        started=started,
        seconds=time.perf_counter() - t0,
        defense_s=clock.seconds,
    )


def _run(session: Session, target: Target | None) -> None:
    strategy = session.settings.strategy
    if strategy == "pair":
        pair(session)
    elif strategy == "tap":
        tap(session)
    else:
        crescendo(session, target)


def _add_usage(spend: Spend, extra: AttackerUsage) -> None:
    u = spend.usage
    spend.usage = AttackerUsage(
        **{k: getattr(u, k) + getattr(extra, k) for k in AttackerUsage.__dataclass_fields__}
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
