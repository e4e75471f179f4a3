"""Core records: what flows from datasets through the engine into metrics and reports.

Every record is a frozen dataclass, so a value cannot change after it has been
measured. The records carry no behaviour beyond validation and (de)serialisation:
metrics and reports are functions over them.

Example:
    >>> s = Sample(id="a1", text="Ignore previous instructions", label="attack",
    ...            category="direct_injection")
    >>> v = Verdict(blocked=True, score=0.97, reasons=("instruction_override",))
    >>> o = Outcome(sample_id=s.id, verdict=v, status="ok", latency_ms=0.4)
    >>> o.is_ok
    True
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any, Literal, get_args

from shieldbench._views import RecordView, ZipView

__all__ = [
    "ERROR_POLICIES",
    "LABELS",
    "SEVERITIES",
    "STATUSES",
    "TIERS",
    "DatasetInfo",
    "DefenseInfo",
    "ErrorPolicy",
    "Label",
    "Outcome",
    "Run",
    "RunConfig",
    "Sample",
    "Severity",
    "Status",
    "Tier",
    "Verdict",
]

Label = Literal["attack", "benign"]
Status = Literal["ok", "error", "timeout"]
ErrorPolicy = Literal["fail_closed", "fail_open", "exclude"]
Severity = Literal["low", "medium", "high", "critical"]
Tier = Literal["known", "paraphrased", "semantic", "novel", "adaptive"]

LABELS: tuple[str, ...] = get_args(Label)
STATUSES: tuple[str, ...] = get_args(Status)
ERROR_POLICIES: tuple[str, ...] = get_args(ErrorPolicy)
SEVERITIES: tuple[str, ...] = get_args(Severity)
TIERS: tuple[str, ...] = get_args(Tier)

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _frozen_mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if not value:
        return _EMPTY
    return MappingProxyType(dict(value))


@dataclass(frozen=True, slots=True)
class Sample:
    """One labelled text to screen.

    ``label`` is ``"attack"`` when a perfect defense should block the text and
    ``"benign"`` when it should let it through. ``category`` is the coarse family
    (``direct_injection``, ``jailbreak``, ``benign_chat``, ...); ``subcategory``,
    ``severity``, ``tier`` and ``source`` are optional refinements used for
    breakdowns. ``metadata`` holds loader-specific extras (language, parent id,
    mutator, ...) and must stay JSON-serialisable.
    """

    id: str
    text: str
    label: Label
    category: str = "uncategorized"
    subcategory: str | None = None
    severity: Severity | None = None
    tier: Tier | None = None
    source: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False)
    messages: tuple[Mapping[str, str], ...] | None = field(default=None, hash=False)

    def __post_init__(self) -> None:
        if self.messages is not None:
            object.__setattr__(self, "messages", _check_messages(self.id, self.messages))
        if self.label not in LABELS:
            raise ValueError(
                f"Sample {self.id!r}: label must be one of {LABELS}, got {self.label!r}"
            )
        if self.severity is not None and self.severity not in SEVERITIES:
            raise ValueError(
                f"Sample {self.id!r}: severity must be one of {SEVERITIES}, got {self.severity!r}"
            )
        if self.tier is not None and self.tier not in TIERS:
            raise ValueError(f"Sample {self.id!r}: tier must be one of {TIERS}, got {self.tier!r}")
        object.__setattr__(self, "metadata", _frozen_mapping(self.metadata))

    @property
    def is_attack(self) -> bool:
        return self.label == "attack"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "label": self.label,
            "category": self.category,
            "subcategory": self.subcategory,
            "severity": self.severity,
            "tier": self.tier,
            "source": self.source,
            "metadata": dict(self.metadata),
        } | ({} if self.messages is None else {"messages": [dict(m) for m in self.messages]})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Sample:
        return cls(
            id=str(data["id"]),
            text=str(data["text"]),
            label=data["label"],
            category=data.get("category") or "uncategorized",
            subcategory=data.get("subcategory"),
            severity=data.get("severity"),
            tier=data.get("tier"),
            source=data.get("source"),
            metadata=data.get("metadata") or {},
            messages=data.get("messages"),
        )


MESSAGE_ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")


def _check_messages(sample_id: str, messages: Any) -> tuple[Mapping[str, str], ...]:
    """A conversation as read-only ``{"role", "content"}`` mappings, checked."""
    if isinstance(messages, str | bytes) or not hasattr(messages, "__iter__"):
        raise ValueError(f"Sample {sample_id!r}: messages must be a list of {{role, content}}")
    checked = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
            raise ValueError(f"Sample {sample_id!r}: messages[{i}] is not an object")
        role, content = m.get("role"), m.get("content")
        if role not in MESSAGE_ROLES:
            raise ValueError(
                f"Sample {sample_id!r}: messages[{i}].role must be one of {MESSAGE_ROLES},"
                f" got {role!r}"
            )
        if not isinstance(content, str):
            raise ValueError(f"Sample {sample_id!r}: messages[{i}].content must be a string")
        checked.append(MappingProxyType({"role": role, "content": content}))
    if not checked:
        raise ValueError(f"Sample {sample_id!r}: messages is empty")
    return tuple(checked)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a defense decided about one text.

    ``score`` is "how likely an attack", higher = more suspicious, conventionally in
    [0, 1]; it is present whenever the defense has one so that ROC and threshold
    analysis is possible. ``label`` is the defense's own class name (``INJECTION``,
    ``JAILBREAK``, ``SAFE``...), ``reasons`` the rules or signals that fired and
    ``details`` small JSON-serialisable facts a composite defense wants reported
    (which path of a tiered pipeline answered, what a warn-only stage said, ...).
    """

    blocked: bool
    score: float | None = None
    label: str | None = None
    reasons: tuple[str, ...] = ()
    details: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.blocked, bool):
            raise TypeError(f"Verdict.blocked must be a bool, got {type(self.blocked).__name__}")
        if self.score is not None:
            score = float(self.score)
            if math.isnan(score):
                raise ValueError("Verdict.score must not be NaN; use None when there is no score")
            object.__setattr__(self, "score", score)
        object.__setattr__(self, "reasons", tuple(self.reasons))
        object.__setattr__(self, "details", _frozen_mapping(self.details))

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "blocked": self.blocked,
            "score": self.score,
            "label": self.label,
            "reasons": list(self.reasons),
        }
        if self.details:
            data["details"] = dict(self.details)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Verdict:
        return cls(
            blocked=bool(data["blocked"]),
            score=data.get("score"),
            label=data.get("label"),
            reasons=tuple(data.get("reasons") or ()),
            details=data.get("details") or {},
        )


