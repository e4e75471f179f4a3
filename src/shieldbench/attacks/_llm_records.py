"""Records of an LLM-driven attack (PAIR, TAP, Crescendo): settings, steps, outcomes, result.

Frozen dataclasses with ``to_dict()`` / ``from_dict()``. A :class:`Step` is one
line of a transcript (a candidate sent, pruned, or an attacker failure); a
:class:`TargetOutcome` is everything one blocked attack went through, and is
what ``transcripts.jsonl`` stores, one line per finished attack (the unit of
resumption).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from shieldbench.attacks._attacker import AttackerUsage, Budget
from shieldbench.attacks._records import expect, rate_from_dict
from shieldbench.errors import ConfigError
from shieldbench.targets import SCREEN_MODES

if TYPE_CHECKING:
    from shieldbench.metrics import Rate

__all__ = [
    "LLM_STRATEGIES",
    "STEP_KINDS",
    "LLMCurvePoint",
    "LLMSettings",
    "LLMStrategy",
    "Step",
    "TargetOutcome",
]

LLMStrategy = Literal["pair", "tap", "crescendo"]
LLM_STRATEGIES: tuple[str, ...] = get_args(LLMStrategy)
STEP_KINDS = (
    "sent",
    "repeat",
    "pruned",
    "attacker_error",
    "unparseable",
    "evaluator_error",
    "target_error",
    "target_refused",
    "unsent",
)


@dataclass(frozen=True, slots=True)
class LLMSettings:
    """What an LLM-driven attack may do.

    ``streams`` parallel PAIR conversations of ``depth`` refinements each; TAP
    grows a tree ``depth`` levels deep, ``branching`` children per node, keeping
    the ``width`` lowest-scoring; Crescendo talks for up to ``turns`` turns and
    backtracks at most ``backtracks`` times, the defense screening each turn as
    ``screen`` says. ``price_per_mtok`` (prompt, completion) prices the
    attacker's tokens for the report's cost estimate. ``concurrency``: attacker
    calls in flight at once (PAIR's streams, TAP's branches); the result does not
    depend on it.
    """

    strategy: LLMStrategy
    budget: Budget = Budget()  # noqa: RUF009 (frozen, so sharing is safe)
    seed: int = 0
    streams: int = 3
    depth: int = 3
    width: int = 4
    branching: int = 2
    turns: int = 5
    backtracks: int = 3
    screen: str = "user_turns"
    max_attacks: int | None = None
    price_per_mtok: tuple[float, float] = (0.0, 0.0)
    concurrency: int = 4

    def __post_init__(self) -> None:
        if self.strategy not in LLM_STRATEGIES:
            raise ConfigError(
                f"strategy {self.strategy!r}: choose one of {', '.join(LLM_STRATEGIES)}"
            )
        for name in ("streams", "depth", "width", "branching", "turns", "concurrency"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)!r}")
        if self.backtracks < 0:
            raise ConfigError(f"backtracks must be >= 0, got {self.backtracks!r}")
        if self.screen not in SCREEN_MODES:
            raise ConfigError(f"screen {self.screen!r}: choose one of {', '.join(SCREEN_MODES)}")
        if self.max_attacks is not None and self.max_attacks < 1:
            raise ConfigError(f"max_attacks must be >= 1, got {self.max_attacks!r}")
        if min(self.price_per_mtok) < 0:
            raise ConfigError(f"prices must be >= 0, got {self.price_per_mtok!r}")
        object.__setattr__(self, "price_per_mtok", tuple(self.price_per_mtok))

    def to_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["budget"] = self.budget.to_dict()
        out["price_per_mtok"] = list(self.price_per_mtok)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LLMSettings:
        values = {k: data[k] for k in cls.__dataclass_fields__ if k != "concurrency"}
        values["concurrency"] = data.get("concurrency", 4)
        values["budget"] = Budget.from_dict(data["budget"])
        values["price_per_mtok"] = tuple(data["price_per_mtok"])
        return cls(**values)


@dataclass(frozen=True, slots=True)
class Step:
    """One transcript line.

    ``kind``: ``sent`` (screened; ``blocked``/``score`` say how), ``pruned``
    (off-goal, dropped before it cost a query), ``attacker_error`` /
    ``evaluator_error`` (the endpoint failed; ``error`` says how),
    ``unparseable`` (the model answered, not in the asked form; ``raw`` is the
    answer), ``target_error`` (the target failed to answer), ``target_refused``
    (Crescendo: a judge said the target refused the turn; it is removed), ``unsent``
    (the query budget ran out), ``repeat`` (a text already screened on this
    sample: its verdict again, no query spent). ``stream`` is the PAIR
    stream, TAP node or Crescendo branch; ``depth`` the refinement or turn.
    ``query_index`` counts the attack's queries, static pass excluded. End to
    end (a target model given), a candidate let through is sent to the target:
    ``answer`` is its answer (truncated) and ``judged`` the judges' verdict
    (``True``: the attack succeeded on the model; ``None``: no judge, or it failed).
    """

    kind: str
    stream: int
    depth: int
    text: str | None = None
    on_goal: bool | None = None
    blocked: bool | None = None
    score: float | None = None
    query_index: int | None = None
    error: str | None = None
    raw: str | None = None
    answer: str | None = None
    judged: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Step:
        """Read :meth:`to_dict` back; ``TypeError`` naming a field of the wrong type."""
        values: dict[str, Any] = {
            k: expect(data.get(k), _STEP_TYPES[k], f"step field {k!r}")
            for k in cls.__dataclass_fields__
        }
        return cls(**values)


_NONE = type(None)
_TEXT = (str, _NONE)
_FLAG = (bool, _NONE)
_STEP_TYPES: dict[str, Any] = {
    "kind": str,
    "stream": int,
    "depth": int,
    "text": _TEXT,
    "on_goal": _FLAG,
    "blocked": _FLAG,
    "score": (float, _NONE),
    "query_index": (int, _NONE),
    "error": _TEXT,
    "raw": _TEXT,
    "answer": _TEXT,
    "judged": _FLAG,
}
_OUTCOME_TYPES: dict[str, Any] = {
    "sample_id": str,
    "category": str,
    "goal": str,
    "queries": int,
    "bypass_index": (int, _NONE),
    "preserving_index": (int, _NONE),
    "bypass_text": _TEXT,
    "preserving_text": _TEXT,
    "turn": (int, _NONE),
}


@dataclass(frozen=True, slots=True)
class TargetOutcome:
    """One attack the defense blocked, and what the LLM attacker did with it.

    ``bypass_index`` / ``preserving_index``: the attack-wide query index of the
    first candidate let through, and of the first let through *and* judged on
    goal (``None``: never). ``turn`` is the refinement depth or Crescendo turn of
    the goal-preserving bypass. ``usage`` is the attacker's spend on this attack.
    """

    sample_id: str
    category: str
    goal: str
    queries: int
    bypass_index: int | None
    preserving_index: int | None
    bypass_text: str | None
    preserving_text: str | None
    turn: int | None
    usage: AttackerUsage
    steps: tuple[Step, ...]

    @property
    def bypassed(self) -> bool:
        return self.bypass_index is not None

    @property
    def preserved(self) -> bool:
        return self.preserving_index is not None

    def to_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["usage"] = self.usage.to_dict()
        out["steps"] = [s.to_dict() for s in self.steps]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TargetOutcome:
        """Read :meth:`to_dict` back; ``TypeError`` naming the field (and the step) that
        has the wrong type."""
        values = {k: expect(data[k], t, f"outcome field {k!r}") for k, t in _OUTCOME_TYPES.items()}
        values["usage"] = AttackerUsage.from_dict(data["usage"])
        steps = []
        for i, step in enumerate(expect(data["steps"], list, "outcome field 'steps'")):
            try:
                steps.append(Step.from_dict(expect(step, dict, "step")))
            except (KeyError, TypeError) as error:
                raise TypeError(f"steps[{i}]: {error}") from error
        return cls(**values, steps=tuple(steps))


@dataclass(frozen=True, slots=True)
class LLMCurvePoint:
    """ASR (any bypass) and goal-preserving ASR after ``queries`` queries."""

    queries: int
    asr: Rate
    preserving_asr: Rate

    def to_dict(self) -> dict[str, Any]:
        return {
            "queries": self.queries,
            "asr": self.asr.to_dict(),
            "preserving_asr": self.preserving_asr.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LLMCurvePoint:
        return cls(
            expect(data["queries"], int, "curve field 'queries'"),
            rate_from_dict(data["asr"]),
            rate_from_dict(data["preserving_asr"]),
        )
