"""The adaptive-attack part of a report, read from the result's JSON form.

An attack result (:class:`shieldbench.attacks.AttackResult`) promises one
interface to renderers: ``to_dict()`` (``kind == "shieldbench.attack"``,
``schema_version`` 1). :func:`attack_view` checks that form once, at the edge, and
turns it into an :class:`AttackView` with typed figures (ASRs as
:class:`~shieldbench.metrics.Rate`) that the Markdown and HTML renderers and the
``adaptive_attack`` recommendations read. A saved ``attack.json`` renders the same
way, so the report never depends on the attack module's internals.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from shieldbench.errors import ConfigError
from shieldbench.metrics import Rate
from shieldbench.reports._format import pct, rate_text
from shieldbench.reports._records import Recommendation, ReportSettings
from shieldbench.types import DatasetInfo, DefenseInfo

__all__ = ["ATTACK_KIND", "AttackLike", "AttackView", "attack_recommendations", "attack_view"]

ATTACK_KIND = "shieldbench.attack"
_SCHEMA_VERSIONS = (1,)


class AttackLike(Protocol):
    """Anything with an attack result's ``to_dict()`` (e.g. ``AttackResult``)."""

    def to_dict(self) -> dict[str, Any]: ...


def _rate(data: Mapping[str, Any]) -> Rate:
    return Rate(
        k=int(data["k"]),
        n=int(data["n"]),
        value=None if data["value"] is None else float(data["value"]),
        ci_low=float(data["ci_low"]),
        ci_high=float(data["ci_high"]),
        method=str(data["method"]),
        confidence=float(data["confidence"]),
    )


@dataclass(frozen=True, slots=True)
class MutatorRow:
    name: str
    family: str
    preserves_payload: bool
    attempts: int
    bypasses: int
    success_rate: Rate
    mean_score_drop: float | None


@dataclass(frozen=True, slots=True)
class TransferRow:
    defense: DefenseInfo
    replayed: int
    evaded: Rate
    preserving_evaded: Rate
    original_asr: Rate
    errors: int


@dataclass(frozen=True, slots=True)
class RoundRow:
    round: int
    queries: int
    candidates: int
    errors: int
    active: int
    asr: Rate
    preserving_asr: Rate


@dataclass(frozen=True, slots=True)
class AttackView:
    """Typed figures of one adaptive attack (see the attack module for their meaning).

    ``strategy`` is the search strategy used (``auto`` resolved; the requested one is
    ``settings["strategy"]``); ``config`` is the engine configuration of its queries
    (error policy, timeout, concurrency, ...).
    """

    id: str
    strategy: str
    started: datetime
    finished: datetime
    defense: DefenseInfo
    dataset: DatasetInfo
    settings: Mapping[str, Any]
    config: Mapping[str, Any]
    counts: Mapping[str, int]
    static_asr: Rate
    adaptive_asr: Rate
    preserving_asr: Rate
    target_bypass_rate: Rate
    rounds: tuple[RoundRow, ...]
    curve: tuple[Mapping[str, Any], ...]
    queries_to_bypass: Mapping[str, Mapping[str, Any]]
    chains: tuple[Mapping[str, Any], ...]
    mutators: tuple[MutatorRow, ...]
    bypasses: tuple[Mapping[str, Any], ...]
    transfer: tuple[TransferRow, ...]
    defense_s: float
    loop_s: float
    environment: Mapping[str, str]

    @property
    def subject(self) -> str:
        return f"attack on {self.defense.spec}"

    def worked(self) -> list[MutatorRow]:
        """Mutators with at least one bypass, best success rate first."""
        rows = [m for m in self.mutators if m.bypasses > 0]
        return sorted(rows, key=lambda m: (-(m.success_rate.value or 0.0), -m.bypasses, m.name))


