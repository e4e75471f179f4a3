"""Build the report model from runs (and an adaptive attack): :func:`build_report`.

Every figure comes from :mod:`shieldbench.metrics`; this module decides what a
report shows: one section per run, runs grouped by dataset content hash with a
comparison when two or more defenses ran on the same data, worst cases, how
errors counted, composite-defense facts, sample-size warnings and the
recommendations of :mod:`shieldbench.reports._recommend`.

Example:
    >>> from shieldbench.metrics._testing import make_run
    >>> run = make_run([("jailbreak", True, True, 0.9), ("jailbreak", True, False, 0.2),
    ...                 ("chat", False, False, 0.1), ("chat", False, True, 0.7)])
    >>> report = build_report([run])
    >>> report.scope, report.runs[0].label, report.runs[0].worst_case.n_bypasses
    ('run', 'test-defense', 1)
    >>> report.runs[0].summary.rates.attack_success_rate.value
    0.5
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from importlib import metadata
from typing import TYPE_CHECKING, Any

from shieldbench.datasets import sample_size_warnings
from shieldbench.defenses import dual_gain, path_shares
from shieldbench.errors import ConfigError, StatisticsError
from shieldbench.metrics import (
    DISTINCT_LIMIT,
    Comparison,
    GroupedComparisons,
    RunSummary,
    compare_pairs_by_group,
    compare_runs,
    effective_blocked,
    summarize,
)
from shieldbench.reports._attack_section import read_attack
from shieldbench.reports._e2e_view import end_to_end_view
from shieldbench.reports._examples import worst_case
from shieldbench.reports._flips import flip_sections
from shieldbench.reports._model import (
    AttackSection,
    CompositeFacts,
    DatasetGroup,
    ErrorHandling,
    Report,
    ReportSettings,
    RunSection,
    Scope,
)
from shieldbench.reports._plane import tradeoff_planes
from shieldbench.reports._recommend import recommend
from shieldbench.reports._run_figures import curves, latency_histogram
from shieldbench.types import ERROR_POLICIES, ErrorPolicy, Run

if TYPE_CHECKING:
    from shieldbench.attacks import AttackResult

__all__ = ["build_report"]

TEXT_LIMIT = 500
_COUNTED_AS = {"fail_closed": "blocked", "fail_open": "allowed", "exclude": "excluded"}


def _version() -> str:
    try:
        return metadata.version("shieldbench")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "unknown"


def _labels(runs: Sequence[Run]) -> list[str]:
    """Unique display labels: the defense spec, with the dataset or run id when needed."""
    specs = Counter(r.defense.spec for r in runs)
    pairs = Counter((r.defense.spec, r.dataset.spec) for r in runs)
    labels = []
    for r in runs:
        if specs[r.defense.spec] == 1:
            labels.append(r.defense.spec)
        elif pairs[(r.defense.spec, r.dataset.spec)] == 1:
            labels.append(f"{r.defense.spec} · {r.dataset.spec}")
        else:
            labels.append(f"{r.defense.spec} [{r.id}]")
    seen: Counter[str] = Counter()
    unique = []
    for label in labels:
        seen[label] += 1
        unique.append(label if seen[label] == 1 else f"{label} #{seen[label]}")
    return unique


def _error_handling(run: Run, summary: RunSummary) -> ErrorHandling:
    policy = summary.settings.policy
    counts = summary.operations.errors
    attack_errors = benign_errors = 0
    messages: list[str] = []
    for sample, outcome in run.pairs():
        if outcome.status == "ok":
            continue
        if sample.is_attack:
            attack_errors += 1
        else:
            benign_errors += 1
        message = (outcome.error or outcome.status)[:300]
        if len(messages) < 3 and message not in messages:
            messages.append(message)
    return ErrorHandling(
        policy,
        _COUNTED_AS[policy],
        counts.total,
        len(run.outcomes),
        dict(counts.by_status),
        dict(counts.by_type),
        attack_errors,
        benign_errors,
        tuple(messages),
    )


def _composite(run: Run) -> CompositeFacts | None:
    shares = path_shares(run)
    gain = dual_gain(run)
    has_paths = shares.fast + shares.deep > 0
    has_dual = gain.attacks + gain.benign + gain.warn_errors > 0
    if not (has_paths or has_dual):
        return None
    return CompositeFacts(shares if has_paths else None, gain if has_dual else None)


def _section(
    run: Run,
    label: str,
    *,
    policy: ErrorPolicy | None,
    settings: ReportSettings,
    distinct_limit: int,
) -> RunSection:
    summary = summarize(
        run,
        policy=policy,
        coverage_target=settings.coverage_target,
        target_fpr=settings.target_fpr,
        distinct_limit=distinct_limit,
    )
    chosen: ErrorPolicy = summary.settings.policy  # type: ignore[assignment]
    blocked = (effective_blocked(o, chosen) for o in run.outcomes)  # one pass, not a list
    return RunSection(
        label=label,
        run_id=run.id,
        defense=run.defense,
        dataset=run.dataset,
        config=run.config,
        environment=run.environment,
        started=run.started,
        finished=run.finished,
        summary=summary,
        curves=curves(run, chosen, settings.target_fpr, distinct_limit),
        latency_histogram=latency_histogram(run),
        errors=_error_handling(run, summary),
        worst_case=worst_case(
            run, label, summary, blocked, examples=settings.examples, text_limit=TEXT_LIMIT
        ),
        composite=_composite(run),
    )


def _by_category(runs: Sequence[Run], labels: Sequence[str], cmp: Comparison) -> GroupedComparisons:
    """Every pair's paired tests per category, read like the comparison (its policy,
    alpha, correction and interval method): what ``compare --by category`` prints."""
    s = cmp.settings
    return compare_pairs_by_group(
        runs,
        labels,
        by="category",
        alpha=s.alpha,
        correction=s.correction,  # type: ignore[arg-type]  # a Comparison's own setting
        policy=s.policy,  # type: ignore[arg-type]
        confidence=s.confidence,
        method=s.method,  # type: ignore[arg-type]
    )


def _groups(
    runs: Sequence[Run],
    sections: Sequence[RunSection],
    *,
    policy: ErrorPolicy | None,
    settings: ReportSettings,
    comparison: Comparison | None,
) -> tuple[DatasetGroup, ...]:
    by_hash: dict[str, list[int]] = {}
    for i, r in enumerate(runs):
        by_hash.setdefault(r.dataset.content_hash, []).append(i)
    groups = []
    for content_hash, members in by_hash.items():
        group_runs = [runs[i] for i in members]
        labels = [sections[i].label for i in members]
        cmp: Comparison | None = None
        note: str | None = None
        if len(group_runs) >= 2:
            if comparison is not None and comparison.content_hash == content_hash:
                if len(comparison.runs) != len(group_runs):
                    raise ConfigError(
                        f"the comparison given covers {len(comparison.runs)} runs but the report"
                        f" has {len(group_runs)} runs on {group_runs[0].dataset.spec!r}; pass the"
                        " same runs to compare_runs and build_report"
                    )
                cmp = comparison
            else:
                try:
                    cmp = compare_runs(group_runs, policy=policy)
                except StatisticsError as exc:
                    note = f"not compared: {exc}"
        groups.append(
            DatasetGroup(
                group_runs[0].dataset,
                tuple(labels),
                cmp,
                note,
                sample_size_warnings(group_runs[0].samples, margin=settings.margin),
                planes=tradeoff_planes(
                    labels, [sections[i].summary for i in members], max_fpr=settings.max_fpr
                ),
                by_category=None if cmp is None else _by_category(group_runs, labels, cmp),
                flips=flip_sections(group_runs, labels),
                text_limit=settings.text_limit,
            )
        )
    return tuple(groups)


def _default_title(runs: Sequence[Run], attack: AttackSection | None) -> str:
    if attack is not None:
        r = attack.result
        return f"shieldbench adaptive attack: {r.defense.spec} on {r.dataset.spec}"
    if len(runs) == 1:
        return f"shieldbench report: {runs[0].defense.spec} on {runs[0].dataset.spec}"
    n_def = len({r.defense.spec for r in runs})
    n_data = len({r.dataset.content_hash for r in runs})
    return (
        f"shieldbench benchmark: {n_def} defense{'s' * (n_def != 1)} on"
        f" {n_data} dataset{'s' * (n_data != 1)}"
    )


def _check_options(runs: Sequence[Run], margin: float, examples: int, attack: Any) -> None:
    if not runs and attack is None:
        raise ConfigError("a report needs at least one run or an adaptive attack result")
    for i, r in enumerate(runs):
        if not isinstance(r, Run):
            raise ConfigError(f"runs[{i}] is a {type(r).__name__}, not a shieldbench Run")
    if not 0.0 < margin <= 0.5:
        raise ConfigError(f"margin must be in (0, 0.5], e.g. 0.1 for ±10 points; got {margin!r}")
    if isinstance(examples, bool) or not isinstance(examples, int) or examples < 0:
        raise ConfigError(f"examples must be a whole number >= 0, got {examples!r}")


def build_report(
    runs: Sequence[Run],
    *,
    title: str | None = None,
    margin: float = 0.1,
    examples: int = 5,
    attack: AttackResult | Mapping[str, Any] | None = None,
    comparison: Comparison | None = None,
    policy: ErrorPolicy | None = None,
    generated_at: datetime | None = None,
    max_fpr: float | None = None,
    distinct_limit: int = DISTINCT_LIMIT,
) -> Report:
    """The report model of ``runs`` (one or several) and/or an adaptive ``attack``.

    - ``margin``: the wanted half-width of a 95% interval; sample-size warnings and
      the "interval too wide" recommendations use it.
    - ``examples``: example bypasses per attack category and false positives per
      benign category kept in the model (the Markdown view prints the worst
      ``examples`` of each kind per run; JSON and HTML carry them all).
    - ``attack``: an adaptive-attack result (:class:`~shieldbench.attacks.AttackResult`,
      or its ``to_dict()`` form, read back and checked) to report.
    - ``comparison``: a precomputed :func:`~shieldbench.metrics.compare_runs` result
      (e.g. with a non-inferiority margin) used for the runs on its dataset;
      otherwise runs sharing a content hash are compared with the defaults.
    - ``policy``: read every run under this error policy instead of its own.
    - ``generated_at``: the report's timestamp (default: now, UTC).
    - ``max_fpr``: the reader's policy, "FPR at most this": a line on the security /
      utility plane, and the target FPR of "block rate at FPR <= target" (default
      1%).
    - ``distinct_limit``: the distinct scores up to which a run's score figures are
      exact; past it they come from a sketch and the report states its error bounds.
    """
    runs = list(runs)
    _check_options(runs, margin, examples, attack)
    if policy is not None and policy not in ERROR_POLICIES:
        raise ConfigError(f"policy must be one of {', '.join(ERROR_POLICIES)}, got {policy!r}")
    if max_fpr is not None and (
        isinstance(max_fpr, bool) or not isinstance(max_fpr, int | float) or not 0 < max_fpr < 1
    ):
        raise ConfigError(f"max_fpr must be a fraction in (0, 1), e.g. 0.02; got {max_fpr!r}")
    settings = ReportSettings(
        margin=margin,
        examples=examples,
        coverage_target=0.9,
        target_fpr=0.01 if max_fpr is None else float(max_fpr),
        text_limit=TEXT_LIMIT,
        max_fpr=None if max_fpr is None else float(max_fpr),
    )
    labels = _labels(runs)
    sections = tuple(
        _section(r, label, policy=policy, settings=settings, distinct_limit=distinct_limit)
        for r, label in zip(runs, labels, strict=True)
    )
    groups = _groups(runs, sections, policy=policy, settings=settings, comparison=comparison)
    if comparison is not None and all(g.comparison is not comparison for g in groups):
        raise ConfigError(
            f"the comparison given is on content hash {comparison.content_hash}, which no run"
            " of the report has"
        )
    attack_section = None
    if attack is not None:
        result = read_attack(attack)
        attack_section = AttackSection(result, result.to_dict())
    scope: Scope = "attack" if attack is not None else ("run" if len(runs) == 1 else "benchmark")
    return Report(
        title=title or _default_title(runs, attack_section),
        scope=scope,
        generated_at=generated_at or datetime.now(UTC),
        shieldbench_version=_version(),
        settings=settings,
        runs=sections,
        groups=groups,
        attack=attack_section,
        recommendations=recommend(sections, groups, attack_section, settings),
        end_to_end=end_to_end_view(runs, labels),
    )
