"""The small records of an adaptive attack: settings, bypasses, rounds, curve, tallies.

Frozen dataclasses with ``to_dict()`` / ``from_dict()``; :mod:`._result` assembles
them into the :class:`AttackResult`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from shieldbench.errors import ConfigError

if TYPE_CHECKING:
    from shieldbench.metrics import Rate

__all__ = [
    "STRATEGIES",
    "AttackSettings",
    "Bypass",
    "ChainStats",
    "CurvePoint",
    "MutatorStats",
    "QueriesToBypass",
    "QueryStats",
    "RoundSummary",
    "Strategy",
    "expect",
    "rate_from_dict",
]

Strategy = Literal["auto", "greedy", "beam", "random"]
STRATEGIES: tuple[str, ...] = get_args(Strategy)


def expect(value: Any, types: type | tuple[type, ...], where: str) -> Any:
    """``value`` when it is one of ``types`` (``bool`` is not an ``int`` here), else a
    ``TypeError`` naming the field ``where``: stored records are read at the edge,
    so a malformed one is refused by name instead of failing later, far away."""
    kinds = types if isinstance(types, tuple) else (types,)
    if isinstance(value, bool) and bool not in kinds:
        ok = False
    elif float in kinds and isinstance(value, int):
        ok = True
    else:
        ok = isinstance(value, kinds)
    if not ok:
        names = " or ".join("null" if t is type(None) else t.__name__ for t in kinds)
        raise TypeError(f"{where}: expected {names}, got {type(value).__name__} {value!r:.60}")
    return value


def rate_from_dict(data: Mapping[str, Any]) -> Rate:
    """A :class:`~shieldbench.metrics.Rate` back from its ``to_dict()``; ``TypeError``
    naming the field when one has the wrong type."""
    # Imported on use: the records (and ``shieldbench attack --help``) need no numpy.
    from shieldbench.metrics import Rate

    none = type(None)
    types: dict[str, Any] = {"k": int, "n": int, "value": (float, none), "method": str}
    values = {
        k: expect(data[k], types.get(k, float), f"rate field {k!r}")
        for k in Rate.__dataclass_fields__
    }
    return Rate(**values)


@dataclass(frozen=True, slots=True)
class AttackSettings:
    """What the attacker may do.

    - ``budget``: the most defense queries the *search* may make. The static pass
      (one query per chosen attack) and transfer replays are not counted; they
      are reported separately (:class:`AttackCounts`). An errored query counts.
    - ``rounds``: search rounds; the budget is spread over the rounds left, and a
      mutation chain grows by at most one step per round.
    - ``seed``: every random choice derives from it (same seed, same result
      against a deterministic defense).
    - ``strategy``: ``greedy`` (hill-climb on the defense's score), ``beam``
      (keep the ``beam_width`` lowest-scoring candidates), ``random`` (random
      chains, scores ignored) or ``auto`` (beam when the defense gives scores).
    - ``max_depth``: the longest mutation chain.
    - ``max_attacks``: attack samples to consider, a seeded random subset
      (``None``: all attack samples of the dataset).
    - ``mutators``: names, ``+``-chains or families to draw from (``()``: all).
    """

    budget: int = 1000
    rounds: int = 5
    seed: int = 0
    strategy: Strategy = "auto"
    beam_width: int = 4
    max_depth: int = 3
    max_attacks: int | None = None
    mutators: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "mutators", tuple(self.mutators))
        for name in ("budget", "rounds", "seed", "beam_width", "max_depth"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"{name.replace('_', ' ')} must be a whole number, got {value!r}")
        if self.max_attacks is not None and (
            isinstance(self.max_attacks, bool) or not isinstance(self.max_attacks, int)
        ):
            raise ConfigError(f"max attacks must be a whole number, got {self.max_attacks!r}")
        checks = (
            (self.budget >= 0, f"budget must be >= 0, got {self.budget!r}"),
            (self.rounds >= 1, f"rounds must be >= 1, got {self.rounds!r}"),
            (self.beam_width >= 1, f"beam width must be >= 1, got {self.beam_width!r}"),
            (self.max_depth >= 1, f"max depth must be >= 1, got {self.max_depth!r}"),
            (
                self.max_attacks is None or self.max_attacks >= 1,
                f"max attacks must be >= 1 (or None for all), got {self.max_attacks!r}",
            ),
            (
                self.strategy in STRATEGIES,
                f"strategy must be one of {', '.join(STRATEGIES)}, got {self.strategy!r}",
            ),
        )
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)

    def to_dict(self) -> dict[str, Any]:
        return {
            "budget": self.budget,
            "rounds": self.rounds,
            "seed": self.seed,
            "strategy": self.strategy,
            "beam_width": self.beam_width,
            "max_depth": self.max_depth,
            "max_attacks": self.max_attacks,
            "mutators": list(self.mutators),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AttackSettings:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        known["mutators"] = tuple(known.get("mutators") or ())
        return cls(**known)


@dataclass(frozen=True, slots=True)
class Bypass:
    """A mutated attack the defense let through.

    ``queries`` is how many queries the search had spent on this attack when it
    found the bypass (this one included); ``query_index`` its position among all
    search queries (1-based), the x of the ASR-versus-queries curve.
    """

    sample_id: str
    category: str
    original_text: str
    text: str
    chain: tuple[str, ...]
    preserves_payload: bool
    score_before: float | None
    score_after: float | None
    round: int
    queries: int
    query_index: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "sample_id": self.sample_id,
            "category": self.category,
            "original_text": self.original_text,
            "text": self.text,
            "chain": list(self.chain),
            "preserves_payload": self.preserves_payload,
            "score_before": self.score_before,
            "score_after": self.score_after,
            "round": self.round,
            "queries": self.queries,
            "query_index": self.query_index,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Bypass:
        fields = {k: data[k] for k in cls.__dataclass_fields__}
        fields["chain"] = tuple(fields["chain"])
        return cls(**fields)


@dataclass(frozen=True, slots=True)
class RoundSummary:
    """Where the search stood after one round (``asr`` figures are cumulative)."""

    round: int
    queries: int
    candidates: int
    errors: int
    active: int
    asr: Rate
    preserving_asr: Rate

    def to_dict(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "queries": self.queries,
            "candidates": self.candidates,
            "errors": self.errors,
            "active": self.active,
            "asr": self.asr.to_dict(),
            "preserving_asr": self.preserving_asr.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RoundSummary:
        fields = {k: data[k] for k in cls.__dataclass_fields__}
        fields["asr"] = rate_from_dict(data["asr"])
        fields["preserving_asr"] = rate_from_dict(data["preserving_asr"])
        return cls(**fields)


@dataclass(frozen=True, slots=True)
class CurvePoint:
    """ASR after ``queries`` search queries (``None`` when no attack is counted)."""

    queries: int
    bypassed: int
    asr: float | None
    preserving_bypassed: int
    preserving_asr: float | None

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CurvePoint:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__})

    def check(self, where: str) -> None:
        """``TypeError`` naming ``where`` and the field when a count is not a whole
        number or a rate not a number (a hand-edited record: the Markdown report
        escapes such a value, but a chart cannot draw it)."""
        rate = (float, type(None))
        for name in self.__dataclass_fields__:
            kind = rate if name.endswith("asr") else int
            expect(getattr(self, name), kind, f"{where}.{name}")


@dataclass(frozen=True, slots=True)
class QueryStats:
    """Queries spent on an attack until its first bypass, over the searched attacks.

    ``n_never`` attacks were not bypassed within the budget (censored: their true
    number is larger than what was spent on them), so ``median``, ``q1``, ``q3``
    and ``max`` are over the bypassed attacks only: how fast the attacks that fell,
    fell. Read them beside ``n_never``. Quartiles use the inclusive method; all
    four are ``None`` when nothing was bypassed.
    """

    n_bypassed: int
    n_never: int
    median: float | None
    q1: float | None
    q3: float | None
    max: int | None

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QueryStats:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__})


@dataclass(frozen=True, slots=True)
class QueriesToBypass:
    """Queries to the first bypass of any kind, and to the first payload-preserving one."""

    bypass: QueryStats
    preserving: QueryStats

    def to_dict(self) -> dict[str, Any]:
        return {"bypass": self.bypass.to_dict(), "preserving": self.preserving.to_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QueriesToBypass:
        return cls(QueryStats.from_dict(data["bypass"]), QueryStats.from_dict(data["preserving"]))


@dataclass(frozen=True, slots=True)
class MutatorStats:
    """How one mutator fared: queries whose chain used it, and how many bypassed.

    ``mean_score_drop`` is the mean fall of the defense's score when this mutator
    was the step just applied (parent score minus child score; positive = helped),
    over queries where both scores exist; ``None`` otherwise (random search).
    """

    name: str
    family: str
    preserves_payload: bool
    attempts: int
    bypasses: int
    success_rate: Rate
    mean_score_drop: float | None

    def to_dict(self) -> dict[str, Any]:
        data = {k: getattr(self, k) for k in self.__dataclass_fields__}
        data["success_rate"] = self.success_rate.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MutatorStats:
        fields = {k: data[k] for k in cls.__dataclass_fields__}
        fields["success_rate"] = rate_from_dict(data["success_rate"])
        return cls(**fields)


@dataclass(frozen=True, slots=True)
class ChainStats:
    """A composition (chain of mutators) that bypassed at least once."""

    chain: tuple[str, ...]
    preserves_payload: bool
    attempts: int
    bypasses: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "chain": list(self.chain),
            "preserves_payload": self.preserves_payload,
            "attempts": self.attempts,
            "bypasses": self.bypasses,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChainStats:
        return cls(
            tuple(data["chain"]), data["preserves_payload"], data["attempts"], data["bypasses"]
        )