def attack_view(data: Mapping[str, Any]) -> AttackView:
    """Check an attack result's ``to_dict()`` form and read it; :class:`ConfigError` if
    it is not one (saying which field is missing or wrong)."""
    if data.get("kind") != ATTACK_KIND:
        raise ConfigError(f"not an adaptive-attack result: kind is {data.get('kind')!r}")
    if data.get("schema_version") not in _SCHEMA_VERSIONS:
        raise ConfigError(
            f"attack result schema_version {data.get('schema_version')!r} is not supported"
            f" (this report reads {', '.join(map(str, _SCHEMA_VERSIONS))})"
        )
    try:
        fig = data["figures"]
        meta = data["meta"]
        return AttackView(
            id=str(meta["id"]),
            strategy=str(meta["strategy"]),
            started=datetime.fromisoformat(meta["started"]),
            finished=datetime.fromisoformat(meta["finished"]),
            defense=DefenseInfo.from_dict(data["defense"]),
            dataset=DatasetInfo.from_dict(data["dataset"]),
            settings=dict(data["settings"]),
            config=dict(data["config"]),
            counts={str(k): int(v) for k, v in data["counts"].items()},
            static_asr=_rate(fig["static_asr"]),
            adaptive_asr=_rate(fig["adaptive_asr"]),
            preserving_asr=_rate(fig["preserving_asr"]),
            target_bypass_rate=_rate(fig["target_bypass_rate"]),
            rounds=tuple(
                RoundRow(
                    int(r["round"]),
                    int(r["queries"]),
                    int(r["candidates"]),
                    int(r["errors"]),
                    int(r["active"]),
                    _rate(r["asr"]),
                    _rate(r["preserving_asr"]),
                )
                for r in fig["rounds"]
            ),
            curve=tuple(dict(p) for p in fig["curve"]),
            queries_to_bypass={k: dict(v) for k, v in fig["queries_to_bypass"].items()},
            chains=tuple(dict(c) for c in fig["chains"]),
            mutators=tuple(
                MutatorRow(
                    str(m["name"]),
                    str(m["family"]),
                    bool(m["preserves_payload"]),
                    int(m["attempts"]),
                    int(m["bypasses"]),
                    _rate(m["success_rate"]),
                    m.get("mean_score_drop"),
                )
                for m in data["mutators"]
            ),
            bypasses=tuple(dict(b) for b in data["bypasses"]),
            transfer=tuple(
                TransferRow(
                    DefenseInfo.from_dict(t["defense"]),
                    int(t["replayed"]),
                    _rate(t["evaded"]),
                    _rate(t["preserving_evaded"]),
                    _rate(t["original_asr"]),
                    int(t["errors"]),
                )
                for t in data["transfer"]
            ),
            defense_s=float(meta["defense_s"]),
            loop_s=float(meta["loop_s"]),
            environment={str(k): str(v) for k, v in meta.get("environment", {}).items()},
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ConfigError(
            f"malformed adaptive-attack result ({type(exc).__name__}: {exc});"
            " expected the to_dict() form of shieldbench.attacks.AttackResult"
        ) from exc


def _names(rows: Sequence[MutatorRow]) -> str:
    return ", ".join(f"{m.name} ({pct(m.success_rate.value)} of {m.attempts})" for m in rows[:3])


def attack_recommendations(view: AttackView, settings: ReportSettings) -> Iterator[Recommendation]:
    """Rules over the attack figures (see :mod:`shieldbench.reports._recommend`)."""
    static, adaptive, preserving = view.static_asr, view.adaptive_asr, view.preserving_asr
    queries = view.counts.get("search_queries", 0)
    rise = (adaptive.value or 0.0) - (static.value or 0.0)
    worked = view.worked()
    evidence = {
        "static_asr": static.value,
        "adaptive_asr": adaptive.value,
        "preserving_asr": preserving.value,
        "search_queries": queries,
        "mutators": [m.name for m in worked[:3]],
    }
    if rise >= 0.1:
        yield Recommendation(
            "critical" if (preserving.value or 0.0) >= 0.5 else "warning",
            "adaptive_attack",
            view.subject,
            f"Under adaptive attack the ASR rose from {rate_text(static, n=False)} to"
            f" {rate_text(adaptive)} within {queries} queries"
            f" ({rate_text(preserving, n=False)} counting payload-preserving bypasses only)."
            + (f" The mutators that worked best: {_names(worked)}." if worked else "")
            + " Normalise inputs against these transformations (decode, strip invisible"
            " characters) and add such variants to the training / rule data.",
            evidence,
        )
    elif adaptive.value is not None:
        yield Recommendation(
            "info",
            "adaptive_attack",
            view.subject,
            f"The ASR moved from {rate_text(static, n=False)} to {rate_text(adaptive)} within"
            f" {queries} queries: robust against these mutators at this budget (a larger"
            " budget or other mutators may still succeed).",
            evidence,
        )
    for t in view.transfer:
        if t.evaded.value is not None and t.evaded.value >= 0.3:
            yield Recommendation(
                "warning",
                "attack_transfer",
                t.defense.spec,
                f"Bypasses found against {view.defense.spec} also evade {t.defense.spec}:"
                f" {rate_text(t.evaded)} of replays (its ASR on the original texts:"
                f" {rate_text(t.original_asr, n=False)}).",
                {"evaded": t.evaded.value, "original_asr": t.original_asr.value},
            )
