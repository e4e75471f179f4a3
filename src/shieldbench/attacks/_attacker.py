"""The attacker model: a chat endpoint that writes attacks, and the budgets it spends.

An :class:`Attacker` wraps a :class:`~shieldbench.targets.Target` built from the
same specs as ``--target`` (``openai:MODEL@URL``, ``llm:ollama/MODEL``, ``python:``;
keys from the environment only, through :func:`shieldbench.targets.build_target`),
so there is one OpenAI client in the project. Every call is accounted for in
:class:`AttackerUsage`: calls, failures (the endpoint raised: HTTP error, timeout,
not JSON) and unparseable answers (the model answered, but not in the asked form)
are counted separately, never guessed around. Tokens are the server's ``usage``
figures when it reports them, else an estimate of one token per four characters
(``tokens_estimated`` says how many calls were estimated).

:class:`Budget` caps defense queries, attacker tokens and wall time; :class:`Spend`
tracks them. The query cap is hard (a batch is cut to what is left); the token and
time caps stop any *new* attacker call once reached, so the calls in flight may end
past them by at most their own size (PAIR's streams and TAP's branches are asked
concurrently, a batch at a time: at most one batch past the token cap). A
:class:`Spend` is shared by those concurrent calls, so its totals are updated under
a lock.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from shieldbench.attacks._records import expect
from shieldbench.errors import ConfigError
from shieldbench.targets import Message, Target, build_target

__all__ = [
    "Attacker",
    "AttackerReply",
    "AttackerUsage",
    "Budget",
    "Spend",
    "build_attacker",
    "parse_json_object",
]

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def parse_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in a model's answer (fenced or bare), or ``None``.

    >>> parse_json_object('Sure: ```json\\n{"prompt": "x"}\\n```')
    {'prompt': 'x'}
    >>> parse_json_object('no json here') is None
    True
    """
    candidates = [m.group(1) for m in _FENCE.finditer(text)]
    start = text.find("{")
    if start >= 0:
        candidates.append(text[start : text.rfind("}") + 1])
    decoder = json.JSONDecoder()
    for chunk in candidates:
        chunk = chunk.strip()
        begin = chunk.find("{")
        if begin < 0:
            continue
        try:
            value, _ = decoder.raw_decode(chunk[begin:])
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


