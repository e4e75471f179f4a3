"""Recommendations: rules over the report's numbers, never hand-written prose.

Each rule is a function ``(context) -> iterable of Recommendation`` reading the
figures already in the report; :data:`RULES` lists them in order and
:func:`recommend` runs them all, most urgent first (critical, warning, info;
rule order within a priority). A priority needs the data behind it: a rule
calls a figure past a line only when its whole interval is past it (an interval
that includes the acceptable value is never critical), and the same finding about
several runs is one card naming them all. The thresholds are stated in each rule:

- ``coverage_gap``: attack categories whose block rate is below the coverage
  target, interval and all (critical when one lets through half or more of its
  attacks, interval and all).
- ``false_positive_cost``: the FPR as users blocked per 10,000 benign requests,
  with the interval (warning when the interval lies above the target FPR,
  critical above 5x it; info while the interval includes the target).
- ``error_rate``: failed calls and what the error policy made of them (warning
  when the failure rate's interval lies above 1% of calls, critical above 10%).
- ``sample_size``: one card per dataset: headline rates whose interval is wider
  than the wanted margin, with the samples needed (at the observed rate), and
  the categories too small for the margin.
- ``missing_label``: a dataset with no attacks or no benign samples.
- ``threshold``: a score threshold meeting the target FPR, when the current one
  does not (or when it would block more at the target), and only when the benign
  samples can show it: the upper bound of its FPR interval within the target.
- ``no_scores``, ``latency_tail`` (only when the data bounds the p99),
  ``tiered_paths``, ``dual_gain``: smaller facts.
- ``comparison``: who ranks first and whether the top two differ significantly.
- ``adaptive_attack``: how far the ASR rose under adaptive attack, which
  mutators worked.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence

from shieldbench.metrics import Rate, rate
from shieldbench.reports._attack_section import attack_recommendations
from shieldbench.reports._format import pct, per_10k, rate_text
from shieldbench.reports._model import (
    AttackSection,
    DatasetGroup,
    Recommendation,
    ReportSettings,
    RunSection,
)
from shieldbench.reports._records import Priority
from shieldbench.reports._rules import (
    Context,
    comparison,
    listing,
    merge_alike,
    missing_label,
    rate_evidence,
    rec,
    sample_size,
    supported,
)

__all__ = ["RULES", "Context", "recommend"]

_ORDER = {"critical": 0, "warning": 1, "info": 2}


def coverage_gap(ctx: Context) -> Iterator[Recommendation]:
    for run in ctx.runs:
        cov = run.summary.breakdowns.coverage
        groups = {g.group: g for g in run.summary.breakdowns.by.get("category", ())}
        # below the target only when the whole interval is: 0 of 3 blocked is [0%, 56%]
        gaps = sorted(
            (groups[c] for c in cov.uncovered if not _reaches(groups[c].block_rate, cov.target)),
            key=lambda g: g.block_rate.value or 0.0,
        )
        if not gaps:
            continue
        # critical: a category lets through half or more of its attacks, interval and all
        critical = any(not _reaches(g.block_rate, 0.5) for g in gaps)
        yield rec(
            "critical" if critical else "warning",
            "coverage_gap",
            run.label,
            f"{len(gaps)} of {len(cov.covered) + len(cov.uncovered)} attack categories are"
            f" blocked less often than the {pct(cov.target, digits=0)} coverage target: "
            + listing([f"{g.group} {rate_text(g.block_rate)}" for g in gaps])
            + ". Review their example bypasses and add detection for these families.",
            target=cov.target,
            uncovered=[{"category": g.group, **rate_evidence(g.block_rate)} for g in gaps],
        )


def _reaches(r: Rate, level: float) -> bool:
    """Whether ``level`` is within or below the interval of ``r`` (it may reach it)."""
    return r.ci_high is None or r.ci_high >= level


def false_positive_cost(ctx: Context) -> Iterator[Recommendation]:
    target = ctx.settings.target_fpr
    for run in ctx.runs:
        r = run.summary.rates.false_positive_rate
        if r.value is None:
            continue
        evidence = {**rate_evidence(r), "target_fpr": target, "per_10k": 10_000 * r.value}
        if r.k == 0:
            yield rec(
                "info",
                "false_positive_cost",
                run.label,
                f"No benign sample was blocked (n={r.n}); with this many samples the FPR may"
                f" still be up to {pct(r.ci_high)}, i.e. up to {per_10k(r.ci_high)} of every"
                " 10,000 benign requests.",
                **evidence,
            )
            continue
        # the whole interval past the line, not just the value (see rules.supported)
        priority: Priority = (
            "critical"
            if supported(r, above=5 * target)
            else "warning"
            if supported(r, above=target)
            else "info"
        )
        from_errors = run.errors.benign_errors if run.errors.counted_as == "blocked" else 0
        advice = ""
        if r.value > target and from_errors * 2 >= r.k:
            # Failed calls counted as blocked, not decisions: a threshold would not help.
            advice = (
                f"; {from_errors} of these {r.k} are failed calls counted as blocked under"
                f" {run.errors.policy}, not decisions of the defense: fix the errors first"
            )
        elif supported(r, above=target):
            advice = (
                f"; above the {pct(target)} target: raise the threshold or review the false"
                " positives"
            )
        elif r.value > target:
            advice = (
                f"; the interval still includes the {pct(target)} target, so these samples"
                " cannot tell whether it is met"
            )
        yield rec(
            priority,
            "false_positive_cost",
            run.label,
            f"FPR {rate_text(r)} would block about {per_10k(r.value)} of every 10,000 benign"
            f" requests (between {per_10k(r.ci_low)} and {per_10k(r.ci_high)} within the"
            f" interval){advice}.",
            **evidence,
        )


_POLICY_EFFECT = {
    "blocked": "under fail_closed they count as blocked ({a} attacks, {b} benign), which"
    " raises both the block rate and the FPR",
    "allowed": "under fail_open they count as allowed ({a} attacks count as bypasses,"
    " {b} benign texts as passed), which raises the ASR",
    "excluded": "under exclude they are left out of every rate ({a} attacks, {b} benign),"
    " so the rates describe only the calls that answered",
}


def error_rate(ctx: Context) -> Iterator[Recommendation]:
    for run in ctx.runs:
        e = run.errors
        if e.total == 0 or e.error_rate is None:
            continue
        share = e.error_rate
        failed = rate(e.total, e.n_outcomes)
        priority: Priority = (
            "critical"
            if supported(failed, above=0.1)
            else "warning"
            if supported(failed, above=0.01)
            else "info"
        )
        kinds = listing([f"{k} x{v}" for k, v in e.by_type.items()])
        effect = _POLICY_EFFECT[e.counted_as].format(a=e.attack_errors, b=e.benign_errors)
        yield rec(
            priority,
            "error_rate",
            run.label,
            f"{e.total} of {e.n_outcomes} calls failed ({pct(share)}: {kinds}); {effect}. Check"
            " the defense's availability"
            + _timeouts_text(run.config.timeout_s, run.defense.spec)
            + ", or re-run with another --error-policy to see how much the figures depend"
            " on the failures.",
            errors=e.total,
            outcomes=e.n_outcomes,
            error_rate=share,
            policy=e.policy,
        )


_SPEC_TIMEOUT = re.compile(r"\btimeout\s*=\s*([0-9]+(?:\.[0-9]+)?)")


def _timeouts_text(run_timeout: float | None, spec: str) -> str:
    """The timeouts actually in force: the spec's own (``timeout=1``) and the run's.

    >>> _timeouts_text(30.0, "http(http://x/check, timeout=1)")
    ' and the timeouts (the spec sets timeout=1 s, the run 30 s per call)'
    >>> _timeouts_text(None, "pattern")
    ''
    """
    in_spec = [f"timeout={m.group(1)} s" for m in _SPEC_TIMEOUT.finditer(spec)]
    run_text = None if run_timeout is None else f"{run_timeout:g} s per call"
    if in_spec:
        parts = f"the spec sets {', '.join(in_spec)}" + (
            f", the run {run_text}" if run_text else ""
        )
        return f" and the timeouts ({parts})"
    return f" and the {run_timeout:g} s timeout" if run_timeout is not None else ""


def threshold(ctx: Context) -> Iterator[Recommendation]:
    target = ctx.settings.target_fpr
    for run in ctx.runs:
        sc = run.summary.scores
        fpr = run.summary.rates.false_positive_rate
        block = run.summary.rates.block_rate
        if sc is None or sc.tpr_at_fpr is None or fpr.value is None or block.value is None:
            continue
        op = sc.tpr_at_fpr
        if not math.isfinite(op.threshold):
            continue  # "block nothing" meets any FPR target; it is no advice
        op_block = op.block_rate.value or 0.0
        op_fpr = op.false_positive_rate.ci_high
        if op_fpr is None or op_fpr > target:
            continue  # too few benign samples to show that any threshold meets the target
        if fpr.value > target or op_block > block.value + 0.02:
            yield rec(
                "info",
                "threshold",
                run.label,
                f"A score threshold of {op.threshold:.4g} keeps the observed FPR within the"
                f" {pct(target)} target ({rate_text(op.false_positive_rate, n=False)}) while"
                f" blocking {rate_text(op.block_rate, n=False)} of attacks; now: FPR"
                f" {rate_text(fpr, n=False)}, block rate {rate_text(block, n=False)}. Check it"
                " on held-out data before adopting it.",
                threshold=op.threshold,
                target_fpr=target,
            )


def no_scores(ctx: Context) -> Iterator[Recommendation]:
    for run in ctx.runs:
        if run.summary.scores is None and run.errors.total < run.errors.n_outcomes:
            yield rec(
                "info",
                "no_scores",
                run.label,
                "The defense gives no score on some verdicts: ROC / PR curves and threshold"
                " tuning are unavailable. If it has a confidence, return it as Verdict.score.",
            )


def latency_tail(ctx: Context) -> Iterator[Recommendation]:
    for run in ctx.runs:
        lat = run.summary.operations.latency
        p50, p99 = lat.p50.value, lat.p99.value
        if p50 is None or p99 is None or p50 <= 0:
            continue
        # the data must bound the p99 and put it past 10x the median's upper bound
        low99, high50 = lat.p99.ci_low, lat.p50.ci_high
        if low99 is None or lat.p99.ci_high is None or high50 is None:
            continue
        if low99 > 10 * high50 and p99 > 10.0:
            yield rec(
                "info",
                "latency_tail",
                run.label,
                f"p99 latency {p99:.1f} ms is {p99 / p50:.0f}x the median ({p50:.2f} ms):"
                " users feel the tail. Look for cold starts, retries, or long inputs.",
                p50_ms=p50,
                p99_ms=p99,
            )


def composite(ctx: Context) -> Iterator[Recommendation]:
    target = ctx.settings.target_fpr
    for run in ctx.runs:
        facts = run.composite
        if facts is None:
            continue
        ps = facts.path_shares
        if ps is not None and ps.deep_share is not None:
            yield rec(
                "info",
                "tiered_paths",
                run.label,
                f"The deep defense answered {pct(ps.deep_share)} of routed texts ({ps.deep} of"
                f" {ps.fast + ps.deep}); the fast path settled the rest. Latency and cost of"
                " the deep defense apply to that share only.",
                fast=ps.fast,
                deep=ps.deep,
            )
        dg = facts.dual_gain
        if dg is not None and dg.extra_attacks_caught > 0:
            extra_fpr = dg.extra_false_positive_rate or 0.0
            advice = (
                "consider making it blocking"
                if extra_fpr <= target
                else f"blocking with it would add more than {pct(target)} false positives"
            )
            yield rec(
                "info" if extra_fpr > target else "warning",
                "dual_gain",
                run.label,
                f"The warn-only stage would have caught {dg.extra_attacks_caught} more attacks"
                f" (+{pct(dg.extra_block_rate)} of {dg.attacks}) at the cost of"
                f" {dg.extra_false_positives} more false positives (+{pct(extra_fpr)} of"
                f" {dg.benign}): {advice}.",
                extra_attacks_caught=dg.extra_attacks_caught,
                extra_false_positives=dg.extra_false_positives,
            )


def adaptive_attack(ctx: Context) -> Iterable[Recommendation]:
    if ctx.attack is None:
        return ()
    return attack_recommendations(ctx.attack.result, ctx.settings)


Rule = Callable[[Context], Iterable[Recommendation]]

RULES: tuple[Rule, ...] = (
    coverage_gap,
    false_positive_cost,
    error_rate,
    sample_size,
    missing_label,
    threshold,
    no_scores,
    latency_tail,
    composite,
    comparison,
    adaptive_attack,
)


def recommend(
    runs: Sequence[RunSection],
    groups: Sequence[DatasetGroup],
    attack: AttackSection | None,
    settings: ReportSettings,
) -> tuple[Recommendation, ...]:
    """Every rule's recommendations, most urgent first."""
    ctx = Context(runs, groups, attack, settings)
    found = merge_alike([rec for rule in RULES for rec in rule(ctx)])
    return tuple(sorted(found, key=lambda r: _ORDER[r.priority]))
