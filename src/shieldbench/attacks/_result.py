"""The :class:`AttackResult` of an adaptive attack, and its parts.

Every record is a frozen dataclass with ``to_dict()`` (JSON-ready, for the report
renderers) and ``from_dict()`` (to read a saved ``attack.json`` back). ASR figures
are :class:`~shieldbench.metrics.Rate` values with Wilson 95% intervals.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from shieldbench.attacks._records import (
    AttackSettings,
    Bypass,
    ChainStats,
    CurvePoint,
    MutatorStats,
    QueriesToBypass,
    RoundSummary,
    expect,
    rate_from_dict,
)
from shieldbench.errors import ConfigError, RunError
from shieldbench.metrics import Rate
from shieldbench.types import DatasetInfo, DefenseInfo, RunConfig

__all__ = [
    "ATTACK_KIND",
    "ATTACK_SCHEMA_VERSION",
    "AttackCounts",
    "AttackFigures",
    "AttackMeta",
    "AttackResult",
    "TransferResult",
]

ATTACK_KIND = "shieldbench.attack"  # the ``kind`` of a mutator search's record
ATTACK_SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class TransferResult:
    """The bypasses found against one defense, replayed against another.

    One text per bypassed attack is replayed (its payload-preserving bypass when
    there is one). ``evaded`` is the replay ASR (an errored replay counts as not
    evaded); ``preserving_evaded`` the same over payload-preserving replays;
    ``original_asr`` the same attacks' *original* texts against this defense, the
    baseline that says how much of the transfer is owed to the mutations.
    """

    defense: DefenseInfo
    replayed: int
    evaded: Rate
    preserving_evaded: Rate
    original_asr: Rate
    errors: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "defense": self.defense.to_dict(),
            "replayed": self.replayed,
            "evaded": self.evaded.to_dict(),
            "preserving_evaded": self.preserving_evaded.to_dict(),
            "original_asr": self.original_asr.to_dict(),
            "errors": self.errors,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TransferResult:
        return cls(
            defense=DefenseInfo.from_dict(data["defense"]),
            replayed=data["replayed"],
            evaded=rate_from_dict(data["evaded"]),
            preserving_evaded=rate_from_dict(data["preserving_evaded"]),
            original_asr=rate_from_dict(data["original_asr"]),
            errors=data["errors"],
        )


@dataclass(frozen=True, slots=True)
class AttackCounts:
    """How many attacks and queries, by kind.

    ``attacks`` chosen attack samples; ``excluded`` of them left out of the rates
    (static error under ``error_policy="exclude"``); ``static_bypassed`` let
    through unmodified; ``static_errors`` errored in the static pass (whatever the
    policy; never searched); ``targets`` blocked with a verdict and searched.
    """

    attacks: int
    excluded: int
    static_bypassed: int
    static_errors: int
    targets: int
    static_queries: int
    search_queries: int
    errored_queries: int

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AttackCounts:
        """Read :meth:`to_dict` back; ``TypeError`` naming a field that is not a count."""
        return cls(**{k: expect(data[k], int, f"count {k!r}") for k in cls.__dataclass_fields__})


@dataclass(frozen=True, slots=True)
class AttackFigures:
    """The robustness figures.

    ASRs are over the chosen attacks minus the excluded: ``static_asr`` before the
    search, ``adaptive_asr`` after it (static bypasses plus attacks the search
    bypassed), ``preserving_asr`` counting only payload-preserving bypasses;
    ``target_bypass_rate`` is bypassed / searched attacks. ``rounds`` and
    ``curve`` trace the ASR over rounds and over queries spent; ``chains`` lists
    the compositions that bypassed, most successful first.
    """

    static_asr: Rate
    adaptive_asr: Rate
    preserving_asr: Rate
    target_bypass_rate: Rate
    rounds: tuple[RoundSummary, ...]
    curve: tuple[CurvePoint, ...]
    queries_to_bypass: QueriesToBypass
    chains: tuple[ChainStats, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "static_asr": self.static_asr.to_dict(),
            "adaptive_asr": self.adaptive_asr.to_dict(),
            "preserving_asr": self.preserving_asr.to_dict(),
            "target_bypass_rate": self.target_bypass_rate.to_dict(),
            "rounds": [r.to_dict() for r in self.rounds],
            "curve": [p.to_dict() for p in self.curve],
            "queries_to_bypass": self.queries_to_bypass.to_dict(),
            "chains": [c.to_dict() for c in self.chains],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AttackFigures:
        return cls(
            static_asr=rate_from_dict(data["static_asr"]),
            adaptive_asr=rate_from_dict(data["adaptive_asr"]),
            preserving_asr=rate_from_dict(data["preserving_asr"]),
            target_bypass_rate=rate_from_dict(data["target_bypass_rate"]),
            rounds=tuple(RoundSummary.from_dict(r) for r in data["rounds"]),
            curve=tuple(CurvePoint.from_dict(p) for p in data["curve"]),
            queries_to_bypass=QueriesToBypass.from_dict(data["queries_to_bypass"]),
            chains=tuple(ChainStats.from_dict(c) for c in data["chains"]),
        )


@dataclass(frozen=True, slots=True)
class AttackMeta:
    """When and how it ran: the strategy used (``auto`` resolved) and where time went.

    ``defense_s`` is wall time inside engine calls (static pass and search);
    ``loop_s`` the rest of the attack (mutation, bookkeeping), transfer excluded.
    ``environment`` says where it ran (Python, platform, CPUs, versions), as in a
    :class:`~shieldbench.types.Run`; results written before it existed read as empty.
    """

    id: str
    strategy: str
    started: datetime
    finished: datetime
    defense_s: float
    loop_s: float
    environment: Mapping[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "strategy": self.strategy,
            "started": self.started.isoformat(),
            "finished": self.finished.isoformat(),
            "defense_s": self.defense_s,
            "loop_s": self.loop_s,
            "environment": dict(self.environment),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AttackMeta:
        return cls(
            id=data["id"],
            strategy=data["strategy"],
            started=datetime.fromisoformat(data["started"]),
            finished=datetime.fromisoformat(data["finished"]),
            defense_s=float(data["defense_s"]),
            loop_s=float(data["loop_s"]),
            environment={str(k): str(v) for k, v in data.get("environment", {}).items()},
        )


@dataclass(frozen=True, slots=True)
class AttackResult:
    """Everything an adaptive attack measured; renderers read :meth:`to_dict`."""

    defense: DefenseInfo
    dataset: DatasetInfo
    settings: AttackSettings
    config: RunConfig
    counts: AttackCounts
    figures: AttackFigures
    mutators: tuple[MutatorStats, ...]
    bypasses: tuple[Bypass, ...]
    transfer: tuple[TransferResult, ...]
    meta: AttackMeta

    def check_curve(self, source: str) -> None:
        """:class:`RunError` naming ``source`` and the point when the ASR-against-queries
        curve holds a value that is not a number (see :meth:`CurvePoint.check`); the
        charts call it before drawing a stored record."""
        try:
            for i, point in enumerate(self.figures.curve):
                point.check(f"figures.curve[{i}]")
        except TypeError as error:
            raise RunError(f"{source}: malformed attack result: {error}") from None

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form (``schema_version`` and ``kind`` first)."""
        return {
            "schema_version": ATTACK_SCHEMA_VERSION,
            "kind": ATTACK_KIND,
            "meta": self.meta.to_dict(),
            "defense": self.defense.to_dict(),
            "dataset": self.dataset.to_dict(),
            "settings": self.settings.to_dict(),
            "config": self.config.to_dict(),
            "counts": self.counts.to_dict(),
            "figures": self.figures.to_dict(),
            "mutators": [m.to_dict() for m in self.mutators],
            "bypasses": [b.to_dict() for b in self.bypasses],
            "transfer": [t.to_dict() for t in self.transfer],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "<dict>") -> AttackResult:
        """Rebuild a result from :meth:`to_dict` output; :class:`RunError` on bad input."""
        if data.get("kind") != ATTACK_KIND:
            raise RunError(f"{source}: not an attack result (kind={data.get('kind')!r})")
        if data.get("schema_version") != ATTACK_SCHEMA_VERSION:
            raise RunError(
                f"{source}: attack schema_version {data.get('schema_version')!r} is not"
                f" supported (this shieldbench reads {ATTACK_SCHEMA_VERSION})"
            )
        try:
            return cls(
                defense=DefenseInfo.from_dict(data["defense"]),
                dataset=DatasetInfo.from_dict(data["dataset"]),
                settings=AttackSettings.from_dict(data["settings"]),
                config=RunConfig.from_dict(data["config"]),
                counts=AttackCounts.from_dict(data["counts"]),
                figures=AttackFigures.from_dict(data["figures"]),
                mutators=tuple(MutatorStats.from_dict(m) for m in data["mutators"]),
                bypasses=tuple(Bypass.from_dict(b) for b in data["bypasses"]),
                transfer=tuple(TransferResult.from_dict(t) for t in data["transfer"]),
                meta=AttackMeta.from_dict(data["meta"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError, ConfigError) as exc:
            raise RunError(f"{source}: malformed attack result: {exc!r}") from exc