@dataclass(frozen=True, slots=True)
class Budget:
    """The caps of one LLM-driven attack (``None``: no cap on that resource).

    ``queries``: defense queries (hard cap). ``tokens``: attacker tokens, prompt
    plus completion, evaluator calls included. ``wall_s``: seconds of wall time.
    """

    queries: int = 200
    tokens: int | None = None
    wall_s: float | None = None

    def __post_init__(self) -> None:
        if self.queries < 0:
            raise ConfigError(f"query budget must be >= 0, got {self.queries!r}")
        if self.tokens is not None and self.tokens < 0:
            raise ConfigError(f"token budget must be >= 0, got {self.tokens!r}")
        if self.wall_s is not None and self.wall_s <= 0:
            raise ConfigError(f"time budget must be > 0 seconds, got {self.wall_s!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"queries": self.queries, "tokens": self.tokens, "wall_s": self.wall_s}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Budget:
        return cls(data["queries"], data.get("tokens"), data.get("wall_s"))


@dataclass(frozen=True, slots=True)
class AttackerUsage:
    """What the attacker (and the evaluator, when it is a model) cost."""

    calls: int = 0
    failures: int = 0
    unparseable: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens_estimated: int = 0
    seconds: float = 0.0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def cost(self, price_per_mtok: tuple[float, float]) -> float:
        """Estimated cost at (prompt, completion) prices per million tokens."""
        return (
            self.prompt_tokens * price_per_mtok[0] + self.completion_tokens * price_per_mtok[1]
        ) / 1e6

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AttackerUsage:
        """Read :meth:`to_dict` back; ``TypeError`` naming a field of the wrong type."""
        return cls(
            **{
                k: expect(data[k], float if k == "seconds" else int, f"usage field {k!r}")
                for k in cls.__dataclass_fields__
            }
        )


@dataclass(frozen=True, slots=True)
class AttackerReply:
    """One attacker call: the answer text, or the error; tokens and seconds spent."""

    text: str | None
    error: str | None
    prompt_tokens: int
    completion_tokens: int
    seconds: float


@dataclass(slots=True)
class Spend:
    """Running totals against a :class:`Budget` (mutable; one per attack)."""

    budget: Budget
    queries: int = 0
    usage: AttackerUsage = field(default_factory=AttackerUsage)
    started: float = field(default_factory=time.perf_counter)
    defense_s: float = 0.0
    stopped_by: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def queries_left(self) -> int:
        return max(self.budget.queries - self.queries, 0)

    def can_call(self) -> bool:
        """May a new attacker call start? Records which cap stopped it when not."""
        if self.budget.tokens is not None and self.usage.tokens >= self.budget.tokens:
            self.stopped_by = self.stopped_by or "tokens"
            return False
        return not self.out_of_time()

    def out_of_time(self) -> bool:
        wall = self.budget.wall_s
        if wall is not None and time.perf_counter() - self.started >= wall:
            self.stopped_by = self.stopped_by or "wall time"
            return True
        return False

    def add(self, reply: AttackerReply, *, estimated: bool, unparseable: bool = False) -> None:
        with self._lock:
            self._add(reply, estimated=estimated, unparseable=unparseable)

    def _add(self, reply: AttackerReply, *, estimated: bool, unparseable: bool) -> None:
        u = self.usage
        self.usage = AttackerUsage(
            calls=u.calls + 1,
            failures=u.failures + (reply.error is not None),
            unparseable=u.unparseable + unparseable,
            prompt_tokens=u.prompt_tokens + reply.prompt_tokens,
            completion_tokens=u.completion_tokens + reply.completion_tokens,
            tokens_estimated=u.tokens_estimated + estimated,
            seconds=u.seconds + reply.seconds,
        )

    def mark_unparseable(self) -> None:
        with self._lock:
            u = self.usage
            self.usage = AttackerUsage(
                u.calls, u.failures, u.unparseable + 1, u.prompt_tokens, u.completion_tokens,
                u.tokens_estimated, u.seconds,
            )  # fmt: skip

    def add_usage(self, extra: AttackerUsage) -> None:
        """Add another spend's usage (an attack read back from its transcript)."""
        with self._lock:
            u = self.usage
            self.usage = AttackerUsage(
                **{k: getattr(u, k) + getattr(extra, k) for k in AttackerUsage.__dataclass_fields__}
            )


def _estimate(text: str) -> int:
    return max(1, (len(text) + 3) // 4)


class Attacker:
    """A model that writes attacks; :meth:`ask` never raises for the model's faults."""

    def __init__(self, model: Target, *, spec: str) -> None:
        self.model = model
        self.spec = spec

    def describe(self) -> dict[str, Any]:
        """What is recorded with the attack (no secret)."""
        describe = getattr(self.model, "describe", None)
        info = describe() if callable(describe) else {}
        return {"spec": self.spec, "name": self.model.name, **info}

    def ask(self, messages: Sequence[Message], spend: Spend) -> AttackerReply:
        """One call; its cost is added to ``spend`` (a failure too, with its error)."""
        start = time.perf_counter()
        usage: dict[str, int] = {}
        try:
            with_usage = getattr(self.model, "generate_with_usage", None)
            if callable(with_usage):
                text, usage = with_usage(messages)
            else:
                text = self.model.generate(messages)
            error = None
        except Exception as exc:  # any failure of the endpoint is recorded, not raised
            text, error = None, f"{type(exc).__name__}: {exc}"[:500]
        seconds = time.perf_counter() - start
        sent = sum(_estimate(m["content"]) for m in messages)
        estimated = "prompt_tokens" not in usage
        reply = AttackerReply(
            text,
            error,
            usage.get("prompt_tokens", sent),
            usage.get("completion_tokens", _estimate(text or "")),
            seconds,
        )
        spend.add(reply, estimated=estimated)
        return reply

    def close(self) -> None:
        close = getattr(self.model, "close", None)
        if callable(close):
            close()


def build_attacker(spec: str) -> Attacker:
    """An :class:`Attacker` from a target spec (``openai:MODEL@URL``, ``llm:ollama/M``...)."""
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError("--attacker: name a chat endpoint, e.g. openai:MODEL@URL")
    return Attacker(build_target(spec), spec=spec)
