"""The :class:`LLMAttackResult` of a PAIR, TAP or Crescendo attack, and its JSON codec.

It reuses the adaptive attack's own records where they mean the same thing: the
:class:`~shieldbench.attacks.AttackMeta` (id, strategy, start and end, time in the
defense and in the strategy's loop, environment), the
:class:`~shieldbench.attacks.TransferResult` of the bypasses replayed against other
defenses, and, as ``comparison``, the :class:`~shieldbench.attacks.AttackResult` of
the mutator search given the same number of queries. ``to_dict()`` is the one form
that files (``llm_attack.json``), the history store and the reports read;
``from_dict()`` reads it back and says which field is wrong when it is not one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shieldbench.attacks._attacker import AttackerUsage
from shieldbench.attacks._llm_records import LLMCurvePoint, LLMSettings, TargetOutcome
from shieldbench.attacks._records import expect, rate_from_dict
from shieldbench.attacks._result import AttackMeta, AttackResult, TransferResult
from shieldbench.errors import ConfigError, RunError
from shieldbench.metrics import Rate
from shieldbench.types import DatasetInfo, DefenseInfo

__all__ = ["LLM_ATTACK_KIND", "LLM_ATTACK_SCHEMA_VERSION", "LLMAttackResult"]

LLM_ATTACK_KIND = "shieldbench.llm_attack"
LLM_ATTACK_SCHEMA_VERSION = 2  # 2: meta, transfer and the comparison inside the record


@dataclass(frozen=True, slots=True)
class LLMAttackResult:
    """Everything an LLM-driven attack measured (``to_dict`` for files, store, reports).

    ``asr`` counts static bypasses plus attacks with any bypass; ``preserving_asr``
    only those whose bypass the evaluator judged on goal (the figure to quote).
    ``curve`` traces both against queries spent. ``stopped_by`` names the budget
    that ended the attack (``None``: every attack ran its course). ``outcomes``
    holds every transcript. ``meta.loop_s`` is the wall time that was neither the
    defense's nor the attacker's (the strategy's own); with concurrent attacker calls
    (``settings.concurrency`` > 1) their seconds overlap, so it is a lower bound.
    """

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
    meta: AttackMeta
    transfer: tuple[TransferResult, ...] = ()
    comparison: AttackResult | None = None

    @property
    def strategy(self) -> str:
        return self.settings.strategy

    @property
    def id(self) -> str:
        return self.meta.id

    @property
    def seconds(self) -> float:
        """Wall time of the attack (transfer and comparison excluded)."""
        return (self.meta.finished - self.meta.started).total_seconds()

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": LLM_ATTACK_KIND,
            "schema_version": LLM_ATTACK_SCHEMA_VERSION,
            "meta": self.meta.to_dict(),
            "defense": self.defense.to_dict(),
            "dataset": self.dataset.to_dict(),
            "settings": self.settings.to_dict(),
            "attacker": dict(self.attacker),
            "evaluator": dict(self.evaluator),
            "counts": {
                "attacks": self.attacks,
                "static_bypassed": self.static_bypassed,
                "targets": self.targets,
                "queries": self.queries,
            },
            "figures": {
                "static_asr": self.static_asr.to_dict(),
                "adaptive_asr": self.asr.to_dict(),
                "preserving_asr": self.preserving_asr.to_dict(),
                "curve": [p.to_dict() for p in self.curve],
            },
            "usage": self.usage.to_dict(),
            "cost": self.cost,
            "stopped_by": self.stopped_by,
            "outcomes": [o.to_dict() for o in self.outcomes],
            "transfer": [t.to_dict() for t in self.transfer],
            "comparison": None if self.comparison is None else self.comparison.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "<dict>") -> LLMAttackResult:
        """Read :meth:`to_dict` output back; :class:`RunError` naming ``source`` (and the
        field, the outcome and the step) if it is not one."""
        if not isinstance(data, Mapping):
            raise RunError(f"{source}: not an LLM attack result (a {type(data).__name__})")
        if data.get("kind") != LLM_ATTACK_KIND:
            raise RunError(f"{source}: not an LLM attack result (kind={data.get('kind')!r})")
        if data.get("schema_version") != LLM_ATTACK_SCHEMA_VERSION:
            raise RunError(
                f"{source}: LLM attack schema_version {data.get('schema_version')!r} is not"
                f" supported (this shieldbench reads {LLM_ATTACK_SCHEMA_VERSION})"
            )
        try:
            counts, figures = data["counts"], data["figures"]
            comparison = data.get("comparison")
            return cls(
                defense=DefenseInfo.from_dict(data["defense"]),
                dataset=DatasetInfo.from_dict(data["dataset"]),
                settings=LLMSettings.from_dict(data["settings"]),
                attacker=dict(data["attacker"]),
                evaluator=dict(data["evaluator"]),
                attacks=int(counts["attacks"]),
                static_bypassed=int(counts["static_bypassed"]),
                targets=int(counts["targets"]),
                queries=int(counts["queries"]),
                static_asr=rate_from_dict(figures["static_asr"]),
                asr=rate_from_dict(figures["adaptive_asr"]),
                preserving_asr=rate_from_dict(figures["preserving_asr"]),
                curve=tuple(LLMCurvePoint.from_dict(p) for p in figures["curve"]),
                usage=AttackerUsage.from_dict(data["usage"]),
                cost=float(data["cost"]),
                stopped_by=expect(data["stopped_by"], (str, type(None)), "stopped_by"),
                outcomes=_outcomes(data["outcomes"]),
                meta=AttackMeta.from_dict(data["meta"]),
                transfer=tuple(TransferResult.from_dict(t) for t in data.get("transfer", ())),
                comparison=_comparison(comparison, f"{source} (comparison)"),
            )
        except (KeyError, TypeError, ValueError, AttributeError, ConfigError) as exc:
            raise RunError(f"{source}: malformed LLM attack result: {_describe(exc)}") from exc


def _outcomes(data: Any) -> tuple[TargetOutcome, ...]:
    """The outcomes, each error naming the outcome (index and sample) it is in."""
    out = []
    for i, o in enumerate(expect(data, list, "outcomes")):
        try:
            out.append(TargetOutcome.from_dict(expect(o, dict, "outcome")))
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            name = o.get("sample_id") if isinstance(o, dict) else None
            raise ValueError(f"outcomes[{i}] (sample {name!r}): {_describe(error)}") from error
    return tuple(out)


def _describe(error: Exception) -> str:
    """What is wrong, in words: a missing field by its name, else the error's own."""
    if isinstance(error, KeyError):
        return f"missing field {error.args[0]!r}"
    if isinstance(error, ValueError) and str(error).startswith("outcomes["):
        return str(error)
    return f"{type(error).__name__}: {error}"


def _comparison(data: Any, source: str) -> AttackResult | None:
    """The mutator search at equal budget, its curve checked (the chart draws it)."""
    if data is None:
        return None
    result = AttackResult.from_dict(data, source=source)
    result.check_curve(source)
    return result