@dataclass(frozen=True, slots=True)
class Outcome:
    """The result of screening one sample: a verdict, or an error / timeout.

    Errors are outcomes too: they are never dropped and never silently counted as
    blocked or allowed. The run's error policy decides, explicitly, how metrics
    treat them (see :func:`shieldbench.metrics.effective_blocked`).
    ``latency_ms`` is the wall time of the one-text call that screened the sample
    (what a caller waits for it), or ``None`` when the sample was screened inside a
    batch of several texts (a batch's cost per text is the run's amortised figure,
    not any one text's latency); ``attempts`` counts retries + 1.
    """

    sample_id: str
    verdict: Verdict | None
    status: Status
    error: str | None = None
    latency_ms: float | None = None
    attempts: int = 1
    end_to_end: Mapping[str, Any] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.end_to_end is not None:
            object.__setattr__(self, "end_to_end", _frozen_mapping(self.end_to_end))
        if self.status not in STATUSES:
            raise ValueError(f"Outcome.status must be one of {STATUSES}, got {self.status!r}")
        if self.status == "ok" and self.verdict is None:
            raise ValueError(f"Outcome {self.sample_id!r}: status 'ok' requires a verdict")
        if self.status != "ok" and self.verdict is not None:
            raise ValueError(
                f"Outcome {self.sample_id!r}: status {self.status!r} cannot carry a verdict"
            )

    @property
    def is_ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        return {
            "sample_id": self.sample_id,
            "verdict": None if self.verdict is None else self.verdict.to_dict(),
            "status": self.status,
            "error": self.error,
            "latency_ms": self.latency_ms,
            "attempts": self.attempts,
        } | ({} if self.end_to_end is None else {"end_to_end": dict(self.end_to_end)})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Outcome:
        verdict = data.get("verdict")
        return cls(
            sample_id=str(data["sample_id"]),
            verdict=None if verdict is None else Verdict.from_dict(verdict),
            status=data["status"],
            error=data.get("error"),
            latency_ms=data.get("latency_ms"),
            attempts=int(data.get("attempts", 1)),
            end_to_end=data.get("end_to_end"),
        )


@dataclass(frozen=True, slots=True)
class DefenseInfo:
    """Which defense ran: the spec string that builds it, its name and version."""

    spec: str
    name: str
    version: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"spec": self.spec, "name": self.name, "version": self.version}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DefenseInfo:
        return cls(spec=data["spec"], name=data["name"], version=data.get("version"))


@dataclass(frozen=True, slots=True)
class DatasetInfo:
    """Which data it ran on: the spec, the content hash (its version) and size.

    ``sources`` lists the component datasets of a mixture as ``(spec, hash)``.
    """

    spec: str
    content_hash: str
    n_samples: int
    sources: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "content_hash": self.content_hash,
            "n_samples": self.n_samples,
            "sources": [list(s) for s in self.sources],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DatasetInfo:
        return cls(
            spec=data["spec"],
            content_hash=data["content_hash"],
            n_samples=int(data["n_samples"]),
            sources=tuple((str(a), str(b)) for a, b in data.get("sources") or ()),
        )


