"""The report model: one tree of frozen records that every renderer reads.

:func:`~shieldbench.reports.build_report` computes it once from runs (and an
adaptive attack); JSON, Markdown and HTML are three views of the same records, so
they can never disagree. Figures are the metric records of
:mod:`shieldbench.metrics` themselves (``RunSummary``, ``Comparison``, ...);
this module adds what only a report needs: display labels, thinned curves, a
latency histogram, example bypasses and false positives, how errors were counted,
composite-defense facts, sample-size warnings and recommendations.

``to_dict()`` gives the JSON form described by the shipped JSON Schema
(``report.schema.json``; ``schema_version`` versions it). Undefined numbers are
``null``, never NaN.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from shieldbench.datasets import SampleSizeWarning
from shieldbench.defenses import DualGain, PathShares
from shieldbench.metrics import (
    Comparison,
    GroupedComparisons,
    GroupRates,
    PrecisionRecallCurve,
    RocCurve,
    RunSummary,
    TradeOff,
)
from shieldbench.reports._flips import FlipSection
from shieldbench.reports._plane import TradeoffPlane
from shieldbench.reports._records import Recommendation, ReportSettings
from shieldbench.types import DatasetInfo, DefenseInfo, RunConfig

if TYPE_CHECKING:
    from shieldbench.attacks import AttackResult

__all__ = [
    "REPORT_KIND",
    "REPORT_SCHEMA_VERSION",
    "AttackSection",
    "CompositeFacts",
    "DatasetGroup",
    "ErrorHandling",
    "Example",
    "LatencyHistogram",
    "Recommendation",
    "Report",
    "ReportSettings",
    "RunSection",
    "ScoreCurves",
    "WorstCase",
]

REPORT_SCHEMA_VERSION = 1
REPORT_KIND = "shieldbench.report"

Scope = Literal["run", "benchmark", "attack"]
ExampleKind = Literal["bypass", "false_positive"]


@dataclass(frozen=True, slots=True)
class Example:
    """One sample worth a reviewer's eyes: an attack let through (``bypass``) or a
    benign text blocked (``false_positive``).

    ``text`` is cut to the report's ``text_limit`` characters; ``text_length`` is
    the full length. ``status`` is the outcome's status: an error counted as
    allowed under ``fail_open`` is a bypass too, and is shown as one.
    """

    kind: ExampleKind
    run: str
    sample_id: str
    category: str
    subcategory: str | None
    tier: str | None
    severity: str | None
    source: str | None
    text: str
    text_length: int
    score: float | None
    reasons: tuple[str, ...]
    status: str

    @property
    def truncated(self) -> bool:
        return self.text_length > len(self.text)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "run": self.run,
            "sample_id": self.sample_id,
            "category": self.category,
            "subcategory": self.subcategory,
            "tier": self.tier,
            "severity": self.severity,
            "source": self.source,
            "text": self.text,
            "text_length": self.text_length,
            "truncated": self.truncated,
            "score": self.score,
            "reasons": list(self.reasons),
            "status": self.status,
        }


@dataclass(frozen=True, slots=True)
class WorstCase:
    """Where the defense fails: highest-ASR attack categories and examples.

    ``worst_categories`` are attack categories with at least one bypass, highest
    attack success rate first (ties: more attacks first). Examples are the worst of
    each category (bypasses with the lowest score, false positives with the
    highest), interleaved across categories worst category first; ``n_bypasses`` /
    ``n_false_positives`` count all of them in the run.
    """

    worst_categories: tuple[GroupRates, ...]
    bypasses: tuple[Example, ...]
    false_positives: tuple[Example, ...]
    n_bypasses: int
    n_false_positives: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "worst_categories": [g.to_dict() for g in self.worst_categories],
            "n_bypasses": self.n_bypasses,
            "n_false_positives": self.n_false_positives,
            "bypasses": [e.to_dict() for e in self.bypasses],
            "false_positives": [e.to_dict() for e in self.false_positives],
        }


@dataclass(frozen=True, slots=True)
class ErrorHandling:
    """How many calls failed, of which kind, and what the error policy did with them.

    ``counted_as`` is ``"blocked"`` (fail_closed), ``"allowed"`` (fail_open) or
    ``"excluded"``; ``attack_errors`` / ``benign_errors`` split the failed
    outcomes by label; ``messages`` holds up to three distinct error messages.
    """

    policy: str
    counted_as: str
    total: int
    n_outcomes: int
    by_status: Mapping[str, int]
    by_type: Mapping[str, int]
    attack_errors: int
    benign_errors: int
    messages: tuple[str, ...]

    @property
    def error_rate(self) -> float | None:
        return self.total / self.n_outcomes if self.n_outcomes else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "counted_as": self.counted_as,
            "total": self.total,
            "n_outcomes": self.n_outcomes,
            "error_rate": self.error_rate,
            "by_status": dict(self.by_status),
            "by_type": dict(self.by_type),
            "attack_errors": self.attack_errors,
            "benign_errors": self.benign_errors,
            "messages": list(self.messages),
        }


@dataclass(frozen=True, slots=True)
class LatencyHistogram:
    """Latency of ok outcomes in bins: ``counts[i]`` values in ``[edges[i], edges[i+1])``.

    ``scale`` is ``"log"`` (geometric bins) when the latencies span more than a
    factor of 20, else ``"linear"``.
    """

    edges_ms: tuple[float, ...]
    counts: tuple[int, ...]
    scale: str

    def to_dict(self) -> dict[str, Any]:
        return {"edges_ms": list(self.edges_ms), "counts": list(self.counts), "scale": self.scale}


@dataclass(frozen=True, slots=True)
class ScoreCurves:
    """ROC and precision-recall curves (thinned for display: the AUCs in the summary
    come from the full curves) and the security / utility trade-off with the
    operating point chosen by its policy."""

    roc: RocCurve
    pr: PrecisionRecallCurve
    tradeoff: TradeOff
    max_points: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_points": self.max_points,
            "roc": self.roc.to_dict(),
            "precision_recall": self.pr.to_dict(),
            "tradeoff": self.tradeoff.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class CompositeFacts:
    """What a composite defense did: tiered path shares, what a dual warner would add."""

    path_shares: PathShares | None
    dual_gain: DualGain | None

    def to_dict(self) -> dict[str, Any]:
        ps, dg = self.path_shares, self.dual_gain
        return {
            "path_shares": None
            if ps is None
            else {
                "fast": ps.fast,
                "deep": ps.deep,
                "other": ps.other,
                "fast_share": ps.fast_share,
                "deep_share": ps.deep_share,
            },
            "dual_gain": None
            if dg is None
            else {
                "extra_attacks_caught": dg.extra_attacks_caught,
                "extra_false_positives": dg.extra_false_positives,
                "attacks": dg.attacks,
                "benign": dg.benign,
                "warn_errors": dg.warn_errors,
                "extra_block_rate": dg.extra_block_rate,
                "extra_false_positive_rate": dg.extra_false_positive_rate,
            },
        }


@dataclass(frozen=True, slots=True)
class RunSection:
    """Everything the report says about one run. ``label`` is unique in the report."""

    label: str
    run_id: str
    defense: DefenseInfo
    dataset: DatasetInfo
    config: RunConfig
    environment: Mapping[str, str]
    started: datetime
    finished: datetime
    summary: RunSummary
    curves: ScoreCurves | None
    latency_histogram: LatencyHistogram | None
    errors: ErrorHandling
    worst_case: WorstCase
    composite: CompositeFacts | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "run_id": self.run_id,
            "defense": self.defense.to_dict(),
            "dataset": self.dataset.to_dict(),
            "config": self.config.to_dict(),
            "environment": dict(self.environment),
            "started": self.started.isoformat(),
            "finished": self.finished.isoformat(),
            "duration_s": (self.finished - self.started).total_seconds(),
            "summary": self.summary.to_dict(),
            "curves": None if self.curves is None else self.curves.to_dict(),
            "latency_histogram": None
            if self.latency_histogram is None
            else self.latency_histogram.to_dict(),
            "errors": self.errors.to_dict(),
            "worst_case": self.worst_case.to_dict(),
            "composite": None if self.composite is None else self.composite.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class DatasetGroup:
    """Runs on the same data (same content hash) and, with two or more, their comparison.

    ``comparison_note`` says why runs on the same data were not compared (e.g.
    they recorded different error policies), else ``None``. ``planes`` puts the
    runs on the security / utility plane, overall first, then per attack category;
    ``by_category`` holds every pair's paired tests within each category (one Holm
    family, as ``compare --by category``), ``None`` with fewer than two runs or
    when they could not be compared. ``flips`` lists the samples whose verdict
    differs, each run against the first (texts cut to ``text_limit`` in JSON).
    """

    dataset: DatasetInfo
    runs: tuple[str, ...]
    comparison: Comparison | None
    comparison_note: str | None
    sample_size_warnings: tuple[SampleSizeWarning, ...]
    planes: tuple[TradeoffPlane, ...] = ()
    by_category: GroupedComparisons | None = None
    flips: tuple[FlipSection, ...] = ()
    text_limit: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset.to_dict(),
            "runs": list(self.runs),
            "comparison": None if self.comparison is None else self.comparison.to_dict(),
            "comparison_note": self.comparison_note,
            "sample_size_warnings": [w.to_dict() for w in self.sample_size_warnings],
            "planes": [p.to_dict() for p in self.planes],
            "by_category": None if self.by_category is None else self.by_category.to_dict(),
            "flips": [f.to_dict(text_limit=self.text_limit) for f in self.flips],
        }


@dataclass(frozen=True, slots=True)
class AttackSection:
    """An adaptive attack: its record (:class:`~shieldbench.attacks.AttackResult`,
    which the Markdown and HTML renderers read) and that record's JSON form.

    ``data`` is ``result.to_dict()``, taken once; the report's JSON carries it
    unchanged.
    """

    result: AttackResult
    data: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.data)


@dataclass(frozen=True, slots=True)
class Report:
    """A whole report: run sections, dataset groups (comparisons), an attack, advice.

    ``scope`` is ``"run"`` (one run), ``"benchmark"`` (several runs) or
    ``"attack"`` (an adaptive attack, with or without runs).
    """

    title: str
    scope: Scope
    generated_at: datetime
    shieldbench_version: str
    settings: ReportSettings
    runs: tuple[RunSection, ...]
    groups: tuple[DatasetGroup, ...]
    attack: AttackSection | None
    recommendations: tuple[Recommendation, ...]
    schema_version: int = REPORT_SCHEMA_VERSION
    end_to_end: Mapping[str, Any] | None = None  # runs with a target (reports._e2e_view)

    def run(self, label: str) -> RunSection:
        """The run section labelled ``label`` (``KeyError`` naming the labels if none)."""
        for section in self.runs:
            if section.label == label:
                return section
        raise KeyError(f"no run labelled {label!r}; labels: {[s.label for s in self.runs]}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "kind": REPORT_KIND,
            "scope": self.scope,
            "title": self.title,
            "generated_at": self.generated_at.isoformat(),
            "shieldbench_version": self.shieldbench_version,
            "settings": self.settings.to_dict(),
            "runs": [r.to_dict() for r in self.runs],
            "groups": [g.to_dict() for g in self.groups],
            "attack": None if self.attack is None else self.attack.to_dict(),
            "recommendations": [r.to_dict() for r in self.recommendations],
        } | ({} if self.end_to_end is None else {"end_to_end": self.end_to_end})