@dataclass(frozen=True, slots=True)
class RunConfig:
    """How the engine runs a defense. Every field is reported with the run.

    - ``error_policy``: how an error / timeout counts in metrics: ``fail_closed``
      (as blocked), ``fail_open`` (as allowed) or ``exclude`` (left out of rates,
      still counted and reported).
    - ``timeout_s``: per-call time limit (``None`` = no limit).
    - ``concurrency``: parallel calls for async and thread-pooled defenses.
    - ``retries``: extra attempts after a transient error; ``retry_backoff_s`` the
      first back-off, doubled each retry.
    - ``warmup``: calls made before measuring, excluded from latency figures.
    - ``batch_size``: texts per ``check_batch`` call.
    - ``latency_sample``: how many texts of a batched run are called one at a time
      (``check``) to measure per-call latency: a seeded sample of about this many
      (every text when the run has fewer); ``0`` calls none (the run then has no
      per-call figure, only its amortised batch cost).
    """

    error_policy: ErrorPolicy = "fail_closed"
    timeout_s: float | None = 30.0
    concurrency: int = 8
    retries: int = 2
    retry_backoff_s: float = 0.25
    warmup: int = 3
    batch_size: int = 32
    latency_sample: int = 100

    def __post_init__(self) -> None:
        if self.error_policy not in ERROR_POLICIES:
            raise ValueError(
                f"error_policy must be one of {ERROR_POLICIES}, got {self.error_policy!r}"
            )
        if self.timeout_s is not None and not self.timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0 or None, got {self.timeout_s!r}")
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {self.concurrency!r}")
        if self.retries < 0:
            raise ValueError(f"retries must be >= 0, got {self.retries!r}")
        if self.retry_backoff_s < 0:
            raise ValueError(f"retry_backoff_s must be >= 0, got {self.retry_backoff_s!r}")
        if self.warmup < 0:
            raise ValueError(f"warmup must be >= 0, got {self.warmup!r}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size!r}")
        if self.latency_sample < 0:
            raise ValueError(f"latency_sample must be >= 0, got {self.latency_sample!r}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "error_policy": self.error_policy,
            "timeout_s": self.timeout_s,
            "concurrency": self.concurrency,
            "retries": self.retries,
            "retry_backoff_s": self.retry_backoff_s,
            "warmup": self.warmup,
            "batch_size": self.batch_size,
            "latency_sample": self.latency_sample,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunConfig:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)


@dataclass(frozen=True, slots=True)
class Run:
    """One defense over one dataset: the unit every metric and report reads.

    ``samples`` and ``outcomes`` are aligned by position and by id, one outcome per
    sample (the engine guarantees it and the constructor checks it), so a Run is
    self-contained: reports can show example bypasses and per-category figures
    without the original dataset. ``schema_version`` versions the JSON form.
    """

    id: str
    defense: DefenseInfo
    dataset: DatasetInfo
    config: RunConfig
    samples: Sequence[Sample]
    outcomes: Sequence[Outcome]
    started: datetime
    finished: datetime
    environment: Mapping[str, str] = field(default_factory=lambda: _EMPTY, compare=False)
    schema_version: int = 1
    end_to_end: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "end_to_end", _frozen_mapping(self.end_to_end))
        # Record views (a Parquet run file's rows) stay columnar; each row holds one id
        # for its sample and its outcome, so they are aligned by construction.
        lazy = isinstance(self.samples, RecordView) and isinstance(self.outcomes, RecordView)
        if not lazy:
            object.__setattr__(self, "samples", tuple(self.samples))
            object.__setattr__(self, "outcomes", tuple(self.outcomes))
        object.__setattr__(self, "environment", _frozen_mapping(self.environment))
        if len(self.samples) != len(self.outcomes):
            raise ValueError(
                f"Run {self.id!r}: {len(self.outcomes)} outcomes for {len(self.samples)} samples;"
                " a run needs exactly one outcome per sample"
            )
        for i, (s, o) in enumerate(() if lazy else zip(self.samples, self.outcomes, strict=True)):
            if s.id != o.sample_id:
                raise ValueError(
                    f"Run {self.id!r}: outcome {i} is for sample {o.sample_id!r}"
                    f" but sample {i} is {s.id!r}"
                )

    @property
    def duration_s(self) -> float:
        return (self.finished - self.started).total_seconds()

    def pairs(self) -> Sequence[tuple[Sample, Outcome]]:
        """``(sample, outcome)`` pairs in dataset order (made as read for a columnar run)."""
        if isinstance(self.samples, RecordView):
            return ZipView(self.samples, self.outcomes)
        return tuple(zip(self.samples, self.outcomes, strict=True))
